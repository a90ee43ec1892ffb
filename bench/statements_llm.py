"""Self-statement suite v2 with the LLM deriver against a real model (issue #29 item 4: "tune on dev, report test
only, for both derivers"), on a deterministic sample of one split.

The model is the one CI's LLM-path tests pin (``tests/integration/llm_model``: Qwen2.5-Coder-0.5B-Instruct, Q4 GGUF,
sha256-checked, behind llama.cpp's OpenAI-compatible server from ``xllamacpp``), so the figures are those of the
smallest model a user could run: a floor for the LLM path, not its ceiling. Every user turn is one extraction call
(plus merge decisions and summaries), which on 2 CPU cores is seconds to a minute each: ``--every K`` scores every
K-th case of the split (cases ``0, K, 2K, ...`` in file order, so a re-run scores the same ones). Scored as
``bench/statements_v2.py`` scores the offline deriver (tests/integration/statements_suite.py), and the offline
deriver is run on the same sample in the same process as the yardstick.

    python -m tests.integration.llm_model            # fetch and check the model once
    python bench/statements_llm.py --split test --every 4 [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec
from _common import bench_settings, machine

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from tests.integration import llm_model, statements_suite


async def _run(cases: list[dict[str, Any]], **overrides: object) -> dict[str, Any]:
    t0 = time.perf_counter()
    async with lifespan(bench_settings(**overrides)) as engine:
        res = await statements_suite.run_suite(engine, cases, timeout=24 * 3600.0)
        usage = getattr(engine.enricher.deriver, "usage", None)
    return {"statements": res["by"], "misses": [r for r in res["cases"] if not r["ok"]],
            "usage": msgspec.to_builtins(usage) if usage is not None else None,
            "seconds": round(time.perf_counter() - t0, 1)}


async def main(split: str, every: int, threads: int) -> dict[str, object]:
    """Both derivers on every ``every``-th case of ``split``; the LLM one against llama.cpp with ``threads``."""
    cases = statements_suite.load_split(split)[::every]
    path = llm_model.checked_model()
    if path is None:
        raise SystemExit(f"no checked model at {llm_model.model_dir()}: run `python -m tests.integration.llm_model`")
    offline_res = await _run(cases, deriver="offline")
    # in its own process: llama.cpp computing in this one starves the event loop, and NATS requests time out
    code = ("import sys, time, pathlib; from tests.integration import llm_model; "
            f"s = llm_model.LlamaServer(pathlib.Path({str(path)!r}), threads={threads}); "
            "print(s.url, flush=True); time.sleep(86400)")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL,
                                                cwd=str(Path(__file__).resolve().parents[1]))
    try:
        assert proc.stdout is not None
        url = (await proc.stdout.readline()).decode().strip()
        if not url.startswith("http"):
            raise SystemExit(f"llama.cpp server did not start: {url!r}")
        llm_res = await _run(cases, api_base_url=url, deriver="openai", llm_model="qwen2.5-coder-0.5b",
                             llm_timeout_s=600.0)
    finally:
        proc.kill()
        await proc.wait()
    turns = sum(1 for c in cases for s in c["sessions"] for t in s if t["role"] == "user")
    return {"split": split, "every": every, "cases": len(cases), "user_turns": turns, "model": llm_model.MODEL_FILE,
            "offline": offline_res, "llm": llm_res, "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test"), required=True)
    ap.add_argument("--every", type=int, default=4, help="score every K-th case of the split (default 4)")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = ap.parse_args()
    if args.every < 1:
        ap.error("--every must be >= 1")
    configure_logging("WARNING")
    res = asyncio.run(main(args.split, args.every, args.threads))
    if args.json:
        print(json.dumps(res, indent=2, default=str, ensure_ascii=False))
        sys.exit(0)
    print(f"split {res['split']}, every {res['every']}: {res['cases']} cases, {res['user_turns']} user turns")
    for name in ("offline", "llm"):
        r: Any = res[name]
        print(f" {name} ({r['seconds']} s)")
        for key, b in r["statements"].items():
            print(f"  {key:16s} {b['ok']:3d}/{b['cases']:3d} = {b['fraction']:.3f}")
    print(" llm usage:", json.dumps(res["llm"]["usage"]))  # type: ignore[index]
