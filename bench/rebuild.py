"""Rebuild throughput of the non-embedding read models (issue #5 §9), with the raw replay yardstick.

Set-up: ``--turns`` synthetic turns over 50 threads published and folded once (the live read models). Then, in the
same run on the same servers:

- yardstick: a plain nats-py **ordered consumer** replaying the whole facts stream from sequence 1 (messages
  received, nothing decoded), events/s;
- memengine: ``engine.ops.rebuild.rebuild(["thread_activity", "messages", "tombstones"], workers=N)`` (the core read
  models: shadow tables, fold from sequence 1 in N worker processes, swap; issue #13 item 2), events/s over the
  whole operation and over the fold alone, once per N of ``--workers``, each against the raw replay measured just
  before it (same servers, same moment), and ``verify`` after each; ``cpu``: the CPU seconds each process spent
  during the rebuild (bench/_cpu.py: the bench, each worker, each PostgreSQL backend by session, nats-server, and
  what the rest of the machine took), with the load average at its end;
- time travel: one ``as_of_pool`` fold of the first half of the log (seconds), the cost of an ``--as-of`` answer.

    python bench/rebuild.py --turns 100000 --workers 1,2 [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from _common import bench_settings, machine, raw_replay_rate, synthetic_turns
from _cpu import CpuSplit

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.publish import publish_all

CORE = ["thread_activity", "messages", "tombstones"]


async def main(n: int, batch: int, workers_list: list[int]) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(batch_size=batch)
    turns = synthetic_turns(n, threads=50)
    async with lifespan(settings, roles={"projector", "query"}) as engine:
        pub = await publish_all(engine, turns, "bench", quiet=True)
        # steady state: the live core and recall projectors caught up, so nothing else competes for the 2 cores
        while engine.runner.stats.last_seq < pub["last_seq"] or engine.recall.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.05)
        runs = []
        for workers in workers_list:
            raw = await raw_replay_rate(engine, n)
            folded: dict[str, float] = {}

            def progress(group: str, done: int, target: int, folded: dict[str, float] = folded) -> None:
                folded["t_last"] = time.perf_counter()  # the fold's last progress: the swap follows

            t0 = time.perf_counter()
            async with CpuSplit(engine) as split:
                report = await rb.rebuild(engine, CORE, progress=progress, workers=workers,
                                          on_spawn=lambda pids, split=split: split.name(pids, "rebuild worker"))
            total = time.perf_counter() - t0
            fold_s = folded.get("t_last", time.perf_counter()) - t0
            verify = await rb.verify(engine, CORE)
            runs.append({"workers": workers, "raw_ordered_replay_per_s": round(raw), "rebuild_per_s": round(n / total),
                         "fold_per_s": round(n / fold_s), "ratio_to_raw": round(n / total / raw, 3),
                         "seconds": round(total, 2), "swap_ms": report.swap_ms, "worker_events": report.worker_events,
                         "parallel_fallback": report.parallel_fallback, "cpu": split.result(),
                         "loadavg": _loadavg(), "verify_ok": verify.ok, "verify_s": verify.seconds})
        t1 = time.perf_counter()
        point = await rb.resolve_as_of(engine, seq=n // 2)
        async with rb.as_of_pool(engine, point):
            pass
        as_of_s = time.perf_counter() - t1
    last = runs[-1]
    return {"bench": "rebuild", "events": n, "batch_size": batch, "runs": runs,
            # the last run's figures at the top level, as before (the largest N when --workers lists them in order)
            **{k: last[k] for k in ("workers", "raw_ordered_replay_per_s", "rebuild_per_s", "fold_per_s",
                                    "ratio_to_raw", "swap_ms", "verify_ok", "verify_s")},
            "as_of_half_log_s": round(as_of_s, 2), "machine": machine()}


def _loadavg() -> list[float]:
    """The 1, 5 and 15-minute load averages (``/proc/loadavg``; empty where there is none)."""
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return []


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--workers", default="1,2",
                    help="comma-separated worker counts, one rebuild each (default 1,2)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = asyncio.run(main(a.turns, a.batch, [int(w) for w in a.workers.split(",")]))
    if a.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        for k, v in result.items():
            print(f"{k:>26}: {v}")
