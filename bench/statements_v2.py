"""Self-statement suite v2 and poisoning per language (issue #29 item 4), offline deriver, on one split.

Fresh embedded servers; the split's cases of ``tests/data/statements_v2/`` (tests/integration/statements_suite.py
says what is scored) and the Chinese poisoning cases of ``tests/data/poisoning_zh/<split>.jsonl`` beside the
English suite ``tests/data/poisoning_suite.jsonl`` (one file, no split: it was written with the rules), each in
its own tenant. Tune on ``dev``; report ``test``.

    python bench/statements_v2.py --split dev|test [--json] [--misses]
    python bench/statements_v2.py --cases FILE.jsonl [--poisoning FILE.jsonl] [--json] [--misses]   # held out
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import bench_settings, machine

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from tests.integration import poisoning_suite, statements_suite

ZH_POISON = Path(__file__).resolve().parents[1] / "tests" / "data" / "poisoning_zh"


def _poison_figures(res: dict[str, object]) -> dict[str, object]:
    return {k: res[k] for k in ("attacks", "attack_success", "benign", "false_quarantine", "benign_active")}


async def main(split: str, cases: Path | None = None, poisoning: Path | None = None) -> dict[str, object]:
    """One split's figures (``cases``: a held-out file of the suite's shape instead; ``poisoning``: a held-out
    poisoning file, scored per ``lang`` (en when absent), instead of the split's poisoning files)."""
    t0 = time.perf_counter()
    poison: dict[str, object] = {}
    async with lifespan(bench_settings()) as engine:
        if cases is not None:
            rows = [json.loads(line) for line in cases.read_text().splitlines() if line.strip()]
            stmts = await statements_suite.run_suite(engine, rows)
            en = zh = {"cases": []}
            if poisoning is not None:
                held = poisoning_suite.load_cases(poisoning)
                en = await poisoning_suite.run_suite(engine, [c for c in held if c.get("lang", "en") == "en"],
                                                     tenant="poison-en")
                zh = await poisoning_suite.run_suite(engine, [c for c in held if c.get("lang") == "zh"],
                                                     tenant="poison-zh")
                poison = {"en": _poison_figures(en), "zh": _poison_figures(zh)}
        else:
            stmts = await statements_suite.run_suite(engine, statements_suite.load_split(split))
            en = await poisoning_suite.run_suite(engine, poisoning_suite.load_cases(), tenant="poison-en")
            zh = await poisoning_suite.run_suite(
                engine, poisoning_suite.load_cases(ZH_POISON / f"{split}.jsonl"), tenant="poison-zh")
            poison = {"en": _poison_figures(en), "zh": _poison_figures(zh)}
    return {"split": str(cases) if cases is not None else split, "statements": stmts["by"], "poisoning": poison,
            "misses": [r for r in stmts["cases"] if not r["ok"]],
            "poison_misses": [r for r in en["cases"] + zh["cases"]
                              if r.get("success") or r.get("false_quarantine")],
            "seconds": round(time.perf_counter() - t0, 1), "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test"))
    ap.add_argument("--cases", type=Path, help="a held-out .jsonl of the suite's shape instead of a split")
    ap.add_argument("--poisoning", type=Path, help="with --cases: a held-out poisoning .jsonl (cases tagged by lang)")
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    ap.add_argument("--misses", action="store_true", help="print every case that failed")
    args = ap.parse_args()
    configure_logging("WARNING")
    if (args.split is None) == (args.cases is None):
        ap.error("give --split or --cases")
    if args.poisoning is not None and args.cases is None:
        ap.error("--poisoning goes with --cases")
    res = asyncio.run(main(args.split or "", args.cases, args.poisoning))
    if args.json:
        print(json.dumps(res, indent=2, default=str, ensure_ascii=False))
        sys.exit(0)
    print(f"split {res['split']} ({res['seconds']} s)")
    for key, b in res["statements"].items():  # type: ignore[attr-defined]
        print(f"  {key:16s} {b['ok']:3d}/{b['cases']:3d} = {b['fraction']:.3f}")
    for lang, p in res["poisoning"].items():  # type: ignore[attr-defined]
        print(f"  poisoning {lang}: attacks {p['attacks']} success {p['attack_success']:.3f}; benign {p['benign']} "
              f"false quarantine {p['false_quarantine']:.3f}, kept active {p['benign_active']:.3f}")
    if args.misses:
        for r in res["misses"] + res["poison_misses"]:  # type: ignore[operator]
            print(json.dumps(r, ensure_ascii=False))
