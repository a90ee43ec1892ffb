"""Pseudo-clefts and relative-clause subjects said the plain way (issue #29 item 1, ``engine.derive.offline.reframe``):
"Where I live now is Marseille" states what "I live in Marseille now" does, so it fills the same slot and supersedes
the old value; "Techno is what I'm into" the same with the value first. Pairs are phrased unlike the suites'."""

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
    reframe,
)

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list:  # type: ignore[type-arg]
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("said", "plain"), [
    ("Where I live now is Marseille.", "I live in Marseille now."),
    ("Where I work is Accenture.", "I work at Accenture."),
    ("Vancouver is where I am now.", "I am in Vancouver now."),
    ("The company I work for now is PwC.", "I work for PwC now."),
    ("What I'm really into these days is techno.", "I'm really into techno these days."),
    ("Techno is what I'm into now.", "I'm into techno now."),
    ("The car I drive these days is a Mazda 3.", "I drive a Mazda 3 these days."),
    ("The gym that I go to is The Foundry.", "I go to The Foundry."),
    # a temporal adjunct after the gap is said last, as the time words are
    ("What I drink in the morning is coffee.", "I drink coffee in the morning."),
    ("Tea is what I drink on Sundays now.", "I drink tea on Sundays now."),
])
def test_a_cleft_is_said_the_plain_way(said: str, plain: str) -> None:
    assert reframe.uncleft(said) == plain


@pytest.mark.parametrize("text", ["The movie you saw was great.", "Where is the station?", "What you said is true.",
                                  "The book is on the table.", "What I love about Rome is the food."])
def test_other_sentences_are_left_alone(text: str) -> None:
    """Only a first-person relative clause whose gap the copula's other side fills is reframed."""
    assert reframe.uncleft(text) == text


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([("I live in {a}.", "Where I live now is {b}."), ("I work at {a}.", "The company I work for "
                        "these days is {b}."), ("I drive a {a}.", "The car I drive now is a {b}.")]),
       st.sampled_from([("Leeds", "Bath"), ("Nokia", "Ericsson"), ("Fiesta", "Polo")]))
def test_a_cleft_supersedes_the_plain_old_value(pair: tuple[str, str], ab: tuple[str, str]) -> None:
    old, new = pair[0].format(a=ab[0]), pair[1].format(b=ab[1])
    olds = [ExistingItem(f"m{i}", c.memory_type, c.text, "u1") for i, c in enumerate(_kept(old))]
    cands = _kept(new)
    assert olds and any(ab[1] in c.text for c in cands), [c.text for c in cands]
    closed = {t for c in cands for d in [decide_merge(c, olds)] if d.action == "replace" for t in d.target_ids}
    assert closed == {o.memory_id for o in olds}, [c.text for c in cands]
