"""``engine.ops.eval_locomo``: the recall@k arithmetic of `memengine eval locomo`, on hand-computed cases (the context
evaluation's arithmetic is in test_eval_context.py)."""

from __future__ import annotations

import pytest

from memengine.engine.ops.eval_locomo import (
    distinct_sources,
    percentile,
    questions,
    recall_at,
    split_evidence,
    summarize,
)


def test_split_evidence() -> None:
    assert split_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert split_evidence(["D1:3", "D8:6;D1:3", " D2:1 "]) == ["D1:3", "D8:6", "D2:1"]


def test_recall_at_single_turn_hits() -> None:
    hits = [["D1:1"], ["D1:2"], ["D8:6"], ["D9:17"]]
    ev = split_evidence(["D8:6; D9:17"])
    assert recall_at(hits, ev, 2) == 0.0
    assert recall_at(hits, ev, 3) == 0.5
    assert recall_at(hits, ev, 4) == 1.0
    assert recall_at(hits, ev, 10) == 1.0


def test_multi_turn_hit_contributes_all_its_turns() -> None:
    # the first hit spans three turns: they take three of the k slots, in order
    hits = [["D1:1", "D1:2", "D1:3"], ["D8:6"]]
    assert distinct_sources(hits) == ["D1:1", "D1:2", "D1:3", "D8:6"]
    assert recall_at(hits, ["D8:6"], 3) == 0.0
    assert recall_at(hits, ["D8:6"], 4) == 1.0
    assert recall_at(hits, ["D1:3", "D8:6"], 2) == 0.0
    assert recall_at(hits, ["D1:3", "D8:6"], 3) == 0.5


def test_repeated_sources_count_once() -> None:
    hits = [["D1:1", "D1:2"], ["D1:2", "D1:3"], ["D2:1"]]
    assert distinct_sources(hits) == ["D1:1", "D1:2", "D1:3", "D2:1"]
    assert recall_at(hits, ["D2:1"], 4) == 1.0
    assert recall_at(hits, ["D2:1"], 3) == 0.0


def test_empty_evidence_is_an_error() -> None:
    with pytest.raises(ValueError):
        recall_at([["D1:1"]], [], 5)


def test_questions_filter_and_summary() -> None:
    conv = {"qa": [
        {"question": "a?", "category": 1, "evidence": ["D1:1; D1:2"]},
        {"question": "b?", "category": 2, "evidence": ["D1:3"]},
        {"question": "c?", "category": 5, "evidence": ["D1:3"]},  # adversarial: not asked
        {"question": "d?", "category": 4, "evidence": []},  # no evidence: skipped
    ]}
    qs = questions(conv)
    assert [(c, q) for c, q, _ in qs] == [(1, "a?"), (2, "b?")]
    per_q = [(1, {5: 0.5, 10: 1.0}), (2, {5: 1.0, 10: 1.0})]
    s = summarize(per_q, [5, 10], [10.0, 20.0, 30.0])
    assert s["questions"] == 2
    assert s["recall_at"] == {"5": 0.75, "10": 1.0}
    assert s["by_category"]["multi-hop"] == {"questions": 1, "recall_at": {"5": 0.5, "10": 1.0}}
    assert s["by_category"]["single-hop"]["questions"] == 0
    assert s["latency_ms"]["p50"] == 20.0
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == 10


# -- issue #14: evidence in context ---------------------------------------------------------------------------------
