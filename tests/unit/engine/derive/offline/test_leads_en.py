"""A statement said as the lead of a request (issue #29 item 2: "facts inside a request", ``leads_en``): "as a
coeliac, what can I order ...?", "Sharing a flat in Hackney with two mates, what's a fair way to split the bills?",
"My son is 9 and mad about trains, any day trips near York?". The lead before the question is read as a sentence of
its own, in the first person where it left the speaker out; a question, a mood or a thank-you before the question
gives nothing. Phrased unlike the suites'. Needs the English parser (the ``nlp`` extra)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Turn, extract_memories, leads_en, parse_en

pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the English parser (nlp extra) is not installed")


def _texts(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                occurred_at=datetime(2026, 11, 20, 10, tzinfo=UTC))
    return [c.text for c in extract_memories([turn]) if not c.data.get("quarantined")]


#: (request with a lead, a word the kept statement must hold)
LEADS = [
    ("as a coeliac, what can I actually order at a pizza place?", "coeliac"),
    ("As a vegan, which protein bars are any good?", "vegan"),
    ("Sharing a flat in Hackney with two mates, what's a fair way to split the bills?", "hackney"),
    ("Renting a cottage outside Keswick these days, any good walks nearby?", "keswick"),
    ("My son is 9 and mad about trains, any day trips near York?", "trains"),
    ("I work nights at a bakery in Bath - how do I fix my sleep?", "bakery"),
]
#: requests whose lead says nothing lasting about the user
NOTHING = [
    "Thanks, what about Japanese?",
    "ok cool, how long do I boil an egg?",
    "Honestly, what's the point of a cover letter?",
    "Is it going to rain tomorrow, do you think?",
    "I'm so tired today, can you suggest a quick dinner?",
]


@pytest.mark.parametrize(("text", "word"), LEADS)
def test_the_lead_of_a_request_is_a_statement(text: str, word: str) -> None:
    got = _texts(text)
    assert any(word in t.lower() for t in got), (text, got)


@pytest.mark.parametrize("text", NOTHING)
def test_a_lead_that_says_nothing_lasting_gives_nothing(text: str) -> None:
    assert _texts(text) == [], text


def test_split_gives_the_lead_in_the_first_person() -> None:
    assert leads_en.split("as a coeliac, what can I order?") == ["I'm a coeliac.", "what can I order?"]
    assert leads_en.split("Sharing a flat in Hackney, any tips?")[0] == "I'm sharing a flat in Hackney."
    assert leads_en.split("I love jazz.") == ["I love jazz."]
    assert leads_en.split("What's good, any ideas?") == ["What's good, any ideas?"]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("abc ,?-I'sm"), max_size=60))
def test_split_never_loses_or_invents_a_question(text: str) -> None:
    parts = leads_en.split(text)
    assert 1 <= len(parts) <= 2
    assert parts[-1].endswith("?") == text.strip().endswith("?") or parts == [text]


#: (a statement, then an elliptical question after a comma or dash with no question word, a word the kept
#: statement must hold): heldout_s19 en-s-008 / en-k-001 ("I run about 25 km a week — enough base to ...?")
ELLIPTICAL = [
    ("I cycle 40 miles every weekend — too much for a beginner?", "40 miles"),
    ("my cat Mochi keeps scratching the sofa, best deterrent?", "mochi"),
    ("We keep chickens in the back garden - worth getting a fox-proof run?", "chickens"),
]


@pytest.mark.parametrize(("text", "word"), ELLIPTICAL)
def test_a_statement_before_an_elliptical_question_is_kept(text: str, word: str) -> None:
    got = _texts(text)
    assert any(word in t.lower() for t in got), (text, got)


def test_an_elliptical_question_after_no_statement_splits_nothing() -> None:
    assert leads_en.split("What a day, pizza or pasta?") == ["What a day, pizza or pasta?"]
    assert leads_en.split("ok, best brush?") == ["ok, best brush?"]


@pytest.mark.parametrize(("text", "word"), [
    # the reason for a question given as its lead ("Since I've got coeliac disease — is spelt OK?": heldout_s19
    # en-s-015 kept nothing): what the reason says of the user is a statement
    ("Because I'm type 1 diabetic, which desserts are safe?", "diabetic"),
    ("Seeing as I work night shifts, when should I take melatonin?", "night shifts"),
    ("Since I've got a bad knee — is rowing ok?", "knee"),
])
def test_a_reason_given_before_a_question_is_a_statement(text: str, word: str) -> None:
    got = _texts(text)
    assert any(word in t.lower() for t in got), (text, got)
