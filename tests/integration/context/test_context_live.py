"""The live question by default (issue #27 item 2): a context asked for without a query is asked with the thread's
latest user turn, as an agent asks right after recording the user's message; ``query=""`` or
``MEMORY_CONTEXT_LIVE_QUERY=false`` turns it off; pushed contexts do the same.

The thread: one early user turn holds the answer (a name and a city no other turn mentions), 90 filler turns push it
out of the recent window of a 1,000-token context, and the latest user turn asks about it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.wire.replies import ContextResult, PushedContext
from memengine.events import ContextWanted

pytestmark = pytest.mark.integration

FACT = "My sister Zelda moved to Reykjavik last spring to study glaciers."
QUESTION = "Remind me, which city did Zelda move to?"


async def long_thread(client: MemoryClient, thread: str = "t") -> tuple[str, int]:
    """The early fact, 90 filler turns, then the question: ``(fact event id, last seq)``."""
    fact = await client.record_turn(thread, "user", FACT, user_id="maya")
    for i in range(45):
        await client.record_turn(thread, "user", f"Filler note {i}: the weather was mild and the tea was warm.",
                                 user_id="maya")
        await client.record_turn(thread, "assistant", f"Acknowledged note {i}; anything else about the day?")
    last = await client.record_turn(thread, "user", QUESTION, user_id="maya")
    return fact.event_id, last.seq


def placed(ctx: ContextResult, event_id: str) -> str | None:
    """``chosen_by`` of the message holding ``event_id`` in Tier 2, ``None`` when it is not placed."""
    return next((m.chosen_by for m in ctx.messages if m.event_id == event_id and m.tier == 2), None)


async def test_no_query_means_the_latest_user_turn(engine: Engine) -> None:
    client = engine.client("acme")
    fact, last = await long_thread(client)
    # the context's after_seq waits for the context read models only; Tier 2's relevance reads the recall rows, which
    # their own consumer folds behind them (at load 7 it was 90 turns behind, and the fact was not recallable yet)
    assert (await client.recall("Zelda", thread="t", after_seq=last)).applied_seq >= last
    ctx = await client.context("t", window=1000, after_seq=last)
    assert ctx.mode == "tiered"
    assert placed(ctx, fact) == "relevance", [(m.seq, m.tier, m.chosen_by) for m in ctx.messages]
    # query="" is no query at all: recency only, the early turn stays out
    none = await client.context("t", window=1000, query="")
    assert placed(none, fact) is None and all(m.chosen_by == "recency" for m in none.messages if m.tier > 1)


async def test_pushed_context_asks_the_live_question(engine: Engine) -> None:
    client = engine.client("acme")
    fact, _ = await long_thread(client)
    received: asyncio.Queue[PushedContext] = asyncio.Queue()

    async def listen() -> None:
        async for item in client.subscribe_context("t"):
            await received.put(item)

    task = asyncio.create_task(listen())
    await asyncio.sleep(0.1)
    try:
        ack = await client.record_turn("t", "user", "And what is Zelda studying in Reykjavik?", user_id="maya",
                                       want_context=ContextWanted(window=1000))
        pushed = await asyncio.wait_for(received.get(), timeout=15)
        while pushed.seq < ack.seq:
            pushed = await asyncio.wait_for(received.get(), timeout=15)
    finally:
        task.cancel()
    assert placed(pushed, fact) == "relevance"


@pytest.fixture
async def live_off(settings: Settings) -> AsyncIterator[Engine]:
    async with lifespan(msgspec.structs.replace(settings, context_live_query=False)) as e:
        yield e


async def test_the_setting_turns_it_off(live_off: Engine) -> None:
    client = live_off.client("acme")
    fact, last = await long_thread(client)
    ctx = await client.context("t", window=1000, after_seq=last)
    assert placed(ctx, fact) is None
    asked = await client.context("t", window=1000, query="Zelda Reykjavik")  # an explicit query still counts
    assert placed(asked, fact) == "relevance"
