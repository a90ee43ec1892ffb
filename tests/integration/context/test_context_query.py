"""A query moves a relevant old turn into Tier 2 (issue #14 item 2), on the real servers.

A thread whose early turns hold the answer (an assistant's tool call and the tool's answer naming the ferry's time),
followed by enough unrelated chat that Tier 2, filled newest-first, cannot reach back to them at a small window. With
``query`` the context carries the call and its answer in Tier 2, marked ``chosen_by: "relevance"``, oldest first and
within budget; without a query the context is today's (no ``relevance`` at all, the old turns left out).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.events import TextBlock, ToolResultBlock, ToolUseBlock, new_event_id
from memengine.events.codec import encode
from memengine.events.derived import SummaryUpdated
from tests.conftest import wait_until
from tests.integration.recall.test_recall import _item, publish_items

pytestmark = pytest.mark.integration

FILLER = ["We talked about the weather in the garden today and the roses are blooming nicely again.",
          "My cousin bought a new red kayak and wants to paddle the lake next weekend with friends.",
          "The bakery on the corner now sells sourdough bread with olives and rosemary on Sundays.",
          "I finally finished the jigsaw puzzle of the mountain village, all two thousand pieces."]


async def test_query_moves_an_old_relevant_turn_into_tier2(engine: Engine) -> None:
    c = engine.client()
    await c.record_turn("trip", "user", "Can you check when the ferry to Tallinn leaves on Friday?", user_id="ann")
    call = await c.record_turn("trip", "assistant", [ToolUseBlock(id="c1", name="timetable",
                                                                   input={"route": "Helsinki-Tallinn"})])
    answer = await c.record_turn("trip", "tool", [ToolResultBlock(
        tool_use_id="c1", content="Ferry Helsinki to Tallinn: Friday departure 07:30 from the West Harbour.")])
    await c.record_turn("trip", "assistant", [TextBlock(text="It leaves at 07:30 from the West Harbour.")])
    last = None
    for i in range(40):
        last = await c.record_turn("trip", "user" if i % 2 == 0 else "assistant", FILLER[i % len(FILLER)],
                                   user_id="ann" if i % 2 == 0 else None)
    assert last is not None
    # recall reads its own read model: wait for it as an agent's recall would
    hits = await c.recall("ferry Tallinn", thread="trip", after_seq=last.seq, k=3)
    assert answer.event_id in {h.event_id for h in hits.hits}

    plain = await c.context("trip", window=1200, query="", after_seq=last.seq)  # no query (None: the live one)
    assert plain.mode == "tiered"
    assert answer.event_id not in plain.event_ids and call.event_id not in plain.event_ids
    assert all(m.chosen_by != "relevance" for m in plain.messages)

    q = "When does the ferry to Tallinn leave?"
    ctx = await c.context("trip", window=1200, query=q, after_seq=last.seq)
    tier2 = [m for m in ctx.messages if m.tier == 2]
    by_id = {m.event_id: m for m in tier2}
    assert answer.event_id in by_id and call.event_id in by_id  # the answer never without its call
    assert by_id[answer.event_id].chosen_by == by_id[call.event_id].chosen_by == "relevance"
    assert [m.seq for m in ctx.messages if m.tier > 1] == sorted(m.seq for m in ctx.messages if m.tier > 1)
    assert [m.chosen_by for m in ctx.messages if m.tier == 3] == ["recency"] * 10  # Tier 3 unchanged by the query
    assert [m.event_id for m in ctx.messages if m.tier == 3] == [m.event_id for m in plain.messages if m.tier == 3]
    # Tier 2 within what Tiers 3 and 1 leave (issue #27 item 1: the budget flows)
    assert ctx.tokens["tier2"] <= ctx.budget.total - ctx.tokens["tier3"] - ctx.tokens["tier1"]
    assert ctx.tokens["total"] <= ctx.budget.total
    assert ctx.tokens["total"] == sum(m.tokens for m in ctx.messages)



async def test_recalled_turns_come_before_tier1s_summary_and_topics(settings: Settings) -> None:
    """Issue #27: with a query, the turns recall ranks for it claim the budget before Tier 1's filler (the thread's
    summary and topics). A thread whose older turns all match the question (more than fit) and whose summary alone
    fills Tier 1's share: the relevant turns placed take more than Tier 3 and Tier 1's whole share leave (before:
    never more, the lower-ranked recalled turns stayed out beside summary lines), the user's rule stays in Tier 1,
    the summary gives way, the whole is within budget and >= 90 % of it. Without a query Tier 1 keeps its share."""
    async with lifespan(settings, roles={"projector", "query"}, embedder=None) as engine:
        c = engine.client(tenant="t27rel")
        last = None
        for i in range(160):
            last = await c.record_turn("beds", "user" if i % 2 == 0 else "assistant",
                                       f"Garden bed {i} gets compost and water on day {i} of the season.",
                                       user_id="maya" if i % 2 == 0 else None)
        assert last is not None
        at = datetime(2026, 11, 20, 9, tzinfo=UTC)
        await publish_items(engine, "t27rel", [_item("rule-brief", "Maya's rule: keep answers short.", typ="RULE",
                                                     importance=0.9)], at=at, thread="beds")
        lines = "\n".join(f"[2026-11-{i + 1:02d}] maya: we planned the orchard, the shed and the pond, week {i}."
                          for i in range(20))
        ev = SummaryUpdated(event_id=new_event_id(), tenant_id="t27rel", thread_id="beds", occurred_at=at,
                            source_event_ids=[new_event_id()], source_seq_range=[1, 100], model="test",
                            prompt_version="t1", summary=lines, message_count=100)
        await engine.js.publish(engine.subjects.derived("t27rel", "beds", "SummaryUpdated"), encode(ev),
                                headers={"Nats-Msg-Id": str(ev.event_id)}, stream=engine.streams.derived)

        async def summarised() -> bool:
            return bool(await engine.pool.fetchval(
                "SELECT 1 FROM conversation_summaries WHERE tenant_id = 't27rel' AND thread_id = 'beds'"))

        await wait_until(summarised)
        question = "Which garden bed gets compost and water?"
        hits = await c.recall(question, thread="beds", after_seq=last.seq, k=100)
        assert len(hits.hits) == 100

        plain = await c.context("beds", window=2000, query="")
        b = plain.budget
        assert "[Conversation Summary]" in plain.messages[0].content[0]["text"]
        assert plain.tokens["tier1"] > b.tier1 // 2  # the summary fills Tier 1's share
        assert plain.tokens["tier2"] <= b.total - plain.tokens["tier3"] - b.tier1

        ctx = await c.context("beds", window=2000, query=question)
        assert ctx.mode == "tiered"
        relevant = sum(m.tokens for m in ctx.messages if m.tier == 2 and m.chosen_by == "relevance")
        assert relevant > b.total - ctx.tokens["tier3"] - b.tier1, (relevant, ctx.tokens, b)
        t1 = ctx.messages[0].content[0]["text"]
        assert ctx.messages[0].tier == 1 and "[Conversation Summary]" not in t1 and "keep answers short" in t1
        assert ctx.user_memory is not None and "rule-brief" in ctx.user_memory.memory_ids
        assert ctx.tokens["total"] == sum(m.tokens for m in ctx.messages) <= b.total
        assert ctx.tokens["total"] >= 0.9 * b.total


async def test_recalled_turns_come_before_the_threads_own_memories(settings: Settings) -> None:
    """Issue #27: with a query, the thread's own memories matching it (Tier 1's ``[Relevant Memories]``: paraphrases
    of the thread's turns, which its recall ranks for the query itself) are filler like the summary and topics. A
    thread whose older turns all match the question (more than fit), no summary, and items of another user of the
    thread matching it: the recalled turns take Tier 1's room down to the user's sure lines (before: the items kept
    their place, the relevant turns stopped at what Tier 3 and the items left), the items give way, the user's rule
    stays, the whole is within budget. A question the turns hardly match leaves the items in Tier 1."""
    async with lifespan(settings, roles={"projector", "query"}, embedder=None) as engine:
        c = engine.client(tenant="t27own")
        last = None
        for i in range(160):
            last = await c.record_turn("beds", "user" if i % 2 == 0 else "assistant",
                                       f"Garden bed {i} gets compost and water on day {i} of the season.",
                                       user_id="maya" if i % 2 == 0 else None)
        assert last is not None
        at = datetime(2026, 11, 20, 9, tzinfo=UTC)
        await publish_items(engine, "t27own", [_item("rule-brief", "Maya's rule: keep answers short.", typ="RULE",
                                                     importance=0.9)], at=at, thread="beds")
        own = [_item(f"bob-{i}", f"Bob brings compost and water for the garden bed number {i} and the shed.",
                     user="bob", typ="FACT") for i in range(5)]
        await publish_items(engine, "t27own", own, at=at, thread="beds")
        question = "Which garden bed gets compost and water?"
        hits = await c.recall(question, thread="beds", after_seq=last.seq, k=100)
        assert len(hits.hits) == 100

        ctx = await c.context("beds", window=2000, query=question)
        b = ctx.budget
        assert ctx.mode == "tiered"
        t1 = ctx.messages[0].content[0]["text"]
        assert ctx.messages[0].tier == 1 and "keep answers short" in t1
        assert "[Relevant Memories]" not in t1 and "Bob brings compost" not in t1, t1
        relevant = sum(m.tokens for m in ctx.messages if m.tier == 2 and m.chosen_by == "relevance")
        assert relevant == ctx.tokens["tier2"] and relevant + ctx.tokens["tier1"] + ctx.tokens["tier3"] <= b.total
        assert ctx.tokens["total"] == sum(m.tokens for m in ctx.messages) >= 0.9 * b.total

        # the shed: in every item, in no turn; recall finds no turn, Tier 2 is newest-first, the items stay
        ctx = await c.context("beds", window=2000, query="Who looks after the shed?")
        t1 = ctx.messages[0].content[0]["text"]
        assert "[Relevant Memories]" in t1 and "Bob brings compost" in t1, t1
        assert "keep answers short" in t1
