"""Embedding that keeps up or sheds load (issue #13 item 5), on the real servers and a local OpenAI-compatible
embeddings server: batches in flight at once give the same vectors as one at a time and never embed a text twice;
the backlog (turns waiting for a vector, the oldest one's age, texts/s) shows in ``/metrics`` and ``memengine
status`` and drains to 0; a turn is recallable by its words before its vector exists, and by meaning after."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.embedding.models import MiniLMEmbedder, OpenAIEmbedder, build_embedder, minilm_available
from memengine.engine.embedding.worker import EmbedderWorker
from memengine.engine.ops.metrics import MetricsServer
from tests.conftest import wait_until
from tests.integration.ops.test_cli import run as run_cli
from tests.integration.ops.test_metrics import scrape, value

pytestmark = pytest.mark.integration

TURNS = [
    "I adopted a golden retriever puppy named Biscuit last week.",
    "That's lovely! How is Biscuit settling in?",
    "Great, though he chewed my favourite running shoes.",
    "I started learning the violin, my teacher is very patient.",
    "I am planning a trip to Lisbon in September for the marathon.",
    "Lisbon is beautiful, try the pastel de nata near the river.",
    "My sister works as a nurse in the night shift.",
    "We cooked a mushroom risotto with parmesan on Sunday.",
]

#: the ``(n)`` that ``record`` appends to every turn: a request carrying it is the worker's, not a query or the probe
TURN_MARK = re.compile(r"\(\d+\)")


def fake_vec(text: str) -> list[float]:
    """A deterministic 16-d bag-of-words vector: texts sharing words are close."""
    v = [0.0] * 16
    for w in text.lower().split():
        v[sum(map(ord, w)) % 16] += 1.0
    return v if any(v) else [1.0] + [0.0] * 15


@dataclass
class EmbedServer:
    """What the server saw: texts per request, the most requests it served at once. ``gate`` cleared holds every
    request carrying a turn's text (``record`` marks each with ``(n)``: the worker's batches, whatever their size);
    the start-up probe and a recall's query pass. ``meet`` > 1 holds each request until that many were in flight
    at once (10 s at most), so overlap is observed, not left to timing."""

    url: str = ""
    texts: list[str] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    delay: float = 0.03
    meet: int = 1
    allow: int = 0  # while ``gate`` is cleared, this many of the held requests still pass (then the gate holds)
    down: bool = False  # answer 503 to everything (the embedding server is gone)
    gate: threading.Event = field(default_factory=threading.Event)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def reset(self) -> None:
        with self.lock:
            self.texts.clear()
            self.max_in_flight = 0


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    state = EmbedServer()
    state.gate.set()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if state.down:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            if any(TURN_MARK.search(t) for t in texts):
                with state.lock:
                    passes, state.allow = state.allow > 0, max(0, state.allow - 1)
                if not passes:
                    state.gate.wait(30)
            with state.lock:
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
                state.texts.extend(texts)
                state.lock.notify_all()
                state.lock.wait_for(lambda: state.max_in_flight >= state.meet, timeout=10)
            time.sleep(state.delay)  # a model's time per call: what lets calls overlap
            with state.lock:
                state.in_flight -= 1
            data = [{"object": "embedding", "index": i, "embedding": fake_vec(t)} for i, t in enumerate(texts)]
            out = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        state.gate.set()
        server.shutdown()
        server.server_close()


def remote(settings: Settings, srv: EmbedServer, **kw: object) -> Settings:
    return msgspec.structs.replace(settings, embedder="openai", embedding_base_url=srv.url,
                                   embedding_model="fake-embed-16", **kw)


async def record(engine: Engine, n_threads: int = 3) -> int:
    """``TURNS`` over ``n_threads`` threads of two tenants; returns the last sequence."""
    last = 0
    for i, text in enumerate(TURNS * n_threads):
        tenant = "acme" if i % 2 else "globex"
        ack = await engine.client(tenant).record_turn(f"chat-{i % n_threads}", "user", f"{text} ({i // 8})",
                                                      user_id="alice", session_id="s1")
        last = ack.seq
    return last


async def projected(engine: Engine, seq: int, *, drive: bool = False) -> None:
    """Wait until the recall rows (``memory_vectors``) hold everything up to ``seq`` (``drive``: fold them here,
    for an engine started with ``run_projector=False``)."""
    if drive:
        await engine.recall.catch_up()

    async def done() -> bool:
        return await engine.pool.fetchval("SELECT coalesce(max(last_seq), 0) FROM projection_checkpoints"
                                          " WHERE projection LIKE 'vectors%'") >= seq
    await wait_until(done)


async def vectors(engine: Engine, table: str) -> dict[tuple[str, str, int], str]:
    return {(r["tenant_id"], r["thread_id"], r["seq"]): r["v"] for r in await engine.pool.fetch(
        f"SELECT tenant_id, thread_id, seq, emb::text AS v FROM {table}")}


async def test_batches_in_flight_give_the_same_vectors_and_embed_each_text_once(
        settings: Settings, embed_server: EmbedServer) -> None:
    s = remote(settings, embed_server)
    emb = build_embedder(s)
    assert isinstance(emb, OpenAIEmbedder)
    async with lifespan(s, embedder=emb, run_projector=False) as engine:
        last = await record(engine)
        await projected(engine, last, drive=True)
        distinct = await engine.pool.fetchval(
            "SELECT count(DISTINCT emb_sha) FROM memory_vectors WHERE emb_text <> ''")
        rows = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE emb_text <> ''")
        assert distinct > 6

        embed_server.reset()
        embed_server.meet = 2  # the server answers none of them until two batches are in flight together
        piped = EmbedderWorker(engine.pool, emb, batch=3, concurrency=4)
        assert await piped.catch_up() == rows
        table = piped.table
        assert table is not None
        got = await vectors(engine, table)
        # several calls overlapped, across tenants and threads; each distinct text went to the model once
        assert embed_server.max_in_flight > 1 and piped.stats.max_in_flight == 4
        assert len(embed_server.texts) == len(set(embed_server.texts)) == distinct == piped.stats.embedded
        assert piped.stats.calls == -(-distinct // 3)

        # the same rows one batch at a time, from nothing (no cache): the same vectors
        await engine.pool.execute(f"DELETE FROM {table}")
        await engine.pool.execute("DELETE FROM embedding_cache")
        embed_server.reset()
        embed_server.meet = 1
        serial = EmbedderWorker(engine.pool, emb, batch=3, concurrency=1)
        assert await serial.catch_up() == rows
        assert embed_server.max_in_flight == 1 and len(embed_server.texts) == distinct
        assert await vectors(engine, table) == got
        # and every row holds the server's vector of its own text (not a neighbour's in the batch)
        texts = {(r["tenant_id"], r["thread_id"], r["seq"]): r["emb_text"] for r in await engine.pool.fetch(
            "SELECT tenant_id, thread_id, seq, emb_text FROM memory_vectors WHERE emb_text <> ''")}
        assert got == {key: "[" + ",".join(f"{x:g}" for x in fake_vec(t)) + "]" for key, t in texts.items()}

        # a rebuild-like pass (vectors gone, cache kept) embeds nothing: the cache rows come back in one statement
        await engine.pool.execute(f"DELETE FROM {table}")
        embed_server.reset()
        again = EmbedderWorker(engine.pool, emb, batch=3, concurrency=4)
        assert await again.catch_up() == rows
        assert embed_server.texts == [] and again.stats.cached == distinct
        assert await vectors(engine, table) == got


async def test_backlog_is_visible_recall_is_lexical_meanwhile_and_catches_up(
        settings: Settings, embed_server: EmbedServer) -> None:
    s = remote(settings, embed_server, embed_batch=4, embed_concurrency=2)
    async with lifespan(s, run_projector=True) as engine:
        server = await MetricsServer(engine, 0, "127.0.0.1").start()
        try:
            model = "fake-embed-16"
            embed_server.gate.clear()  # the embedding server falls behind: batches wait
            last = await record(engine, n_threads=2)
            await projected(engine, last)
            waiting = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE emb_text <> ''")

            async def backlog_shown() -> dict | None:  # type: ignore[type-arg]
                m = await scrape(server.port)
                return m if value(m, "memengine_embedding_backlog_rows", model=model) == waiting else None

            m = await wait_until(backlog_shown)
            assert value(m, "memengine_embedding_oldest_waiting_seconds", model=model) > 0
            # `memengine status --json` shows the same figures from another process
            out = await asyncio.to_thread(run_cli, s, "status", "--json")
            shown = json.loads(out.stdout)["embedding"]
            assert [(b["model"], b["waiting"]) for b in shown] == [(model, waiting)]
            assert shown[0]["oldest_age_s"] > 0 and shown[0]["oldest_seq"] <= last

            # recallable by its words before its vector exists
            res = await engine.client("acme").recall("violin teacher", k=3, after_seq=last)
            assert res.mode == "fulltext" and res.hits and "violin" in res.hits[0].text

            embed_server.gate.set()  # the server catches up: the backlog drains to 0

            async def drained() -> dict | None:  # type: ignore[type-arg]
                m = await scrape(server.port)
                # the worker publishes its rate at most once a second: wait for the one after the drain
                return m if (value(m, "memengine_embedding_backlog_rows", model=model) == 0
                             and value(m, "memengine_embedding_texts_per_second", model=model) > 0) else None

            m = await wait_until(drained, timeout=20)
            assert value(m, "memengine_embedding_oldest_waiting_seconds", model=model) == 0
            assert value(m, "memengine_embedding_texts_total", model=model) >= waiting
            res = await engine.client("acme").recall("violin teacher", k=3)
            assert res.mode == "hybrid" and "violin" in res.hits[0].text
        finally:
            await server.stop()


async def test_recall_answers_full_text_while_the_embedding_server_is_down(
        settings: Settings, embed_server: EmbedServer) -> None:
    async with lifespan(remote(settings, embed_server), run_projector=False) as engine:
        last = await record(engine, n_threads=1)
        await projected(engine, last, drive=True)
        assert engine.embed_worker is not None
        await engine.embed_worker.catch_up()
        embed_server.down = True  # the query's embedding fails: the lexical lists still answer
        res = await engine.client("acme").recall("violin teacher", k=3, after_seq=last)
        assert res.mode == "fulltext" and res.embedder is None and "violin" in res.hits[0].text
        embed_server.down = False
        res = await engine.client("acme").recall("violin teacher", k=3)
        assert res.mode == "hybrid" and "violin" in res.hits[0].text


async def test_the_rate_shows_while_a_round_is_still_embedding(settings: Settings, embed_server: EmbedServer) -> None:
    # one batch of four gets through, the rest of the round waits on the server: the texts/s must show already
    # (a slow model's round takes minutes; status said 0 texts/s all along before the worker published per batch)
    s = remote(settings, embed_server, embed_batch=4, embed_concurrency=1)
    async with lifespan(s, run_projector=False) as engine:
        server = await MetricsServer(engine, 0, "127.0.0.1").start()
        worker = engine.embed_worker
        assert worker is not None
        round_ = None
        try:
            model = "fake-embed-16"
            last = await record(engine, n_threads=2)
            await projected(engine, last, drive=True)
            embed_server.reset()
            embed_server.allow = 1
            embed_server.gate.clear()
            round_ = asyncio.create_task(worker.catch_up())  # one round: every row, batches of four

            async def busy() -> dict | None:  # type: ignore[type-arg]
                m = await scrape(server.port)
                return m if (value(m, "memengine_embedding_texts_per_second", model=model) > 0
                             and value(m, "memengine_embedding_backlog_rows", model=model) > 0) else None

            await wait_until(busy, timeout=20)
            assert len(embed_server.texts) == 4 and not round_.done()
            embed_server.gate.set()
            assert await round_ > 4
        finally:
            embed_server.gate.set()
            if round_ is not None and not round_.done():
                await round_
            await server.stop()


def test_embed_settings_are_validated() -> None:
    s = Settings.from_env(env={"MEMENGINE_EMBED_BATCH": "32", "MEMENGINE_EMBED_CONCURRENCY": "8",
                               "MEMENGINE_EMBED_DEVICE": "cpu"})
    assert (s.embed_batch, s.embed_concurrency, s.embed_device) == (32, 8, "cpu")
    assert Settings.from_env(env={}).embed_device == "cpu"
    for var, bad in (("MEMENGINE_EMBED_BATCH", "0"), ("MEMENGINE_EMBED_CONCURRENCY", "0"),
                     ("MEMENGINE_EMBED_CONCURRENCY", "1000"), ("MEMENGINE_EMBED_DEVICE", "gpu"),
                     ("MEMENGINE_EMBED_DEVICE", "cuda:x")):
        with pytest.raises(SettingsError, match=var):
            Settings.from_env(env={var: bad})


async def test_local_model_on_cpu_one_batch_at_a_time(settings: Settings) -> None:
    if not minilm_available():
        pytest.skip("memengine[embed] not installed")
    emb = build_embedder(msgspec.structs.replace(settings, embedder="minilm", embed_device="cpu"))
    assert isinstance(emb, MiniLMEmbedder) and emb.device == "cpu"
    vecs = await emb.embed(["a dog named Biscuit"])
    assert len(vecs[0]) == 384
    async with lifespan(settings, embedder=None, run_projector=False) as engine:
        assert EmbedderWorker(engine.pool, emb, concurrency=8).concurrency == 1  # CPU bound: no overlap
