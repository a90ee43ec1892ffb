"""``engine.derive.offline.text``: sentence splitting (Chinese full-width marks, issue #29) and relative dates, which
never raise whatever the count ("100000000 days ago") and anchor (issue #17 defects 1, 2, 3, 10, 12)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive import offline
from memengine.engine.derive.offline.text import first_match, pictographs_apart, resolve_dates, sentences
from memengine.events.codec import MAX_YEAR, MIN_YEAR


def test_chinese_sentences_end_at_full_width_marks() -> None:
    assert sentences("你好！我叫李娜。真的吗？好的!") == ["你好!", "我叫李娜。", "真的吗?", "好的!"]


COUNTS = st.integers(min_value=0, max_value=10**12).map(str) | st.integers(min_value=1, max_value=6000).map(
    lambda n: "9" * n)
ANCHORS = st.datetimes(min_value=datetime(MIN_YEAR, 1, 1), max_value=datetime(MAX_YEAR, 12, 31, 23, 59),
                       timezones=st.just(UTC))


@given(COUNTS, st.sampled_from(["day", "days", "week", "weeks", "weekend", "month", "months", "year", "years"]),
       ANCHORS, st.sampled_from(["I visited Paris {n} {u} ago.", "I moved to Oslo about {n} {u} ago and I prefer it.",
                                 "My sister was born {n} {u} ago, last month, next Friday and by tomorrow."]))
@settings(max_examples=300, deadline=None)
def test_relative_dates_never_raise(n: str, unit: str, when: datetime, template: str) -> None:
    text = template.format(n=n, u=unit)
    resolved, found = resolve_dates(text, when)
    assert all(len(d) >= 4 for d in found)
    turn = offline.Turn(event_id="e", seq=1, role="user", user_id="maya", text=text, occurred_at=when)
    offline.extract_memories([turn])


def test_issue_sentences_keep_their_words() -> None:
    when = datetime(2026, 3, 2, tzinfo=UTC)
    assert resolve_dates("I visited Paris 100000000 days ago.", when) == (
        "I visited Paris 100000000 days ago.", [])
    assert resolve_dates("I moved 99999 months ago.", when) == ("I moved 99999 months ago.", [])
    assert resolve_dates("I moved 3 months ago.", when) == ("I moved in December 2025.", ["2025-12"])


def test_a_question_tacked_on_after_a_statement_is_not_part_of_it() -> None:
    from memengine.engine.derive.offline.text import TRAILING_QUESTION

    assert TRAILING_QUESTION.sub("", "40 minutes by tram, any tips for reading on the move") == "40 minutes by tram"
    assert TRAILING_QUESTION.sub("", "a Škoda Fabia; how often should I change the oil") == "a Škoda Fabia"
    assert TRAILING_QUESTION.sub("", "Porto, where the wine comes from") == "Porto"
    assert TRAILING_QUESTION.sub("", "two cats and a dog") == "two cats and a dog"


_PICTOGRAPHS = ["🎉", "💪", "😭", "🙄", "😎", "🎂", "🐶", "😩", "❤️", "👍🏽", "☀️", "🤦‍♀️"]


@settings(deadline=None)
@given(st.sampled_from(_PICTOGRAPHS), st.sampled_from([
    ("my credit score is up to 720 now", "time to refinance?"),
    ("bought a Ducati Monster for the summer weekends", "do I need special insurance?"),
    ("just got diagnosed with hypothyroidism too", "does levothyroxine interact with inhalers?"),
    ("Turned 30 yesterday", "feeling ancient.")]))
def test_a_pictograph_between_two_runs_of_words_ends_a_sentence(pic: str, pair: tuple[str, str]) -> None:
    # issue #29 (heldout_s17 / s18 dev): people end a statement with an emoji instead of a full stop, and the
    # question after it made the whole run a question, so the statement was skipped
    left, right = pair
    assert pictographs_apart(f"{left} {pic} {right}") == [f"{left}.", right]
    assert pictographs_apart(f"{left} {pic}{pic} {right}") == [f"{left}.", right]


def test_a_pictograph_at_an_end_or_for_a_word_cuts_nothing() -> None:
    for s in ("I ❤️ my new bike", "love it 🎉", "🎉 passed my driving test!", "it's 20°C and sunny ☀️",
              "I moved to Porto 🇵🇹", "no emoji here, just words", "Tea ☕ or coffee?"):
        assert pictographs_apart(s) == [s], s


def test_first_match_quotes_the_first_matching_shape_stripped_and_capped() -> None:
    shapes = [re.compile(r"never\s+\w+"), re.compile(r"\s+always\s+\w+.*")]
    assert first_match(shapes, "I   always eat " + "a" * 200) == ("always eat " + "a" * 200)[:120]
    assert first_match(shapes, "please never mind") == "never mind"
    assert first_match(shapes, "nothing here") is None
