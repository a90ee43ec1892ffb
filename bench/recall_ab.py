"""Thread-scoped recall A/B in one process (issue #13 item 4), on the rows bench/recall.py loaded (DATABASE_URL of
that run): the general statement (``recall_sql(thread=True)``, what main ran) against ``recall_thread`` — end to end
through ``Recaller.recall`` with the query embedding (no NATS), plus the query embedding alone and each statement
alone with a precomputed vector, alternated request by request (this machine's noise moves separate runs 2-3x),
every pair of replies checked identical (seq and score of each hit).

    cd bench && DATABASE_URL=... python recall_ab.py [--requests 200] [--json]

Variants: ``e2e_general`` (``Recaller.recall`` with ``thread_plan = False``: embed, then the general statement),
``e2e_thread`` (``Recaller.recall`` as now: embed, then ``thread_sql``); ``embed_only``; ``sql_general`` /
``sql_thread`` (the statement alone, vector precomputed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
from _common import machine, percentile

from memengine.engine.embedding.models import MiniLMEmbedder, vec_literal
from memengine.engine.ops.eval_locomo import questions
from memengine.engine.read import recall_thread
from memengine.engine.read.recall import TURN_IMPORTANCE, Recaller, keywords, recall_sql
from memengine.engine.wire.requests import RecallRequest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"


async def main(requests: int, tenant: str) -> dict[str, Any]:
    pool = await asyncpg.create_pool(os.environ["DATABASE_URL"], min_size=2, max_size=2)
    threads = [r[0] for r in await pool.fetch(
        "SELECT DISTINCT thread_id FROM memory_vectors WHERE tenant_id = $1", tenant)]
    qs = [q for f in ("26.json", "30.json") for _c, q, _e in questions(json.loads((DATA / f).read_text()))]
    emb = MiniLMEmbedder()
    await emb.embed_query("warm up")
    general = Recaller(pool, emb, 10)
    general.thread_plan = False
    current = Recaller(pool, emb, 10)
    table = await current._emb_table()
    statements = {"general": recall_sql(table, True), "thread": recall_thread.thread_sql(table)}
    vec: dict[str, str] = {}

    def sql(which: str) -> Callable[[RecallRequest], Awaitable[Any]]:
        async def run(req: RecallRequest) -> Any:
            return await pool.fetch(statements[which], req.tenant, req.thread, None, None, None, req.query,
                                    vec[req.query], 10,
                                    datetime.now(UTC), [1.0, 0.0, 0.0], 30.0, TURN_IMPORTANCE)
        return run

    async def embed_only(req: RecallRequest) -> None:
        vec[req.query] = vec_literal(await emb.embed_query(keywords(req.query)))

    runs: dict[str, Callable[[RecallRequest], Awaitable[Any]]] = {
        "e2e_general": lambda r: general.recall(r, 0), "e2e_thread": lambda r: current.recall(r, 0),
        "embed_only": embed_only,
        "sql_general": sql("general"), "sql_thread": sql("thread")}
    lat: dict[str, list[float]] = {k: [] for k in runs}
    rnd = random.Random(7)
    names = list(runs)
    mismatches = 0
    for i in range(requests):
        req = RecallRequest(tenant=tenant, query=qs[i % len(qs)], thread=rnd.choice(threads), k=10)
        await embed_only(req)
        out = {}
        for name in (names if i % 2 else names[:2][::-1] + names[2:][::-1]):
            t = time.perf_counter()
            out[name] = await runs[name](req)
            lat[name].append((time.perf_counter() - t) * 1000)
        a = [(h.seq, h.score) for h in out["e2e_general"].hits]
        b = [(h.seq, h.score) for h in out["e2e_thread"].hits]
        c = [(r["seq"], round(float(r["score"]), 6)) for r in out["sql_thread"]]
        mismatches += not (a == b == c)
    await pool.close()
    res: dict[str, Any] = {"machine": machine(), "load_avg": os.getloadavg(), "requests": requests,
                           "threads": len(threads), "mismatches": mismatches}
    for k, v in lat.items():
        x = v[5:]  # the first requests prepare statements and warm caches
        res[k] = {"p50": round(statistics.median(x), 2), "p95": round(percentile(x, 95), 2)}
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--tenant", default="bench")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.requests, a.tenant)), indent=None if a.json else 2))
