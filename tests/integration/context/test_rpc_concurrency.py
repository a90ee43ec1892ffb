"""Issue #17 defect 5: one request must not block context for everyone (real NATS and PostgreSQL).

Before the fix the query handler served each method one request at a time: three ``rpc.context`` requests with a
far-future ``after_seq`` and ``wait: 30`` made every other tenant's context requests time out. Now requests run
concurrently (``engine.read.serving``), a read-your-writes wait holds no worker slot and is bounded per tenant
(``engine.read.rpc.RpcHandlers``), and a per-tenant rate limit is on by default (``MEMENGINE_RPC_RATE``).
"""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.wire.errors import RpcError
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

FAR = 10**12  # a stream sequence nobody will reach during the test


async def _request(engine: Engine, method: str, body: dict, timeout: float) -> dict:  # type: ignore[type-arg]
    msg = await engine.nc.request(engine.subjects.rpc(method), msgspec.json.encode(body), timeout=timeout)
    return msgspec.json.decode(msg.data)


async def test_far_future_waits_do_not_block_other_threads_or_tenants(engine: Engine) -> None:
    other = engine.client("other")
    ack = await other.record_turn("live", "user", "still answered")
    await other.context("live", after_seq=ack.seq)  # projected before the waits start
    waits = [asyncio.create_task(_request(engine, "context", {"tenant": "slow", "thread": "t", "after_seq": FAR,
                                                              "wait": 30}, timeout=40)) for _ in range(3)]
    try:
        await wait_until(lambda: _waiting(engine, 3), timeout=10)
        for tenant, thread in (("other", "live"), ("slow", "t2")):  # another tenant, and the same tenant's other thread
            # answered within the request's 1 s timeout (a blocked handler would raise TimeoutError here)
            reply = await _request(engine, "context", {"tenant": tenant, "thread": thread}, timeout=1.0)
            assert reply["ok"] or reply["error"]["code"] == "unknown_thread", reply
        ctx = await _request(engine, "context", {"tenant": "other", "thread": "live", "after_seq": ack.seq},
                             timeout=1.0)
        assert ctx["ok"] and ctx["result"]["messages"][-1]["content"][0]["text"] == "still answered"
        assert not any(w.done() for w in waits)  # the three are still waiting, not failed
    finally:
        for w in waits:
            w.cancel()


async def _waiting(engine: Engine, n: int) -> bool:
    return engine.service.progress.waiting >= n


async def test_waits_are_bounded_per_tenant(settings: Settings) -> None:
    bounded = msgspec.structs.replace(settings, rpc_waits=2)
    async with lifespan(bounded, roles={"query"}) as engine:
        waits = [asyncio.create_task(_request(engine, "history", {"tenant": "slow", "thread": "t", "after_seq": FAR,
                                                                  "wait": 30}, timeout=40)) for _ in range(2)]
        try:
            await wait_until(lambda: _waiting(engine, 2), timeout=10)
            third = await _request(engine, "context", {"tenant": "slow", "thread": "t", "after_seq": FAR, "wait": 30},
                                   timeout=2.0)
            assert third["ok"] is False and third["error"]["code"] == "rate_limited", third
            # another tenant's waits have their own allowance
            other = await _request(engine, "context", {"tenant": "other", "thread": "t", "after_seq": 0, "wait": 1},
                                   timeout=2.0)
            assert other["error"]["code"] == "unknown_thread", other
        finally:
            for w in waits:
                w.cancel()


async def test_a_wait_that_times_out_answers_stale(engine: Engine) -> None:
    client = engine.client("acme")
    ack = await client.record_turn("t", "user", "hello")
    t0 = time.monotonic()
    ctx = await client.context("t", after_seq=FAR, wait=0.3)
    assert ctx.stale is True and ctx.applied_seq >= ack.seq and time.monotonic() - t0 >= 0.3


def test_rate_limit_is_on_by_default() -> None:
    s = Settings.from_env(env={})
    assert s.rpc_rate > 0 and s.rpc_burst >= s.rpc_rate and s.rpc_workers > 0 and s.rpc_waits > 0


async def test_rate_limit_refuses_a_flood_per_tenant(settings: Settings) -> None:
    # a bucket of 5 that refills one token per 1,000 s: what the handler admits does not depend on how fast the
    # flood runs (the refill arithmetic is tests/unit/engine/read/test_rpc.py, on an injected clock)
    limited = msgspec.structs.replace(settings, rpc_rate=0.001, rpc_burst=5)
    async with lifespan(limited, roles={"query"}) as engine:
        flood = engine.client("flood")

        async def one() -> str:
            try:
                await flood.threads()
                return "ok"
            except RpcError as exc:
                return exc.code

        codes = await asyncio.gather(*(one() for _ in range(20)))
        assert codes.count("ok") == 5 and codes.count("rate_limited") == 15
        assert (await engine.client("quiet").threads()).threads == []  # another tenant is not limited
