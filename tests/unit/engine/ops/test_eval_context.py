"""``engine.ops.eval_context``: the evidence fraction, packing, the recent-only baseline and the summary of
`memengine eval context`, on hand-computed cases."""

from __future__ import annotations

import pytest


def test_context_evidence_baselines_and_summary() -> None:
    from memengine.engine.ops.eval_context import fraction, pack, recent_only
    from memengine.engine.ops.eval_context import summarize as ctx_summarize

    newest_first = [("D3:2", 40), ("D3:1", 30), ("D2:9", 50), ("D1:1", 10)]
    assert recent_only(newest_first, 75) == ({"D3:2", "D3:1"}, 70)  # stops at the first turn that does not fit
    assert pack([("D2:9", 50), ("D3:2", 40), ("D1:1", 10), ("D2:9", 50)], 60) == ({"D2:9", "D1:1"}, 60)
    assert fraction({"D1:1", "D2:9"}, ["D2:9", "D5:5"]) == 0.5
    with pytest.raises(ValueError):
        fraction(set(), [])
    out = ctx_summarize([(1, 0.5, 100), (1, 1.0, 300), (4, 0.0, 200)], [10.0, 30.0, 20.0])
    assert out["all"] == 0.5 and out["tokens_used"] == 200.0
    assert out["by_category"] == {"multi-hop": 0.75, "temporal": None, "open-domain": None, "single-hop": 0.0}
    assert out["latency_ms"]["p50"] == 20.0


def test_a_turn_is_credited_when_tier1_quotes_its_sentence() -> None:
    """Issue #27: a turn whose sentence (as a summary quotes it, ``MIN_WORDS`` words or more) the Tier-1 text shows
    verbatim is in the context; a short sentence shared by many turns, or a sentence not shown, credits nothing."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from memengine.engine.derive.offline.structures import Turn
    from memengine.engine.ops.eval_context import present_in, quotable

    t0 = datetime(2023, 5, 8, 13, tzinfo=UTC)
    turns = [Turn("a", 1, "user", "c", "Thanks so much! I went to a support group yesterday and it was powerful.", t0),
             Turn("b", 2, "user", "c", "Thanks so much!", t0),
             Turn("c", 3, "assistant", None, "I painted a lake at sunrise last week with my kids.", t0),
             Turn("d", 4, "tool", None, "I went to a support group on 7 May 2023 and it was powerful.", t0)]
    said = quotable(turns)
    assert set(said) == {"a", "c"}  # "b" says nothing long enough to tell it by; a tool's output is never quoted
    tier1 = ("[Conversation Summary]\n[2023-05-08] Caroline: Thanks so much! I went to a support group on 7 May 2023"
             " and it was powerful.")
    ctx = SimpleNamespace(user_memory=None, messages=[
        SimpleNamespace(tier=1, event_id="", content=[{"type": "text", "text": tier1}]),
        SimpleNamespace(tier=3, event_id="e", content=[{"type": "text", "text": "Hi"}])])
    dia = {"a": "D1:3", "b": "D1:4", "c": "D1:5", "e": "D2:1"}
    assert present_in(ctx, dia, {}, said) == {"D1:3", "D2:1"}
    assert present_in(ctx, dia, {}) == {"D2:1"}  # without the turns' sentences: messages only
