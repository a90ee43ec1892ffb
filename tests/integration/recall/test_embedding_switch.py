"""Changing the embedding model is a rebuild, never a mix (issue #28 item 3), on the real servers.

Two cheap deterministic embedders of different dimensions stand for two models: a comparison of a 16-d query
vector with a 24-d stored one is an error in pgvector ("different vector dimensions"), so a recall that mixed the
two models could not answer ``hybrid``; beyond that each table is checked to hold exactly its own model's vectors.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import subprocess
import sys
from typing import Any

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.models import USE_NAME
from memengine.engine.embedding.registry import EmbeddingModelMismatch
from memengine.engine.embedding.switch import switch_model
from memengine.engine.ops import rebuild as rb
from tests.integration.poison import drained

pytestmark = pytest.mark.integration


class HashEmbedder:
    """A bag of words hashed into ``dim`` buckets (``salt`` picks the hash), L2-normalised: deterministic, instant,
    and texts sharing words are near. ``weights`` stands for the weight files (``checksum``)."""

    def __init__(self, name: str, dim: int, salt: str, weights: str = "v1") -> None:
        self.name, self.dim, self.salt, self.weights = name, dim, salt, weights
        self.queries = 0

    def checksum(self) -> str:
        return "sha256:" + hashlib.sha256(f"{self.salt}:{self.weights}".encode()).hexdigest()

    def vector(self, text: str) -> list[float]:
        v = [0.0] * self.dim
        for w in text.lower().split():
            h = hashlib.sha256(f"{self.salt}:{self.weights}:{w}".encode()).digest()
            v[h[0] % self.dim] += 1.0 if h[1] & 1 else -1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.vector(text)


A = HashEmbedder("test-hash-a", 16, "a")
B = HashEmbedder("test-hash-b", 24, "b")
TOPICS = ("peanut allergy", "marathon in Lisbon", "violin lessons", "a dog called Biscuit", "database design")


async def _populate(engine: Any, n: int, start: int = 0) -> None:
    client = engine.client("acme")
    for i in range(start, start + n):
        await client.record_turn(f"th-{i % 3}", "user", f"turn {i}: I talked about {TOPICS[i % len(TOPICS)]}",
                                 user_id="maya")


async def _table_holds_only(engine: Any, emb: HashEmbedder) -> int:
    """Assert every vector of ``emb``'s turn table is ``emb``'s embedding of its row's current text; the count."""
    table = await engine.pool.fetchval("SELECT table_name FROM embedding_models WHERE model = $1", emb.name)
    rows = await engine.pool.fetch(
        f"SELECT v.emb_text, e.emb::text AS emb FROM {table} e JOIN memory_vectors v"
        " ON v.tenant_id = e.tenant_id AND v.thread_id = e.thread_id AND v.seq = e.seq")
    for r in rows:
        got = json.loads(r["emb"])
        want = emb.vector(r["emb_text"])
        assert len(got) == emb.dim and max(abs(x - y) for x, y in zip(got, want, strict=True)) < 1e-5
    return len(rows)


async def test_switching_models_never_mixes_and_verify_is_exact(settings: Settings) -> None:
    """A store embedded with A is switched to B by ``switch_model`` (``memengine rebuild vectors --model``) while
    turns arrive and recall runs: every answer is hybrid and of A (this process's model, compared with A's table
    only); B's table is complete and B becomes the active model; a start with A is then refused naming the command,
    one with B answers hybrid from B's vectors, and ``verify`` is exact."""
    async with lifespan(settings, embedder=A) as engine:
        await _populate(engine, 30)
        await drained(engine)
        assert engine.embed_worker is not None
        await engine.embed_worker.catch_up()
        answers: list[Any] = []
        stop = asyncio.Event()

        async def ask() -> None:
            client = engine.client("acme")
            while not stop.is_set():
                answers.append(await client.recall("who has a peanut allergy", user="maya"))

        async def write() -> None:
            await _populate(engine, 20, start=30)

        asker = asyncio.create_task(ask())
        report, _ = await asyncio.gather(switch_model(engine.pool, B), write())
        stop.set()
        await asker
        assert report.model == B.name and report.previous == A.name and report.vectors >= 30
        assert answers and all(a.mode == "hybrid" and a.embedder == A.name for a in answers)
        states = dict(await engine.pool.fetch("SELECT model, state FROM embedding_models"))
        assert states == {A.name: "retired", B.name: "active"}
        await drained(engine)
        await engine.embed_worker.catch_up()
        assert await _table_holds_only(engine, A) == 50  # the running A engine keeps its own table whole
        assert (await engine.client("acme").recall("peanut allergy", user="maya")).embedder == A.name
        # a process configured with B starts beside the A one (a rolling restart) in the same query group: a request
        # is answered by either, each with its own model from its own table, never a ranking of both
        b_side = HashEmbedder("test-hash-b", 24, "b")
        async with lifespan(settings, roles={"query"}, embedder=b_side) as other:
            both = await asyncio.gather(*(e.client("acme").recall("peanut allergy", user="maya")
                                          for _ in range(15) for e in (engine, other)))
        assert {r.embedder for r in both} == {A.name, B.name} and all(r.mode == "hybrid" for r in both)
        assert all("peanut allergy" in r.hits[0].text for r in both)

    with pytest.raises(EmbeddingModelMismatch, match="memengine rebuild vectors --model test-hash-a"):
        async with lifespan(settings, embedder=HashEmbedder("test-hash-a", 16, "a")):
            pass

    b = HashEmbedder("test-hash-b", 24, "b")
    async with lifespan(settings, embedder=b) as engine:
        await drained(engine)
        assert engine.embed_worker is not None
        await engine.embed_worker.catch_up()
        assert await _table_holds_only(engine, b) == 50
        res = await engine.client("acme").recall("peanut allergy", user="maya")
        assert res.mode == "hybrid" and res.embedder == b.name and b.queries >= 1
        assert "peanut allergy" in res.hits[0].text
        report = await rb.verify(engine)
        assert report.ok, report.differing


async def test_same_name_other_weights_is_refused_then_rebuilt_in_place(settings: Settings) -> None:
    """The same model name with other weights (the checksum differs) is refused at start; the rebuild re-embeds in
    place (the cached vectors of the old weights are dropped) and the new weights start."""
    old, new = HashEmbedder("test-hash-c", 16, "c", "v1"), HashEmbedder("test-hash-c", 16, "c", "v2")
    async with lifespan(settings, embedder=old) as engine:
        await _populate(engine, 10)
        await drained(engine)
        assert engine.embed_worker is not None
        await engine.embed_worker.catch_up()
    with pytest.raises(EmbeddingModelMismatch, match="weights of embedding model 'test-hash-c' changed"):
        async with lifespan(settings, embedder=new):
            pass
    async with lifespan(settings, embedder=None) as engine:
        report = await switch_model(engine.pool, new)
        # every text embedded again (turns and memory items), none taken from the old weights' cache
        assert report.reembedded_in_place and report.embedded > 0 and report.cached == 0 and report.vectors >= 10
    async with lifespan(settings, embedder=new) as engine:
        assert await _table_holds_only(engine, new) == 10


def _cli(settings: Settings, *args: str, embedder: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home, "MEMENGINE_EMBEDDER": embedder}
    return subprocess.run([sys.executable, "-m", "memengine.engine.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


async def test_cli_refuses_a_mismatched_model_and_status_shows_the_models(settings: Settings) -> None:
    """``memengine recall`` configured with another model than the store's exits 2 with one error line naming
    ``memengine rebuild vectors --model``; ``status --json`` lists each model with its state, dim and checksum."""
    async with lifespan(settings, embedder=A) as engine:
        await _populate(engine, 5)
        await drained(engine)
        assert engine.embed_worker is not None
        await engine.embed_worker.catch_up()
    proc = await asyncio.to_thread(_cli, settings, "recall", "peanut", "--tenant", "acme", embedder="use")
    assert proc.returncode == 2, proc.stderr
    assert f"memengine rebuild vectors --model {USE_NAME}" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    proc = await asyncio.to_thread(_cli, settings, "status", "--json", embedder="use")
    assert proc.returncode == 0, proc.stderr
    models = msgspec.json.decode(proc.stdout)["embedding"]
    assert [(m["model"], m["state"], m["dim"], m["checksum"]) for m in models] == [
        (A.name, "active", 16, A.checksum())]
    # the command the error names switches the store; then the configured model starts and answers from its vectors
    proc = await asyncio.to_thread(_cli, settings, "rebuild", "vectors", "--model", "use", "--json", embedder="use")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == USE_NAME and out["previous"] == A.name and out["dim"] == 512 and out["vectors"] >= 5
    proc = await asyncio.to_thread(_cli, settings, "status", "--json", embedder="use")
    models = msgspec.json.decode(proc.stdout)["embedding"]
    assert [(m["model"], m["state"]) for m in models] == [(USE_NAME, "active"), (A.name, "retired")]
    assert models[0]["checksum"].startswith("sha256:") and models[0]["dim"] == 512
    proc = await asyncio.to_thread(_cli, settings, "recall", "peanut", "--tenant", "acme", "--json", embedder="use")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["mode"] == "hybrid" and res["embedder"] == USE_NAME


async def test_auto_keeps_an_existing_stores_model_and_gives_a_new_store_minilm_use(settings: Settings,
                                                                                     make_db: Any) -> None:
    """``MEMENGINE_EMBEDDER=auto`` (session 23): the default changed to ``minilm+use`` for a new store, but a store
    whose vectors are MiniLM's keeps starting with MiniLM (no refusal after an upgrade), on the real servers."""
    from memengine.engine.embedding.models import (
        MINILM_NAME,
        MODEL_ALIASES,
        build_embedder,
        minilm_available,
        use_available,
    )

    if not (minilm_available() and use_available()):
        pytest.skip("memengine[embed,embed-multilingual] not installed")
    minilm = build_embedder(msgspec.structs.replace(settings, embedder="minilm"))
    assert minilm is not None and minilm.name == MINILM_NAME
    async with lifespan(settings, embedder=minilm) as engine:  # the store's active model is MiniLM's
        await _populate(engine, 2)
    auto = msgspec.structs.replace(settings, embedder="auto")
    async with lifespan(auto) as engine:
        assert engine.embedder is not None and engine.embedder.name == MINILM_NAME
        active = await engine.pool.fetchval("SELECT model FROM embedding_models WHERE state = 'active'")
        assert active == MINILM_NAME
    # status names the rebuild that moves the store to the new default
    proc = await asyncio.to_thread(_cli, settings, "status", "--json", embedder="auto")
    assert proc.returncode == 0, proc.stderr
    assert "memengine rebuild vectors --model minilm+use" in json.loads(proc.stdout)["embedding_advice"]
    fresh = msgspec.structs.replace(auto, database_url=await make_db())
    async with lifespan(fresh) as engine:
        assert engine.embedder is not None and engine.embedder.name == MODEL_ALIASES["minilm+use"]
        active = await engine.pool.fetchval("SELECT model FROM embedding_models WHERE state = 'active'")
        assert active == MODEL_ALIASES["minilm+use"]
