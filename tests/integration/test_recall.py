"""Recall on the real servers: hybrid search through NATS, tenant isolation, filters, the full-text fallback, the
embedding cache, the OpenAI-compatible embedder against a local HTTP server, and a small LoCoMo eval slice."""

from __future__ import annotations

import asyncio

import json
import threading
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from engine.bootstrap import Engine, lifespan
from engine.embed import MiniLMEmbedder, OpenAIEmbedder, build_embedder, minilm_available
from engine.embedder_worker import EmbedderWorker
from engine.settings import Settings
from engine.tools import TOOLS, call_tool
from events import ThreadDeleted, new_event_id
from tests.conftest import LOCOMO_DIR

pytestmark = pytest.mark.integration
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)

CONVERSATION = [
    ("alice", "I adopted a golden retriever puppy named Biscuit last week."),
    ("bob", "That's lovely! How is Biscuit settling in?"),
    ("alice", "Great, though he chewed my favourite running shoes."),
    ("bob", "I started learning the violin, my teacher is very patient."),
    ("alice", "I am planning a trip to Lisbon in September for the marathon."),
    ("bob", "Lisbon is beautiful, try the pastel de nata near the river."),
]


class CountingEmbedder:
    """Wraps an embedder and counts the texts it embeds."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts = 0

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return await self.inner.embed(texts)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    if not minilm_available():
        pytest.skip("memengine[embed] not installed")
    return MiniLMEmbedder()  # the model itself is cached per process in engine.embed


@pytest.fixture
async def hybrid(settings: Settings, minilm: MiniLMEmbedder) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=CountingEmbedder(minilm), run_projector=True) as e:
        yield e


async def record(engine: Engine, tenant: str, thread: str, turns, *, start: datetime = T0,  # type: ignore[no-untyped-def]
                 session: str = "s1") -> int:
    client = engine.client(tenant)
    last = 0
    for i, (who, text) in enumerate(turns):
        ack = await client.record_turn(thread, "user", text, user_id=who, session_id=session,
                                       occurred_at=start + timedelta(minutes=i))
        last = ack.seq
    return last


async def settle(engine: Engine, seq: int) -> None:
    await engine.runner.catch_up() if engine.runner.active else None
    await engine.recall.catch_up() if engine.recall.active else None
    await engine.service.progress.wait_for(seq, 10)
    deadline = asyncio.get_running_loop().time() + 10
    while await engine.pool.fetchval("SELECT coalesce(max(last_seq), 0) FROM projection_checkpoints"
                                     " WHERE projection = 'vectors'") < seq:
        assert asyncio.get_running_loop().time() < deadline, "recall rows not projected"
        await asyncio.sleep(0.02)
    if engine.embed_worker is not None:
        await engine.embed_worker.catch_up()


async def test_hybrid_recall_finds_the_turn_and_windows(hybrid: Engine) -> None:
    last = await record(hybrid, "acme", "chat", CONVERSATION)
    await settle(hybrid, last)
    res = await hybrid.client("acme").recall("What is the name of Alice's dog?", k=3, after_seq=last)
    assert res["mode"] == "hybrid" and res["embedder"] == "all-MiniLM-L6-v2"
    top = res["hits"][0]
    assert "Biscuit" in top["text"] and top["text"].startswith("[8 May 2023] alice: ")
    assert top["source_event_ids"] == [top["event_id"]] and top["thread"] == "chat"
    res = await hybrid.client("acme").recall("which musical instrument is Bob learning", k=2)
    assert "violin" in res["hits"][0]["text"]
    # windows: the centre turn's +-1 (win) and +-2 (emb) neighbours of the same session, re-derived as turns arrive
    row = await hybrid.pool.fetchrow("SELECT win_text, emb_text FROM memory_vectors WHERE tenant_id = 'acme'"
                                     " ORDER BY seq OFFSET 2 LIMIT 1")
    assert row["win_text"] == ("[8 May 2023] bob: That's lovely! How is Biscuit settling in? alice: Great, though he "
                               "chewed my favourite running shoes. bob: I started learning the violin, my teacher is "
                               "very patient.")
    assert row["emb_text"].count(":") == 5
    # every turn has a vector of its current window text
    table = hybrid.embed_worker.table  # type: ignore[union-attr]
    assert await hybrid.pool.fetchval(f"SELECT count(*) FROM {table} e JOIN memory_vectors v USING (tenant_id,"
                                      " thread_id, seq) WHERE e.emb_sha = v.emb_sha") == len(CONVERSATION)


async def test_filters_thread_user_time(hybrid: Engine) -> None:
    await record(hybrid, "acme", "a", CONVERSATION)
    last = await record(hybrid, "acme", "b", [("carol", "My golden retriever Rex loves the beach."),
                                              ("dave", "Rex sounds fun.")], start=T0 + timedelta(days=30))
    await settle(hybrid, last)
    c = hybrid.client("acme")
    both = await c.recall("golden retriever", k=10)
    assert {h["thread"] for h in both["hits"]} == {"a", "b"}
    only_b = await c.recall("golden retriever", thread="b", k=10)
    assert {h["thread"] for h in only_b["hits"]} == {"b"}
    carol = await c.recall("golden retriever", user="carol", k=10)
    assert {h["user_id"] for h in carol["hits"]} == {"carol"}
    early = await c.recall("golden retriever", until=T0 + timedelta(days=1), k=10)
    assert early["hits"] and {h["thread"] for h in early["hits"]} == {"a"}
    late = await c.recall("golden retriever", since=T0 + timedelta(days=1), k=10)
    assert late["hits"] and {h["thread"] for h in late["hits"]} == {"b"}
    # ThreadDeleted removes the turns from recall (and the worker drops their vectors)
    ack = await c.publish(ThreadDeleted(event_id=new_event_id(), tenant_id="acme", thread_id="b",
                                        occurred_at=T0 + timedelta(days=40)))
    await settle(hybrid, ack.seq)
    assert {h["thread"] for h in (await c.recall("golden retriever", k=10))["hits"]} == {"a"}
    table = hybrid.embed_worker.table  # type: ignore[union-attr]
    assert await hybrid.pool.fetchval(f"SELECT count(*) FROM {table} WHERE thread_id = 'b'") == 0


async def test_bad_requests_are_typed_errors(hybrid: Engine) -> None:
    from engine.protocol import RpcError

    c = hybrid.client("acme")
    for kwargs in ({"k": 0}, {"k": 101}):
        with pytest.raises(RpcError) as info:
            await c.recall("x", **kwargs)
        assert info.value.code == "invalid_request"
    with pytest.raises(RpcError) as info:
        await c.request("recall", {"query": "x", "bogus": 1})
    assert info.value.code == "invalid_request"
    with pytest.raises(RpcError) as info:
        await c.request("recall", {"query": ""})
    assert info.value.code == "invalid_request"
    with pytest.raises(RpcError) as info:
        await c.recall("x", thread="a.b")
    assert info.value.code == "invalid_token"
    assert (await c.recall("nothing stored yet"))["hits"] == []


@given(st.lists(st.sampled_from(["retriever", "violin", "Lisbon", "marathon", "shoes", "beach", "pastel"]),
                min_size=1, max_size=3))
@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
async def test_tenant_isolation_property(tenants_engine, words: list[str]) -> None:  # type: ignore[no-untyped-def]
    engine, seqs = tenants_engine
    for tenant, own in seqs.items():
        res = await engine.client(tenant).recall(" ".join(words), k=20)
        assert {h["event_id"] for h in res["hits"]} <= own


@pytest.fixture
async def tenants_engine(hybrid: Engine):  # type: ignore[no-untyped-def]
    """Three tenants with the same thread id and overlapping vocabulary."""
    last = 0
    for i, tenant in enumerate(("t1", "t2", "t3")):
        last = await record(hybrid, tenant, "chat", CONVERSATION[i:] + [("carol", "My retriever loves the beach.")])
    await settle(hybrid, last)
    own = {t: {str(r["event_id"]) for r in await hybrid.pool.fetch(
        "SELECT event_id FROM messages WHERE tenant_id = $1", t)} for t in ("t1", "t2", "t3")}
    return hybrid, own


async def test_fulltext_fallback_without_embedder(settings: Settings) -> None:
    assert build_embedder(msgspec.structs.replace(settings, embedder="none")) is None
    async with lifespan(settings, embedder=None) as engine:
        assert engine.embed_worker is None
        last = await record(engine, "acme", "chat", CONVERSATION)
        res = await engine.client("acme").recall("Biscuit the puppy", k=2, after_seq=last)
        assert res["mode"] == "fulltext" and res["embedder"] is None
        assert "Biscuit" in res["hits"][0]["text"]
        # the agent tools work on the same path
        names = [t["function"]["name"] for t in TOOLS]
        assert names == ["recall_memory", "search_conversation_traces"]
        out = json.loads(await call_tool("recall_memory", json.dumps({"query": "marathon in Lisbon", "top_k": 1}),
                                         engine.client("acme")))
        assert out["mode"] == "fulltext" and "marathon" in out["memories"][0]["text"]
        traces = json.loads(await call_tool("search_conversation_traces", '{"query": "violin", "limit": 1}',
                                            engine.client("acme")))
        assert traces["traces"][0]["content"][0]["text"].startswith("I started learning the violin")
        assert "error" in json.loads(await call_tool("recall_memory", "not json", engine.client("acme")))


async def test_embedding_cache_means_a_rebuild_embeds_nothing(settings: Settings, make_db,  # type: ignore[no-untyped-def]
                                                              minilm: MiniLMEmbedder) -> None:
    counting = CountingEmbedder(minilm)
    async with lifespan(settings, embedder=counting, run_projector=False) as engine:
        await engine.runner.try_start()
        await engine.recall.try_start()
        last = await record(engine, "acme", "chat", CONVERSATION)
        await engine.runner.catch_up()
        await engine.recall.catch_up()
        await engine.embed_worker.catch_up()  # type: ignore[union-attr]
        first = counting.texts
        assert first == len(CONVERSATION)  # folded before embedding: one text per turn
        # rebuild the read models from the log: same texts, all served from embedding_cache
        table = engine.embed_worker.table  # type: ignore[union-attr]
        await engine.pool.execute(f"TRUNCATE memory_vectors, {table}")
        await engine.recall.stop()
        await engine.pool.execute("UPDATE projection_checkpoints SET last_seq = 0 WHERE projection = 'vectors'")
        await engine.pool.execute("DELETE FROM applied_events WHERE projector = 'recall'")
        await engine.recall.try_start()
        await engine.recall.catch_up()
        worker = EmbedderWorker(engine.pool, counting)  # a fresh worker (no watermark)
        assert await worker.catch_up() == len(CONVERSATION)
        assert counting.texts == first and worker.stats.cached == len(CONVERSATION)
        res = await engine.client("acme").recall("Biscuit", k=1, after_seq=last)
        assert res["mode"] == "hybrid"


class _FakeEmbeddings(BaseHTTPRequestHandler):
    calls: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _fake_vec(t)} for i, t in enumerate(texts)]
        out = json.dumps({"object": "list", "data": data, "model": body["model"],
                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
        pass


def _fake_vec(text: str) -> list[float]:
    """A deterministic 8-d bag-of-letters vector: texts sharing words are close."""
    v = [0.0] * 8
    for w in text.lower().split():
        v[sum(map(ord, w)) % 8] += 1.0
    return v if any(v) else [1.0] + [0.0] * 7


async def test_openai_compatible_embedder_against_local_server(settings: Settings) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        s = msgspec.structs.replace(settings, embedder="auto", embedding_base_url=url, embedding_model="fake-embed-8",
                                    api_key=type(settings.api_key)("sk-test"))
        emb = build_embedder(s)
        assert isinstance(emb, OpenAIEmbedder)
        async with lifespan(s, embedder=emb) as engine:
            assert emb.dim == 8  # from the first reply; the table is vector(8)
            table = engine.embed_worker.table  # type: ignore[union-attr]
            assert await engine.pool.fetchval(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass"
                " AND attname = 'emb'", table) == "vector(8)"
            last = await record(engine, "acme", "chat", CONVERSATION)
            await settle(engine, last)
            res = await engine.client("acme").recall("violin teacher", k=2)
            assert res["mode"] == "hybrid" and res["embedder"] == "fake-embed-8"
            assert "violin" in res["hits"][0]["text"]
        call = _FakeEmbeddings.calls[-1]
        assert call["path"] == "/v1/embeddings" and call["auth"] == "Bearer sk-test"
        assert call["body"]["model"] == "fake-embed-8"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
async def test_eval_slice_of_conv_26(settings: Settings, minilm: MiniLMEmbedder) -> None:
    from engine.eval_locomo import run_eval

    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data not present")
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False, embedder=minilm) as engine:
        res = await run_eval(engine, [Path(path)], [5, 10], limit_turns=60, limit_questions=12)
    assert 0 < res["questions"] <= 12
    assert set(res["recall_at"]) == {"5", "10"}
    assert res["recall_at"]["10"] >= res["recall_at"]["5"] >= 0.3
    assert sum(c["questions"] for c in res["by_category"].values()) == res["questions"]
    assert res["latency_ms"]["p95"] >= res["latency_ms"]["p50"] > 0
