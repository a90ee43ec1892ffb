"""Tier 1 stands for what the placed turns do not show (issue #27), on the real servers with the offline deriver.

A user's fact and rule are stated in a long thread. While the turns they came from are placed in the context (Tier
3 here), the fact's memory item is not repeated in Tier 1 (neither in the user-memory part nor among the thread's
memories): its tokens go to turns. The rule stays (seed 004 §3: rules are in every prompt). In a thread where those
turns are not placed, the fact comes back in Tier 1 as before.
"""

from __future__ import annotations

import pytest

from memengine.engine.bootstrap import Engine
from tests.conftest import wait_until
from tests.integration.poison import drained

pytestmark = pytest.mark.integration

FILLER = ("Here is a longer note about the weather in Lisbon, number {i}: mild mornings, a breeze from the river, "
          "some clouds over the hills in the afternoon and a clear evening sky over the old town.")


async def _active(engine: Engine, text: str) -> str:
    async def found() -> str | None:
        return await engine.pool.fetchval(
            "SELECT memory_id FROM memory_items WHERE user_id = 'maya' AND status = 'active' AND text ILIKE $1",
            f"%{text}%")

    return str(await wait_until(found, timeout=60, interval=0.05))


def _tier1(ctx) -> str:  # type: ignore[no-untyped-def]
    t1 = [m for m in ctx.messages if m.tier == 1]
    return t1[0].content[0]["text"] if t1 else ""


async def test_items_restating_placed_turns_leave_tier1(engine: Engine) -> None:
    c = engine.client()
    for i in range(40):  # older turns than the budget holds: the context is tiered
        await c.record_turn("maya-long", "assistant", FILLER.format(i=i), user_id="maya")
    rule = await c.record_turn("maya-long", "user", "Please always answer in French.", user_id="maya")
    cats = await c.record_turn("maya-long", "user", "I have two cats named Milo and Otis.", user_id="maya")
    await c.record_turn("maya-long", "assistant", "D'accord.", user_id="maya")
    await drained(engine)
    cats_id, rule_id = await _active(engine, "Milo"), await _active(engine, "French")

    ack = await c.record_turn("maya-long", "user", "What are my cats called?", user_id="maya")
    ctx = await c.context("maya-long", window=2000, after_seq=ack.seq)
    text = _tier1(ctx)
    assert ctx.mode == "tiered" and {cats.event_id, rule.event_id} <= set(ctx.event_ids)
    assert ctx.user_memory is not None and rule_id in ctx.user_memory.memory_ids and "French" in text
    assert cats_id not in ctx.user_memory.memory_ids and "Milo" not in text  # the turn says it, in Tier 3
    assert ctx.tokens["total"] <= ctx.budget.total

    # a new thread of the same user does not hold the turn: the item is Tier 1's to show
    ack = await c.record_turn("maya-new", "user", "What are my cats called?", user_id="maya")
    ctx = await c.context("maya-new", window=2000, after_seq=ack.seq)
    assert ctx.user_memory is not None and cats_id in ctx.user_memory.memory_ids and "Milo" in _tier1(ctx)
