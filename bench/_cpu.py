"""Where a bench's CPU goes: CPU seconds per process group over a phase, and how busy the machine's cores were.

A ratio to the raw yardstick says how far the engine is from the hardware; this says why. On a 2-core machine the
publisher, nats-server, PostgreSQL and the engine share the cores, so a phase whose cores are ~100 % busy is bound
by the sum of everyone's CPU per turn, not by one process waiting on another (issue #13 item 1).

    with CpuSplit({"engine": os.getpid(), "publisher": proc.pid}) as split:
        ...  # the phase
    split.result(units=50_000)  # {"seconds": .., "busy_cores": .., "groups": {name: {"cpu_s", "us_per_unit"}}}

Groups: each named pid with its descendants (servers and other named pids excepted); ``nats-server`` and
``postgres``, the bench's embedded servers found under its home (``server_home``: the NATS pid in
``nats/server.json``, the postmaster in ``pg/postmaster.pid`` with every backend it forked; a backend that exits
during the phase takes its CPU with it, so PostgreSQL's figure is a lower bound); and ``other`` = the machine's busy
time minus all of these: other jobs on the machine (servers of other benches included) and the kernel.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import psutil


def server_pids(home: str | Path) -> dict[str, int]:
    """``{"nats-server": pid, "postgres": postmaster pid}`` of the embedded servers under ``home`` (those running)."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError, KeyError):
        out["nats-server"] = int(json.loads((Path(home) / "nats" / "server.json").read_text())["pid"])
    with contextlib.suppress(OSError, ValueError, IndexError):
        out["postgres"] = int((Path(home) / "pg" / "postmaster.pid").read_text().split()[0])
    return out


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


class CpuSplit:
    """CPU seconds per group between ``__enter__`` and ``__exit__`` (psutil; Linux ``/proc``)."""

    def __init__(self, named: dict[str, int], server_home: str | Path | None = None) -> None:
        self.named = named
        self.servers = server_pids(server_home) if server_home is not None else {}
        self._start: dict[int, tuple[str, float]] = {}
        self._end: dict[int, tuple[str, float]] = {}
        self._seen: dict[int, tuple[str, float]] = {}  # the last value of each named process (sample())
        self._busy0 = self._busy1 = 0.0
        self._t0 = self._t1 = 0.0

    def _snapshot(self) -> dict[int, tuple[str, float]]:
        out: dict[int, tuple[str, float]] = {}
        # servers first (with every process they forked: PostgreSQL's backends), then the named pids themselves,
        # then their other descendants (e.g. a rebuild's worker processes)
        for group, pid in self.servers.items():
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(pid)
                for p in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        out[p.pid] = (group, _cpu(p))
        for name, pid in self.named.items():
            with contextlib.suppress(psutil.Error):
                out[pid] = (name, _cpu(psutil.Process(pid)))
        for name, pid in self.named.items():
            with contextlib.suppress(psutil.Error):
                for p in psutil.Process(pid).children(recursive=True):
                    if p.pid not in out:
                        with contextlib.suppress(psutil.Error):
                            out[p.pid] = (name, _cpu(p))
        return out

    @staticmethod
    def _machine_busy() -> float:
        t = psutil.cpu_times()
        return float(t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0))

    def __enter__(self) -> CpuSplit:
        self._start = self._snapshot()
        self._busy0, self._t0 = self._machine_busy(), time.monotonic()
        return self

    def sample(self) -> None:
        """Remember the named processes' CPU now: one that exits before the phase ends (a publisher child) is counted
        up to its last sample. Cheap (no scan of the machine's processes): call it every few hundred ms."""
        for name, pid in self.named.items():
            with contextlib.suppress(psutil.Error):
                self._seen[pid] = (name, _cpu(psutil.Process(pid)))

    def stop(self) -> None:
        """End the phase (``__exit__`` does it too)."""
        if not self._end:
            self._end = {**self._seen, **self._snapshot()}
            self._busy1, self._t1 = self._machine_busy(), time.monotonic()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def result(self, units: int | None = None) -> dict[str, Any]:
        """``{"seconds", "cores", "busy_cores", "groups": {group: {"cpu_s", "cores", "us_per_unit"}}}``: ``cores``
        = CPU seconds / wall seconds (1.0 = one core all the time); ``us_per_unit`` = CPU microseconds per unit of
        work (a turn, an event) when ``units`` is given; ``other`` = machine busy time outside the named groups."""
        wall = max(self._t1 - self._t0, 1e-9)
        groups: dict[str, float] = {}
        for pid, (name, end) in self._end.items():
            start = self._start.get(pid, (name, 0.0))[1]  # a process born in the phase: all its CPU is the phase's
            groups[name] = groups.get(name, 0.0) + max(0.0, end - start)
        busy = self._busy1 - self._busy0
        groups["other"] = max(0.0, busy - sum(groups.values()))

        def row(cpu_s: float) -> dict[str, float]:
            r = {"cpu_s": round(cpu_s, 2), "cores": round(cpu_s / wall, 2)}
            if units:
                r["us_per_unit"] = round(cpu_s / units * 1e6, 1)
            return r

        return {"seconds": round(wall, 2), "cores": psutil.cpu_count(), "busy_cores": round(busy / wall, 2),
                "groups": {k: row(v) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])},
                **({"busy_us_per_unit": round(busy / units * 1e6, 1)} if units else {})}
