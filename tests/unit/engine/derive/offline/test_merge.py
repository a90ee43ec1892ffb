"""The supersede decision across attribute types (issue #29: "a change of hobby/job/city/diet is a supersede of the
same slot whatever the typing"): an end or a changed slot closes an item of any type that states an attribute of the
user (PROFILE, PREFERENCE, FACT, SKILL), while merges, duplicates and other kinds (RULE, EPISODIC, TASK) stay apart."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import Candidate, ExistingItem, MergeVerdict, checked_verdict, decide_merge
from memengine.engine.derive.offline.merge import supersedable


def _cand(text: str, mtype: str, ends: list[str] | None = None) -> Candidate:
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
    d = decide_merge(_cand(f"User's thing is {new} now.", new_type, ends=[old.split()[-1]]), existing)
    assert (d.action, d.target_ids) == ("replace", ["h1"])


def test_a_changed_slot_closes_an_item_of_another_attribute_type() -> None:
    existing = [ExistingItem("w1", "FACT", "User works at Deloitte.", "u1")]
    d = decide_merge(_cand("User works at KPMG now.", "PROFILE"), existing)
    assert (d.action, d.target_ids) == ("replace", ["w1"])


def test_an_end_never_closes_another_kind_and_a_merge_stays_in_its_kind() -> None:
    rule = ExistingItem("r1", "RULE", "Always mention tennis scores first.", "u1")
    d = decide_merge(_cand("User gave up tennis.", "FACT", ends=["tennis"]), [rule])
    assert d.action != "replace"
    skill = ExistingItem("s1", "SKILL", "User plays tennis.", "u1")
    c = _cand("User plays tennis on Sundays.", "FACT")
    assert decide_merge(c, [skill]).action != "merge"
    # a deriver's replace across attribute types is kept; its merge across them is set aside
    assert checked_verdict(MergeVerdict("replace", ["s1"], "m"), c, [skill]).reason == "m"
    assert checked_verdict(MergeVerdict("merge", ["s1"], "m"), c, [skill]).reason != "m"
