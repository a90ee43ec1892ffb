"""Context assembly never exceeds its budget and never splits a tool call from its answer (property tests over
random transcripts with thinking and tool blocks; seed 000 §4)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.read.context import Row, assemble, plan_budget, units
from memengine.events import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, TurnRecorded
from memengine.projections import messages
from memengine.projections.ops import FoldConfig, Position

T = datetime(2026, 1, 1, tzinfo=UTC)
CFG = FoldConfig(condensed_tool_max=50)
words = st.text(alphabet="abcdefgh ijk", min_size=0, max_size=300)


@st.composite
def transcripts(draw) -> list[Row]:  # type: ignore[no-untyped-def]
    """Random turns: user text, assistant text/thinking with tool calls answered by tool turns (sometimes late or
    never), built through the real ``messages`` fold so token counts are the stored ones."""
    n = draw(st.integers(min_value=0, max_value=40))
    events: list[TurnRecorded] = []
    call = 0
    for _ in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "tool_pair", "thinking_only"]))
        if kind == "user":
            events.append(("user", [TextBlock(text=draw(words) or "hi")]))
        elif kind == "assistant":
            blocks = [TextBlock(text=draw(words) or "ok")]
            if draw(st.booleans()):
                blocks.insert(0, ThinkingBlock(thinking=draw(words) or "hmm"))
            events.append(("assistant", blocks))
        elif kind == "thinking_only":
            events.append(("assistant", [ThinkingBlock(thinking=draw(words) or "hmm")]))
        else:
            k = draw(st.integers(min_value=1, max_value=3))
            ids = [f"c{call + j}" for j in range(k)]
            call += k
            blocks = [ToolUseBlock(id=i, name="tool", input={"q": draw(words)}) for i in ids]
            if draw(st.booleans()):
                blocks.insert(0, ThinkingBlock(thinking=draw(words) or "hmm"))
            events.append(("assistant", blocks))
            answered = draw(st.integers(min_value=0, max_value=k))
            if answered:
                # answers in one tool turn or split over several
                if draw(st.booleans()):
                    events.append(("tool", [ToolResultBlock(tool_use_id=i, content=draw(words)) for i in ids[:answered]]))
                else:
                    for i in ids[:answered]:
                        events.append(("tool", [ToolResultBlock(tool_use_id=i, content=draw(words))]))
    rows = []
    for seq, (role, blocks) in enumerate(events, start=1):
        ev = TurnRecorded(event_id=uuid.UUID(int=seq), tenant_id="a", thread_id="b", occurred_at=T, role=role,
                          content=blocks)
        a = messages.on_turn_recorded(ev, Position(seq, "s"), CFG)[0].args
        rows.append(Row(seq, str(a[3]), a[4], a[5], a[6], T, a[8], a[9], a[11], a[12],
                        msgspec.json.decode(a[13]), msgspec.json.decode(a[14])))
    # sometimes the window starts after a tool call: its answer is an orphan
    cut = draw(st.integers(min_value=0, max_value=min(3, len(rows))))
    return rows[cut:]


@settings(max_examples=300, deadline=None)
@given(rows=transcripts(), window=st.integers(min_value=0, max_value=6000),
       system=st.integers(min_value=0, max_value=500), recent=st.integers(min_value=0, max_value=12))
def test_never_over_budget_and_pairs_kept(rows: list[Row], window: int, system: int, recent: int) -> None:
    budget = plan_budget(window, system_tokens=system)
    asm = assemble(rows, budget, full_recent_count=recent, complete=True)
    placed = asm.placed
    total = sum(p.tokens for p in placed)
    assert total == asm.tier2_tokens + asm.tier3_tokens
    assert total <= budget.total
    if asm.mode == "tiered":
        assert asm.tier2_tokens <= budget.tier2
        assert asm.tier3_tokens <= budget.tier3
        assert sum(1 for p in placed if p.tier == 3) <= recent
    else:
        assert all(p.tier == 3 for p in placed)
    # order: oldest first, Tier 2 before Tier 3
    assert [p.row.seq for p in placed] == sorted(p.row.seq for p in placed)
    assert [p.tier for p in placed] == sorted(p.tier for p in placed)
    # tool pairs: every answer shown has its call shown
    calls = {c for p in placed for c in p.row.tool_use_ids}
    assert all(r in calls for p in placed for r in p.row.tool_result_ids)
    # Tier 2 content is condensed (no thinking); Tier 3 verbatim
    for p in placed:
        blocks = msgspec.json.decode(p.content)
        if p.tier == 2:
            assert all(b["type"] != "thinking" for b in blocks)
        else:
            assert p.content == p.row.content
    # nothing placed is older than something dropped (contiguous suffix of the transcript)
    if placed:
        first = placed[0].row.seq
        kept = {p.row.seq for p in placed}
        for u in units(rows):
            if all(r.seq >= first for r in u) and not any(r.tool_result_ids and not set(r.tool_result_ids) <= {c for x in u for c in x.tool_use_ids} for r in u):
                for r in u:
                    assert r.seq in kept or (r.tokens_condensed == 0), (r.seq, kept)


@settings(max_examples=100, deadline=None)
@given(rows=transcripts())
def test_everything_fits_means_passthrough(rows: list[Row]) -> None:
    budget = plan_budget(10_000_000)
    asm = assemble(rows, budget, full_recent_count=10, complete=True)
    orphans = len(rows) - sum(len(u) for u in units(rows) if not any(
        r.tool_result_ids and not set(r.tool_result_ids) <= {c for x in u for c in x.tool_use_ids} for r in u))
    if orphans == 0:
        assert asm.mode == "full"
        assert [p.row.seq for p in asm.placed] == [r.seq for r in rows]


def test_budget_matches_seed_000_example() -> None:
    b = plan_budget(128_000, system_tokens=4_200)
    assert (b.margin, b.reserve, b.total) == (12_800, 16_000, 95_000)  # seed 000 §4.1: ~95,000 available
    assert (b.tier1, b.tier2, b.tier3) == (9_500, 33_250, 52_250)
    assert plan_budget(100, system_tokens=1000).total == 0
