"""What the HTTP API (issue #12) adds to a query: the same context request, sequential and warm, over HTTP
(``GET /v1/threads/<thread>/context``) and over NATS (``MemoryClient.context``), p50 / p95 in ms.

Usage (against a running ``MEMENGINE_RPC_RATE=0 memengine up --http-port 8765`` with LoCoMo 26 ingested):
    python bench/http_overhead.py nats://127.0.0.1:4222 [http://127.0.0.1:8765] [thread] [n]
"""

import asyncio
import statistics
import sys
import time

import httpx

from memengine.engine.client.memory_client import MemoryClient


async def main(nats_url: str, base: str, thread: str, n: int) -> None:
    async with httpx.AsyncClient(base_url=base) as h:
        c = await MemoryClient.connect(nats_url)
        calls = {"http": lambda: h.get(f"/v1/threads/{thread}/context", params={"window": 8000}),
                 "nats": lambda: c.context(thread, window=8000)}
        for name, call in calls.items():
            for _ in range(20):
                await call()
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                await call()
                ts.append((time.perf_counter() - t0) * 1000)
            ts.sort()
            print(f"{name}: p50 {statistics.median(ts):.2f} ms  p95 {ts[int(0.95 * n)]:.2f} ms  (n={n})")
        await c.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(a[0], a[1] if len(a) > 1 else "http://127.0.0.1:8765", a[2] if len(a) > 2 else "locomo-26",
                     int(a[3]) if len(a) > 3 else 300))
