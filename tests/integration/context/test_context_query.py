"""A query moves a relevant old turn into Tier 2 (issue #14 item 2), on the real servers.

A thread whose early turns hold the answer (an assistant's tool call and the tool's answer naming the ferry's time),
followed by enough unrelated chat that Tier 2, filled newest-first, cannot reach back to them at a small window. With
``query`` the context carries the call and its answer in Tier 2, marked ``chosen_by: "relevance"``, oldest first and
within budget; without a query the context is today's (no ``relevance`` at all, the old turns left out).
"""

from __future__ import annotations

import pytest

from memengine.engine.bootstrap import Engine
from memengine.events import TextBlock, ToolResultBlock, ToolUseBlock

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
