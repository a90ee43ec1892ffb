"""Where a recall row's PostgreSQL CPU goes: the recall projection's own bulk statement, with indexes taken away.

Folds ``--turns`` synthetic turns (50 threads, as bench/ingest.py) into ``memory_vectors`` with the statement the
recall projector runs (``projections.vectors``, ``engine.runtime.sql.execute_ops``), in batches of ``--batch`` turns
(1,000: what the recall projector folds during ingest, ``bench/ingest.py``'s ``batches``), one transaction each,
and reports the CPU microseconds per turn of the PostgreSQL backend (psutil) over the second half (the first half
fills the table and is followed by an ANALYZE, as the runner's). Variants, each on fresh servers:

- ``base``: as the schema has it;
- ``no_gin``: without the two GIN indexes (``turn_tsv``, ``win_tsv``);
- ``no_win_gin``: without the window list's GIN;
- ``no_btrees``: without the ``changed_seq`` and ``user_id`` B-trees (the embedder's watermark, the user scope).

The difference to ``base`` is what that index costs per turn; no variant is a configuration memengine runs.

    python bench/recall_row_cost.py --turns 40000 [--variants base,no_gin,no_win_gin,no_btrees] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import psutil
from _common import bench_settings, machine, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.runtime.sql import execute_ops
from memengine.projections.ops import FoldConfig, Position
from memengine.projections.vectors import on_turn_recorded

VARIANTS = {
    "base": [],
    "no_gin": ["DROP INDEX memory_vectors_turn_tsv", "DROP INDEX memory_vectors_win_tsv"],
    "no_win_gin": ["DROP INDEX memory_vectors_win_tsv"],
    "no_btrees": ["DROP INDEX memory_vectors_changed", "DROP INDEX memory_vectors_user"],
}


async def run(variant: str, n: int, batch: int) -> dict[str, object]:
    turns = synthetic_turns(n, threads=50)
    cfg = FoldConfig()
    ops = [on_turn_recorded(t, Position(i, ""), cfg)[0] for i, t in enumerate(turns, 1)]
    async with lifespan(bench_settings(), roles=set()) as engine, engine.pool.acquire() as conn:
        for stmt in VARIANTS[variant]:
            await conn.execute(stmt)
        backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
        half = (n // 2) // batch * batch
        cpu0 = t0 = 0.0
        for i in range(0, n, batch):
            if i == half:
                await conn.execute("ANALYZE memory_vectors")
                cpu0, t0 = sum(backend.cpu_times()[:2]), time.perf_counter()
            async with conn.transaction():
                await execute_ops(conn, ops[i:i + batch])
        cpu, wall = sum(backend.cpu_times()[:2]) - cpu0, time.perf_counter() - t0
        rows = await conn.fetchval("SELECT count(*) FROM memory_vectors")
    assert rows == n, rows
    return {"variant": variant, "pg_us_per_turn": round(cpu / (n - half) * 1e6, 1),
            "turns_per_s": round((n - half) / wall)}


async def main(n: int, batch: int, variants: list[str]) -> dict[str, object]:
    configure_logging("warning")
    runs = [await run(v, n, batch) for v in variants]
    return {"bench": "recall_row_cost", "turns": n, "batch": batch, "runs": runs, "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=40_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--variants", default="base,no_gin,no_win_gin,no_btrees")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if unknown := set(variants) - set(VARIANTS):
        ap.error(f"unknown variant(s) {sorted(unknown)}; expected {sorted(VARIANTS)}")
    out = asyncio.run(main(args.turns, args.batch, variants))
    if args.json:
        print(json.dumps(out))
    else:
        for r in out["runs"]:  # type: ignore[attr-defined]
            print(f"{r['variant']:<12} PostgreSQL {r['pg_us_per_turn']:>6} us/turn  {r['turns_per_s']:>7,} turns/s")
