"""``engine.read.memories.fit_tier1``: the Tier-1 text within its budget (seed 000 §4.4), and what it gives up first
(issue #27: topics past ``TOPICS_KEPT`` before any summary line)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.read.memories import TOPICS_KEPT, TOPICS_KEPT_NO_QUERY, fit_tier1, topics_kept
from memengine.projections.tokens import MESSAGE_OVERHEAD, count_tokens_lines

LINES = [f"[2023-0{m}-1{m}] Caroline: I went to the {w} in May and bought {m} paintings there." for m, w in
         zip(range(1, 8), ["museum", "lake", "parade", "council", "forest", "market", "school"], strict=True)]
TOPICS = [f"topic{i}" for i in range(20)]


def test_topics_past_the_first_few_go_before_summary_lines() -> None:
    five = fit_tier1("\n".join(LINES), TOPICS[:TOPICS_KEPT], [], 10_000)
    assert five is not None
    # room for every summary line and five topics: that is what is kept of 20 topics (before issue #27 the oldest
    # summary lines went first and all 20 topics stayed)
    assert fit_tier1("\n".join(LINES), TOPICS, [], five[1]) == five
    text, tokens = fit_tier1("\n".join(LINES), TOPICS, [], five[1] - 1) or ("", 0)
    assert tokens < five[1] and LINES[0] not in text and LINES[-1] in text and TOPICS[TOPICS_KEPT - 1] in text


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from(LINES), max_size=7, unique=True),
       topics=st.lists(st.sampled_from(TOPICS), max_size=20, unique=True),
       memories=st.lists(st.sampled_from(["User likes tea.", "User has a dog."]), max_size=2),
       budget=st.integers(min_value=0, max_value=400), keep=st.integers(min_value=0, max_value=TOPICS_KEPT))
def test_tier1_fits_and_keeps_summary_lines_before_extra_topics(lines: list[str], topics: list[str],
                                                                memories: list[str], budget: int, keep: int) -> None:
    out = fit_tier1("\n".join(lines) or None, topics, memories, budget, keep_topics=keep)
    if out is None:
        return
    text, tokens = out
    assert tokens == MESSAGE_OVERHEAD + count_tokens_lines(text) <= budget
    kept = [t for t in topics if f" {t}," in text or f" {t}\n" in text]
    if any(ln not in text for ln in lines):  # a summary line was given up: no topic past the first few was kept
        assert len(kept) <= keep


def test_without_a_query_few_topics_are_kept_before_a_summary_line() -> None:
    """Issue #27: a context asked with no query keeps only the first ``TOPICS_KEPT_NO_QUERY`` topics while a summary
    line is out (the index of seed 000 §4.4 stays; the most mentioned words name what an old turn's line shows);
    with a query the first ``TOPICS_KEPT`` stay (they match it)."""
    assert [topics_kept(q) for q in (None, "", "  \n")] == [TOPICS_KEPT_NO_QUERY] * 3
    assert topics_kept("Where is Kyoto?") == TOPICS_KEPT > TOPICS_KEPT_NO_QUERY
    bare = fit_tier1("\n".join(LINES), [], [], 10_000)
    assert bare is not None
    # room for every summary line and no topic: without a query the lines stay and the topics go ...
    assert fit_tier1("\n".join(LINES), TOPICS[:3], [], bare[1], keep_topics=0) == bare
    # ... with a query the oldest line went for them
    text, _ = fit_tier1("\n".join(LINES), TOPICS[:3], [], bare[1]) or ("", 0)
    assert LINES[0] not in text and TOPICS[2] in text
    # room for every line and a topic: the topic stays (after the summary)
    one = fit_tier1("\n".join(LINES), TOPICS[:1], [], 10_000)
    assert one is not None and fit_tier1("\n".join(LINES), TOPICS[:3], [], one[1], keep_topics=0) == one
