"""Belief updates (issue #15 item 3): the suite ``tests/data/belief_updates.jsonl`` with the offline deriver and with
the LLM deriver against a scripted OpenAI-compatible server (``tests.integration.derive.test_llm_path.FakeLLM``), on
fresh embedded servers. Per deriver: the fraction of expected beliefs held, the fraction of stale beliefs still active,
the merge decisions that matched, and the seconds the run took.

    python bench/belief_updates.py [--json]
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
from memengine.engine.adapters.settings import Secret
from memengine.engine.bootstrap import lifespan
from tests.integration.belief_suite import load_cases, run_suite, script_llm
from tests.integration.derive.test_llm_path import FakeLLM


async def _run(deriver: str) -> dict[str, object]:
    cases = load_cases()
    llm = FakeLLM() if deriver == "llm" else None
    try:
        if llm is not None:
            script_llm(llm, cases)
            settings = bench_settings(api_base_url=llm.url, api_key=Secret("k"), deriver="openai", llm_model="scripted",
                                      summary_threshold=1000)
        else:
            settings = bench_settings(deriver="offline")
        t0 = time.perf_counter()
        async with lifespan(settings) as engine:
            figures = await run_suite(engine, cases)
        return {"deriver": deriver, **figures, "seconds": round(time.perf_counter() - t0, 1),
                "model_calls": {t: llm.calls.count(t) for t in sorted(set(llm.calls))} if llm else {}}
    finally:
        if llm is not None:
            llm.server.shutdown()
            llm.server.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    configure_logging("warning")
    runs = [asyncio.run(_run(d)) for d in ("offline", "llm")]
    out = {"bench": "belief_updates", "runs": runs, "machine": machine()}
    if args.json:
        print(json.dumps(out))
        return
    for r in runs:
        print(f"{r['deriver']:8} cases {r['cases']}  held {r['held']}/{r['expected_beliefs']}"
              f" ({r['held_fraction']:.3f})"
              f"  stale active {r['stale_active']}/{r['stale_listed']} ({r['stale_fraction']:.3f})"
              f"  decisions {r['decisions_matched']}/{r['decisions']}  {r['seconds']} s"
              + (f"  failures: {r['failures']}" if r["failures"] else ""))


if __name__ == "__main__":
    main()
