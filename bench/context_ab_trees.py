"""Interleaved A/B of the whole context path of two source trees (issue #13 item 3): each tree serves the same
bulk-loaded read models (``_bulk.bulk_load``) from its own process and embedded servers; one driver process sends
``rpc.context`` requests alternately to A and B (raw bytes, no client decode), times them, and checks that the two
replies are byte-identical. Everything the request touches differs between the arms (decoder, service, SQL), while
the machine's load falls on both alike. The raw yardstick is the same driver's request/reply to an echo responder.

    # one shell per tree (PYTHONPATH selects the tree), then the driver (any tree):
    PYTHONPATH=<tree A> python bench/context_ab_trees.py serve /tmp/a.json 100000 100
    PYTHONPATH=<tree B> python bench/context_ab_trees.py serve /tmp/b.json 100000 100
    python bench/context_ab_trees.py drive /tmp/a.json /tmp/b.json 2000 thread-7,thread-8 8000,128000
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
from _common import bench_settings, raw_request_reply_ms, summary


async def serve(info: str, turns: int, threads: int) -> None:
    from _bulk import bulk_load

    from memengine.engine.adapters.logs import configure_logging
    from memengine.engine.bootstrap import lifespan

    configure_logging("warning")
    settings = bench_settings()
    async with lifespan(settings, roles={"query"}) as engine:
        await bulk_load(engine, turns, threads=threads)
        Path(info).write_text(json.dumps({"nats": engine.nats_url, "root": settings.subject_root}))
        while Path(info).exists():  # the driver removes it when done
            await asyncio.sleep(0.5)


async def drive(a: str, b: str, requests: int, threads: list[str], windows: list[int]) -> None:
    arms = []
    for f in (a, b):
        cfg = json.loads(Path(f).read_text())
        arms.append((await nats.connect(cfg["nats"]), f"{cfg['root']}.rpc.context.bench"))
    nc = arms[0][0]

    out: dict[str, object] = {"loadavg_start": os.getloadavg()[0]}
    out["raw_request_reply_ms"] = summary(await raw_request_reply_ms(nc, requests))
    for window in windows:
        for thread in threads:
            body = msgspec.json.encode({"tenant": "bench", "thread": thread, "window": window})
            lat: list[list[float]] = [[], []]
            identical = True
            for i in range(2 * requests + 100):
                side = i % 2
                conn, subject = arms[side]
                t = time.perf_counter()
                reply = (await conn.request(subject, body, timeout=10)).data
                dt = (time.perf_counter() - t) * 1000
                if i >= 100:
                    lat[side].append(dt)
                if i % 2 == 0:
                    first = reply
                else:
                    identical = identical and reply == first
            out[f"{thread}@{window}"] = {"A_ms": summary(lat[0]), "B_ms": summary(lat[1]), "identical": identical,
                                         "reply_bytes": len(reply)}
    out["loadavg_end"] = os.getloadavg()[0]
    for conn, _ in arms:
        await conn.close()
    for f in (a, b):
        Path(f).unlink()
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        asyncio.run(serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    elif len(sys.argv) == 7 and sys.argv[1] == "drive":
        asyncio.run(drive(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(","),
                          [int(w) for w in sys.argv[6].split(",")]))
    else:
        sys.exit(__doc__)
