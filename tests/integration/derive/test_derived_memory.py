"""Derived memory with provenance on the real servers (offline default): summaries, topics, typed memories,
episodes, audit chains, Tier 1; a rebuild of the derived read models equals the live ones; a re-run of the
enricher publishes nothing twice."""

from __future__ import annotations

import asyncio

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from tests.conftest import LOCOMO_DIR
from tests.integration.folds import DERIVED_READ_MODELS, clean_fold, diff, snapshot

pytestmark = pytest.mark.integration


async def derived_caught_up(engine: Engine, facts_seq: int, timeout: float = 120) -> int:
    """Wait until the enricher has seen ``facts_seq`` and the derived projections folded all it published."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        # the enricher's checkpoint first, the stream's end after: it publishes before it advances, so an end read
        # once it is past facts_seq covers what those facts derived (read the other way round, an event published
        # between the two reads could be missed and this returned before it was folded)
        enr = await engine.pool.fetchval("SELECT last_seq FROM projection_checkpoints WHERE projection = 'enricher'")
        info = await engine.js.stream_info(engine.streams.derived)
        drv = await engine.pool.fetchval(
            "SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])",
            ["summaries", "memory_items", "episodes", "derived_events"])
        if (enr or 0) >= facts_seq and (drv or 0) >= info.state.last_seq:
            return info.state.last_seq
        assert loop.time() < deadline, f"derived memory not caught up: enricher {enr}, derived {drv} vs {facts_seq}"
        await asyncio.sleep(0.05)


@pytest.fixture
async def conv26(engine: Engine) -> tuple[Engine, list, int]:
    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    evs = read_locomo(path, "default")
    pub = await publish_all(engine, evs, "default", quiet=True)
    derived_seq = await derived_caught_up(engine, pub["last_seq"])
    return engine, evs, derived_seq


async def test_summary_topics_episodes_memories_audit(conv26) -> None:  # type: ignore[no-untyped-def]
    engine, evs, _ = conv26
    client = engine.client()
    s = await client.summary("locomo-26")
    assert s.summary and s.summary.message_count >= 30 and s.summary.model.startswith("offline")
    assert len(s.topics) >= 5
    eps = (await client.episodes("locomo-26")).episodes
    assert [e.session_id for e in eps] == [f"s{i}" for i in range(1, 20)]  # one per session
    # 2023 chats: most items' event-time lifetimes have passed; the extraction is checked on all of them
    mems = (await client.memories(user="Caroline", include_expired=True, limit=1000)).memories
    assert len(mems) >= 10 and all(m.sources for m in mems) and all(m.user_id == "Caroline" for m in mems)
    turn_text = {str(e.event_id): e.content[0].text for e in evs if type(e).__name__ == "TurnRecorded"}
    for m in mems[:5]:
        chain = await client.audit(m.memory_id)
        assert chain.memory.memory_id == m.memory_id
        assert chain.derived_events and chain.derived_events[0].type == "MemoriesExtracted"
        for d in chain.derived_events:
            for src in d.sources:
                assert src.text == turn_text[src.event_id]  # resolves to the exact source turn
                assert src.thread == "locomo-26" and src.metadata["dia_id"].startswith("D")

    prof = await client.profile("Caroline", include_expired=True)
    assert prof.files["USER.md"].startswith("# USER.md — Caroline") and prof.memories == len(mems)
    short = prof.files["USER.md"].split("`[")[1][:8]  # a line's short id leads to its audit chain
    assert (await client.audit(short)).memory.memory_id.startswith(short)

    # without a query (query="" turns the live question off) Tier 1 opens with the summary and the topics
    plain = await client.context("locomo-26", window=8000, query="")
    tier1 = [m for m in plain.messages if m.tier == 1]
    assert len(tier1) == 1 and tier1[0].content[0]["text"].startswith("[Conversation Summary]")
    assert "[Recallable Topics]" in tier1[0].content[0]["text"]
    # with one, recalled turns come before the summary and topics (issue #27: they give way when the turns need the
    # room; the user's memory stays)
    ctx = await client.context("locomo-26", window=8000, query="What did Caroline paint?")
    tier1 = [m for m in ctx.messages if m.tier == 1]
    assert len(tier1) == 1 and "<user_memory>" in tier1[0].content[0]["text"]
    assert any(m.chosen_by == "relevance" for m in ctx.messages if m.tier == 2)
    # Tier 1 may take what Tiers 2 and 3 leave, beyond its share (engine.read.context.tier1_room, issue #27 item 1):
    # the bound is the room, not budget.tier1 (a different set of memory texts took 4 tokens more, within the room)
    assert 0 < ctx.tokens["tier1"] <= ctx.budget.total - ctx.tokens["tier2"] - ctx.tokens["tier3"]
    assert ctx.tokens["total"] <= ctx.budget.total


async def test_rebuild_equals_live_and_rerun_publishes_nothing(conv26, make_db) -> None:  # type: ignore[no-untyped-def]
    engine, _, derived_seq = conv26
    live = await snapshot(engine.database_url, DERIVED_READ_MODELS)
    assert live["memory_items"] and live["episodes"] and live["memory_item_sources"]
    clean_dsn = await make_db()
    await clean_fold(engine.js, engine.settings, clean_dsn, name="rebuild-derived", derived=True)
    assert diff(live, await snapshot(clean_dsn, DERIVED_READ_MODELS)) == ""

    # crash-and-redeliver: the enricher forgets its checkpoint and derives everything again
    # (reset first, then stop: the run loop takes the lock again at once and must read the reset checkpoint; it
    # writes none meanwhile, no fact being new. derived_caught_up then waits for the re-derivation to pass the end)
    await engine.pool.execute("UPDATE projection_checkpoints SET last_seq = 0 WHERE projection = 'enricher'")
    await engine.enricher.stop()
    facts = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
    await derived_caught_up(engine, facts)
    info = await engine.js.stream_info(engine.streams.derived)
    assert info.state.last_seq == derived_seq  # every re-derived event was a duplicate: nothing new published
    assert diff(live, await snapshot(engine.database_url, DERIVED_READ_MODELS)) == ""
