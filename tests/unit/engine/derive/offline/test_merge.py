"""Type-aware merge and supersede decisions (issue #15 item 1; seed 002 §2.2 "冲突的记忆 → 保留最新", §4.1; seed 003
lifecycle): attribute slots, memory kinds, the richer wording of a merge, and the check every deriver's verdict
passes (``engine.derive.offline.merge``). Pure functions: no servers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import (
    Candidate,
    ExistingItem,
    MergeVerdict,
    attribute_slots,
    checked_verdict,
    compatible,
    decide_merge,
    richer_text,
    statement_type,
)
from memengine.engine.derive.offline.merge import supersedable


def _cand(text: str, mtype: str = "FACT", user: str = "maya") -> Candidate:
    return Candidate(mtype, text, 0.5, 1.0, [], "PERMANENT", user, ["e1"])


AISLE = ExistingItem("a1", "FACT", "Maya prefers aisle seats", "maya")


def test_a_new_value_for_the_same_slot_supersedes() -> None:
    d = decide_merge(_cand("Maya prefers window seats"), [AISLE])
    assert (d.action, d.target_ids) == ("replace", ["a1"])
    assert "prefers:seat" in d.reason and "aisle -> window" in d.reason
    lisbon = ExistingItem("l1", "PROFILE", "User lives in Lisbon.", "maya")
    assert decide_merge(_cand("User moved to Porto.", "PROFILE"), [lisbon]).target_ids == ["l1"]
    acme = ExistingItem("w1", "PROFILE", "Maya works at Acme", "maya")
    assert decide_merge(_cand("Maya works at Globex", "PROFILE"), [acme]).action == "replace"
    # the extraction rules write "User ...", a remember call the user's name: one slot all the same
    assert decide_merge(_cand("User prefers window seats now.", "PREFERENCE"), [AISLE]).action == "replace"


def test_slots_need_a_head_noun_and_the_same_subject() -> None:
    assert attribute_slots("Maya prefers aisle seats on long flights", "maya") == {"prefers:seat": "aisle"}
    assert attribute_slots("Maya prefers tea", "maya") == {}  # a second preference beside it is not a change
    assert decide_merge(_cand("Maya prefers tea", "PREFERENCE"), [AISLE]).action == "add"
    lisbon = ExistingItem("l1", "PROFILE", "Maya lives in Lisbon", "maya")
    assert "sister|lives_in" in attribute_slots("Maya's sister lives in Porto", "maya")
    assert decide_merge(_cand("Maya's sister lives in Porto"), [lisbon]).action == "add"


def test_kinds_never_merge_across() -> None:
    assert compatible("PREFERENCE", "fact") and compatible("RULE", "SKILL")
    assert not compatible("EPISODIC", "PREFERENCE") and not compatible("TASK", "RULE")
    pref = ExistingItem("p1", "PREFERENCE", "Maya prefers aisle seats", "maya")
    d = decide_merge(_cand("On 2 March Maya booked a trip to Lisbon with an aisle seat", "EPISODIC"), [pref])
    assert (d.action, d.target_ids) == ("keep_both", ["p1"])  # related, never merged into or superseding it
    # the same words as another kind of memory are a memory of their own, not a duplicate
    assert decide_merge(_cand("Maya prefers aisle seats", "RULE"), [pref]).action != "ignore"


def test_a_refinement_merges_and_keeps_the_richer_wording() -> None:
    d = decide_merge(_cand("Maya prefers aisle seats on long flights", "PREFERENCE"), [AISLE])
    assert (d.action, d.target_ids) == ("merge", ["a1"])
    assert richer_text("Maya prefers aisle seats on long flights", AISLE.text).endswith("long flights")
    assert richer_text("Maya prefers aisle seats", "Maya prefers aisle seats on long flights").endswith("flights")


def test_opposite_polarity_supersedes() -> None:
    sushi = ExistingItem("s1", "PREFERENCE", "User loves sushi.", "maya")
    assert decide_merge(_cand("User no longer likes sushi.", "PREFERENCE"), [sushi]).action == "replace"


def test_a_model_verdict_is_checked() -> None:
    episode = _cand("Maya booked an aisle seat", "EPISODIC")
    c = _cand("Maya prefers window seats")
    assert checked_verdict(MergeVerdict("replace", ["a1"], "m"), c, [AISLE]).reason == "m"
    for bad in (MergeVerdict("replace", ["nope"], "m"), MergeVerdict("frobnicate", [], "m"),
                MergeVerdict("merge", [], "m"), MergeVerdict("add", ["a1"], "m")):
        d = checked_verdict(bad, c, [AISLE])
        assert d.reason.startswith("model verdict set aside") and d.action == "replace"  # the offline rule's
    d = checked_verdict(MergeVerdict("merge", ["a1"], "m"), episode, [AISLE])  # an episode never rewrites a fact
    assert d.action != "merge" and d.reason.startswith("model verdict set aside")
    other = ExistingItem("o1", "FACT", "Maya prefers aisle seats", "someone-else")
    assert checked_verdict(MergeVerdict("replace", ["o1"], "m"), c, [AISLE, other]).target_ids == ["a1"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Maya prefers aisle seats", "PREFERENCE"),
    ("Maya's favourite colour is green", "PREFERENCE"),
    ("Maya no longer likes sushi", "PREFERENCE"),
    ("Maya lives in Lisbon", "PROFILE"),
    ("Maya works at Acme", "PROFILE"),
    ("Maya's sister lives in Porto", "FACT"),
    ("The deploy script needs Python 3.11", "FACT"),
])
def test_statement_type_infers_the_seed_type_of_an_untyped_remember(text: str, expected: str) -> None:
    assert statement_type(text, "maya") == expected


# The supersede decision across attribute types (issue #29: "a change of hobby/job/city/diet is a supersede of the
# same slot whatever the typing"): an end or a changed slot closes an item of any type that states an attribute of the
# user (PROFILE, PREFERENCE, FACT, SKILL), while merges, duplicates and other kinds (RULE, EPISODIC, TASK) stay apart.


def _typed(text: str, mtype: str, ends: list[str] | None = None) -> Candidate:
    data: dict = {"subject": "User"}
    if ends:
        data["ends"] = ends
    return Candidate(mtype, text, 0.7, 0.85, [], "PERMANENT", "u1", ["e1"], data)


def test_attribute_types_supersede_each_other_other_kinds_do_not() -> None:
    assert supersedable("PREFERENCE", "SKILL") and supersedable("SKILL", "FACT") and supersedable("FACT", "PROFILE")
    assert supersedable("RULE", "SKILL")  # same kind (procedural), as before
    assert not supersedable("EPISODIC", "SKILL") and not supersedable("FACT", "RULE")
    assert not supersedable("TASK", "PREFERENCE")


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["tennis", "chess", "the violin", "squash"]), st.sampled_from(["padel", "climbing", "go"]),
       st.sampled_from(["SKILL", "FACT", "PREFERENCE"]), st.sampled_from(["PREFERENCE", "FACT", "SKILL"]))
def test_an_ended_hobby_is_closed_whatever_either_was_typed(old: str, new: str, old_type: str, new_type: str) -> None:
    existing = [ExistingItem("h1", old_type, f"User plays {old} every week.", "u1")]
    d = decide_merge(_typed(f"User's thing is {new} now.", new_type, ends=[old.split()[-1]]), existing)
    assert (d.action, d.target_ids) == ("replace", ["h1"])


def test_a_changed_slot_closes_an_item_of_another_attribute_type() -> None:
    existing = [ExistingItem("w1", "FACT", "User works at Deloitte.", "u1")]
    d = decide_merge(_typed("User works at KPMG now.", "PROFILE"), existing)
    assert (d.action, d.target_ids) == ("replace", ["w1"])


def test_an_end_never_closes_another_kind_and_a_merge_stays_in_its_kind() -> None:
    rule = ExistingItem("r1", "RULE", "Always mention tennis scores first.", "u1")
    d = decide_merge(_typed("User gave up tennis.", "FACT", ends=["tennis"]), [rule])
    assert d.action != "replace"
    skill = ExistingItem("s1", "SKILL", "User plays tennis.", "u1")
    c = _typed("User plays tennis on Sundays.", "FACT")
    assert decide_merge(c, [skill]).action != "merge"
    # a deriver's replace across attribute types is kept; its merge across them is set aside
    assert checked_verdict(MergeVerdict("replace", ["s1"], "m"), c, [skill]).reason == "m"
    assert checked_verdict(MergeVerdict("merge", ["s1"], "m"), c, [skill]).reason != "m"


def test_a_time_word_before_the_predicate_is_not_a_subject() -> None:
    """"User now based in Lisbon" is the user's residence, not the residence of someone called "now"."""
    assert attribute_slots("User now based in Lisbon.", "u1") .get("lives_in", "").lower() == "lisbon"
    porto = ExistingItem("p1", "PROFILE", "User lives in Porto.", "u1")
    assert decide_merge(_cand("User now based in Lisbon.", "PROFILE", "u1"), [porto]).action == "replace"


@pytest.mark.parametrize(("old", "new"), [
    ("User's water bill is £40 a month.", 'User said: "the council just raised my water bill to £55."'),
    ("User's gym membership costs 30 euros a month.", 'User said: "the gym put my membership up to 38 euros."'),
])
def test_an_unsure_statement_that_revises_an_item_is_folded_into_it_not_lost(old: str, new: str) -> None:
    """An unsure candidate (a sentence kept in the user's words, its subject another: "the council raised my bill")
    is kept only beside the item on its topic; when ``revision`` finds it restates that item's attribute with another
    value, the change is that fold (old words kept, the newer beside them), not a plain replace the enricher drops
    for its unsureness (heldout_s19 en-u-004: the landlord's new rent was lost, the old one stayed current)."""
    item = ExistingItem("r1", "FACT", old, "maya")
    c = _cand(new)
    c = Candidate(c.memory_type, c.text, c.importance, c.confidence, c.tags, c.priority, c.user_id,
                  c.source_event_ids, data={"unsure": True, "sentence": new.split('"')[1], "subject": "User"})
    d = decide_merge(c, [item])
    assert (d.action, d.target_ids, d.fold) == ("replace", ["r1"], True), d.reason
