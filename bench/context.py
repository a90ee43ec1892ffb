"""Context latency over NATS request/reply: one thread of 1,000 turns among 100,000 stored.

Yardstick, same run: a plain core-NATS request/reply to an echo responder (the transport's own round trip).
memengine: ``rpc.context`` for the 1,000-turn thread (window 8,000 and 128,000 tokens), sequential requests from a
separate client connection, timed end to end (request encode -> reply decode).

    python bench/context.py [--turns 100000] [--threads 100] [--requests 2000] [--user-memory-ab] [--trail-ab]
                            [--bulk] [--json]

``--user-memory-ab``: the same requests alternately with and without the user-memory part of Tier 1 (issue #18).
``--trail-ab``: the same requests alternately with the access trail on and off (issue #30: each answer queued and
published on the served stream by the engine's flusher task, in this process, on this event loop; target: p50 and p99
within 5 %), and the served stream's bytes per answer. With ``--bulk`` no projector runs here, so the access fold's
cost is not in it (it runs in the projector process).
``--bulk``: load the turns with ``_bulk.bulk_load`` (the projections' own folds run straight into the read models,
no log; minutes instead of hours for ``--turns 1000000`` on 2 cores) and start the engine without the projector
role; the read models are what the projectors would write. ``loadavg``: the machine's 1-minute load average when
the requests start and end (this machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

import msgspec
import nats
from _common import bench_settings, machine, raw_request_reply_ms, summary, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.ops.publish import publish_all


async def main(turns: int, threads: int, requests: int, user_memory_ab: bool = False,
               bulk: bool = False, trail_ab: bool = False) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings()
    # enricher off: measure the read path; --bulk: no projector either, the read models are loaded directly
    async with lifespan(settings, roles={"query"} if bulk else {"projector", "query"}) as engine:
        t0 = time.perf_counter()
        if bulk:
            from _bulk import bulk_load

            await bulk_load(engine, turns, threads=threads)
        else:
            for start in range(0, turns, 20_000):
                chunk = synthetic_turns(min(20_000, turns - start), threads=threads, start=start)
                pub = await publish_all(engine, chunk, "bench", quiet=True)
            while engine.runner.stats.last_seq < pub["last_seq"]:
                await asyncio.sleep(0.01)
        load_s = time.perf_counter() - t0
        # steady state: the recall runner (its own consumer) must have caught up too, or it competes for the CPU
        while not bulk and engine.recall.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.1)
        load_avg = [round(os.getloadavg()[0], 2)]
        stored = await engine.pool.fetchval("SELECT count(*) FROM messages")
        per_thread = await engine.pool.fetchval("SELECT count(*) FROM messages WHERE thread_id = 'thread-7'")

        nc = await nats.connect(engine.nats_url)
        raw = await raw_request_reply_ms(nc, requests)

        client = MemoryClient(nc, tenant="bench", subject_root=settings.subject_root,
                              stream_prefix=settings.stream_prefix)
        results: dict[str, object] = {}
        for window in (8_000, 128_000):
            lat, size = [], 0
            for _ in range(50):  # warm-up: prepared statements, caches
                await client.context("thread-7", window=window)
            for _ in range(requests):
                t = time.perf_counter()
                ctx = await client.context("thread-7", window=window)
                lat.append((time.perf_counter() - t) * 1000)
            size = len(msgspec.json.encode(ctx))
            results[str(window)] = {"latency_ms": summary(lat), "messages": len(ctx.messages),
                                    "tokens": ctx.tokens["total"], "reply_bytes": size, "mode": ctx.mode}
        if user_memory_ab:
            # issue #18 target: p50 with the user-memory part within 3 ms of the context without it. Every thread
            # here is user u1's, so the part searches the latest 1,000 of u1's 99,000 turns in other threads on
            # every request (no memory items: the enricher is off). Requests alternate on / off so that drift in
            # the machine's load falls on both sides alike.
            for window in (8_000, 128_000):
                lat_on, lat_off = [], []
                placed = None
                for i in range(2 * requests + 100):
                    on = i % 2 == 0
                    engine.service.user_memory = on
                    t = time.perf_counter()
                    ctx = await client.context("thread-7", window=window)
                    if on:
                        placed = ctx.user_memory
                    if i >= 100:
                        (lat_on if on else lat_off).append((time.perf_counter() - t) * 1000)
                engine.service.user_memory = True
                on_s, off_s = summary(lat_on), summary(lat_off)
                results[f"user_memory_ab_{window}"] = {
                    "with_ms": on_s, "without_ms": off_s, "p50_delta_ms": round(on_s["p50"] - off_s["p50"], 3),
                    "user_memory": msgspec.to_builtins(placed)}
        if trail_ab:
            results.update(await _trail_ab(engine, client, requests))
        await nc.close()
        load_avg.append(round(os.getloadavg()[0], 2))
    raw_s = summary(raw)
    return {"bench": "context", "stored_turns": stored, "thread_turns": per_thread, "load_seconds": round(load_s, 1),
            "loader": "bulk (folds straight into the read models)" if bulk else "publish + projector",
            "loadavg": load_avg,
            "raw_request_reply_ms": raw_s, "context": results,
            "p50_ratio_to_raw": {w: round(r["latency_ms"]["p50"] / raw_s["p50"], 1) for w, r in results.items()
                                 if isinstance(r, dict) and "latency_ms" in r},
            "machine": machine()}


async def _trail_ab(engine, client, requests: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Requests alternating trail on / off (``engine.service.trail`` set or not), so drift in the machine's load
    falls on both sides alike; the flusher keeps running throughout."""
    trail = engine.trail
    assert trail is not None, "the access trail is off (MEMENGINE_ACCESS_TRAIL)"
    out: dict[str, object] = {}
    for window in (8_000, 128_000):
        lat_on, lat_off = [], []
        before = (trail.counters.published, trail.counters.bytes)
        for i in range(2 * requests + 100):
            on = i % 2 == 0
            engine.service.trail = trail if on else None
            t = time.perf_counter()
            await client.context("thread-7", window=window)
            if i >= 100:
                (lat_on if on else lat_off).append((time.perf_counter() - t) * 1000)
        engine.service.trail = trail
        await trail.settled()
        published, size = trail.counters.published - before[0], trail.counters.bytes - before[1]
        on_s, off_s = summary(lat_on), summary(lat_off)
        out[f"trail_ab_{window}"] = {
            "on_ms": on_s, "off_ms": off_s,
            "p50_ratio": round(on_s["p50"] / off_s["p50"], 3), "p99_ratio": round(on_s["p99"] / off_s["p99"], 3),
            "served_bytes_per_answer": round(size / published, 1) if published else None,
            "dropped": trail.counters.dropped_full + trail.counters.dropped_failed}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=100)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--user-memory-ab", action="store_true",
                    help="also time each window with and without the user-memory part of Tier 1 (issue #18)")
    ap.add_argument("--trail-ab", action="store_true",
                    help="also time each window with the access trail on and off, alternating (issue #30)")
    ap.add_argument("--bulk", action="store_true",
                    help="load the read models directly with the projections' folds (no log; see _bulk.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(main(args.turns, args.threads, args.requests, args.user_memory_ab, args.bulk,
                              args.trail_ab))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
