"""Pruned turns come back when they are relevant (issue #27 item 0): the seed-000 pruner keeps the transcript small,
recall keeps every pruned turn's text (``memory_vectors``), and query-aware Tier 2 places a recalled turn wherever
it lives, condensed (seed 000 §4.3).

With the engine running as ``up`` runs it (pruner and enricher on), a 100-turn thread is pruned to <= 40 live turns;
its first turn (the answer) is gone from ``messages``. A context asked with the question, and one asked with no
query right after the question was recorded (the live question, issue #27 item 2), place it in Tier 2.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from tests.conftest import wait_until
from tests.integration.derive.test_memory_lifecycle import settle, turn

pytestmark = pytest.mark.integration

FACT = "My grandmother's recipe for quince marmalade uses cardamom and orange peel."


async def test_a_pruned_turn_recalled_for_a_question_is_placed_in_tier2(settings: Settings, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, max_messages_per_thread=40, summary_threshold=10)
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    evs = [turn("long", 0, "user", FACT, t0)]
    evs += [turn("long", i, "user" if i % 2 else "assistant", f"message number {i} about topic{i % 7}",
                 t0 + timedelta(seconds=10 * i)) for i in range(1, 100)]
    async with lifespan(s) as engine:
        await publish_all(engine, evs, "default", quiet=True)
        await settle(engine)
        mark = await engine.pool.fetchval("SELECT through_seq FROM message_prune_marks WHERE thread_id = 'long'")
        fact_id = str(evs[0].event_id)
        assert mark is not None
        assert not await engine.pool.fetchval("SELECT count(*) FROM messages WHERE event_id = $1", evs[0].event_id)

        async def vectors() -> bool:  # recall rows are never pruned (their own consumer: wait for it)
            return await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE thread_id = 'long'") == 100

        await wait_until(vectors, timeout=60)
        client = engine.client()
        question = "What goes into the quince marmalade recipe?"
        hits = await client.recall(question, thread="long", k=3)
        assert fact_id in {h.event_id for h in hits.hits}  # recall finds it ...

        ctx = await client.context("long", window=4000, query=question)  # ... and the context places it
        tier2 = {m.event_id: m for m in ctx.messages if m.tier == 2}
        assert fact_id in tier2, [(m.tier, m.seq, m.chosen_by) for m in ctx.messages]
        m = tier2[fact_id]
        assert m.chosen_by == "relevance" and m.condensed and m.role == "user" and m.user_id == "maya"
        assert m.content[0]["text"] == FACT and m.seq <= mark
        assert [x.seq for x in ctx.messages if x.tier > 1] == sorted(x.seq for x in ctx.messages if x.tier > 1)
        assert ctx.tokens["total"] == sum(x.tokens for x in ctx.messages) <= ctx.budget.total

        # the live question: recorded as the thread's latest user turn, no query given
        ack = await client.record_turn("long", "user", question, user_id="maya")
        live = await client.context("long", window=4000, after_seq=ack.seq)
        assert fact_id in {x.event_id for x in live.messages if x.tier == 2}
        # no query at all: recency only. The live transcript is shorter than 4,000 tokens' budget: the pruned turns
        # fill the rest newest first (the whole thread fits here); at 1,000 the oldest turn stays out
        plain = await client.context("long", window=4000, query="")
        assert {x.chosen_by for x in plain.messages if x.tier > 1} == {"recency"}
        assert fact_id in plain.event_ids and len(plain.event_ids) == 101
        small = await client.context("long", window=1000, query="")
        assert fact_id not in small.event_ids and small.tokens["total"] >= 0.9 * small.budget.total
