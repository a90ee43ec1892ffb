"""The deriver's USE vectors: one model, loaded once, the same vector for the same text."""

from __future__ import annotations

import math

import pytest

from memengine.engine.derive.offline import use_vectors


@pytest.mark.skipif(not use_vectors.available(), reason="the embed-multilingual extra is not installed")
def test_a_vector_is_unit_length_and_repeatable() -> None:
    a = use_vectors.vector("我对花生过敏")
    use_vectors.vector.cache_clear()
    b = use_vectors.vector("我对花生过敏")
    assert a is not None and b is not None and len(a) == 512
    assert math.isclose(math.sqrt(sum(x * x for x in a)), 1.0, rel_tol=1e-3)
    assert a == b


@pytest.mark.skipif(not use_vectors.available(), reason="the embed-multilingual extra is not installed")
def test_a_translation_is_nearer_than_an_unrelated_text() -> None:
    zh, en, other = (use_vectors.vector(t) for t in ("我对花生过敏", "I am allergic to peanuts", "明天开会"))
    assert zh and en and other
    assert sum(x * y for x, y in zip(zh, en, strict=True)) > sum(x * y for x, y in zip(zh, other, strict=True))
