"""What kind of thing a value names, from world knowledge (issue #29: "changes only world knowledge reveals",
``engine.derive.offline.kinds``): two values of one kind a person has one at a time are one attribute; two of a
many-valued kind are not. Values unlike the suites'. Needs the offline MiniLM (the ``embed`` extra)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import kinds, parse_en
from memengine.engine.derive.offline.revision import revises

pytestmark = pytest.mark.skipif(not kinds.preload(), reason="the offline MiniLM (embed extra) is not installed")

ONE = {"phone": ["iPhone 13", "Nokia", "Motorola Edge", "Galaxy S23"],
       "club": ["Chelsea", "Manchester United", "Real Madrid"],
       "os": ["Ubuntu", "macOS", "Windows 11"],
       "car": ["Honda Civic", "Ford Fiesta", "Volkswagen Golf"]}
MANY = [("French", "German"), ("hamster", "parrot"), ("violin", "cello"), ("Lisbon", "Prague")]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_two_values_of_a_one_at_a_time_kind_share_it(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(ONE)))
    a, b = data.draw(st.lists(st.sampled_from(ONE[kind]), min_size=2, max_size=2, unique=True))
    assert kinds.one_at_a_time(a, b) == kind, (a, b)


@pytest.mark.parametrize(("a", "b"), MANY)
def test_two_values_of_a_many_valued_kind_do_not(a: str, b: str) -> None:
    assert kinds.one_at_a_time(a, b) is None


def test_values_of_different_kinds_do_not() -> None:
    assert kinds.one_at_a_time("Chelsea", "Ubuntu") is None
    assert kinds.one_at_a_time("Honda Civic", "iPhone 13") is None


@pytest.mark.skipif(not parse_en.available(), reason="the English parser (nlp extra) is not installed")
@pytest.mark.parametrize(("old", "new", "revised"), [
    ("I've got a Nokia.", "I'm on an iPhone 13 now.", True),
    ("I'm a Chelsea man.", "These days it's Real Madrid for me.", True),
    ("I run Ubuntu at home.", "I switched to macOS last month.", True),
    ("I speak French.", "I'm learning German now.", False),
    ("I have a hamster.", "I have a parrot now too.", False),
    ("My brother drives a Ford Fiesta.", "I drive a Honda Civic now.", False),
])
def test_a_newer_value_of_the_same_one_at_a_time_kind_revises(old: str, new: str, revised: bool) -> None:
    assert bool(revises(new, old)) is revised, (old, new, revises(new, old))
