"""The user's shift is one attribute however it is said (issue #29 item 1, ``engine.derive.offline.schedule``): a new
shift supersedes the old one ("I work nights" -> "I'm on days now"), a shift and an employer live side by side.
Seed 002 §2.2 "冲突的记忆 → 保留最新". Pairs are phrased unlike the suites'."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import (
    ExistingItem,
    Turn,
    decide_merge,
    extract_memories,
    gate,
    parse_en,
    quarantined,
)

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _closed(old: str, new: str) -> tuple[set[str], set[str], list[str]]:
    def kept(text: str) -> list:  # type: ignore[type-arg]
        turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
        return [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]

    olds = [ExistingItem(f"m{i}", c.memory_type, c.text, "u1") for i, c in enumerate(kept(old))]
    assert olds, old
    cands = kept(new)
    closed = {t for c in cands for d in [decide_merge(c, olds)] if d.action == "replace" for t in d.target_ids}
    return {o.memory_id for o in olds}, closed, [c.text for c in cands]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([("I work nights.", "I'm on days now."), ("I'm on the late shift.", "I moved onto the early "
                        "shift in May."), ("I work the morning shift at the bakery.", "I'm on the evening "
                        "shift at the bakery now."), ("I'm on days.", "They moved me... actually I'm on nights now.")]))
def test_a_new_shift_supersedes_the_old(pair: tuple[str, str]) -> None:
    olds, closed, texts = _closed(*pair)
    assert closed == olds, texts


def test_a_shift_and_an_employer_are_two_attributes() -> None:
    _, closed, texts = _closed("I work nights.", "I work at Tesco.")
    assert not closed, texts


@pytest.mark.parametrize(("old", "new"), [
    ("I normally turn in around 11.", "Since the twins arrived I'm in bed by nine."),
    ("I'm usually awake by 6.", "I get up at 8 now that I work from home."),
    ("My alarm's fine, I wake up at half six.", "These days I'm up at 5 for the gym."),
    ("My commute is about 35 minutes.", "Since the move it takes me 15 minutes to cycle in."),
])
def test_a_new_bedtime_wake_time_or_commute_supersedes_the_old(old: str, new: str) -> None:
    """Session 16: when the user sleeps, gets up and how long the commute takes are one attribute each."""
    olds, closed, texts = _closed(old, new)
    assert closed == olds, texts


@pytest.mark.parametrize(("old", "new"), [
    ("I go to bed around 11.", "I went to bed at 3 last night, ugh."),
    ("I wake up at 7.", "I go to bed at midnight."),
    ("I'm 41.", "I meet my trainer at 7 on Mondays."),
])
def test_one_night_another_attribute_or_an_appointment_is_no_change(old: str, new: str) -> None:
    _, closed, texts = _closed(old, new)
    assert not closed, texts
