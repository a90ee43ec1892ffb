"""Withdrawn is not forgotten (issue #26 item 6): after the OpenAI Agents session's ``pop_item`` or
``clear_session`` (``TurnsWithdrawn``), every read model that held the withdrawn turns drops them: recall rows (the
turn's own row and its neighbours' windows), the memories derived only from them (retracted, with a reason; not
placed in a new thread's context, not in the profile), the withdrawn source of a memory with other live sources,
episodes and the rolling summary that quoted them, the working-memory focus they set. ``verify`` stays exact and a
clean fold of both streams gives the same tables."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.integrations.openai_agents import MemengineSession
from memengine.engine.ops import rebuild as rb
from memengine.events import TextBlock, TurnRecorded, TurnsWithdrawn, new_event_id
from tests.integration.derive.test_memory_lifecycle import settle
from tests.integration.folds import (
    DERIVED_READ_MODELS,
    clean_fold,
    diff,
    live_and_clean,
    snapshot,
)

pytestmark = pytest.mark.integration

SECRET = "I live in Reykjavik."
OTHER = "I work as a carpenter in my spare time."


async def recall_settled(engine: Engine) -> None:
    """Until the recall rows have folded the whole facts stream."""
    from tests.conftest import wait_until

    last = (await engine.js.stream_info(engine.streams.facts)).state.last_seq

    async def done() -> bool:
        v = await engine.pool.fetchval("SELECT last_seq FROM projection_checkpoints WHERE projection = 'vectors'")
        return (v or 0) >= last

    await wait_until(done, timeout=60)


async def everything_settled(engine: Engine) -> None:
    await settle(engine)
    await recall_settled(engine)


def quoted(text: str, rows: Any) -> bool:
    return text.lower().rstrip(".") in json.dumps(rows, default=str).lower()


async def recalled(engine: Engine, thread: str, query: str) -> list[str]:
    """Every text recall returns for ``query``, thread-scoped and tenant-wide, turns and memories."""
    client = engine.client("acme")
    out = []
    for scope in (thread, None):
        res = await client.recall(query, thread=scope, limit=20, sources=["turns", "memories"])
        out += [h.text for h in res.hits]
    return out


async def assert_rebuilt_equal(engine: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    report = await rb.verify(engine)
    assert report.ok, [(t.table, t.only_live[:1], t.only_fold[:1]) for t in report.tables if not t.ok]
    live, live_recall, clean, clean_recall = await live_and_clean(engine.js, engine.settings, await make_db())
    assert diff(live, clean) == "" and diff(live_recall, clean_recall) == ""
    drv = await snapshot(engine.database_url, DERIVED_READ_MODELS)
    other = await make_db()
    await clean_fold(engine.js, engine.settings, other, name="withdrawn-derived", derived=True)
    assert diff(drv, await snapshot(other, DERIVED_READ_MODELS)) == ""


@pytest.fixture
async def eng(settings: Settings, kv_cleanup) -> Any:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, summary_threshold=2)
    async with lifespan(s) as e:
        yield e


async def test_pop_item_forgets_the_turn_everywhere(eng: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    engine = eng
    client = engine.client("acme")
    session = MemengineSession("trip", client, user_id="maya")
    await session.add_items([{"role": "user", "content": OTHER}, {"role": "assistant", "content": "Nice."},
                             {"role": "user", "content": "Please plan my trip."},
                             {"role": "assistant", "content": "Sure, where to?"},
                             {"role": "assistant", "content": "Tell me where you live."},
                             {"role": "user", "content": SECRET}])
    await client.end_session(session.thread, session.session_id[:1024], user_id="maya")
    await everything_settled(engine)
    # before: the turn reaches recall, a memory, the summary, the episode
    assert any("Reykjavik" in t for t in await recalled(engine, session.thread, "Reykjavik"))
    mems = (await client.memories(user="maya")).memories
    assert any("Reykjavik" in m.text for m in mems)
    assert quoted("Reykjavik", msgspec.to_builtins((await client.episodes(session.thread)).episodes))
    assert quoted("Reykjavik", msgspec.to_builtins((await client.summary(session.thread)).summary))

    assert (await session.pop_item()) == {"role": "user", "content": SECRET}
    await everything_settled(engine)

    assert not any("Reykjavik" in t for t in await recalled(engine, session.thread, "Reykjavik"))
    rows = await engine.pool.fetch("SELECT turn_text, win_text, emb_text FROM memory_vectors")
    assert rows and not quoted("Reykjavik", [dict(r) for r in rows])  # the neighbours' windows too
    active = (await client.memories(user="maya")).memories
    assert not any("Reykjavik" in m.text for m in active)
    assert any("carpenter" in m.text for m in active)  # what was not withdrawn stays
    gone = await engine.pool.fetch("SELECT status, memory_id FROM memory_items WHERE text ILIKE '%Reykjavik%'")
    assert gone and {r["status"] for r in gone} == {"retracted"}
    chain = await client.audit(gone[0]["memory_id"])  # the provenance trail is kept, with the reason
    assert "withdrawn" in json.dumps(msgspec.to_builtins(chain))
    summary = await client.summary(session.thread)
    assert summary.summary is None or not quoted("Reykjavik", msgspec.to_builtins(summary.summary))
    episodes = (await client.episodes(session.thread)).episodes
    assert not quoted("Reykjavik", msgspec.to_builtins(episodes))
    profile = await client.profile("maya")
    assert not quoted("Reykjavik", profile.files)

    # a new thread of the same user: its context places no memory of the withdrawn turn
    await client.record_turn("fresh", "user", "Hello again", user_id="maya")
    await everything_settled(engine)
    ctx = await client.context("fresh", window=8000, query="Where does maya live?")
    assert not quoted("Reykjavik", msgspec.to_builtins(ctx))
    assert quoted("carpenter", msgspec.to_builtins(ctx))
    await assert_rebuilt_equal(engine, make_db)


async def test_clear_session_forgets_every_turn(eng: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    engine = eng
    client = engine.client("acme")
    session = MemengineSession("cleared", client, user_id="maya")
    await session.add_items([{"role": "user", "content": SECRET}, {"role": "assistant", "content": "Cold there."},
                             {"role": "user", "content": "I am allergic to peanuts."},
                             {"role": "assistant", "content": "Noted."}])
    await client.end_session(session.thread, session.session_id[:1024], user_id="maya")
    await everything_settled(engine)
    assert any("Reykjavik" in t for t in await recalled(engine, session.thread, "Reykjavik"))
    assert await engine.pool.fetchval("SELECT count(*) FROM conversation_summaries WHERE summary ILIKE"
                                      " '%Reykjavik%'") == 1
    assert await engine.pool.fetchval("SELECT count(*) FROM episodes WHERE summary ILIKE '%peanut%'") == 1

    await session.clear_session()
    await session.add_items([{"role": "user", "content": "I like green tea."}])  # recorded after the clear: kept
    await everything_settled(engine)

    for word in ("Reykjavik", "peanuts"):
        assert not any(word in t for t in await recalled(engine, session.thread, word)), word
    assert any("green tea" in t for t in await recalled(engine, session.thread, "green tea"))
    active = (await client.memories(user="maya")).memories
    assert not any("Reykjavik" in m.text or "peanut" in m.text for m in active)
    assert await engine.pool.fetchval("SELECT count(*) FROM conversation_summaries WHERE summary ILIKE"
                                      " '%Reykjavik%' OR summary ILIKE '%peanut%'") == 0
    assert await engine.pool.fetchval("SELECT count(*) FROM episodes WHERE summary ILIKE '%Reykjavik%'"
                                      " OR summary ILIKE '%peanut%'") == 0
    await client.record_turn("fresh2", "user", "Hi", user_id="maya")
    await everything_settled(engine)
    ctx = await client.context("fresh2", window=8000, query="peanuts Reykjavik")
    assert not quoted("Reykjavik", msgspec.to_builtins(ctx)) and not quoted("peanut", msgspec.to_builtins(ctx))
    await assert_rebuilt_equal(engine, make_db)


async def test_a_memory_with_a_live_source_keeps_living(eng: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    """The same statement twice: the second is evidence for the first item (``ignore``); withdrawing one of the
    two turns leaves the item active with the other source only."""
    engine = eng
    client = engine.client("acme")
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    ids = [uuid.uuid4(), uuid.uuid4()]
    for i, eid in enumerate(ids):
        await client.publish(TurnRecorded(event_id=eid, tenant_id="acme", thread_id="twice", user_id="maya",
                                          occurred_at=t0 + timedelta(seconds=i), role="user",
                                          content=[TextBlock(text=SECRET)]))
    await everything_settled(engine)
    [item] = await engine.pool.fetch("SELECT memory_id FROM memory_items WHERE text ILIKE '%Reykjavik%'")
    await client.publish(TurnsWithdrawn(event_id=new_event_id(), tenant_id="acme", thread_id="twice",
                                        occurred_at=datetime.now(UTC), event_ids=[ids[0]], reason="undo"))
    await everything_settled(engine)
    row = await engine.pool.fetchrow("SELECT status FROM memory_items WHERE memory_id = $1", item["memory_id"])
    assert row["status"] == "active"
    live = await engine.pool.fetch("SELECT source_event_id FROM memory_item_sources WHERE memory_id = $1"
                                   " AND withdrawn_by IS NULL", item["memory_id"])
    assert [r["source_event_id"] for r in live] == [ids[1]]
    # withdrawing an id of another thread from this one does nothing
    await client.publish(TurnsWithdrawn(event_id=new_event_id(), tenant_id="acme", thread_id="elsewhere",
                                        occurred_at=datetime.now(UTC), event_ids=[ids[1]]))
    await everything_settled(engine)
    assert (await engine.pool.fetchval("SELECT status FROM memory_items WHERE memory_id = $1",
                                       item["memory_id"])) == "active"
    await client.publish(TurnsWithdrawn(event_id=new_event_id(), tenant_id="acme", thread_id="twice",
                                        occurred_at=datetime.now(UTC), event_ids=[ids[1]]))
    await everything_settled(engine)
    assert (await engine.pool.fetchval("SELECT status FROM memory_items WHERE memory_id = $1",
                                       item["memory_id"])) == "retracted"
    await assert_rebuilt_equal(engine, make_db)


async def test_a_withdrawn_task_leaves_the_working_memory(eng: Engine) -> None:
    """The enricher set the thread's focus from a TASK of the turn; popping the turn drops it (NATS KV, and so the
    query handler's mirror of it)."""
    engine = eng
    client = engine.client("acme")
    session = MemengineSession("todo", client, user_id="maya")
    await session.add_items([{"role": "user", "content": "I need to renew my passport by Friday."}])
    await everything_settled(engine)
    assert "passport" in ((await client.scratchpad(session.thread)).focus or "")
    await session.pop_item()
    await everything_settled(engine)
    assert "passport" not in ((await client.scratchpad(session.thread)).focus or "")
    ctx = await client.context(session.thread, window=8000)
    assert not quoted("passport", msgspec.to_builtins(ctx))


async def test_the_belief_a_withdrawn_turn_overturned_comes_back(eng: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    """``I live in Oslo``, then "I moved to Reykjavik" (replace: Oslo superseded), then ``pop_item``: Reykjavik is
    retracted and Oslo is active again, as if the withdrawn turn had never been recorded."""
    engine = eng
    client = engine.client("acme")
    session = MemengineSession("moving", client, user_id="maya")
    await session.add_items([{"role": "user", "content": "I live in Oslo."}])
    await session.add_items([{"role": "user", "content": "I moved to Reykjavik."}])
    await everything_settled(engine)
    [oslo] = await engine.pool.fetch("SELECT memory_id, status FROM memory_items WHERE text ILIKE '%Oslo%'")
    assert oslo["status"] == "superseded"
    await session.pop_item()
    await everything_settled(engine)
    active = [m.text for m in (await client.memories(user="maya")).memories]
    assert any("Oslo" in t for t in active) and not any("Reykjavik" in t for t in active)
    await client.record_turn("elsewhere", "user", "Hello", user_id="maya")
    await everything_settled(engine)
    ctx2 = msgspec.to_builtins(await client.context("elsewhere", window=8000, query="Where do I live?"))
    assert quoted("Oslo", ctx2) and not quoted("Reykjavik", ctx2)
    await assert_rebuilt_equal(engine, make_db)


async def test_a_merged_wording_of_a_withdrawn_turn_is_undone(eng: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    """``I work as a carpenter``, then ``I work as a carpenter in Reykjavik`` (merge: the richer wording wins), then
    ``pop_item``: the item keeps living on the first turn, in the first turn's wording."""
    engine = eng
    client = engine.client("acme")
    session = MemengineSession("merged", client, user_id="maya")
    await session.add_items([{"role": "user", "content": "I work as a carpenter."}])
    await session.add_items([{"role": "user", "content": "I work as a carpenter in Reykjavik."}])
    await everything_settled(engine)
    [item] = await engine.pool.fetch("SELECT memory_id, text FROM memory_items WHERE text ILIKE '%carpenter%'")
    assert "Reykjavik" in item["text"]
    await session.pop_item()
    await everything_settled(engine)
    row = await engine.pool.fetchrow("SELECT status, text FROM memory_items WHERE memory_id = $1", item["memory_id"])
    assert row["status"] == "active" and "carpenter" in row["text"] and "Reykjavik" not in row["text"]
    await client.record_turn("merged2", "user", "Hello", user_id="maya")
    await everything_settled(engine)
    ctx = msgspec.to_builtins(await client.context("merged2", window=8000, query="What is my job?"))
    assert quoted("carpenter", ctx) and not quoted("Reykjavik", ctx)
    await assert_rebuilt_equal(engine, make_db)
