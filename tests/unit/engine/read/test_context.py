"""``engine.read.context``: relevant turns before Tier 1's filler (issue #27), as the query service assembles.

The query service assembles with Tier 1's whole share held back, fits Tier 1, and, when the summary and topics (its
filler) took part of it, assembles again with ``tier1_floor`` = what Tier 1 holds without them: the units holding
recalled turns may take Tier 1's share down to that floor, newest-first filler never; Tier 1 is fitted in what is
left (``tier1_room``); a last assembly with what Tier 1 took (``tier1_claim``) keeps every relevant unit and the
budget.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.read.context import Row, assemble, plan_budget, tier1_room
from tests.unit.test_context_property import transcripts_with_query


def _row(seq: int, tokens: int) -> Row:
    return Row(seq, f"e{seq}", "user", None, None, None, "[]", None, tokens, tokens, (), ())


def test_relevant_turns_take_tier1s_share_down_to_its_floor() -> None:
    # 80 turns of 20 tokens, the 70 older ones all recalled: at 2,000 tokens (total 1,550; Tier 1's share 155;
    # Tier 3 10 turns = 200) Tier 1's whole share first leaves relevant turns 1,195 (59 turns); with a floor of 40
    # they may use 1,550 - 200 - 40 = 1,310 (65 turns)
    budget = plan_budget(2000)
    rows = [_row(s, 20) for s in range(1, 81)]
    relevant = list(range(70, 0, -1))
    old = assemble(rows, budget, full_recent_count=10, complete=False, relevant=relevant)
    assert old.mode == "tiered" and old.tier3_tokens == 200 and old.tier2_tokens == 59 * 20
    asm = assemble(rows, budget, full_recent_count=10, complete=False, relevant=relevant, tier1_floor=40)
    assert asm.tier3_tokens == 200 and {p.chosen_by for p in asm.placed if p.tier == 2} == {"relevance"}
    assert asm.tier2_tokens == 65 * 20 and tier1_room(asm, budget) == 1550 - 200 - 65 * 20 >= 40
    # without a query the floor changes nothing: newest-first filler takes only what Tier 1's share leaves
    plain = assemble(rows, budget, full_recent_count=10, complete=False, tier1_floor=40)
    assert plain.tier2_tokens == 59 * 20 and {p.chosen_by for p in plain.placed} == {"recency"}


@settings(max_examples=300, deadline=None)
@given(rq=transcripts_with_query(), window=st.integers(min_value=0, max_value=6000),
       recent=st.integers(min_value=0, max_value=12), floor=st.floats(min_value=0.0, max_value=1.0),
       took=st.floats(min_value=0.0, max_value=1.0))
def test_assemblies_with_a_floor_keep_the_relevant_units_and_the_budget(
        rq: tuple[list[Row], list[int]], window: int, recent: int, floor: float, took: float) -> None:
    """Whatever the floor, and whatever Tier 1 then takes of the room left to it: the filler never passes Tier 1's
    share, the last assembly keeps every relevant row and Tier 3 of the floor's, and Tiers 1-3 stay within the
    budget (never over budget; Tier 3 unchanged and verbatim)."""
    rows, relevant = rq
    budget = plan_budget(window)
    f = int(budget.tier1 * floor)
    first = assemble(rows, budget, full_recent_count=recent, complete=False, relevant=relevant, tier1_floor=f)
    room = tier1_room(first, budget)
    assert first.tier2_tokens + first.tier3_tokens + room <= budget.total
    if first.mode == "tiered":
        assert first.tier2_tokens <= budget.total - first.tier3_tokens - f
        if any(p.tier == 2 and p.chosen_by == "recency" for p in first.placed):
            assert first.tier2_tokens <= budget.total - first.tier3_tokens - budget.tier1
    claimed = int(min(room, budget.tier1) * took)
    last = assemble(rows, budget, full_recent_count=recent, complete=False, relevant=relevant, tier1_claim=claimed)
    assert claimed + last.tier2_tokens + last.tier3_tokens <= budget.total
    rel1 = {p.row.seq for p in first.placed if p.chosen_by == "relevance"}
    rel2 = {p.row.seq for p in last.placed if p.chosen_by == "relevance"}
    assert rel1 <= rel2
    t3 = [p for p in first.placed if p.tier == 3]
    assert t3 == [p for p in last.placed if p.tier == 3] and all(p.content == p.row.content for p in t3)
