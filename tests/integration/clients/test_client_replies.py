"""Every ``MemoryClient`` method returns its typed Struct from ``engine.wire.replies`` on the real servers (issue #10
§4), and error replies raise the ``RpcError`` of their family (``engine.wire.errors``)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.wire import replies as R
from memengine.engine.wire.errors import InvalidInput, NotFound, RpcError
from memengine.events import ContextWanted
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


async def test_every_client_method_returns_its_reply_struct(engine: Engine, kv_cleanup: None) -> None:
    client = engine.client("acme")
    acks = [await client.record_turn("t", "user", "I prefer aisle seats on long flights", user_id="maya",
                                     session_id="s1"),
            await client.label_thread("t", "Trips"),
            await client.remember("Maya's locker code is 4512", user="maya", thread="t"),
            await client.end_session("t", "s1", user_id="maya")]
    assert all(type(a) is R.Recorded for a in acks)

    async def derived() -> R.MemoriesReply | None:
        mems = await client.memories(user="maya", status="all")
        return mems if mems.memories else None

    mems = await wait_until(derived, timeout=60)
    assert type(mems) is R.MemoriesReply and type(mems.memories[0]) is R.MemoryItem
    memory_id = mems.memories[0].memory_id
    assert type(await client.retract(memory_id, reason="test")) is R.Recorded
    assert type(await client.promote(memory_id)) is R.Recorded

    ctx = await client.context("t", window=8000, after_seq=acks[-1].seq)
    assert type(ctx) is R.ContextResult and type(ctx.budget) is R.Budget and type(ctx.messages[0]) is R.MessageOut
    assert isinstance(ctx.messages[-1].content, list) and ctx.messages[-1].content[0]["type"] == "text"
    hist = await client.history("t")
    assert type(hist) is R.HistoryReply and hist.messages[0].content == ctx.messages[-1].content
    threads = await client.threads()
    assert type(threads) is R.ThreadsReply and type(threads.threads[0]) is R.ThreadInfo
    assert threads.threads[0].label == "Trips"
    chain = await client.audit(memory_id)
    assert type(chain) is R.AuditReply and type(chain.memory) is R.MemoryItem
    assert type(chain.derived_events[0]) is R.AuditEvent
    assert type(await client.profile("maya")) is R.ProfileReply
    assert type(await client.summary("t")) is R.SummaryReply
    assert type(await client.episodes("t")) is R.EpisodesReply
    pad = await client.scratchpad_put("t", "focus", "book the flight")
    assert type(pad) is R.ScratchpadReply and type(pad.entries[0]) is R.ScratchpadEntry and pad.focus
    assert type(await client.scratchpad("t")) is R.ScratchpadReply
    assert (await client.scratchpad_clear("t")).entries == []
    res = await client.recall("aisle seats", sources=["turns", "memories"], status=["all"])
    assert type(res) is R.RecallResult and res.hits and all(type(h) is R.RecallHit for h in res.hits)
    # the client's re-encoding of a typed reply is the server's reply (the CLI's --json output)
    raw = msgspec.json.decode((await engine.nc.request(engine.subjects.rpc("threads"), b'{"tenant":"acme"}')).data)
    assert msgspec.to_builtins(await client.threads()) == raw["result"]

    # pushed context
    received: asyncio.Queue[R.PushedContext] = asyncio.Queue()

    async def listen() -> None:
        async for item in client.subscribe_context("t"):
            await received.put(item)

    task = asyncio.create_task(listen())
    await asyncio.sleep(0.1)
    try:
        ack = await client.record_turn("t", "user", "window or aisle?", want_context=ContextWanted(window=4000))
        pushed = await asyncio.wait_for(received.get(), timeout=10)
        assert type(pushed) is R.PushedContext and pushed.seq == ack.seq and pushed.budget.window == 4000
    finally:
        task.cancel()

    # error replies raise the RpcError of their family
    with pytest.raises(NotFound) as info:
        await client.context("no-such-thread")
    assert isinstance(info.value, RpcError) and info.value.code == "unknown_thread"
    with pytest.raises(InvalidInput):
        await client.request("recall", {"query": ""})
