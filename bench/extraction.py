"""Offline extraction coverage of plain self-statements (issue #18 item 5), per class.

Reads ``tests/data/self_statements.jsonl`` (text, class, expected memory type, a key word) and runs each text through
the pure offline extractor and the inbound gate (``tests/unit/self_statement_coverage.py``): coverage of a class =
fraction of its rows that became a correctly typed, readable, active memory (confidence >= 0.8, not quarantined)
holding the key word. Hedged rows ("I think I might ...") are reported as held back (no active memory). No servers.

    python bench/extraction.py [--json] [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine

from tests.unit.self_statement_coverage import load_rows, score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--misses", action="store_true", help="also list the rows that were not covered")
    args = ap.parse_args()
    rows = load_rows()
    t0 = time.perf_counter()
    result = score(rows)
    elapsed = time.perf_counter() - t0
    out = {"bench": "extraction", "rows": len(rows), "overall": result["overall"],
           "classes": {k: v["coverage"] for k, v in sorted(result["classes"].items())},
           "hedged": result["hedged"], "ms_per_row": round(1000 * elapsed / max(1, len(rows)), 3),
           "machine": machine()}
    if args.misses:
        out["misses"] = result["misses"]
    if args.json:
        print(json.dumps(out))
        return
    print(f"self-statements: {result['overall']['covered']}/{result['overall']['n']} covered "
          f"({result['overall']['coverage']:.3f}); hedged held back {result['hedged']['held_back']}/"
          f"{result['hedged']['n']}")
    for k, v in sorted(result["classes"].items()):
        print(f"  {k:14s} {v['covered']:3d}/{v['n']:3d}  {v['coverage']:.3f}")
    for m in out.get("misses", []):
        print("  miss:", m)


if __name__ == "__main__":
    main()
