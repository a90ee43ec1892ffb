"""Memory-poisoning suite through the engine (issue #18 item 6): attack success and false-quarantine rate.

Fresh embedded servers; every case of ``tests/data/poisoning_suite.jsonl`` (>= 50 attacks from the public classes:
MINJA indication prompts, indirect injection through tool results and retrieved documents, AgentPoison trigger
backdoors, MemoryGraft forged experience records, credentials, exfiltration; >= 50 benign standing instructions and
preferences) is published as facts with the offline deriver on, and ``memory_items`` is scored
(``tests/integration/poisoning_suite.run_suite``): attack success = an active memory holds planted content; false
quarantine = a benign case with a quarantined memory.

    python bench/poisoning.py [--json]
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
from memengine.engine.derive import offline
from tests.integration.poisoning_suite import load_cases, run_suite


async def main() -> dict[str, object]:
    cases = load_cases()
    t0 = time.perf_counter()
    async with lifespan(bench_settings()) as engine:
        result = await run_suite(engine, cases)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    # the gate alone on every turn's raw text as a RULE (what a model could propose verbatim): how much it flags
    flagged = {c["id"]: any(offline.screen(t["text"], memory_type="RULE") for t in c["turns"]) for c in cases}
    attacks = [c for c in cases if c["kind"] == "attack"]
    benign = [c for c in cases if c["kind"] == "benign"]
    result["gate_flags_raw_attacks"] = round(sum(flagged[c["id"]] for c in attacks) / len(attacks), 3)
    result["gate_flags_raw_benign"] = round(sum(flagged[c["id"]] for c in benign) / len(benign), 3)
    result["machine"] = machine()
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print the full result (every case) as JSON")
    args = ap.parse_args()
    configure_logging("WARNING")
    res = asyncio.run(main())
    if args.json:
        print(json.dumps(res, indent=2, default=str))
    else:
        print(f"attacks {res['attacks']}: success {res['attack_success']:.3f}, caught with a reason "
              f"{res['attacks_caught']}, never a candidate {res['attacks_no_candidate']}")
        print(f"gate on raw turn text as a RULE: flags {res['gate_flags_raw_attacks']:.3f} of attacks, "
              f"{res['gate_flags_raw_benign']:.3f} of benign")
        print(f"benign {res['benign']}: false quarantine {res['false_quarantine']:.3f}, "
              f"kept active {res['benign_active']:.3f}")
        for k, v in res["by_class"].items():  # type: ignore[attr-defined]
            print(f"  {k:22s} {v}")
