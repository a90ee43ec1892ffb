"""Where one ``rpc.context`` request's time goes, in one process on bulk-loaded read models (issue #13 item 3): each
stage timed on its own, the stages interleaved request by request so that the machine's load falls on all alike.

Stages: ``window`` (``QueryService._window``: the window statement, asyncpg round trip and records decoded),
``scratch_kv`` (a direct read of the working-memory KV, which context replaces by the in-process mirror once it is
in step), ``service`` (``QueryService.context`` in process), ``handler`` (the RPC handler: request decode, service,
reply encode), ``nats`` (a raw ``nc.request`` to the query handler, no client decode), ``client``
(``MemoryClient.context``, as ``bench/context.py`` times it) and ``echo`` (a plain NATS echo of a reply of the same
size, the transport's own share). The driver shares the process with the engine, as in ``bench/context.py``.

    python bench/context_split.py [turns=100000] [requests=500] [thread=thread-7] [window=8000]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import msgspec
import nats
from _bulk import bulk_load
from _common import bench_settings, summary

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.read.context import plan_budget
from memengine.engine.wire.requests import ContextRequest


async def main(turns: int, requests: int, thread: str, window: int) -> None:
    configure_logging("warning")
    settings = bench_settings()
    async with lifespan(settings, roles={"query"}) as engine:
        await bulk_load(engine, turns, threads=100)
        svc = engine.service
        req = ContextRequest(tenant="bench", thread=thread, window=window)
        budget = plan_budget(window, margin_ratio=settings.margin_ratio, reserve_ratio=settings.output_reserve_ratio)
        body = msgspec.json.encode({"tenant": "bench", "thread": thread, "window": window})
        handler = engine.rpc.methods()["context"]
        nc = await nats.connect(engine.nats_url)
        client = MemoryClient(nc, tenant="bench", subject_root=settings.subject_root,
                              stream_prefix=settings.stream_prefix)
        reply = await handler(body)

        async def echo(m):  # type: ignore[no-untyped-def]
            await m.respond(reply)

        await nc.subscribe("split.echo", cb=echo)
        subject = f"{settings.subject_root}.rpc.context.bench"
        steps = {
            "window": lambda: svc._window(req, budget),
            "scratch_kv": lambda: svc._scratch_lines("bench", thread),
            "service": lambda: svc.context(req),
            "handler": lambda: handler(body),
            "nats": lambda: nc.request(subject, body, timeout=10),
            "client": lambda: client.context(thread, window=window),
            "echo": lambda: nc.request("split.echo", b"x", timeout=10),
        }
        lat: dict[str, list[float]] = {k: [] for k in steps}
        load = [os.getloadavg()[0]]
        for i in range(requests + 50):  # 50 warm-up rounds: prepared statements, caches, the mirror
            for k, fn in steps.items():
                t = time.perf_counter()
                await fn()
                if i >= 50:
                    lat[k].append((time.perf_counter() - t) * 1000)
        load.append(os.getloadavg()[0])
        print(json.dumps({"loadavg": load, "reply_bytes": len(reply), "mirror_ready": svc.working.ready,
                          **{k: summary(v) for k, v in lat.items()}}))
        await nc.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(int(a[0]) if a else 100_000, int(a[1]) if len(a) > 1 else 500,
                     a[2] if len(a) > 2 else "thread-7", int(a[3]) if len(a) > 3 else 8000))
