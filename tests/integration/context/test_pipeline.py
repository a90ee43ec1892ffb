"""Publish -> projected -> context, on the real servers: read-your-writes, dedup, history, threads, pushed context."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.bootstrap import Engine
from memengine.events import (
    ContextWanted,
    SessionEnded,
    TextBlock,
    ThinkingBlock,
    ThreadLabelled,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    encode,
    new_event_id,
)

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def turn(thread: str, i: int, text: str, role: str = "user", tenant: str = "default", **kw) -> TurnRecorded:  # type: ignore[no-untyped-def]
    return TurnRecorded(event_id=kw.pop("event_id", new_event_id()), tenant_id=tenant, thread_id=thread,
                        occurred_at=T0 + timedelta(seconds=i), role=role, content=kw.pop("content", None)
                        or [TextBlock(text=text)], user_id=kw.pop("user_id", "maya"), **kw)


async def count(engine: Engine, sql: str, *args: object) -> int:
    return int(await engine.pool.fetchval(sql, *args))


async def test_publish_projected_context_read_your_writes(engine: Engine) -> None:
    client = engine.client("acme")
    await client.publish(ThreadLabelled(event_id=new_event_id(), tenant_id="acme", thread_id="t1",
                                        occurred_at=T0, label="Trip planning"))
    last = None
    for i in range(12):
        last = await client.record_turn("t1", "user" if i % 2 == 0 else "assistant", f"message number {i}",
                                        user_id="maya", occurred_at=T0 + timedelta(minutes=i))
    assert last is not None and not last.duplicate
    ctx = await client.context("t1", window=128_000, after_seq=last.seq)
    assert ctx.stale is False
    assert ctx.applied_seq >= last.seq
    assert ctx.mode == "full"  # everything fits: passed through untouched (seed 000 §3.2)
    texts = [m.content[0]["text"] for m in ctx.messages]
    assert texts == [f"message number {i}" for i in range(12)]
    assert ctx.event_ids[-1] == last.event_id
    assert ctx.tokens["total"] <= ctx.budget.total

    threads = await client.threads()
    assert [t.thread for t in threads.threads] == ["t1"]
    assert threads.threads[0].label == "Trip planning"
    assert threads.threads[0].message_count == 12
    assert threads.threads[0].last_active_at.startswith("2026-03-02T09:11")

    hist = await client.history("t1", limit=5)
    assert [m.content[0]["text"] for m in hist.messages] == [f"message number {i}" for i in range(5)]
    nxt = await client.history("t1", limit=100, from_seq=hist.next_from_seq)
    assert len(nxt.messages) == 7 and nxt.next_from_seq is None


async def test_small_window_tiers_and_condensing(engine: Engine) -> None:
    client = engine.client()
    long_output = "row " * 400
    seq = 0
    for i in range(30):
        await client.record_turn("t2", "user", f"question {i} " + "words " * 30,
                                 occurred_at=T0 + timedelta(seconds=3 * i))
        await client.record_turn("t2", "assistant", [ThinkingBlock(thinking="pondering " * 80),
                                                     ToolUseBlock(id=f"call{i}", name="run_sql", input={"q": i})],
                                 occurred_at=T0 + timedelta(seconds=3 * i + 1))
        r = await client.record_turn("t2", "tool", [ToolResultBlock(tool_use_id=f"call{i}", content=long_output)],
                                     occurred_at=T0 + timedelta(seconds=3 * i + 2))
        seq = r.seq
    ctx = await client.context("t2", window=8000, after_seq=seq)
    assert ctx.mode == "tiered"
    b, t = ctx.budget, ctx.tokens
    # Tier 3 within its share; Tier 2 takes what Tiers 3 and 1 leave (issue #27 item 1)
    assert t["tier2"] <= b.total - t["tier3"] - t["tier1"] and t["tier3"] <= b.tier3 and t["total"] <= b.total
    tier3 = [m for m in ctx.messages if m.tier == 3]
    tier2 = [m for m in ctx.messages if m.tier == 2]
    assert 0 < len(tier3) <= engine.settings.full_recent_count
    assert tier2, "older messages should appear condensed"
    assert ctx.messages[-1].seq == seq  # ends with the last turn
    for m in tier2:
        kinds = [blk["type"] for blk in m.content]
        assert "thinking" not in kinds
        for blk in m.content:
            if blk["type"] == "tool_result":
                assert blk["content"].endswith("... (truncated)")
                assert len(blk["content"]) == engine.settings.condensed_tool_max + len("... (truncated)")
    # never a tool_result without its tool_use in the context
    calls = {blk["id"] for m in ctx.messages for blk in m.content if blk["type"] == "tool_use"}
    answers = {blk["tool_use_id"] for m in ctx.messages for blk in m.content if blk["type"] == "tool_result"}
    assert answers <= calls
    seqs = [m.seq for m in ctx.messages]
    assert seqs == sorted(seqs)


async def test_duplicate_publish_changes_nothing(engine: Engine) -> None:
    client = engine.client()
    ev = turn("dup", 0, "only once")
    first = await client.publish(ev)
    again = await client.publish(ev)  # inside the dedup window: the server drops it
    assert not first.duplicate and again.duplicate and again.seq == first.seq
    # A repeat after the window (simulated: another Nats-Msg-Id) reaches the log but changes no read model.
    subject = engine.subjects.fact("default", "dup", "TurnRecorded")
    ack = await engine.js.publish(subject, encode(ev), headers={"Nats-Msg-Id": "late-" + str(ev.event_id)})
    assert ack.seq > first.seq
    after = await client.record_turn("dup", "user", "second message")
    ctx = await client.context("dup", after_seq=after.seq)
    assert [m.content[0]["text"] for m in ctx.messages] == ["only once", "second message"]
    assert await count(engine, "SELECT message_count FROM thread_activity WHERE thread_id = 'dup'") == 2
    assert await count(engine, "SELECT count(*) FROM messages WHERE thread_id = 'dup'") == 2


async def test_session_end_and_thread_delete(engine: Engine) -> None:
    client = engine.client()
    await client.record_turn("gone", "user", "hello", session_id="s1")
    r = await client.publish(SessionEnded(event_id=new_event_id(), tenant_id="default", thread_id="gone",
                                          occurred_at=T0 + timedelta(hours=1), session_id="s1"))
    ctx = await client.context("gone", after_seq=r.seq)
    assert len(ctx.messages) == 1
    assert await count(engine, "SELECT sessions_ended FROM thread_activity WHERE thread_id = 'gone'") == 1
    from memengine.events import ThreadDeleted

    d = await client.publish(ThreadDeleted(event_id=new_event_id(), tenant_id="default", thread_id="gone",
                                           occurred_at=T0 + timedelta(hours=2)))
    from memengine.engine.wire.errors import RpcError

    with pytest.raises(RpcError) as info:
        await client.context("gone", after_seq=d.seq)
    assert info.value.code == "unknown_thread"
    assert await count(engine, "SELECT count(*) FROM messages WHERE thread_id = 'gone'") == 0


async def test_pushed_context(engine: Engine) -> None:
    client = engine.client("push")
    received: asyncio.Queue = asyncio.Queue()

    async def listen() -> None:
        async for item in client.subscribe_context("p1"):
            await received.put(item)

    task = asyncio.create_task(listen())
    await asyncio.sleep(0.1)  # subscription registered before the turn is published
    try:
        r = await client.record_turn("p1", "user", "what did I say about seats?",
                                     want_context=ContextWanted(window=4000, query="seats"))
        pushed = await asyncio.wait_for(received.get(), timeout=10)
        assert pushed.seq == r.seq
        assert pushed.thread == "p1" and pushed.budget.window == 4000
        assert pushed.messages[-1].event_id == r.event_id
    finally:
        task.cancel()


async def test_tenants_are_isolated(engine: Engine) -> None:
    a, b = engine.client("tenant-a"), engine.client("tenant-b")
    await a.record_turn("shared-name", "user", "secret of a")
    r = await b.record_turn("shared-name", "user", "secret of b")
    ctx_b = await b.context("shared-name", after_seq=r.seq)
    assert [m.content[0]["text"] for m in ctx_b.messages] == ["secret of b"]
    assert [t.thread for t in (await a.threads()).threads] == ["shared-name"]
    ctx_a = await a.context("shared-name")
    assert [m.content[0]["text"] for m in ctx_a.messages] == ["secret of a"]
    assert uuid.UUID(ctx_a.event_ids[0]) != uuid.UUID(ctx_b.event_ids[0])
