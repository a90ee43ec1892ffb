"""``offline.possessions_en``: a named thing the user calls theirs inside a question is kept (issue #29 item 1;
heldout_s17 / s18 dev: "best chain lube for my Ducati Monster?", "my greyhound Biscuit won't stop shaking ... is that
normal??" kept nothing, so a later "the Ducati stays" had nothing to keep). Phrasings of our own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, parse_en, quarantined

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [c.text for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("text", "want"), [
    ("what's the best way to clean the sensor on my Sony A7 III?", "User has a Sony A7 III"),
    ("how often should I walk my border collie Nell in summer?", "User has a border collie named Nell"),
    ("is it normal for my Kia Niro to lose range in winter?", "User has a Kia Niro"),
    ("is there a cheap fix for the rattle in our Toyota Yaris?", "User has a Toyota Yaris"),
    ("my tabby Mochi keeps knocking glasses off the table, is that a cat thing?", "tabby Mochi"),
])
def test_a_named_thing_of_the_users_in_a_question_is_kept(text: str, want: str) -> None:
    assert any(want in t for t in _kept(text)), _kept(text)


@pytest.mark.parametrize("text", [
    "can you fix my essay intro?", "what should I cook for my Mum on Sunday?",
    "how do I find my Amazon order history?", "what time does my flight to Rome leave?",
    "is my Monday meeting still on?", "should I tell my sister's boyfriend Dan about the party?",
])
def test_a_question_about_no_named_thing_of_the_users_keeps_nothing(text: str) -> None:
    assert _kept(text) == []


@pytest.mark.parametrize(("text", "want"), [
    ("Is 36 psi right for a 2019 Mazda CX-5? Mine's been feeling floaty on the motorway.", "Mazda CX-5"),
    ("do Kindle Paperwhites get slower with age? mine takes ages to turn a page now", "Kindle Paperwhite"),
])
def test_mine_after_a_named_thing_makes_it_the_users(text: str, want: str) -> None:
    # heldout_s17 and s18 dev alike: "What tire pressure should a 2014 Subaru Outback run? Mine's been pulling left"
    assert any(want in t for t in _kept(text)), _kept(text)


def test_mine_after_no_named_thing_keeps_nothing() -> None:
    assert not any("has" in t for t in _kept("how long do batteries last? mine died after a week"))
