"""A/B in one process (issue #13 item 3): bench/context.py's load, then context requests over NATS alternating an
older window statement without the Tier-1 cache ("before", read from another tree's engine/read/service.py) and the
current path ("after"), replies checked identical. Same load and client in one process, because this machine's noise
moves separate runs 2-3x.

    cd bench && python context_ab.py . 100000 100 /path/to/old/engine/read/service.py 1000
    # argv: bench dir (for _common), stored turns, threads, the old service.py, requests per side
"""
import asyncio
import json
import re
import sys
import time

sys.path.insert(0, sys.argv[1])
import nats
from _common import bench_settings, summary, synthetic_turns

from memengine.engine.adapters.checkpoints import BASE_PROJECTION
from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.ops.publish import publish_all
from memengine.engine.read.progress import CONTEXT_PROJECTIONS

src = open(sys.argv[4]).read()
OLD_SQL = re.search(r'_?CONTEXT_SQL = f"""(.*?)"""', src, re.S).group(1).replace("{BASE_PROJECTION}", BASE_PROJECTION)
OLD_SQL = OLD_SQL.replace("AS applied", "AS applied, NULL::text AS generation")

async def main(turns, threads, requests):
    configure_logging("warning")
    settings = bench_settings()
    out = {"stored_turns": turns, "threads": threads}
    async with lifespan(settings, roles={"projector", "query"}) as engine:
        t0 = time.perf_counter()
        for start in range(0, turns, 20_000):
            pub = await publish_all(engine, synthetic_turns(min(20_000, turns - start), threads=threads, start=start),
                                    "bench", quiet=True)
        while engine.runner.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.05)
        out["load_seconds"] = round(time.perf_counter() - t0, 1)
        while engine.recall.stats.last_seq < pub["last_seq"]:
            await asyncio.sleep(0.1)
        out["thread_turns"] = await engine.pool.fetchval("SELECT count(*) FROM messages WHERE thread_id = 'thread-7'")
        s = engine.service
        new_window, cache_get = s._window, s.tier1_cache.get

        async def old_window(req, budget, tier2=None):
            async with s.pool.acquire() as conn:
                return await conn.fetch(OLD_SQL, req.tenant, req.thread, budget.total,
                                        s.settings.full_recent_count + 1, CONTEXT_PROJECTIONS)

        def mode(after):
            s._window = new_window if after else old_window
            s.tier1_cache.get = cache_get if after else (lambda *a: None)

        nc = await nats.connect(engine.nats_url)
        client = MemoryClient(nc, tenant="bench", subject_root=settings.subject_root,
                              stream_prefix=settings.stream_prefix)
        for window in (8_000, 128_000):
            lat = {False: [], True: []}
            same = True
            for i in range(2 * requests + 100):
                after = i % 2 == 1
                mode(after)
                t = time.perf_counter()
                ctx = await client.context("thread-7", window=window)
                dt = (time.perf_counter() - t) * 1000
                if i >= 100:
                    lat[after].append(dt)
                if i < 2:
                    enc = [m.seq for m in ctx.messages], ctx.tokens
                    if i == 0:
                        first = enc
                    else:
                        same = same and first == enc
            out[str(window)] = {"before_ms": summary(lat[False]), "after_ms": summary(lat[True]),
                                "messages": len(ctx.messages), "tokens": ctx.tokens["total"], "same_reply": same}
        mode(True)
        await nc.close()
    print(json.dumps(out))

asyncio.run(main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])))
