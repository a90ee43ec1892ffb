"""Issue #28 (session 17): embedding throughput and query latency of the local embedders, same run.

Imports memengine. Builds the texts the embedder worker embeds (the +-2 window of each turn, ``speaker: text``
lines within a session) from LoCoMo dev conversation 26 (English) and the Chinese recall set's dev split, then for
each embedder named in ``--models`` (``MODEL_ALIASES`` short names; MiniLM first, the yardstick) embeds the English
and the Chinese windows through the engine's ``embed`` (what the worker calls), alternating the models, best of
``--rounds``; then the query path (``embed_query`` where the embedder has one, as recall calls it) on the recall
set's questions: p50 / p95 in ms after a warm-up. Prints one JSON object with the machine's load.

    PYTHONPATH=<dir holding memengine> .venv/bin/python bench/recall_research/embed_speed.py \\
        --models minilm,use,e5,minilm+use,minilm+use+e5 [--english 128] [--chinese 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from memengine.engine.adapters.settings import Settings
from memengine.engine.embedding.models import embedder_for_model

LOCOMO = Path("/work/shared/data/locomo-dev/26.json")
ZH = Path("tests/data/zh_recall/dev")


def windows(conv: dict[str, Any]) -> list[str]:
    """The +-2 window text of every turn of ``conv`` (LoCoMo layout), within its session."""
    out = []
    for key in sorted(k for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
        lines = [f"{t['speaker']}: {t['text']}" for t in conv[key]]
        out += ["\n".join(lines[max(0, i - 2):i + 3]) for i in range(len(lines))]
    return out


async def main(a: argparse.Namespace) -> dict[str, Any]:
    en = windows(json.loads(LOCOMO.read_text()))[:a.english]
    zh_files = sorted(ZH.glob("*.json"))
    zh: list[str] = []
    qs: list[str] = []
    for f in zh_files:
        d = json.loads(f.read_text(encoding="utf-8"))
        zh += windows(d)
        qs += [q["question"] for q in d["qa"]]
    zh = zh[:a.chinese]
    settings = Settings()
    embs = {m: embedder_for_model(settings, m) for m in a.models.split(",")}
    for e in embs.values():  # load every model first (not timed)
        await e.embed(["warm up"])
    best: dict[str, dict[str, float]] = {m: {} for m in embs}
    for _ in range(a.rounds):
        for m, e in embs.items():
            for label, texts in (("english", en), ("chinese", zh)):
                t = time.perf_counter()
                await e.embed(texts)
                rate = len(texts) / (time.perf_counter() - t)
                best[m][label] = max(best[m].get(label, 0.0), round(rate, 1))
    query: dict[str, dict[str, float]] = {}
    for m, e in embs.items():
        one = getattr(e, "embed_query", None)
        lat = []
        for i in range(a.queries + 5):
            t = time.perf_counter()
            await (one(qs[i % len(qs)]) if one is not None else e.embed([qs[i % len(qs)]]))
            lat.append((time.perf_counter() - t) * 1000)
        lat = sorted(lat[5:])
        query[m] = {"p50_ms": round(statistics.median(lat), 1), "p95_ms": round(lat[int(0.95 * len(lat)) - 1], 1)}
    base = best[next(iter(embs))]
    return {"load_1m_before_after": [os.getloadavg()[0]], "cores": os.cpu_count(),
            "texts": {"english": len(en), "chinese": len(zh)}, "texts_per_s": best,
            "ratio_vs_first": {m: {k: round(v / base[k], 2) for k, v in r.items()} for m, r in best.items()},
            "query": query}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="minilm,use,e5")
    ap.add_argument("--english", type=int, default=128)
    ap.add_argument("--chinese", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=60)
    load0 = os.getloadavg()[0]
    out = asyncio.run(main(ap.parse_args()))
    out["load_1m_before_after"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(out))
