"""Derivation throughput (offline default) and LLM calls/tokens per 1,000 turns (OpenAI-compatible path).

1. Offline: LoCoMo-shaped turns (the dev conversations, repeated into fresh threads) through the whole pipeline with
   the enricher on; turns/s until the enricher has processed the last turn and the derived projections folded what
   it published. Yardstick, same run: the same offline functions called directly on the same turns
   (``extract_memories`` per user turn + ``summarize``/``topics`` per 30 messages), no engine around them.
2. LLM: the same pipeline against a local chat-completions server (tests/integration/derive/test_llm_path.FakeLLM);
   reports calls and tokens per 1,000 turns (Graphiti users report tens of thousands of calls for small inputs,
   getzep/graphiti #290).

    python bench/derive.py [--copies 3] [--llm-turns 1000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import bench_settings, machine

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.derive import offline
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from memengine.projections.tokens import count_tokens
from tests.integration.derive.test_llm_path import FakeLLM

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"


def turns_for(copies: int) -> list:
    evs = []
    for c in range(copies):
        for f in sorted(LOCOMO.glob("*.json")):
            evs.extend(read_locomo(f, f"bench{c}"))
    return evs


def raw_offline(evs: list, threshold: int = 30) -> float:
    t0 = time.perf_counter()
    turns = [offline.Turn(event_id=str(e.event_id), seq=i, role=e.role, user_id=e.user_id, text=e.content[0].text,
                          occurred_at=e.occurred_at) for i, e in enumerate(evs) if type(e).__name__ == "TurnRecorded"]
    for t in turns:
        offline.extract_memories([t])
    for i in range(0, len(turns) - threshold + 1, threshold):
        offline.summarize(turns[i:i + threshold], 1000, None, count_tokens=count_tokens)
        offline.topics(turns[i:i + threshold])
    return len(turns) / (time.perf_counter() - t0)


async def pipeline(evs: list, **overrides: object) -> tuple[float, int, object]:
    settings = bench_settings(**overrides)
    async with lifespan(settings) as engine:
        t0 = time.perf_counter()
        pubs = [await publish_all(engine, [e for e in evs if e.tenant_id == t], t, quiet=True)
                for t in sorted({e.tenant_id for e in evs})]
        last = max(p["last_seq"] for p in pubs)
        while engine.enricher.checkpoint < last:
            await asyncio.sleep(0.02)
        while True:
            drv = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
            low = await engine.pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints WHERE projection ="
                                             " ANY($1::text[])", ["summaries", "memory_items", "episodes"])
            if (low or 0) >= drv:
                break
            await asyncio.sleep(0.02)
        dt = time.perf_counter() - t0
        turns = sum(1 for e in evs if type(e).__name__ == "TurnRecorded")
        return turns / dt, drv, getattr(engine.enricher.deriver, "usage", None)


async def main(copies: int, llm_turns: int) -> dict[str, object]:
    configure_logging("error")
    evs = turns_for(copies)
    raw = raw_offline(evs)
    rate, derived, _ = await pipeline(evs)
    llm = FakeLLM()
    try:
        sample = [e for e in turns_for(3)]
        turn_ids = [e for e in sample if type(e).__name__ == "TurnRecorded"][:llm_turns]
        keep = {id(e) for e in turn_ids}
        sample = [e for e in sample if id(e) in keep or type(e).__name__ != "TurnRecorded"]
        n = len(turn_ids)
        _, _, usage = await pipeline(sample, api_base_url=llm.url, deriver="openai", llm_model="fake")
    finally:
        llm.server.shutdown()
    u = msgspec.to_builtins(usage) if usage is not None else {}
    per_k = {k: round(v * 1000 / n, 1) for k, v in u.items() if isinstance(v, int)}
    return {"bench": "derive", "turns": sum(1 for e in evs if type(e).__name__ == "TurnRecorded"),
            "derived_events": derived, "pipeline_turns_per_s": round(rate), "raw_offline_turns_per_s": round(raw),
            "ratio_to_raw": round(rate / raw, 3), "llm_turns": n, "llm_per_1000_turns": per_k,
            "llm_calls_by_task": u.get("by_task"), "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--llm-turns", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(main(args.copies, args.llm_turns))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2, default=str))
