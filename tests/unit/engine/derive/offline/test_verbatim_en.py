"""The user's words kept as said when no rule or clause reading typed a lasting statement (issue #29 item 1,
``offline.verbatim_en``): a dropped subject, a fragment after a statement, "it's X now" after a pronoun, a quantity
fragment; and what must stay no memory (a plan or event of the day, a mood, a wish, a negation, another person's
fact, chatter). Phrasings are composed from parts (hypothesis) and written unlike ``tests/data``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Candidate, Turn, extract_memories, gate, parse_en, quarantined, verbatim_en

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[Candidate]:
    out = extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)])
    return [c for c in out if not quarantined(gate(c, turn_text=text))]


def _holds(text: str, value: str) -> list[Candidate]:
    return [c for c in _kept(text) if value.lower() in c.text.lower()
            and c.memory_type in ("FACT", "PREFERENCE", "PROFILE", "SKILL")]


#: subjectless habits and states: a dropped "I", with a frequency or the aspect of now
DOINGS = st.sampled_from([("Been rowing", "rowing"), ("Doing pilates", "pilates"), ("Swimming lengths", "swimming"),
                          ("Cycling in to the office", "cycling"), ("Walking the dog", "walking the dog")])
ASPECTS = st.sampled_from(["every morning", "twice a week these days", "since the spring", "most evenings now",
                           "instead", "these days"])
TAILS = st.sampled_from(["", ", my knees thank me", ", honestly it's great", " lol", "!"])


@settings(max_examples=30, deadline=None)
@given(DOINGS, ASPECTS, TAILS)
def test_a_subjectless_habit_is_kept_in_the_users_words(doing: tuple[str, str], aspect: str, tail: str) -> None:
    text = f"{doing[0]} {aspect}{tail}"
    assert _holds(text, doing[1]), _kept(text)


@pytest.mark.parametrize(("turn", "value"), [
    ("Mostly vegetarian these days, bit of fish now and then", "vegetarian"),
    ("Pretty much gluten-free since the diagnosis", "gluten-free"),
    ("We finally adopted a rescue! A greyhound named Biscuit", "biscuit"),
    ("Got the job!! Staff engineer at Monzo", "monzo"),
    ("Weighed myself this morning. 63kg, 5 down since summer", "63kg"),
    ("it's for my 2012 Yamaha MT-07, it lives in a shed", "yamaha"),
    ("dropped the Kindle in the bath lol. it's a Kobo now", "kobo"),
    ("Currently cramming for the GMAT, it's brutal", "gmat"),
    ("need a tyre pressure guide, it's for my 2018 Skoda Octavia", "octavia"),
    ("the pay goes up to $84k from March and new title is staff engineer", "84k"),
])
def test_a_value_outside_a_first_person_clause_is_kept(turn: str, value: str) -> None:
    assert _holds(turn, value), _kept(turn)


@pytest.mark.parametrize(("turn", "value"), [
    ("I'm not vegan, my brother is", "user is vegan"),
    ("I'm not vegan, my brother is", "user's brother is."),
    ("Off to the pub tonight with Jo, can't wait", "pub"),
    ("Ugh, so drained today, the call ran two hours", "drained"),
    ("Might take up archery at some point, who knows", "archery"),
    ("Did 12k steps today!! legs are jelly", "12k"),
    ("Stuck on the A1 for an hour this morning", "a1"),
    ("My friend Omar is a massive Liverpool fan", "user is a massive"),
    ("Lunch at my dad's tomorrow, he's making paella", "paella"),
    ("it's pouring now", "pouring"),
    ("the meeting overran by 40 minutes", "meeting"),
    # what two people say to each other in a long conversation (an imported history such as LoCoMo's)
    ("Wow, Priya! That's huge!", "priya"), ("Yeah Tom, let's keep in touch!", "tom"),
    ("Totally agree, Sam.", "sam"), ("Since we last spoke, loads has happened.", "spoke"),
    ("I read it last year. It's a gripping story about a lighthouse keeper.", "lighthouse"),
    ("And sure, check out this photo of Biscuit at the beach!", "beach"), ("Nadia's hilarious!", "nadia"),
    ("I feel it's important to talk about these things every day.", "important"),
])
def test_what_is_of_the_moment_or_someone_elses_stays_no_memory(turn: str, value: str) -> None:
    assert not _holds(turn, value), _kept(turn)


@pytest.mark.parametrize("turn", ["I'm training for a triathlon.", "I've been preparing for the bar exam since May.",
                                  "I'm studying for my driving theory test."])
def test_training_for_something_is_an_ongoing_pursuit_not_a_task(turn: str) -> None:
    kept = _kept(turn)
    assert kept and all(c.memory_type != "TASK" for c in kept), kept


@pytest.mark.parametrize(("turn", "old", "new"), [
    ("gave up the flat white, it was wrecking my sleep. it's chai every afternoon now", "flat white", "chai"),
    ("sold the Vespa. it's a Brompton for commuting these days", "vespa", "brompton"),
])
def test_an_end_and_its_new_value_in_one_quote_leave_no_ending_only_item(turn: str, old: str, new: str) -> None:
    kept = _kept(turn)
    # the old value is never stated without the new one beside it, and the quote carries the end to the merge
    assert all(new in c.text.lower() for c in kept if old in c.text.lower()), kept
    assert any(new in c.text.lower() and c.data.get("ends") for c in kept), kept


@pytest.mark.parametrize("text", [
    "ugh, cilantro again. every single taco place around here drowns everything in it, it tastes like soap to me",
    "ugh, mayo again. every burger joint around here smothers everything in it, honestly it makes me gag"])
def test_a_thing_that_offends_the_users_senses_is_their_dislike(text: str) -> None:
    from datetime import UTC, datetime

    from memengine.engine.derive.offline import Turn, extract_memories, gate, quarantined
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                occurred_at=datetime(2026, 11, 20, 9, 0, tzinfo=UTC))
    kept = [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]
    word = text.split()[1].strip(",")
    assert any(c.memory_type == "PREFERENCE" and word in c.text.lower() for c in kept), [
        (c.memory_type, c.text) for c in kept]


@pytest.mark.parametrize("sentence", ["Lunch at my dad's tomorrow", "I want to learn the cello",
                                      "My mentorship program is really rewarding.", "so exhausted after work",
                                      "thanks, I drive a Golf", "lol my cat just knocked my coffee over",
                                      "The blue bicycle in the garage needs new brakes before spring."])
def test_a_plan_a_wish_a_mood_or_an_evaluation_is_of_the_moment(sentence: str) -> None:
    assert verbatim_en.of_the_moment(sentence)


@pytest.mark.parametrize("sentence", ["I drive a 2015 Kawasaki Z800", "Three years into my PhD on coral reefs",
                                      "vegetarian since uni"])
def test_a_lasting_statement_is_not_of_the_moment(sentence: str) -> None:
    assert not verbatim_en.of_the_moment(sentence)



@pytest.mark.parametrize(("sentence", "named"), [("I use it every day.", False),
                                                 ("Since we last spoke, loads has happened.", False),
                                                 ("I drive a Golf", True), ("I'm left-handed", True),
                                                 ("Three years into my PhD", True)])
def test_a_sentence_is_anchored_when_it_names_a_thing(sentence: str, named: bool) -> None:
    assert verbatim_en.anchored(sentence) is named
