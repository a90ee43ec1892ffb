"""Recall reads the access trail (issue #30, seed 002 §4.1 ``_calculate_relevance_score``): an item's recency counts
from its last use, ``greatest(updated_at, last_accessed_at)`` of ``memory_access``, so a memory an answer placed
recently outranks an equally relevant one never placed; an access after ``as_of`` is not known at ``as_of``;
``MEMORY_RECALL_ACCESS_WEIGHT=0`` gives the recency of ``updated_at`` alone. On the real servers."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.read.recall import Weights
from tests.integration.access.test_access_trail import _settled
from tests.integration.poison import drained
from tests.integration.recall.test_recall import _item, publish_items

pytestmark = pytest.mark.integration

TEXT = "Maya prefers aisle seats on long flights"


async def test_recently_served_memory_outranks_an_equally_relevant_one(engine: Engine) -> None:
    c = engine.client("acme")
    old = datetime.now(UTC) - timedelta(days=60)
    # equal BM25 for the question below (b = 0: the extra word of "b-old" changes no score); the RRF tie goes to the
    # first memory id, so "a-old" ranks first while neither was ever served (checked at the end: every recall
    # here is itself served, so the order before any access is read with the access weight 0 and by time travel)
    await publish_items(engine, "acme", [_item("a-old", TEXT), _item("b-old", TEXT + " to Lisbon")], at=old)
    # an answer places "b-old" alone (the served stream records it, the access fold counts it)
    probe = await c.recall("Lisbon", sources=["memories"], k=1)
    assert [h.memory_id for h in probe.hits] == ["b-old"]
    await _settled(engine)
    assert await engine.pool.fetchval("SELECT access_count FROM memory_access WHERE tenant_id = 'acme'"
                                      " AND memory_id = 'b-old'") == 1
    after = await c.recall("aisle seats flights", sources=["memories"], k=2)
    assert [h.memory_id for h in after.hits] == ["b-old", "a-old"]
    by_id = {h.memory_id: h for h in after.hits}
    assert by_id["b-old"].recency > 0.99 and by_id["a-old"].recency == pytest.approx(math.exp(-2), abs=1e-3)
    for h in after.hits:
        assert h.score == pytest.approx(0.6 * h.relevance + 0.2 * h.recency + 0.2 * h.importance, abs=1e-5)
    # time travel: at an as_of before the access, the access is not known yet
    past = await c.recall("aisle seats flights", sources=["memories"], k=2, as_of=datetime.now(UTC) - timedelta(days=1))
    assert [h.memory_id for h in past.hits] == ["a-old", "b-old"]
    assert past.hits[1].recency == pytest.approx(math.exp(-59 / 30), abs=1e-3)
    # the setting: weight 0 reads updated_at alone (the order before the access trail)
    engine.service.recaller.weights = Weights.parse("0.6,0.2,0.2", 30.0, access=0.0)
    off = await c.recall("aisle seats flights", sources=["memories"], k=2)
    assert [h.memory_id for h in off.hits] == ["a-old", "b-old"]


async def test_memory_recall_order_changes_after_a_context_placed_one_memory(engine: Engine) -> None:
    """A context's user-memory part places Maya's item, not Bob's equally relevant one; tenant-wide recall then
    ranks Maya's first (before any access, Bob's wins the RRF tie by memory id)."""
    c = engine.client("acme")
    old = datetime.now(UTC) - timedelta(days=60)
    await publish_items(engine, "acme", [_item("a-bob", TEXT, user="bob")], at=old)
    await publish_items(engine, "acme", [_item("b-maya", TEXT + " to Lisbon")], at=old)
    await c.record_turn("maya-chat", "user", "Hello there.", user_id="maya")
    await drained(engine)
    ctx = await c.context("maya-chat", query="aisle seats flights")
    assert ctx.user_memory is not None and "b-maya" in ctx.user_memory.memory_ids
    assert "a-bob" not in ctx.user_memory.memory_ids
    await _settled(engine)
    res = await c.recall("aisle seats flights", sources=["memories"], k=2)
    assert [h.memory_id for h in res.hits] == ["b-maya", "a-bob"]
    past = await c.recall("aisle seats flights", sources=["memories"], k=2, as_of=datetime.now(UTC) - timedelta(days=1))
    assert [h.memory_id for h in past.hits] == ["a-bob", "b-maya"]
