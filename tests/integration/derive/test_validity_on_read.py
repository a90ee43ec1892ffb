"""Validity applied when read (issue #15 item 2) on the real servers: after ingesting LoCoMo 26 (2023 chats) with no
consolidation run, no read path serves an item whose ``expires_at`` is before the request's ``as_of``: ``memories``,
``profile`` (MEMORY.md / USER.md), recall over memory items and the thread's Tier-1 memories. The expired items are
counted (``expired_left_out``) and shown on request (``include_expired``), never dropped silently. ``--as-of`` before
anything was stored is a clear error that says ``--as-of`` is storage time (it answered ``unknown_thread``)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import rebuild as rb
from tests.integration.derive.test_derived_memory import conv26, derived_caught_up  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


def _lapsed(m: object, as_of: dt.datetime) -> bool:
    exp = getattr(m, "expires_at", None)
    return exp is not None and dt.datetime.fromisoformat(exp) <= as_of


async def test_locomo26_memories_and_profile_leave_out_expired(conv26) -> None:  # noqa: F811 - the parameter is the imported fixture
    engine, _, _ = conv26
    client = engine.client()
    consolidated = await engine.pool.fetchval("SELECT count(*) FROM memory_items WHERE status = 'expired'")
    assert consolidated == 0  # no consolidation ran: only the read can apply the expiry

    as_of = dt.datetime.now(dt.UTC)  # the default as_of is now: the reply's is no earlier
    shown = await client.memories(user="Caroline", limit=1000)
    assert shown.memories and not [m.text for m in shown.memories if _lapsed(m, as_of)]
    every = await client.memories(user="Caroline", limit=1000, include_expired=True)
    lapsed = [m for m in every.memories if _lapsed(m, as_of)]
    # 2023 chats with event-time lifetimes: most items have lapsed; they are counted and shown on request
    assert lapsed and shown.expired_left_out == len(lapsed) == len(every.memories) - len(shown.memories)
    assert every.expired_left_out == 0
    listed = await client.memories(user="Caroline", status="expired", limit=1000)
    assert {m.memory_id for m in listed.memories} == {m.memory_id for m in lapsed}

    # the request's as_of is the clock: just after the earliest item became valid, it had not lapsed yet
    first = min(every.memories, key=lambda m: m.valid_at)
    then = dt.datetime.fromisoformat(first.valid_at) + dt.timedelta(seconds=1)
    back = await client.memories(user="Caroline", limit=1000, as_of=then)
    assert first.memory_id in {m.memory_id for m in back.memories}
    assert not [m for m in back.memories if _lapsed(m, then)]

    prof = await client.profile("Caroline")
    text = prof.files["MEMORY.md"] + prof.files["USER.md"]
    assert prof.memories == len(shown.memories) and prof.expired_left_out == len(lapsed)
    assert not [m.text for m in lapsed if f"[{m.memory_id[:8]}]" in text]
    assert f"{len(lapsed)} expired memories left out" in prof.files["USER.md"]
    full = await client.profile("Caroline", include_expired=True)
    assert all(f"[{m.memory_id[:8]}]" in full.files["USER.md"] + full.files["MEMORY.md"] for m in lapsed
               if m.type in {"PROFILE", "PREFERENCE", "FACT", "EPISODIC", "SKILL", "PATTERN", "TASK"})


async def test_locomo26_recall_and_tier1_leave_out_expired(conv26) -> None:  # noqa: F811 - the parameter is the imported fixture
    engine, _, _ = conv26
    client = engine.client()
    every = await client.memories(user="Caroline", limit=1000, include_expired=True)
    now = dt.datetime.now(dt.UTC)
    gone = next(m for m in every.memories if _lapsed(m, now) and len(m.text.split()) >= 4)

    hits = (await client.recall(gone.text, user="Caroline", sources=["memories"], k=50)).hits
    assert hits and gone.memory_id not in {h.memory_id for h in hits}
    assert not [h.text for h in hits if _lapsed(h, now)]
    old = (await client.recall(gone.text, user="Caroline", sources=["memories"], k=50, include_expired=True)).hits
    assert gone.memory_id in {h.memory_id for h in old}  # the query does find it: only validity left it out

    ctx = await client.context("locomo-26", window=8000, query=gone.text)
    tier1 = "".join(str(b.get("text", "")) for m in ctx.messages if m.tier == 1 for b in m.content)
    assert f"- {gone.text}" not in tier1
    assert not [m.text for m in every.memories if _lapsed(m, now) and f"- {m.text}\n" in tier1 + "\n"]


async def test_as_of_before_the_log_says_storage_time(engine: Engine) -> None:
    from memengine.engine.ops.publish import publish_all
    from memengine.events import TextBlock, TurnRecorded

    ev = TurnRecorded(event_id=uuid.uuid4(), tenant_id="default", thread_id="t-old", role="user", user_id="maya",
                      occurred_at=dt.datetime(2023, 5, 8, tzinfo=dt.UTC), content=[TextBlock(text="I moved to Porto")])
    await publish_all(engine, [ev], "default", quiet=True)
    with pytest.raises(rb.TimeTravelError) as err:
        await rb.resolve_as_of(engine, at=dt.datetime(2023, 7, 1, tzinfo=dt.UTC))  # the turn's event time era
    assert "before anything was stored" in str(err.value) and "storage time" in str(err.value)
    assert err.value.code == "invalid_request"
    with pytest.raises(rb.TimeTravelError, match="in the future"):
        await rb.resolve_as_of(engine, at=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
    point = await rb.resolve_as_of(engine, at=dt.datetime.now(dt.UTC))
    assert point.facts_seq >= 1


async def test_cli_as_of_before_the_log_is_a_clear_error(conv26) -> None:  # noqa: F811 - the parameter is the imported fixture
    """``memengine memories --as-of 2023-07-01`` after importing 2023 chats today: exit 1 with the reason, not
    ``unknown_thread``; ``--include-expired`` and the left-out count reach the CLI."""
    import asyncio
    import json

    from tests.integration.ops.test_cli import run

    engine, _, _ = conv26
    proc = await asyncio.to_thread(run, engine.settings, "memories", "--user", "Caroline", "--as-of", "2023-07-01",
                                   check=False)
    assert proc.returncode == 1 and "storage time" in proc.stderr and "unknown_thread" not in proc.stderr
    assert "invalid_request" in proc.stderr
    shown = json.loads((await asyncio.to_thread(run, engine.settings, "memories", "--user", "Caroline", "-n", "1000",
                                                 "--json")).stdout)
    every = json.loads((await asyncio.to_thread(run, engine.settings, "memories", "--user", "Caroline",
                                                "-n", "1000", "--include-expired", "--json")).stdout)
    assert shown["expired_left_out"] > 0
    assert len(every["memories"]) == len(shown["memories"]) + shown["expired_left_out"]
    print(f"LoCoMo 26, Caroline: {len(shown['memories'])} active, {shown['expired_left_out']} left out as expired")
