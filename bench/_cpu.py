"""CPU seconds per process while a benchmark runs: where a fold's time goes on a machine whose cores it shares.

``CpuSplit(engine)`` samples, every ``every`` seconds, the user + system CPU time of

- this process (the bench, which is also the engine: live projectors, the rebuild's parent and serial runners),
- its child processes (a parallel rebuild's workers, ``python -m memengine.engine.ops.rebuild_worker``),
- the embedded PostgreSQL's processes: each client backend, named by the ``application_name`` of its session
  (``pg_stat_activity``: the workers' pools name themselves ``memengine-rebuild-w<i>``, the shadow's pool
  ``memengine-rebuild``), and the server's own processes by type (walwriter, checkpointer, autovacuum ...),
- the embedded ``nats-server``,

and the whole machine's busy time (``psutil.cpu_times``), so the CPU taken by other users of a shared machine shows
as ``machine_busy_s - total_s``. Units: CPU seconds over the sampled window (``wall_s``); a process that exits
between two samples loses at most ``every`` seconds of its tail (the sample before it exited counts). With external
servers (``NATS_URL`` / ``DATABASE_URL`` set) only this process and its children are seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from pathlib import Path
from typing import Any

import psutil


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _busy() -> float:
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0)


class CpuSplit:
    """Use as ``async with CpuSplit(engine) as split: ...``; then ``split.result()`` (see the module docstring)."""

    def __init__(self, engine: Any, every: float = 0.5) -> None:
        self.engine = engine
        self.every = every
        self.me = psutil.Process()
        home = Path(engine.settings.home_path)
        self.postmaster: psutil.Process | None = None
        pidfile = home / "pg" / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, psutil.Error):
            self.postmaster = psutil.Process(int(pidfile.read_text().split()[0]))
        self.nats: psutil.Process | None = None
        for p in psutil.process_iter(["name", "cmdline"]):
            if p.info["name"] == "nats-server" and str(home) in " ".join(p.info["cmdline"] or []):
                self.nats = p
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.label: dict[int, str] = {}
        self.apps: dict[int, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._t0 = 0.0
        self._wall = 0.0
        self._busy0 = 0.0
        self._busy = 0.0

    async def __aenter__(self) -> "CpuSplit":
        self._t0, self._busy0 = time.perf_counter(), _busy()
        await self._sample(initial=True)
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._sample()
        self._wall, self._busy = time.perf_counter() - self._t0, _busy() - self._busy0

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self._sample()

    async def _sample(self, initial: bool = False) -> None:
        with contextlib.suppress(Exception):  # a failed look-up only costs the labels of new backends
            rows = await self.engine.pool.fetch(
                "SELECT pid, application_name AS app, backend_type AS type FROM pg_stat_activity")
            for r in rows:
                self.apps[r["pid"]] = (f"backend {r['app'] or '(unnamed)'}" if r["type"] == "client backend"
                                       else str(r["type"]))
        procs: list[tuple[psutil.Process, str]] = [(self.me, "bench process (engine, rebuild parent)")]
        with contextlib.suppress(psutil.Error):
            for c in self.me.children(recursive=True):
                cmd = " ".join(c.cmdline())
                if "rebuild_worker" in cmd:
                    procs.append((c, "rebuild worker"))
                elif c.name() not in ("postgres", "nats-server"):
                    procs.append((c, f"child {c.name()}"))
        if self.nats is not None:
            procs.append((self.nats, "nats-server"))
        if self.postmaster is not None:
            procs.append((self.postmaster, "postgres postmaster"))
            with contextlib.suppress(psutil.Error):
                procs.extend((c, "postgres") for c in self.postmaster.children())
        for p, label in procs:
            try:
                cpu = _cpu(p)
            except psutil.Error:
                continue
            pid = p.pid
            if pid not in self.first:
                self.first[pid] = cpu if initial else 0.0
            self.last[pid] = cpu
            if label == "postgres":
                label = "postgres " + self.apps.get(pid, _pg_type(p))
            elif label == "rebuild worker":
                label = f"rebuild worker pid {pid}"
            old = self.label.setdefault(pid, label)
            if label.startswith("postgres backend") and not old.startswith("postgres backend"):
                self.label[pid] = label  # the backend's session named itself since the first sample

    def name(self, pids: list[int], prefix: str) -> None:
        """Label processes by position (``on_spawn`` of a rebuild: the workers' pids in worker order)."""
        for i, pid in enumerate(pids):
            self.label[pid] = f"{prefix} {i}"
            self.first.setdefault(pid, 0.0)
            self.last.setdefault(pid, 0.0)

    def result(self) -> dict[str, Any]:
        """``{"wall_s", "machine_cores", "machine_busy_s", "total_s", "other_s", "by_process": {label: cpu_s}}``:
        CPU seconds over the window; backends with the same ``application_name`` are summed, as are the server's
        processes of one type."""
        by: dict[str, float] = {}
        for pid, label in self.label.items():
            by[label] = by.get(label, 0.0) + self.last[pid] - self.first[pid]
        total = sum(by.values())
        return {"wall_s": round(self._wall, 2), "machine_cores": os.cpu_count(),
                "machine_busy_s": round(self._busy, 2), "total_s": round(total, 2),
                "other_s": round(self._busy - total, 2),
                "by_process": {k: round(v, 2) for k, v in sorted(by.items(), key=lambda kv: -kv[1]) if v >= 0.005}}


def _pg_type(p: psutil.Process) -> str:
    """The role of a PostgreSQL process from its title (``postgres: walwriter``), when pg_stat_activity lacks it."""
    with contextlib.suppress(psutil.Error):
        title = " ".join(p.cmdline())
        m = re.match(r"postgres: (.*)", title)
        if m:
            return m.group(1).split(" [")[0][:40]
    return "(unknown)"


def per_unit(result: dict[str, Any], units: int, children: str = "children") -> dict[str, Any]:
    """``result()`` folded into the groups that share a 2-core machine during a fold bench, with CPU microseconds
    per unit of work (a turn, an event): ``{"seconds", "busy_cores", "busy_us_per_unit", "groups": {group:
    {"cpu_s", "cores", "us_per_unit"}}}``. Groups: ``engine`` (this process), ``workers`` (rebuild workers),
    ``children`` (other child processes, named ``children``: the ingest bench's publisher), ``postgres``,
    ``nats-server``, ``other`` (the machine's busy time outside them). ``cores`` = CPU seconds / wall seconds (1.0 = one
    core all the time)."""
    groups: dict[str, float] = {}
    for label, cpu_s in result["by_process"].items():
        group = ("engine" if label.startswith("bench process") else "workers" if label.startswith("rebuild worker")
                 else "postgres" if label.startswith("postgres") else "nats-server" if label == "nats-server"
                 else children)
        groups[group] = groups.get(group, 0.0) + cpu_s
    groups["other"] = max(0.0, result["other_s"])
    wall = max(result["wall_s"], 1e-9)
    return {"seconds": result["wall_s"], "busy_cores": round(result["machine_busy_s"] / wall, 2),
            "busy_us_per_unit": round(result["machine_busy_s"] / units * 1e6, 1),
            "groups": {g: {"cpu_s": round(v, 2), "cores": round(v / wall, 2), "us_per_unit": round(v / units * 1e6, 1)}
                       for g, v in sorted(groups.items(), key=lambda kv: -kv[1])}}
