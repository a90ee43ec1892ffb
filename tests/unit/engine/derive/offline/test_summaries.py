"""``engine.derive.offline.summaries``: summaries of the whole thread and in Chinese (issue #29 items 2 and 3), pure
functions of the turns. The Chinese topics are in test_topics.py, sentence splitting in test_text.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Turn, summarize
from tests.paths import DATA

ZH = DATA / "zh_conversation.jsonl"


def zh_turns() -> list[Turn]:
    """The turns of tests/data/zh_conversation.jsonl (also read by test_topics.py)."""
    rows = [json.loads(ln) for ln in ZH.read_text(encoding="utf-8").splitlines() if ln.startswith("{")]
    return [Turn(event_id=f"e{i}", seq=i + 1, role=r["role"], user_id=r.get("user_id"), text=r["text"],
                 occurred_at=datetime.fromisoformat(r["occurred_at"])) for i, r in enumerate(rows) if "role" in r]


def test_chinese_summary_is_dated_and_salient() -> None:
    turns = zh_turns()
    prev = None
    for i in range(0, len(turns), 8):
        prev = summarize(turns[i:i + 8], 400, prev)
    assert prev is not None
    assert {ln[1:11] for ln in prev.splitlines()} == {"2025-03-01", "2025-05-10"}
    assert "我叫李娜" in prev and "青霉素过敏" in prev and "产品经理" in prev, prev
    assert "希望你们玩得开心" not in prev


_FACTS = ["I adopted a rescue dog named {n} from the shelter in {c}", "I started a new job as a nurse at {c} hospital",
          "My sister {n} moved to {c} with her two kids", "I ran my first marathon in {c} in under four hours",
          "I signed up for a pottery class in {c} with {n}", "I finished writing my novel about {c} and {n}",
          "I was diagnosed with asthma by a doctor in {c}", "I bought an old farmhouse near {c} with {n}",
          "I learned to play the cello from {n} in {c}", "I volunteer at the {c} food bank every Sunday with {n}",
          "My grandfather {n} turned ninety at his home in {c}", "I passed the bar exam after studying in {c}"]
_FILLER = ["Thanks so much!", "Haha, that's great!", "Wow, sounds fun.", "Yeah, totally.", "Really? Tell me more?",
           "Aw, that's so sweet!", "Nice, glad to hear it!", "Oh cool!"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(_FACTS), min_size=8, max_size=12, unique=True),
       st.sampled_from(["Oslo", "Lima", "Perth", "Kyoto", "Quito"]), st.sampled_from(["Ana", "Bo", "Cyd", "Dee"]),
       st.integers(min_value=1, max_value=4))
@example(facts=_FACTS[:8], city="Oslo", name="Bo", fillers=2)  # a CI run kept "Nice, glad to hear it!" in its line
def test_summary_covers_the_whole_thread(facts: list[str], city: str, name: str, fillers: int) -> None:
    """One salient sentence per session among fillers; a summary rolled batch by batch keeps sessions from the
    start, the middle and the end of the thread (not the latest lines), stays within budget, drops pleasantries."""
    t0 = datetime(2023, 5, 1, tzinfo=UTC)
    sessions = []
    for d, fact in enumerate(facts):
        day = t0 + timedelta(days=7 * d)
        texts = [_FILLER[(d + j) % len(_FILLER)] for j in range(fillers)]
        texts.insert(d % (fillers + 1), fact.format(n=name, c=city) + ".")
        sessions.append([Turn(event_id=f"e{d}-{j}", seq=100 * d + j + 1, role="user", user_id="Mia",
                              text=x, occurred_at=day + timedelta(minutes=j)) for j, x in enumerate(texts)])
    budget = 140
    prev = None
    for batch in sessions:
        prev = summarize(batch, budget, prev)
    assert prev and len(prev) // 4 <= budget
    kept = [d for d, f in enumerate(facts) if f.format(n=name, c=city) in prev]
    third = len(facts) // 3
    assert any(d < third for d in kept) and any(d >= len(facts) - third for d in kept), (kept, prev)
    assert not any(f in prev for f in _FILLER), prev
    assert prev == _roll(sessions, budget)  # deterministic


def _roll(sessions: list[list[Turn]], budget: int) -> str | None:
    prev = None
    for batch in sessions:
        prev = summarize(batch, budget, prev)
    return prev


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.sampled_from(
    [f.format(n="Ann", c="Oslo") + end for f in _FACTS for end in (".", "!")]
    + ["Thanks! I met Ann yesterday in Oslo. It was great.", "我昨天去了奥斯陆。很好玩！",
       "Last week I moved to Riga, and tomorrow I start work."]), min_size=1, max_size=12))
def test_turn_sentences_are_what_a_summary_quotes(texts: list[str]) -> None:
    """Issue #27: a summary's every sentence is one of ``turn_sentences`` of a turn it summarised (relative dates
    resolved as the summary resolves them), so a reader can tell which turns a summary line shows."""
    from memengine.engine.derive.offline.summaries import turn_sentences

    t0 = datetime(2025, 3, 1, 9, tzinfo=UTC)
    turns = [Turn(event_id=f"e{i}", seq=i + 1, role="user", user_id="maya", text=t,
                  occurred_at=t0 + timedelta(days=i)) for i, t in enumerate(texts)]
    said = {x for t in turns for x in turn_sentences(t)}
    assert "I met Ann on 28 February 2025 in Oslo." in turn_sentences(
        Turn("e", 1, "user", "maya", "Thanks! I met Ann yesterday in Oslo.", t0))
    summary = summarize(turns, 2000, None)
    for line in summary.splitlines():  # each line is sentences of the turns, joined by spaces, nothing else
        body = line.split(": ", 1)[1]
        for x in sorted(said, key=len, reverse=True):
            body = body.replace(x, "")
        assert not body.strip(), (line, said)
    assert turn_sentences(Turn("e", 1, "tool", None, "I went to Oslo.", t0)) == []
