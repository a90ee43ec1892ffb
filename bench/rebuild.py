"""Rebuild throughput of the non-embedding read models (issue #5 §9), with the raw replay yardstick.

Set-up: ``--turns`` synthetic turns over 50 threads published and folded once (the live read models). Then, in the
same run on the same servers:

- yardstick: a plain nats-py **ordered consumer** replaying the whole facts stream from sequence 1 (messages
  received, nothing decoded), events/s;
- memengine: ``engine.ops.rebuild.rebuild(["thread_activity", "messages", "tombstones"])`` (the core read models: shadow
  tables, fold from sequence 1, swap), events/s over the whole operation and over the fold alone.
- time travel: one ``as_of_pool`` fold of the first half of the log (seconds), the cost of an ``--as-of`` answer.

    python bench/rebuild.py --turns 100000 [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from _common import bench_settings, machine, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.publish import publish_all

CORE = ["thread_activity", "messages", "tombstones"]


async def raw_replay_rate(engine, n: int) -> float:  # type: ignore[no-untyped-def]
    got = 0
    done = asyncio.Event()

    async def cb(msg) -> None:  # type: ignore[no-untyped-def]
        nonlocal got
        got += 1
        if got >= n:
            done.set()

    t0 = time.perf_counter()
    sub = await engine.js.subscribe(engine.subjects.all_facts, stream=engine.streams.facts, ordered_consumer=True,
                                    cb=cb, pending_msgs_limit=-1, pending_bytes_limit=-1)
    await asyncio.wait_for(done.wait(), timeout=600)
    rate = got / (time.perf_counter() - t0)
    await sub.unsubscribe()
    return rate


async def main(n: int, batch: int) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(batch_size=batch)
    turns = synthetic_turns(n, threads=50)
    async with lifespan(settings, roles={"projector", "query"}) as engine:
        pub = await publish_all(engine, turns, "bench", quiet=True)
        # steady state: the live core and recall projectors caught up, so nothing else competes for the 2 cores
        while engine.runner.stats.last_seq < pub["last_seq"] or engine.recall.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.05)
        raw = await raw_replay_rate(engine, n)
        folded: dict[str, float] = {}

        def progress(group: str, done: int, target: int) -> None:
            folded.setdefault("t_first", time.perf_counter())
            folded["t_last"] = time.perf_counter()

        t0 = time.perf_counter()
        report = await rb.rebuild(engine, CORE, progress=progress)
        total = time.perf_counter() - t0
        fold_s = folded["t_last"] - t0
        verify = await rb.verify(engine, CORE)
        t1 = time.perf_counter()
        point = await rb.resolve_as_of(engine, seq=n // 2)
        async with rb.as_of_pool(engine, point):
            pass
        as_of_s = time.perf_counter() - t1
    rate_total, rate_fold = n / total, n / fold_s
    return {"bench": "rebuild", "events": n, "batch_size": batch, "raw_ordered_replay_per_s": round(raw),
            "rebuild_per_s": round(rate_total), "fold_per_s": round(rate_fold),
            "ratio_to_raw": round(rate_total / raw, 3), "swap_ms": report.swap_ms, "verify_ok": verify.ok,
            "verify_s": verify.seconds, "as_of_half_log_s": round(as_of_s, 2), "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = asyncio.run(main(a.turns, a.batch))
    if a.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        for k, v in result.items():
            print(f"{k:>26}: {v}")
