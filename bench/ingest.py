"""Ingest throughput: turns published -> projected into ``messages`` (turns/s), with the raw yardstick.

Yardstick, same run, same servers: plain nats-py ``publish_async`` of the same payloads to a bare JetStream stream
(acks awaited, nothing else). memengine: the same number of turns published through the same pipeline the CLI uses
while the core projector folds them in this process (query handler up, enricher off unless ``--enricher``); the clock
stops when the ``messages`` checkpoint reaches the last sequence. With ``--enricher`` it also reports the offline
derivation throughput (turns/s until the enricher has processed the last turn).

    python bench/ingest.py --turns 50000 [--enricher] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from _common import bench_settings, machine, synthetic_turns
from nats.js.api import StreamConfig

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from memengine.events import encode, msg_id


async def raw_publish_rate(js, payloads: list[tuple[str, bytes, str]], stream: str, subject: str) -> float:  # type: ignore[no-untyped-def]
    await js.add_stream(StreamConfig(name=stream, subjects=[subject + ".>"], duplicate_window=86400))
    t0 = time.perf_counter()
    pending = []
    for subj, data, dedup_id in payloads:
        pending.append(await js.publish_async(subject + "." + subj, data, headers={"Nats-Msg-Id": dedup_id}))
        if len(pending) > 512:
            await pending.pop(0)
    for f in pending:
        await f
    rate = len(payloads) / (time.perf_counter() - t0)
    await js.delete_stream(stream)
    return rate


async def main(n: int, batch: int, enricher: bool) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(batch_size=batch)
    turns = synthetic_turns(n, threads=50)
    roles = {"projector", "query"} | ({"enricher"} if enricher else set())
    async with lifespan(settings, roles=roles) as engine:
        raw = await raw_publish_rate(
            engine.js, [(f"t{i % 50}", d, msg_id(t.tenant_id, t.event_id, d))
                        for i, t in enumerate(turns) for d in (encode(t),)],
            "RAWBENCH", "rawbench")
        t0 = time.perf_counter()
        pub = await publish_all(engine, turns, "bench", quiet=True)
        t_pub = time.perf_counter() - t0
        while engine.runner.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.005)
        t_all = time.perf_counter() - t0
        rows = await engine.pool.fetchval("SELECT count(*) FROM messages")
        derive_rate = None
        if enricher:  # derivation throughput: turns/s until the enricher has seen the last turn
            while engine.enricher.checkpoint < pub["last_seq"]:
                await asyncio.sleep(0.01)
            derive_rate = round(n / (time.perf_counter() - t0))
    assert rows == n, rows
    rate = n / t_all
    return {"bench": "ingest", "turns": n, "batch_size": batch, "enricher_running": enricher,
            "derived_per_s": derive_rate, "raw_publish_per_s": round(raw),
            "memengine_publish_per_s": round(n / t_pub), "memengine_projected_per_s": round(rate),
            "ratio_to_raw": round(rate / raw, 3), "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--enricher", action="store_true", help="also run the enricher (offline derivations)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(main(args.turns, args.batch, args.enricher))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    sys.exit(0)
