"""Cost of recall's cross-lingual dictionary bridge (issue #28, engine/read/crosslingual.py), in one process:

1. the first load (sha256 check, parse of CC-CEDICT, the reverse index): wall seconds, and the memory the tables hold
   (``tracemalloc``: current and peak, MB) and the process's RSS growth;
2. the translation step per question (``crosslingual.expand``): microseconds p50 / p95 over the recall set's
   questions (Chinese and English) and, given ``--locomo``, English LoCoMo questions, beside the yardstick measured in
   the same run on the same questions: ``segment.lexical_text``, the step recall already took on each question.

    python bench/crosslingual.py [--locomo ../shared/data/locomo-dev/26.json] [--rounds 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, summary

from memengine.engine.read import crosslingual
from memengine.projections.segment import lexical_text

ROOT = Path(__file__).resolve().parents[1]


def _per_call_us(fn, questions: list[str], rounds: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(rounds):
        for q in questions:
            t0 = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t0) * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", action="append", default=[], help="LoCoMo conversation files (English questions)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sets: dict[str, list[str]] = {"zh_recall": [q["question"] for p in sorted((ROOT / "tests/data/zh_recall").glob(
        "*/*.json")) for q in json.loads(p.read_text(encoding="utf-8"))["qa"]]}
    if a.locomo:
        sets["locomo"] = [str(q["question"]) for p in a.locomo for q in json.loads(Path(p).read_text())["qa"]]
    lexical_text("预热")  # the segmenter's own load is not the bridge's
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    on = crosslingual.prepare()
    load_s = time.perf_counter() - t0
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out: dict[str, object] = {"machine": machine(), "bridge_on": on, "load_s_traced": round(load_s, 2),
                              "tables_mb": round(cur / 1e6, 1), "peak_mb": round(peak / 1e6, 1),
                              "rss_growth_mb": round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1e3,
                                                     1)}
    t0 = time.perf_counter()
    crosslingual.load(crosslingual.data_path())  # type: ignore[arg-type]
    out["load_s"] = round(time.perf_counter() - t0, 2)  # untraced: tracemalloc slows allocation
    for name, qs in sets.items():
        bridge = summary(_per_call_us(crosslingual.expand, qs, a.rounds))
        yard = summary(_per_call_us(lexical_text, qs, a.rounds))
        out[name] = {"questions": len(qs), "expand_us": bridge, "lexical_text_us": yard,
                     "ratio_p50": round(bridge["p50"] / yard["p50"], 2)}
    print(json.dumps(out, indent=None if a.json else 1))


if __name__ == "__main__":
    main()
