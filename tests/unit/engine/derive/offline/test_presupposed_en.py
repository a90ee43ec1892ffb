"""What an English request takes for granted about its speaker (issue #29 item 1: a fact said "in passing, inside
another request"): "here in <place>" and "as someone with <condition>", read in questions too."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import extract_memories, presupposed_en
from memengine.engine.derive.offline.structures import Turn


@pytest.mark.parametrize(("sentence", "reading"), [
    ("What's the weather usually like in early May here in Cork?",
     ("PROFILE", "User lives in Cork.", "lives_in", "Cork")),
    ("It's supposed to hit -30 up here in Duluth this weekend.",
     ("PROFILE", "User lives in Duluth.", "lives_in", "Duluth")),
    ("any decent ramen places out here in boise", ("PROFILE", "User lives in Boise.", "lives_in", "Boise")),
    ("best bagels here in New York City?", ("PROFILE", "User lives in New York City.", "lives_in", "New York City")),
    ("Anything special I should pack as someone with type 1 diabetes?",
     ("FACT", "User has type 1 diabetes.", "health", "type 1 diabetes")),
    ("as a guy who has flat feet, what running shoes should I get",
     ("FACT", "User has flat feet.", "health", "flat feet")),
])
def test_a_presupposition_is_read(sentence: str, reading: tuple[str, str, str, str]) -> None:
    assert presupposed_en.readings(sentence) == [reading]


@pytest.mark.parametrize("sentence", [
    "we're here in Rome for a week, where should we eat?",      # a stay
    "visiting my aunt, so I'm here in Leeds till Sunday",
    "I'll be here in person tomorrow",                          # not a place
    "is it ok to ask here in general?",
    "what should I cook for someone with a nut allergy?",       # someone else
])
def test_a_stay_a_phrase_or_someone_else_is_no_presupposition(sentence: str) -> None:
    assert presupposed_en.readings(sentence) == []


def test_a_presupposition_becomes_a_candidate_only_where_nothing_else_holds_it() -> None:
    t = Turn(event_id="e1", seq=1, role="user", user_id="u1",
             text="Whats the weather usually like in early May here in Cork? Trying to plan a garden party.",
             occurred_at=datetime(2026, 11, 20, tzinfo=UTC))
    got = [c for c in extract_memories([t]) if "Cork" in c.text]
    assert [(c.memory_type, c.data["rule"]) for c in got] == [("PROFILE", "presupposed")], got
    assert got[0].data["slots"] == {"lives_in": "Cork"}
    t2 = Turn(event_id="e2", seq=2, role="user", user_id="u1", text="I live in Cork, it rains here in Cork a lot.",
              occurred_at=datetime(2026, 11, 20, tzinfo=UTC))
    assert not any(c.data.get("rule") == "presupposed" for c in extract_memories([t2]))


@pytest.mark.parametrize(("sentence", "thing"), [
    ("guac recipe pls, and skip the cilantro, to me it literally tastes like dish soap", "cilantro"),
    ("Nothing with pork please, I don't eat it", "pork"),
    ("burger for me but hold the mayo - it makes me gag", "mayo"),
])
def test_a_food_left_out_with_why_is_disliked(sentence: str, thing: str) -> None:
    assert ("PREFERENCE", f"User dislikes {thing}.", "taste", thing) in presupposed_en.readings(sentence)


@pytest.mark.parametrize("sentence", ["no rush, take your time, I don't mind", "skip the onions, my kid hates them",
                                      "leave out the intro, it's too long"])
def test_a_thing_left_out_for_another_or_without_a_dislike_is_none(sentence: str) -> None:
    assert presupposed_en.readings(sentence) == []


@pytest.mark.parametrize(("sentence", "reading"), [
    ("Going to see my brother Tomasz, he's lived there since uni",
     ("FACT", "User has a brother named Tomasz.", "family", "Tomasz")),
    ("what should I get my mum Linda for her 60th?", ("FACT", "User has a mum named Linda.", "family", "Linda")),
])
def test_a_relative_named_in_passing_is_the_users(sentence: str, reading: tuple[str, str, str, str]) -> None:
    assert presupposed_en.readings(sentence) == [reading]


@pytest.mark.parametrize("sentence", ["My Mom Is Visiting", "my son The Great is a joke lol",
                                      "anniversary gift idea for my girlfriend Ana?"])  # a partner is the rules'
def test_no_relative_is_read_from_a_capitalised_word_or_a_partner(sentence: str) -> None:
    assert not any(r[2] == "family" for r in presupposed_en.readings(sentence))
