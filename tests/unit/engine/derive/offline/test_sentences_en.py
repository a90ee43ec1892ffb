"""The sentences of a turn as the extraction reads them (``engine.derive.offline.sentences_en``): an age said as the
time of a present state of the user's ("at 52 my knees aren't what they were") is the user's age; an age at a past
event, another's, or a clock time is none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, parse_en, quarantined

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[tuple[str, str]]:
    out = extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)])
    return [(c.memory_type, c.text) for c in out if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize("age", ["52", "67", "34"])
@pytest.mark.parametrize("state", ["at {n} my knees aren't what they were", "At {n}, I still can't touch my toes",
                                   "honestly at {n} I'm too old for all-nighters", "at {n} my back hates me"])
@pytest.mark.parametrize("then", ["", ". couch to 5k realistic?", ", any tips?"])
def test_an_age_said_as_the_time_of_a_present_state_is_the_users_age(age: str, state: str, then: str) -> None:
    text = "I want to start running but " + state.format(n=age) + then
    kept = _kept(text)
    assert any(ty == "PROFILE" and age in tx for ty, tx in kept), (text, kept)


@pytest.mark.parametrize("text", ["at 15 I started playing the drums", "at 18 my parents moved to Spain",
                                  "at 7 I have a dentist appointment", "at 30 you should have some savings",
                                  "at 25 mph my car shakes"])
def test_an_age_at_a_past_event_anothers_or_a_time_is_none(text: str) -> None:
    number = next(w for w in text.split() if w.isdigit())
    assert not any(ty == "PROFILE" and f"is {number}" in tx for ty, tx in _kept(text)), _kept(text)


@pytest.mark.parametrize(("doing", "value"), [("Working at Shopify", "shopify"), ("Living in Leeds", "leeds"),
                                              ("Teaching at Hillside Primary", "hillside")])
@pytest.mark.parametrize("effect", ["has me in back-to-back meetings all day", "is killing me lately",
                                    "means my commute is basically nothing"])
def test_the_users_life_said_as_a_gerund_subject_is_a_statement(doing: str, value: str, effect: str) -> None:
    text = f"{doing} {effect}. How do I block focus time?"
    kept = _kept(text)
    assert any(value in tx.lower() and ty in ("PROFILE", "FACT") for ty, tx in kept), (text, kept)


@pytest.mark.parametrize("text", ["Working at Google must be amazing.", "Living in London is expensive for everyone.",
                                  "Teaching at a school is hard work."])
def test_a_gerund_subject_of_no_ones_life_is_none(text: str) -> None:
    assert not any(tx.startswith("User") and ("works" in tx or "lives" in tx or "teach" in tx) for _, tx in _kept(text))


@pytest.mark.parametrize(("text", "value"), [
    ("ok so I drive a tram in Zagreb, split shifts, any tips for staying awake?", "tram"),
    ("yep I'm a paramedic, nights mostly, so caffeine is life", "paramedic"),
])
def test_a_chat_opener_before_the_speakers_clause_says_nothing(text: str, value: str) -> None:
    assert any(value in tx and "said" not in tx for _, tx in _kept(text)), _kept(text)


def test_a_state_said_without_its_subject_is_the_speakers() -> None:
    kept = _kept("quick q about grapefruit. been on simvastatin since my heart scare in 2021")
    assert any("has been on simvastatin" in tx for _, tx in kept), kept
    assert not _kept("been a rough week honestly")


def test_a_second_verb_shares_the_speaker_its_first_dropped() -> None:
    kept = _kept("traded in the Corolla and got a Prius last week, what tyre pressure does it want?")
    assert any("Prius" in tx for _, tx in kept), kept
