"""The composite embedder (issue #28 item 1): one vector space whose cosine is the weighted sum of the parts'."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.embedding.composite import CompositeEmbedder, mostly_latin


class Fixed:
    """A part that maps each text to a given unit vector."""

    def __init__(self, name: str, table: dict[str, list[float]]) -> None:
        self.name = name
        self.table = table
        self.dim = len(next(iter(table.values())))

    def checksum(self) -> str:
        return "sha256:" + self.name

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


vec3 = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3).filter(
    lambda v: sum(x * x for x in v) > 0.01).map(_unit)
vec2 = st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=2).filter(
    lambda v: sum(x * x for x in v) > 0.01).map(_unit)


@settings(max_examples=60, deadline=None)
@given(a1=vec3, b1=vec3, a2=vec2, b2=vec2, w=st.floats(0.05, 0.95))
def test_cosine_is_the_weighted_sum_of_the_parts(a1: list[float], b1: list[float], a2: list[float],
                                                 b2: list[float], w: float) -> None:
    emb = CompositeEmbedder([Fixed("m", {"a": a1, "b": b1}), Fixed("u", {"a": a2, "b": b2})], [w, 1 - w])
    va, vb = asyncio.run(emb.embed(["a", "b"]))
    assert len(va) == emb.dim == 5
    assert math.isclose(_cos(va, va), 1.0, abs_tol=1e-9)  # unit length: pgvector's cosine distance applies
    assert math.isclose(_cos(va, vb), w * _cos(a1, b1) + (1 - w) * _cos(a2, b2), abs_tol=1e-9)
    assert asyncio.run(emb.embed_query("a")) == va  # the query side is the same map


def test_identity_names_both_parts_and_sums_the_weights() -> None:
    m, u = Fixed("m", {"a": [1.0, 0.0]}), Fixed("u", {"a": [0.0, 1.0]})
    even, other = CompositeEmbedder([m, u], [0.5, 0.5]), CompositeEmbedder([m, u], [0.3, 0.7])
    assert even.name == other.name == "m+u"
    # other fusion weights are other vectors: the registry must see another checksum (a rebuild, never a mix)
    assert even.checksum() != CompositeEmbedder([m, u], [0.4, 0.6]).checksum()
    assert even.checksum() == CompositeEmbedder([m, u], [0.5, 0.5]).checksum()


@pytest.mark.parametrize("weights", [[1.0], [0.5, 0.6], [0.0, 1.0], [-0.5, 1.5]])
def test_weights_that_do_not_fit_are_refused(weights: list[float]) -> None:
    parts = [Fixed(str(i), {"a": [1.0]}) for i in range(len(weights))]
    with pytest.raises(ValueError, match="composite"):
        CompositeEmbedder(parts, weights)


@pytest.mark.parametrize(("text", "seen"), [
    ("I use Redis for caching", "I use Redis for caching"),
    ("我对花生过敏，吃了会起疹子", ""),
    ("[2 March 2024] 王磊: 我们讨论一下 PostgreSQL 的表设计吧", ""),  # mostly Chinese: MiniLM reads noise
    ("We moved the 订单 table to PostgreSQL today", "We moved the   table to PostgreSQL today"),
])
def test_the_english_model_reads_mostly_latin_text_only(text: str, seen: str) -> None:
    assert mostly_latin(text) == seen


def test_a_part_without_a_view_of_the_text_adds_nothing() -> None:
    """A Chinese text has no MiniLM half: its cosine with anything is the USE part's alone (then normalised), so
    MiniLM's noise on Chinese cannot outweigh USE's cross-lingual match."""
    zh, en, other = "我对花生过敏", "peanut allergy", "晚上要喂猫"
    m = Fixed("m", {en: [1.0, 0.0]})
    u = Fixed("u", {zh: [1.0, 0.0], en: _unit([0.8, 0.6]), other: [0.0, 1.0]})
    emb = CompositeEmbedder([m, u], [0.5, 0.5], [mostly_latin, None])
    vz, ve, vo = asyncio.run(emb.embed([zh, en, other]))
    for v in (vz, ve, vo):
        assert math.isclose(_cos(v, v), 1.0, abs_tol=1e-9)
    assert vz[:2] == [0.0, 0.0] and vo[:2] == [0.0, 0.0]
    assert math.isclose(_cos(vz, vo), 0.0, abs_tol=1e-9)
    assert math.isclose(_cos(vz, ve), math.sqrt(0.5) * 0.8, abs_tol=1e-9)  # USE's cosine, its half's share
    assert asyncio.run(emb.embed_query(zh)) == vz


def test_rebuild_name_minilm_plus_use_builds_the_composite() -> None:
    """``memengine rebuild vectors --model minilm+use`` and ``MEMENGINE_EMBEDDER=minilm+use`` name the composite."""
    from memengine.engine.adapters.settings import Settings
    from memengine.engine.embedding.models import (
        MODEL_ALIASES,
        MiniLMEmbedder,
        UseEmbedder,
        embedder_for_model,
        minilm_available,
        use_available,
    )

    if not (minilm_available() and use_available()):
        pytest.skip("memengine[embed] and memengine[embed-multilingual] not installed")
    emb = embedder_for_model(Settings(), "minilm+use")
    assert isinstance(emb, CompositeEmbedder) and emb.name == MODEL_ALIASES["minilm+use"]
    assert [type(p) for p in emb.parts] == [MiniLMEmbedder, UseEmbedder] and emb.views == [mostly_latin, None]
    assert emb.dim == 896 and embedder_for_model(Settings(), emb.name).name == emb.name
