"""``offline.life_events_en``: an event of the user's life ends the states it ends (issue #29: "a state ended by an
event (an engagement ends 'single', surgery ends 'glasses')"). Pairs phrased unlike the blind sets'."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import (
    ExistingItem,
    Turn,
    decide_merge,
    extract_memories,
    gate,
    life_events_en,
    parse_en,
    quarantined,
)

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _closed(old: str, new: str) -> tuple[bool, list[str]]:
    turn = Turn(event_id="e2", seq=2, role="user", user_id="u1", text=new, occurred_at=T)
    cands = [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=new))]
    existing = [ExistingItem("m1", "FACT", old, "u1")]
    return any(decide_merge(c, existing).action == "replace" for c in cands), [c.text for c in cands]


@pytest.mark.parametrize(("old", "new"), [
    ("User is engaged to Priya.", "Priya and I got married in June!"),
    ("User's girlfriend Ana is a vet.", "My wife Ana just got a job at a clinic in Bath."),
    ("User is 7 months pregnant.", "Our son Leo was born on Tuesday, 3.1 kg!"),
    ("User is in the final year of a law degree.", "I graduated in July and started at a firm in Leeds."),
    ("User wears glasses for driving.", "I had laser eye surgery in the spring, best money I ever spent."),
    ("User's boyfriend Sam plays guitar.", "Sam and I broke up in August, it was for the best."),
])
def test_a_life_event_of_the_users_ends_the_state_it_ends(old: str, new: str) -> None:
    closed, texts = _closed(old, new)
    assert closed, texts


@pytest.mark.parametrize(("old", "new"), [
    ("User's boyfriend Sam plays guitar.", "My sister got married last weekend, it was lovely."),
    ("User's girlfriend Ana is a vet.", "My brother and his girlfriend split up in August."),
    ("User is 7 months pregnant.", "My cousin's baby was born on Tuesday!"),
    ("User wears glasses for driving.", "My dad had laser eye surgery in the spring."),
    ("User is 7 months pregnant.", "I was born in Leeds but grew up in York."),
])
def test_someone_elses_life_event_ends_nothing_of_the_users(old: str, new: str) -> None:
    closed, texts = _closed(old, new)
    assert not closed, texts


@pytest.mark.parametrize(("old", "new"), [
    ("User teaches year 6 at a primary school.", "Finally retired last Friday after 28 years, feels strange."),
    ("User works at Siemens as an engineer.", "I retired in March, so what's a good first project for the garden?"),
    ("User is a postman.", "Been retired since the spring and I'm bored stiff already."),
    ("User lectures in economics at Leeds.", "My retirement party was on Friday and the mornings are so quiet now."),
])
def test_the_users_retirement_ends_their_work(old: str, new: str) -> None:
    closed, texts = _closed(old, new)
    assert closed, texts


@pytest.mark.parametrize(("old", "new"), [
    ("User works at Siemens as an engineer.", "My dad retired in March and now he's always in the garden."),
])
def test_someone_elses_retirement_ends_nothing_of_the_users(old: str, new: str) -> None:
    closed, texts = _closed(old, new)
    assert not closed, texts


@pytest.mark.parametrize("text", [
    "User is hoping to retire in five years.",
    "User will retire next summer.",
    "User is thinking about retiring early.",
    "User is going to retire at 60.",
    "User's dad retired in March.",
])
def test_a_retirement_to_come_or_anothers_ends_no_work(text: str) -> None:
    assert not {"slot:job", "teach"} & set(life_events_en.life_ends(text, "User")), text


@pytest.mark.parametrize("text", [
    "User retired from the council in May.",
    "User has been retired for a year.",
    "User's retirement party was on Friday.",
    "User finally retired after 28 years.",
])
def test_a_retirement_of_the_users_ends_their_work(text: str) -> None:
    assert {"slot:job", "teach"} <= set(life_events_en.life_ends(text, "User")), text
