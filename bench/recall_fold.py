"""Recall-row fold throughput (issue #13 items 5-6): can ``memory_vectors`` keep up with 1,000 turns/s?

Set-up: ``--turns`` synthetic turns over ``--threads`` threads (the soak's shape: user text, assistant thinking and
tool calls, tool output) published once on fresh embedded servers, nothing folding them. Then, same run, same
servers:

- yardstick: a plain nats-py **ordered consumer** replaying the whole facts stream from sequence 1 (messages
  received, nothing decoded), events/s;
- ``alone``: the recall projector (``RECALL_PROJECTIONS``: ``vectors``) as its own durable consumer, folding the
  stream from sequence 1 to the end, turns/s;
- ``beside``: the read models emptied and the checkpoints reset, then the core projector (``PROJECTIONS``) and the
  recall projector folding the same stream concurrently in this process (as in the engine and the soak), turns/s
  of each, each clocked to its own end;
- ``verify_ok``: ``memengine verify vectors`` (a fresh fold compared with the rows just folded).

Runs against whatever ``memengine`` is on the path, so a "before" tree (``git archive main``) runs the same script.

    python bench/recall_fold.py --turns 20000 [--threads 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from _common import bench_settings, machine, raw_replay_rate, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.publish import publish_all
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.projections.ops import FoldConfig
from memengine.projections.registry import PROJECTIONS, RECALL_PROJECTIONS


def runner(engine, name: str, projections) -> ProjectorRunner:  # type: ignore[no-untyped-def]
    s = engine.settings
    return ProjectorRunner(name=name, projections=projections, nc=engine.nc, js=engine.js, pool=engine.pool,
                           streams=engine.streams, subjects=engine.subjects,
                           fold_config=FoldConfig(condensed_tool_max=s.condensed_tool_max), batch_size=s.batch_size)


async def fold(engine, name: str, projections) -> tuple[float, ProjectorRunner]:  # type: ignore[no-untyped-def]
    """Seconds to fold the whole stream with a new consumer ``name`` (started, caught up, stopped)."""
    r = runner(engine, name, projections)
    assert await r.try_start()
    t0 = time.perf_counter()
    await r.catch_up(timeout=3600)
    took = time.perf_counter() - t0
    await r.stop()
    return took, r


async def reset(engine, projections) -> None:  # type: ignore[no-untyped-def]
    tables = sorted({t for p in projections for t in p.tables})
    async with engine.pool.acquire() as conn:
        await conn.execute("TRUNCATE " + ", ".join(tables))
        await conn.execute("DELETE FROM projection_checkpoints WHERE projection = ANY($1::text[])",
                           [p.name for p in projections])
        await conn.execute("DELETE FROM applied_events")
        await conn.execute("VACUUM ANALYZE " + ", ".join(tables))


async def main(n: int, threads: int, batch: int) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(batch_size=batch)
    turns = synthetic_turns(n, threads=threads)
    async with lifespan(settings, roles={"query"}) as engine:
        pub = await publish_all(engine, turns, "bench", quiet=True)
        n = pub["last_seq"]
        raw = await raw_replay_rate(engine, n)
        alone_s, _ = await fold(engine, "bench-recall-alone", RECALL_PROJECTIONS)
        rows_alone = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors")
        await reset(engine, RECALL_PROJECTIONS)
        (recall_s, _), (core_s, _) = await asyncio.gather(
            fold(engine, "bench-recall-beside", RECALL_PROJECTIONS), fold(engine, "bench-core-beside", PROJECTIONS))
        rows = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors")
        verify = await rb.verify(engine, ["vectors"])
    return {"bench": "recall_fold", "turns": n, "threads": threads, "batch_size": batch,
            "raw_ordered_replay_per_s": round(raw),
            "recall_alone_per_s": round(n / alone_s), "recall_alone_ratio_to_raw": round(n / alone_s / raw, 3),
            "recall_beside_core_per_s": round(n / recall_s),
            "recall_beside_ratio_to_raw": round(n / recall_s / raw, 3),
            "core_beside_recall_per_s": round(n / core_s), "rows": [rows_alone, rows], "verify_ok": verify.ok,
            "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--threads", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = asyncio.run(main(a.turns, a.threads, a.batch))
    if a.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        for k, v in result.items():
            print(f"{k:>28}: {v}")
