"""Taste told by an idiom (issue #29 item 1, ``engine.derive.offline.idioms_en``): a like or a dislike without a
first-person verb becomes the user's PREFERENCE; a person in the idiom's place is a relationship, no taste. Phrased
unlike the suites' (session 16)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, idioms_en, parse_en, quarantined

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [f"{c.memory_type}: {c.text}" for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("text", "verb", "thing"), [
    ("Honestly nothing beats a bowl of pho on a rainy day.", "loves", "pho"),
    ("There's nothing quite like a sauna after skiing.", "loves", "sauna"),
    ("You can't beat a proper Cornish pasty.", "loves", "Cornish pasty"),
    ("Onions and I don't get along, sadly.", "dislikes", "onions"),
    ("Red wine doesn't agree with me.", "dislikes", "red wine"),
    ("Mushrooms and I have never been friends.", "dislikes", "mushrooms"),
])
def test_an_idiom_of_taste_is_the_users_preference(text: str, verb: str, thing: str) -> None:
    kept = _kept(text)
    assert any(k.startswith("PREFERENCE: User " + verb) and thing in k for k in kept), kept


@pytest.mark.parametrize("text", ["My brother and I don't get along.", "Tom and I aren't friends any more.",
                                  "Nothing beats it.", "What beats a good night's sleep?"])
def test_a_person_or_a_pronoun_is_no_taste(text: str) -> None:
    assert idioms_en.taste(text) is None or not any("PREFERENCE" in k for k in _kept(text))


def test_home_for_me_is_where_the_user_lives() -> None:
    assert parse_en.slots("Home for me is a tiny hamlet just outside Ghent.").get("lives_in") == "Ghent"
    assert any(k == "PROFILE: User's home is a tiny hamlet just outside Ghent." for k in
               _kept("Home for me is a tiny hamlet just outside Ghent."))


#: a thing refused ("no X") beside a standing aversion of the user's ("ever", "I can't stand it", "tastes like soap to
#: me"): a dislike, however the request around it is worded
REFUSED = ["cilantro", "mushrooms", "horror", "olives", "country music"]
REFUSING = ["and NO {x}, {why}", "pls no {x}, ever, {why}", "please no {x}, {why}", "oh and no {x} please - {why}",
            "No {x}. {why}"]
WHY = ["tastes like soap to me, always has", "I genuinely can't stand it", "I hate them", "they make me gag",
       "never have liked it"]


@pytest.mark.parametrize("thing", REFUSED)
@pytest.mark.parametrize("frame", REFUSING)
@pytest.mark.parametrize("why", WHY[:3])
def test_a_thing_refused_with_a_standing_aversion_is_a_dislike(thing: str, frame: str, why: str) -> None:
    text = "can you give me a recipe? " + frame.format(x=thing, why=why)
    kept = _kept(text)
    assert any(k.startswith("PREFERENCE: User dislikes") and thing in k for k in kept), (text, kept)


@pytest.mark.parametrize("text", ["No problem, I hate to bother you though.", "no onions in this one please",
                                  "no worries, I can't stand waiting either", "No chorizo, my sister hates it.",
                                  "No, I hate that idea."])
def test_a_refusal_of_the_moment_or_someone_elses_is_no_dislike(text: str) -> None:
    assert not any(k.startswith("PREFERENCE: User dislikes") for k in _kept(text)), _kept(text)
