"""Where the recall fold's time goes (issue #13 items 5-6), on fresh embedded servers, no NATS in the loop.

1. ``statements``: the same synthetic turns folded into ``memory_vectors`` in batches, once with the per-turn fold
   that was replaced (tests/integration/legacy_vectors.py: an insert and a window re-derivation per turn, each
   timed) and once with the set-based statement (projections/vectors.py), microseconds per turn of each statement
   and the row writes PostgreSQL counted (``pg_stat_user_tables``: inserts, updates, HOT updates). No ANALYZE in
   between, as in the first seconds of a live fold.
2. ``row_write``: the folded rows copied into fresh tables shaped like ``memory_vectors`` (all indexes), without the
   two GIN indexes, with ``toast_tuple_target = 8160`` and without the generated tsvector columns: microseconds per
   row of each (best of two), and ``to_tsvector('english', ...)`` of ``turn_text`` and ``win_text`` alone.
   Since schema 0034 the fold computes the tsvector columns itself (no generated columns): ``row_write`` copies
   leave them empty, so it measures a row's write without any parsing; ``statements`` includes the parsing.

    python bench/recall_fold_profile.py [--turns 4000] [--threads 200] [--batch 1000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import msgspec
from _common import bench_settings, machine, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.projections import vectors
from memengine.projections.ops import FoldConfig, Position

COLS = ("tenant_id, thread_id, seq, event_id, user_id, session_id, session_key, speaker, occurred_at, date_label, "
        "piece, turn_text, win_text, emb_text, emb_sha, changed_seq, prev_seq, next_seq, role, tool, tool_calls")
VARIANTS = {"as_is": "", "without_gin": "gin", "toast_8160": "ALTER TABLE {t} SET (toast_tuple_target = 8160)",
            "without_tsvector_columns": "ALTER TABLE {t} DROP COLUMN turn_tsv, DROP COLUMN win_tsv"}


async def statements(turns, batch: int, legacy_mode: bool) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from memengine.tests.integration import legacy_vectors

    cfg, n, tot = FoldConfig(), len(turns), {}  # type: ignore[var-annotated]

    def add(k: str, t0: float) -> None:
        tot[k] = tot.get(k, 0.0) + time.perf_counter() - t0

    async with lifespan(bench_settings(), roles={"query"}) as engine:
        wall = time.perf_counter()
        for b in range(0, n, batch):
            async with engine.pool.acquire() as conn, conn.transaction():
                if legacy_mode:
                    for i in range(b, min(n, b + batch)):
                        ins, win = legacy_vectors.on_turn_recorded(turns[i], Position(i + 1, "s"), cfg)
                        t0 = time.perf_counter()
                        await conn.execute(ins.sql, *ins.args)
                        add("insert", t0)
                        t0 = time.perf_counter()
                        await conn.execute(win.sql, *win.args)
                        add("windows", t0)
                else:
                    ops = [op for i in range(b, min(n, b + batch))
                           for op in vectors.on_turn_recorded(turns[i], Position(i + 1, "s"), cfg)]
                    t0 = time.perf_counter()
                    doc = msgspec.json.encode([op.args for op in ops]).decode()
                    add("encode", t0)
                    t0 = time.perf_counter()
                    await conn.execute(ops[0].bulk, doc)
                    add("bulk", t0)
        wall = time.perf_counter() - wall
        st = await engine.pool.fetchrow("SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                                        " WHERE relname = 'memory_vectors'")
        out: dict[str, object] = {f"{k}_us_per_turn": round(1e6 * v / n) for k, v in tot.items()}
        out.update(turns_per_s=round(n / wall), **dict(st))
        if not legacy_mode:
            out["row_write_us"] = await row_write(engine, n)
        return out


async def row_write(engine, n: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    res: dict[str, list[int]] = {k: [] for k in VARIANTS}
    async with engine.pool.acquire() as conn:
        for _ in range(2):
            for k, extra in VARIANTS.items():
                t = f"prof_{k}"
                await conn.execute(f"DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (LIKE memory_vectors INCLUDING ALL)")
                if extra == "gin":
                    for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = $1"
                                              " AND indexdef LIKE '%USING gin%'", t):
                        await conn.execute(f"DROP INDEX {r[0]}")
                elif extra:
                    await conn.execute(extra.format(t=t))
                t0 = time.perf_counter()
                await conn.execute(f"INSERT INTO {t} ({COLS}) SELECT {COLS} FROM memory_vectors")
                res[k].append(round(1e6 * (time.perf_counter() - t0) / n))
        t0 = time.perf_counter()
        await conn.execute("SELECT sum(length(to_tsvector('english', turn_text)) + length(to_tsvector('english',"
                           " win_text))) FROM memory_vectors")
        tsv = round(1e6 * (time.perf_counter() - t0) / n)
    return {**{k: min(v) for k, v in res.items()}, "to_tsvector_turn_and_win_alone": tsv}


async def main(n: int, threads: int, batch: int) -> dict[str, object]:
    configure_logging("warning")
    turns = synthetic_turns(n, threads=threads)
    return {"bench": "recall_fold_profile", "turns": n, "threads": threads, "batch": batch,
            "per_turn_fold": await statements(turns, batch, True),
            "set_based_fold": await statements(turns, batch, False),
            "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=4000)
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
            print(f"{k:>16}: {v}")
