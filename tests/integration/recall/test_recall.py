"""Recall on the real servers: hybrid search through NATS, tenant isolation, filters, the full-text fallback, the
embedding cache, the OpenAI-compatible embedder against a local HTTP server, and a small LoCoMo eval slice."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.client.tools import TOOLS, call_tool
from memengine.engine.embedding.models import (
    MiniLMEmbedder,
    OpenAIEmbedder,
    build_embedder,
    minilm_available,
    vec_literal,
)
from memengine.engine.embedding.worker import EmbedderWorker
from memengine.events import ThreadDeleted, new_event_id
from tests.conftest import LOCOMO_DIR, wait_until

pytestmark = pytest.mark.integration
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

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
    assert res.mode == "hybrid" and res.embedder == "all-MiniLM-L6-v2"
    top = res.hits[0]
    assert "Biscuit" in top.text and top.text.startswith("[8 May 2023] alice: ")
    assert top.source_event_ids == [top.event_id] and top.thread == "chat"
    res = await hybrid.client("acme").recall("which musical instrument is Bob learning", k=2)
    assert "violin" in res.hits[0].text
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
    assert {h.thread for h in both.hits} == {"a", "b"}
    only_b = await c.recall("golden retriever", thread="b", k=10)
    assert {h.thread for h in only_b.hits} == {"b"}
    carol = await c.recall("golden retriever", user="carol", k=10)
    assert {h.user_id for h in carol.hits} == {"carol"}
    early = await c.recall("golden retriever", until=T0 + timedelta(days=1), k=10)
    assert early.hits and {h.thread for h in early.hits} == {"a"}
    late = await c.recall("golden retriever", since=T0 + timedelta(days=1), k=10)
    assert late.hits and {h.thread for h in late.hits} == {"b"}
    # ThreadDeleted removes the turns from recall (and the worker drops their vectors)
    ack = await c.publish(ThreadDeleted(event_id=new_event_id(), tenant_id="acme", thread_id="b",
                                        occurred_at=T0 + timedelta(days=40)))
    await settle(hybrid, ack.seq)
    assert {h.thread for h in (await c.recall("golden retriever", k=10)).hits} == {"a"}
    table = hybrid.embed_worker.table  # type: ignore[union-attr]
    assert await hybrid.pool.fetchval(f"SELECT count(*) FROM {table} WHERE thread_id = 'b'") == 0


async def test_bad_requests_are_typed_errors(hybrid: Engine) -> None:
    from memengine.engine.wire.errors import RpcError

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
    assert (await c.recall("nothing stored yet")).hits == []


@given(st.lists(st.sampled_from(["retriever", "violin", "Lisbon", "marathon", "shoes", "beach", "pastel"]),
                min_size=1, max_size=3))
@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
async def test_tenant_isolation_property(tenants_engine, words: list[str]) -> None:  # type: ignore[no-untyped-def]
    """No query of one tenant returns another's turns or memory items (sources: turns and typed memories)."""
    engine, seqs = tenants_engine
    for tenant, own in seqs.items():
        res = await engine.client(tenant).recall(" ".join(words), k=20)
        assert {h.event_id for h in res.hits} <= own
        items = {r["memory_id"] for r in await engine.pool.fetch(
            "SELECT memory_id FROM memory_items WHERE tenant_id = $1", tenant)}
        both = await engine.client(tenant).recall(" ".join(words), k=20, sources=["turns", "memories"],
                                                  status=["all"], include_expired=True)
        for h in both.hits:
            assert set(h.source_event_ids) <= own
            assert (h.event_id in own) if h.kind == "turn" else (h.memory_id in items)


@pytest.fixture
async def tenants_engine(hybrid: Engine):  # type: ignore[no-untyped-def]
    """Three tenants with the same thread id and overlapping vocabulary."""
    last = 0
    for i, tenant in enumerate(("t1", "t2", "t3")):
        last = await record(hybrid, tenant, "chat", CONVERSATION[i:] + [("carol", "My retriever loves the beach.")])
    await settle(hybrid, last)
    own = {t: {str(r["event_id"]) for r in await hybrid.pool.fetch(
        "SELECT event_id FROM messages WHERE tenant_id = $1", t)} for t in ("t1", "t2", "t3")}
    for t in ("t1", "t2", "t3"):  # typed memories with the same vocabulary and the same ids in every tenant
        await publish_items(hybrid, t, [_item("shared-id", "Owns a retriever, plays violin, runs the Lisbon marathon",
                                              sources=sorted(own[t])[:2]),
                                        _item("pastel", "Likes pastel de nata by the beach", status="quarantined")],
                            at=T0)
    return hybrid, own


async def test_recall_after_seq_waits_for_the_recall_read_model(settings: Settings) -> None:
    """Recall is answered from memory_vectors, folded by its own projector behind the context ones: a recall naming
    ``after_seq`` waits for that projector, not for messages (CI once got no hits from a recall whose after_seq the
    context projections had reached and the recall projector had not)."""
    s = msgspec.structs.replace(settings, ryw_timeout=0.3)
    async with lifespan(s, embedder=None, run_projector=False) as engine:  # the test drives each projector
        last = await record(engine, "acme", "chat", CONVERSATION)
        await engine.runner.catch_up()  # context's read models reach `last`; the recall projector has not moved
        client = engine.client("acme")
        assert (await client.context("chat", after_seq=last)).stale is False
        behind = await client.recall("Biscuit the puppy", k=2, after_seq=last)
        assert behind.applied_seq < last and behind.hits == []
        await engine.recall.catch_up()
        res = await client.recall("Biscuit the puppy", k=2, after_seq=last)
        assert res.applied_seq >= last and "Biscuit" in res.hits[0].text


async def test_fulltext_fallback_without_embedder(settings: Settings) -> None:
    assert build_embedder(msgspec.structs.replace(settings, embedder="none")) is None
    async with lifespan(settings, embedder=None) as engine:
        assert engine.embed_worker is None
        last = await record(engine, "acme", "chat", CONVERSATION)
        await settle(engine, last)  # the read-your-writes wait itself is test_recall_after_seq_waits_for_...
        res = await engine.client("acme").recall("Biscuit the puppy", k=2, after_seq=last)
        assert res.mode == "fulltext" and res.embedder is None and res.applied_seq >= last
        assert "Biscuit" in res.hits[0].text
        # the agent tools work on the same path
        names = [t["function"]["name"] for t in TOOLS]
        assert names == ["recall_memory", "search_memory", "search_conversation_traces"]
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
        assert res.mode == "hybrid"


class _FakeEmbeddings(BaseHTTPRequestHandler):
    calls: list[dict] = []

    def do_POST(self) -> None:
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
            assert res.mode == "hybrid" and res.embedder == "fake-embed-8"
            assert "violin" in res.hits[0].text
        call = _FakeEmbeddings.calls[-1]
        assert call["path"] == "/v1/embeddings" and call["auth"] == "Bearer sk-test"
        assert call["body"]["model"] == "fake-embed-8"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
async def test_eval_slice_of_conv_26(settings: Settings, minilm: MiniLMEmbedder) -> None:
    from memengine.engine.ops.eval_locomo import run_eval
    from memengine.engine.read.context import plan_budget

    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data not present")
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False, embedder=minilm) as engine:
        res = await run_eval(engine, [Path(path)], [5, 10], limit_turns=60, limit_questions=12, contexts=[300, 2000])
    assert 0 < res["questions"] <= 12
    assert set(res["recall_at"]) == {"5", "10"}
    assert res["recall_at"]["10"] >= res["recall_at"]["5"] >= 0.3
    assert sum(c["questions"] for c in res["by_category"].values()) == res["questions"]
    assert res["latency_ms"]["p95"] >= res["latency_ms"]["p50"] > 0
    # issue #14: evidence in context per window, beside the two baselines at the same budget
    ce = res["context_evidence"]
    assert set(ce) == {"300", "2000"} and all(set(ce[w]) == {"memengine", "recent_only", "recall_packed"} for w in ce)
    for w in ce:
        for m in ce[w].values():
            assert 0.0 <= m["all"] <= 1.0 and m["tokens_used"] <= plan_budget(int(w)).total
    # 60 turns (~2,000 tokens) fit a 2,000-token window's budget almost whole; 300 tokens hold a few turns only
    assert ce["2000"]["recent_only"]["all"] > ce["300"]["recent_only"]["all"]
    assert ce["2000"]["memengine"]["all"] >= ce["2000"]["recent_only"]["all"]


# -- typed memory items, re-scoring, filters, search_memory (issue #3: decay/importance, filters, tools) -----------

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _item(memory_id: str, text: str, *, typ: str = "PREFERENCE", importance: float = 0.5, tags=(),  # type: ignore[no-untyped-def]
          status: str = "active", expires_at: datetime | None = None, user: str = "maya", sources=()):
    from memengine.events.derived import ExtractedMemory, MergeDecision

    return ExtractedMemory(memory_id=memory_id, user_id=user, memory_type=typ, text=text, importance=importance,
                           tags=list(tags), expires_at=expires_at, dedupe_hash=memory_id, status=status,
                           decision=MergeDecision(action="add"), source_event_ids=list(sources))


async def publish_items(engine: Engine, tenant: str, items, *, at: datetime, thread: str = "chat") -> None:  # type: ignore[no-untyped-def]
    """Publish one ``MemoriesExtracted`` (as the enricher would) and wait until ``memory_items`` has the items."""
    from memengine.events.codec import encode
    from memengine.events.derived import MemoriesExtracted

    ev = MemoriesExtracted(event_id=new_event_id(), tenant_id=tenant, thread_id=thread, occurred_at=at,
                           source_event_ids=[s for m in items for s in m.source_event_ids] or [new_event_id()],
                           source_seq_range=[1, 1], model="test", prompt_version="t1", memories=list(items))
    await engine.js.publish(engine.subjects.derived(tenant, thread, "MemoriesExtracted"), encode(ev),
                            headers={"Nats-Msg-Id": str(ev.event_id)}, stream=engine.streams.derived)
    ids = [m.memory_id for m in items]

    async def folded() -> bool:
        return await engine.pool.fetchval("SELECT count(*) FROM memory_items WHERE tenant_id = $1"
                                          " AND memory_id = ANY($2)", tenant, ids) == len(ids)
    await wait_until(folded)
    if engine.embed_worker is not None:
        await engine.embed_worker.catch_up()


@pytest.fixture
async def fulltext(settings: Settings) -> AsyncIterator[Engine]:
    """No embedder, no enricher (memory items come only from the events a test publishes)."""
    async with lifespan(settings, roles={"projector", "query"}, embedder=None) as e:
        yield e


@pytest.fixture
async def hybrid_items(settings: Settings, minilm: MiniLMEmbedder) -> AsyncIterator[Engine]:
    async with lifespan(settings, roles={"projector", "query"}, embedder=minilm) as e:
        yield e


async def test_decay_and_importance_order_memories_and_turns(fulltext: Engine) -> None:
    """Seed 002 §4.1: score = 0.6 relevance + 0.2 exp(-days / 30) + 0.2 importance, exactly, per hit."""
    c = fulltext.client("acme")
    # the same text twice: equal relevance, so recency decides; then equal time, so importance decides
    await publish_items(fulltext, "acme", [_item("old", "Maya prefers aisle seats on long flights")],
                        at=NOW - timedelta(days=200))
    await publish_items(fulltext, "acme", [_item("new", "Maya prefers aisle seats on long flights"),
                                           _item("low", "Maya prefers window seats on short flights",
                                                 importance=0.1),
                                           _item("high", "Maya prefers window seats on short flights",
                                                 importance=0.9)], at=NOW - timedelta(days=2))
    res = await c.recall("aisle seats flights", sources=["memories"], k=10, as_of=NOW)
    assert res.mode == "fulltext"
    order = [h.memory_id for h in res.hits]
    assert order.index("new") < order.index("old")
    assert order.index("high") < order.index("low")
    for h in res.hits:
        assert h.kind == "memory" and 0 <= h.relevance <= 1
        assert h.score == pytest.approx(0.6 * h.relevance + 0.2 * h.recency + 0.2 * h.importance,
                                           abs=1e-5)
    by_id = {h.memory_id: h for h in res.hits}
    assert by_id["new"].recency == pytest.approx(math.exp(-2 / 30), abs=1e-5)
    assert by_id["old"].recency == pytest.approx(math.exp(-200 / 30), abs=1e-5)
    assert by_id["high"].importance == pytest.approx(0.9)
    # turns: two equally relevant turns 60 days apart; the newer wins, importance is the neutral constant
    await record(fulltext, "acme", "t-old", [("maya", "Booked the Lisbon hotel near the river")],
                 start=NOW - timedelta(days=61))
    last = await record(fulltext, "acme", "t-new", [("maya", "Booked the Lisbon hotel near the river")],
                        start=NOW - timedelta(days=1))
    await settle(fulltext, last)
    # turns are neutral by default (MEMORY_RECALL_TURN_WEIGHTS=1,0,0): relevance alone, the RRF tie goes to position
    res = await c.recall("Lisbon hotel river", k=2, as_of=NOW)
    assert [h.thread for h in res.hits] == ["t-old", "t-new"]
    assert all(h.score == h.relevance for h in res.hits)
    # with the seed weights on turns too, the newer turn wins
    from memengine.engine.read.recall import Weights

    fulltext.service.recaller.weights = Weights.parse("0.6,0.2,0.2", 30.0, turns="0.6,0.2,0.2")
    res = await c.recall("Lisbon hotel river", k=2, as_of=NOW)
    assert [h.thread for h in res.hits] == ["t-new", "t-old"]
    assert {h.importance for h in res.hits} == {0.5}
    # (an RRF tie is broken by position, so the older turn has the higher relevance: recency overturns it)
    assert res.hits[1].relevance == 1.0 > res.hits[0].relevance > 0.9
    assert res.hits[0].recency == pytest.approx(math.exp(-1 / 30), abs=1e-3)
    # both sources in one ranking, each hit saying what it is
    both = await c.recall("Lisbon hotel aisle seats", sources=["turns", "memories"], k=10, as_of=NOW)
    assert {h.kind for h in both.hits} == {"turn", "memory"}
    assert [h.score for h in both.hits] == sorted((h.score for h in both.hits), reverse=True)



async def test_named_entity_of_the_question_counts_twice_in_bm25(fulltext: Engine) -> None:
    """Issue #14 item 3: a capitalised word that does not open the question (a named entity) weighs ENTITY_WEIGHT
    times in the BM25 lists, so one mention of the place outranks a turn that repeats the common noun; written in
    lower case it is an ordinary word, and the repeated noun wins again (tf saturation 4 -> 1.69 vs 1)."""
    c = fulltext.client("acme")
    turns = [("maya", "The gift was a gift in a gift box, what a gift"), ("maya", "We flew to Porto in spring"),
             ("maya", "Tea with lemon this morning"), ("maya", "The train was late again"),
             ("maya", "Painted the fence blue"), ("maya", "Read two chapters before bed")]
    last = 0
    for i, turn in enumerate(turns):  # one session per turn: no window or neighbour mixes two of them
        last = await record(fulltext, "acme", "ent", [turn], start=NOW - timedelta(days=10 - i), session=f"s{i}")
    await settle(fulltext, last)
    named = await c.recall("Which gift came from Porto?", thread="ent", k=2, as_of=NOW)
    assert [h.text.split(": ", 1)[1] for h in named.hits] == [turns[1][1], turns[0][1]]
    plain = await c.recall("which gift came from porto?", thread="ent", k=2, as_of=NOW)
    assert [h.text.split(": ", 1)[1] for h in plain.hits] == [turns[0][1], turns[1][1]]

async def test_weights_come_from_settings(settings: Settings) -> None:
    """MEMORY_RECALL_WEIGHTS=1,0,0: relevance alone (no decay): the older, more relevant item wins."""
    s = msgspec.structs.replace(settings, recall_weights="1,0,0", recall_turn_weights="0.5,0.5,0")
    async with lifespan(s, roles={"projector", "query"}, embedder=None) as engine:
        await publish_items(engine, "acme", [_item("old", "violin lessons violin teacher violin")],
                            at=NOW - timedelta(days=300))
        await publish_items(engine, "acme", [_item("new", "violin lessons", importance=1.0)], at=NOW)
        res = await engine.client("acme").recall("violin teacher", sources=["memories"], k=2, as_of=NOW)
        assert [h.memory_id for h in res.hits] == ["old", "new"]
        assert res.hits[0].score == 1.0
        assert engine.service.recaller.weights.turns == (0.5, 0.5, 0.0)


async def test_memory_filters_type_tags_status_expiry_and_sources(hybrid_items: Engine) -> None:
    """Typed items are recallable through the same path (vectors via the worker and its cache, full-text too),
    filtered by type, tags, status (default active), expiry, user and thread; each hit names its source turns."""
    e = hybrid_items
    last = await record(e, "acme", "chat", CONVERSATION)
    await settle(e, last)
    turns = [str(r["event_id"]) for r in await e.pool.fetch(
        "SELECT event_id FROM messages WHERE tenant_id = 'acme' ORDER BY seq")]
    await publish_items(e, "acme", [
        _item("dog", "Alice has a golden retriever puppy named Biscuit", typ="FACT", tags=["pets", "family"],
              user="alice", sources=turns[:2]),
        _item("run", "Alice runs marathons and plans the Lisbon marathon", typ="FACT", tags=["sport"],
              user="alice", sources=[turns[4]]),
        _item("pref", "Alice prefers morning runs before work", typ="PREFERENCE", tags=["sport"], user="alice"),
        _item("quar", "Alice may own a second puppy", typ="FACT", tags=["pets"], status="quarantined", user="alice"),
        _item("gone", "Alice's puppy training class is this week", typ="TASK", tags=["pets"], user="alice",
              expires_at=NOW - timedelta(days=1)),
        _item("bob", "Bob is learning the violin with a patient teacher", typ="FACT", user="bob"),
    ], at=NOW - timedelta(days=5))
    items_table = e.embed_worker.table.replace("memory_embeddings_", "memory_item_embeddings_")  # type: ignore[union-attr]
    assert await e.pool.fetchval(f"SELECT count(*) FROM {items_table}") == 6
    c = e.client("acme")

    async def ids(query: str, **kw) -> list[str]:  # type: ignore[no-untyped-def]
        res = await c.recall(query, sources=["memories"], k=20, as_of=NOW, **kw)
        assert res.mode == "hybrid"
        return [h.memory_id for h in res.hits]

    # dense path: no shared word with "dog", found by meaning; the top hit carries its two source turns
    res = await c.recall("What pet does Alice have?", sources=["memories"], k=3, as_of=NOW)
    top = res.hits[0]
    assert top.memory_id == "dog" and top.source_event_ids == sorted(turns[:2])
    assert top.type == "FACT" and top.tags == ["pets", "family"] and top.seq is None
    assert "quar" not in await ids("puppy")  # status: active only by default
    assert "gone" not in await ids("puppy training")  # expired at as_of
    assert "gone" in await ids("puppy training", include_expired=True)
    assert "quar" in await ids("puppy", status=["quarantined"])
    assert set(await ids("puppy", status=["all"], include_expired=True)) >= {"dog", "quar", "gone"}
    assert set(await ids("Alice", types=["preference"])) == {"pref"}
    assert set(await ids("Alice", tags=["sport"])) == {"run", "pref"}
    assert set(await ids("Alice", tags=["pets", "family"])) == {"dog"}
    assert set(await ids("violin", user="bob")) == {"bob"}
    assert await ids("violin", thread="elsewhere") == []
    assert await ids("violin", since=NOW) == []  # valid_at is 5 days before NOW
    # the tool an agent calls: same filters, the schema handed to a model unchanged
    out = json.loads(await call_tool("search_memory", json.dumps({"query": "running", "types": ["PREFERENCE"]}), c))
    assert out["mode"] == "hybrid" and [m["memory_id"] for m in out["memories"]] == ["pref"]
    out = json.loads(await call_tool("search_memory", {"query": "puppy", "tags": ["pets"], "top_k": 5}, c))
    assert [m["memory_id"] for m in out["memories"]] == ["dog"]
    assert out["memories"][0]["source_event_ids"] == sorted(turns[:2]) and out["memories"][0]["type"] == "FACT"
    assert "error" in json.loads(await call_tool("search_memory", {"query": "x", "types": "FACT"}, c))
    spec = next(t for t in TOOLS if t["function"]["name"] == "search_memory")
    assert spec["type"] == "function" and spec["function"]["parameters"]["required"] == ["query"]
    # item texts went through embedding_cache like turns (a rebuild embeds none of them again)
    assert await e.pool.fetchval("SELECT count(*) FROM embedding_cache WHERE model = $1",
                                 e.embedder.name) >= len(CONVERSATION) + 6  # type: ignore[union-attr]


async def test_search_memory_fulltext_fallback_and_isolation(fulltext: Engine) -> None:
    """With no embedder, search_memory answers from full-text (mode says so); another tenant's items never show."""
    await publish_items(fulltext, "t1", [_item("a1", "Prefers green tea in the morning", tags=["drinks"])], at=NOW)
    await publish_items(fulltext, "t2", [_item("b1", "Prefers green tea in the evening", tags=["drinks"])], at=NOW)
    out = json.loads(await call_tool("search_memory", {"query": "green tea"}, fulltext.client("t1")))
    assert out["mode"] == "fulltext" and [m["memory_id"] for m in out["memories"]] == ["a1"]
    res = await fulltext.client("t2").recall("green tea morning evening", sources=["turns", "memories"], k=10)
    assert [h.memory_id for h in res.hits] == ["b1"]
    # a question of stop words only has no lexeme: no full-text match, no error
    assert (await fulltext.client("t2").recall("the of and", sources=["turns", "memories"])).hits == []


async def test_tenant_wide_recall_with_term_statistics(fulltext: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large tenant (thresholds lowered) switches tenant-wide recall to the statistics path: the lexemes most
    turns contain are left out of the OR tsquery, the rare ones still find their turn; isolation holds."""
    import memengine.engine.read.recall as R

    monkeypatch.setattr(R, "WIDE_MIN_DOCS", 10)
    monkeypatch.setattr(R, "WIDE_MATCH_BUDGET", 5)
    turns = [("maya", f"Maya said note number {i} about the weather") for i in range(30)]
    turns[17] = ("maya", "Maya said her cat Pixel hates the vacuum cleaner")
    await record(fulltext, "big", "th", turns[:15])
    last = await record(fulltext, "big", "th2", turns[15:])
    other = await record(fulltext, "small", "th", [("zed", "Pixel the cat belongs to someone else")])
    await settle(fulltext, max(last, other))
    assert await R.refresh_term_stats(fulltext.pool, "big") == 30
    assert await fulltext.pool.fetchval("SELECT ndoc FROM recall_term_stats WHERE tenant_id = 'big'"
                                        " AND lexeme = 'maya'") == 30
    fulltext.service.recaller._wide.clear()
    assert await fulltext.service.recaller._is_wide("big")
    res = await fulltext.client("big").recall("Maya's cat Pixel", k=3)
    assert "Pixel" in res.hits[0].text and {h.thread for h in res.hits} <= {"th", "th2"}
    assert all(h.source_event_ids == [h.event_id] for h in res.hits)
    # the after-commit hook refreshes by itself once the tenant grew enough
    hook = R.TermStats(fulltext.pool, min_growth=1)
    from memengine.events import TurnRecorded as _T
    ev = _T(event_id=new_event_id(), tenant_id="small", thread_id="th", occurred_at=T0, role="user",
            content=[], user_id="zed")
    await hook([(1, ev)])
    await hook._task  # type: ignore[misc]
    assert await fulltext.pool.fetchval("SELECT n_docs FROM recall_tenant_stats WHERE tenant_id = 'small'") == 1
    await hook.close()


async def test_thread_statement_ranks_exactly_as_the_general_one(hybrid: Engine, minilm: MiniLMEmbedder) -> None:
    """Issue #13 item 4: ``thread_sql`` (the thread's rows read once, text fetched for the k hits only) returns the
    same rows, scores and order as ``recall_sql(thread=True)`` — with and without the query vector, with the user
    and time filters, a named participant (speaker boost) and a named entity (BM25 x2), and with neighbours that
    fall outside a time filter (propagation must not bring them in)."""
    import memengine.engine.read.recall as R
    import memengine.engine.read.recall_thread as RT

    convo = [*CONVERSATION, ("bob", "Alice, did Biscuit enjoy the beach in Lisbon?"),
             ("alice", "He did! Biscuit ran after the seagulls all afternoon."),
             ("bob", "My violin teacher says Lisbon has great concerts.")]
    await record(hybrid, "acme", "chat", convo)
    await record(hybrid, "acme", "chat", [("alice", "Back from Lisbon: the marathon went well, Biscuit missed me.")],
                 start=T0 + timedelta(days=3), session="s2")
    last = await record(hybrid, "acme", "other", [("carol", "Biscuit is also my cat's name, funny.")])
    await settle(hybrid, last)
    table = hybrid.embed_worker.table  # type: ignore[union-attr]
    questions = ["What is the name of Alice's dog?", "Where is the marathon Alice runs?", "violin teacher",
                 "What did Bob ask about Lisbon?", "Biscuit", "the", "How did the marathon in Lisbon go?"]
    filters = [(None, None, None), ("alice", None, None), (None, T0 + timedelta(minutes=3), None),
               (None, None, T0 + timedelta(minutes=5)), ("bob", T0 + timedelta(minutes=1), T0 + timedelta(days=5))]
    compared = 0
    for q in questions:
        qvec = vec_literal(await minilm.embed_query(R.keywords(q)))
        for user, since, until in filters:
            for vec in (qvec, None):
                args = ("acme", "chat", user, since, until, q, vec, 5, T0 + timedelta(days=10), [0.6, 0.2, 0.2],
                        30.0, R.TURN_IMPORTANCE)
                key = (user is not None, since is not None, until is not None)
                old = await hybrid.pool.fetch(R.recall_sql(table, True, *key), *args)
                new = await hybrid.pool.fetch(RT.thread_sql(table, *key), *args)
                assert [dict(r) for r in new] == [dict(r) for r in old], (q, user, since, until, vec is None)
                compared += len(old)
    assert compared > 100
