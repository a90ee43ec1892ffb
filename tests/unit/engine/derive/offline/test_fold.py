"""An unsure change kept in the user's words (issue #29 item 1: "When the deriver is unsure, it keeps the user's own
words with their date instead of a lossy paraphrase, so a context never states an old value as current without the
newer statement beside it", ``engine.derive.offline.fold``).

A newer statement of the user's that says a value is the current one ("these days", "now", "instead", "from now
on") about the topic of an older item of theirs (near in meaning, offline MiniLM), when no slot, end or revision
decided, supersedes it with one item holding the old text and the newer words, dated. An additive statement, another
person's, a hedged one or one on another topic does not. Pairs are phrased unlike the suites'. Needs the English
parser (``nlp`` extra) and the offline MiniLM (``embed`` extra)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Candidate, ExistingItem, decide_merge, fold, kinds, parse_en

pytestmark = pytest.mark.skipif(not (parse_en.available() and kinds.preload()),
                                reason="the English parser (nlp extra) or the offline MiniLM (embed) is missing")


def _cand(text: str, sentence: str, memory_type: str = "FACT", **data: object) -> Candidate:
    return Candidate(memory_type=memory_type, text=text, importance=0.7, confidence=0.85, tags=[],
                     priority="LONG_TERM", user_id="u1", source_event_ids=["e2"],
                     data={"subject": "User", "sentence": sentence, **data})


def _item(text: str, memory_type: str = "FACT", mid: str = "m1") -> ExistingItem:
    return ExistingItem(memory_id=mid, memory_type=memory_type, text=text, user_id="u1")


#: (older item, newer statement as rendered, the sentence said): one topic, a new value said as the current one, no
#: slot or shared value word a rule could read
CHANGES = [
    ("User's usual tipple is a pint of bitter.", "It's mostly red wine for User these days.",
     "it's mostly red wine for me these days, the beer was doing my stomach no favours"),
    ("User is an early riser, up at 5 every day.", "User sleeps in till 10 most days now.",
     "honestly I sleep in till 10 most days now that I'm retired"),
    ("User plays squash on Mondays.", "User took up yoga instead.",
     "my wrist gave out so I took up yoga instead"),
    ("User reads mostly thrillers.", "User is all about sci-fi novels now.",
     "I'm all about sci-fi novels now, can't get enough"),
]
#: (older item, newer statement, sentence): both hold
KEEPS = [
    # additive
    ("User has a tabby cat called Nutmeg.", "User got a budgie as well.", "we got a budgie as well"),
    ("User speaks Dutch.", "User is learning Greek too.", "I'm learning Greek too"),
    # another person's
    ("User is a vegetarian.", "User's brother is vegan now.", "my brother is vegan now"),
    # another topic
    ("User is allergic to penicillin.", "User is into bouldering these days.", "I'm into bouldering these days"),
    ("User lives in a flat in Cardiff.", "User's favourite band is Wet Leg now.", "Wet Leg is my favourite band now"),
]


@pytest.mark.parametrize(("old", "new", "said"), CHANGES)
def test_a_change_on_the_topic_of_an_item_folds_into_it(old: str, new: str, said: str) -> None:
    v = decide_merge(_cand(new, said), [_item(old)])
    assert v.action == "replace" and v.target_ids == ["m1"] and v.fold, (v, old, new)


@pytest.mark.parametrize(("old", "new", "said"), KEEPS)
def test_an_addition_anothers_fact_or_another_topic_does_not(old: str, new: str, said: str) -> None:
    v = decide_merge(_cand(new, said), [_item(old)])
    assert not v.fold and v.action != "replace", (v, old, new)


def test_a_hedged_or_quarantined_candidate_does_not_fold() -> None:
    old, new, said = CHANGES[0]
    assert not decide_merge(_cand(new, said, hedged=True), [_item(old)]).fold
    assert not decide_merge(_cand(new, said, quarantined=True), [_item(old)]).fold


def test_a_fold_picks_the_nearest_item_only() -> None:
    old, new, said = CHANGES[0]
    items = [_item("User is allergic to penicillin.", "PROFILE", "m0"), _item(old, "FACT", "m1"),
             _item("User lives in Cardiff.", "PROFILE", "m2")]
    v = decide_merge(_cand(new, said), items)
    assert v.fold and v.target_ids == ["m1"]


def test_folded_text_keeps_the_old_text_and_the_newer_words_dated() -> None:
    day = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
    text = fold.folded("User's usual tipple is a pint of bitter.", "User", "it's red wine for me these days", day)
    assert text == ("User's usual tipple is a pint of bitter. Later, on 2026-11-25, User said: "
                    "\u201cit's red wine for me these days\u201d")
    # a second fold keeps the original statement and the newest words, not a growing chain
    again = fold.folded(text, "User", "back on the bitter now", datetime(2026, 12, 2, tzinfo=UTC))
    assert again == ("User's usual tipple is a pint of bitter. Later, on 2026-12-02, User said: "
                     "\u201cback on the bitter now\u201d")


@settings(max_examples=40, deadline=None)
@given(old=st.text(min_size=1, max_size=80), words=st.text(min_size=1, max_size=300),
       day=st.datetimes(timezones=st.just(UTC)))
def test_folded_text_always_holds_both_and_is_bounded(old: str, words: str, day: datetime) -> None:
    text = fold.folded(old, "User", words, day)
    assert old.strip().split(" Later, on ")[0].strip() in text
    assert len(text) <= len(old) + fold.MAX_WORDS_CHARS + 60
    assert day.date().isoformat() in text


def _extract(text: str) -> list[Candidate]:
    from memengine.engine.derive.offline import Turn, extract_memories

    return extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                                  occurred_at=datetime(2026, 11, 20, tzinfo=UTC))])


#: first-person sentences that say how things are now, that no rule or clause reading types
UNSURE = ["Spotify gets my money now, Apple Music was too clunky.",
          "Tuesdays are choir for me from now on.",
          "Nights are for sleeping now in our house, the baby finally sleeps through."]
#: sentences that must not give even an unsure candidate: a mood, a question, another's news, no change said
#: ("Spotify gets my money, Apple Music was too clunky." was here until session 18: a lasting statement with a name
#: is now kept in the user's words on its own, ``verbatim_en``; see test_verbatim_en)
NOT_UNSURE = ["I'm so tired now.", "Is it choir for me now?", "Their Tuesdays are choir now.",
              "Cheers, that was a great chat."]


@pytest.mark.parametrize("text", UNSURE)
def test_an_untyped_first_person_change_is_kept_unsure_in_the_users_words(text: str) -> None:
    got = _extract(text)
    assert [c.data.get("unsure") for c in got] == [True] and text in got[0].text, got


@pytest.mark.parametrize("text", NOT_UNSURE)
def test_chatter_a_question_or_anothers_news_gives_no_unsure_candidate(text: str) -> None:
    assert not any(c.data.get("unsure") for c in _extract(text)), text


def test_an_unsure_candidate_only_ever_folds() -> None:
    cand = _extract(UNSURE[0])[0]
    near = decide_merge(cand, [_item("User listens to everything on Apple Music.", "PREFERENCE")])
    assert near.fold and near.action == "replace"
    far = decide_merge(cand, [_item("User is allergic to penicillin.", "PROFILE")])
    assert not far.fold and far.action != "replace"


def test_a_folded_item_is_ended_by_what_ends_its_own_statement() -> None:
    # the newer words folded in ("stopped ...") are not the item saying its own statement ended: a later end of
    # what the item states still closes it
    item = _item("User basically runs on cola, three cans a day. Later, on 2026-11-20, User said: "
                 "\u201cmy headaches finally stopped\u201d")
    cand = _cand('User said: "ditched the cola, it was wrecking my teeth."',
                 "ditched the cola, it was wrecking my teeth.", ends=["cola"])
    v = decide_merge(cand, [item])
    assert v.action == "replace" and v.target_ids == ["m1"] and not v.fold, v


def test_base_is_the_statement_before_the_folded_words() -> None:
    day = datetime(2026, 11, 25, tzinfo=UTC)
    assert fold.base(fold.folded("User plays squash.", "User", "took up yoga instead", day)) == "User plays squash."
    assert fold.base("User plays squash.") == "User plays squash."
