"""A real long conversation (LoCoMo conv 26) in, tiered context out (issue #2 "Done when")."""

from __future__ import annotations

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from tests.conftest import LOCOMO_DIR

pytestmark = pytest.mark.integration


@pytest.fixture
def conv26() -> list:
    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip(f"LoCoMo dev data not found at {path}")
    return read_locomo(path, "default")


async def test_locomo_26_context_window_8000(engine: Engine, conv26: list) -> None:
    summary = await publish_all(engine, conv26, "default", quiet=True)
    assert summary["published"] == len(conv26) == 439
    again = await publish_all(engine, conv26, "default", quiet=True)
    assert again["published"] == 0 and again["duplicates"] == 439  # re-ingest publishes nothing new

    client = engine.client()
    ctx = await client.context("locomo-26", window=8000, after_seq=summary["last_seq"])
    assert ctx.stale is False and ctx.mode == "tiered"
    b, t = ctx.budget, ctx.tokens
    assert b.total == 8000 - 800 - 1000
    # Tier 3 within its share, the rest of the budget flows to Tiers 2 and 1 (issue #27 item 1)
    assert t["tier3"] <= b.tier3 and t["tier2"] <= b.total - t["tier3"] - t["tier1"]
    assert t["total"] == sum(m.tokens for m in ctx.messages) <= b.total
    assert t["total"] >= 0.9 * b.total, t
    last_turn = [e for e in conv26 if type(e).__name__ == "TurnRecorded"][-1]
    assert ctx.messages[-1].event_id == str(last_turn.event_id)
    assert ctx.messages[-1].content[0]["text"] == last_turn.content[0].text
    tier3 = [m for m in ctx.messages if m.tier == 3]
    assert len(tier3) == 10  # MEMORY_FULL_RECENT_COUNT
    assert all(m.session_id == "s19" for m in tier3)

    # >= 90 % of the budget at every window the thread is longer than, with a query, the live one and none; Tier 2's
    # relevance reads the recall rows, folded by their own consumer behind the context read models (after_seq above)
    assert (await client.recall("support group", thread="locomo-26", after_seq=summary["last_seq"])).applied_seq \
        >= summary["last_seq"]
    for window in (2000, 4000, 8000):
        for query in ("When did Caroline go to the LGBTQ support group?", None, ""):
            c = await client.context("locomo-26", window=window, query=query)
            assert c.mode == "tiered" and 0.9 * c.budget.total <= c.tokens["total"] <= c.budget.total, (
                window, query, c.tokens, c.budget)

    threads = (await client.threads()).threads
    assert threads[0].thread == "locomo-26"
    assert threads[0].message_count == 419 and threads[0].sessions_ended == 19
    assert threads[0].label.startswith("LoCoMo 26: ")
