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
