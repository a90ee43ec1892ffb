"""Observability (issue #6 §8): the Prometheus endpoint of a running engine has consumer lag, events per
projection, DLQ size, RPC latency histograms and LLM counters with the values the test caused; /healthz and
/readyz answer for k8s probes; ``memengine status`` shows the same figures; ``memengine up --metrics-port`` serves
them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from urllib.parse import urlparse

import asyncpg
import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.ops.metrics import MetricsServer
from tests.conftest import ServerInfo, wait_until
from tests.integration.deploy_nats import free_port
from tests.integration.derive.test_llm_path import FakeLLM

pytestmark = pytest.mark.integration


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of ``/metrics`` (fetched in a thread: the server is on this loop)."""
    status, text = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def value(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
async def served(engine: Engine) -> AsyncIterator[tuple[Engine, MetricsServer]]:
    server = await MetricsServer(engine, 0, "127.0.0.1").start()
    try:
        yield engine, server
    finally:
        await server.stop()


async def test_metrics_reflect_what_happened(served: tuple[Engine, MetricsServer]) -> None:
    engine, server = served
    facts, dlq = engine.streams.facts, engine.streams.dlq
    before = await scrape(server.port)
    client = engine.client("acme")
    for i in range(3):
        last = await client.record_turn("t", "user", f"turn {i}")
    await engine.js.publish(engine.subjects.fact("acme", "t", "TurnRecorded"), b"{poison",
                            headers={"Nats-Msg-Id": "poison-1"})
    last = await client.record_turn("t", "user", "after the poison")
    for _ in range(3):
        await client.context("t", after_seq=last.seq)
    await engine.nc.request(engine.subjects.rpc_scoped("context", "acme"), b'{"tenant":"acme","thread":"nope"}',
                            timeout=5)

    async def settled() -> dict | None:  # type: ignore[type-arg]
        m = await scrape(server.port)
        return m if value(m, "memengine_dead_letters", consumer="core", status="open") == 1 else None

    m = await wait_until(settled)
    assert value(m, "memengine_read_models_up") == 1
    assert value(m, "memengine_stream_last_seq", stream=facts) == last.seq == 5
    assert value(m, "memengine_projection_checkpoint", projection="messages") == last.seq
    assert value(m, "memengine_projection_lag", projection="messages") == 0
    assert value(m, "memengine_stream_messages", stream=dlq) >= 1
    assert value(m, "memengine_projector_active", projector="core") == 1
    # events this process folded: the 4 good turns and the poison one went through the core projector
    assert value(m, "memengine_projection_events_total", projector="core", projection="messages") == 4
    assert value(m, "memengine_projector_dead_letters_total", projector="core") == 1
    # RPC histograms: 3 context answers + 1 unknown_thread, with a positive total time
    n = "memengine_rpc_duration_seconds_count"
    assert value(m, n, method="context") - value(before, n, method="context") == 4
    assert value(m, "memengine_rpc_duration_seconds_sum", method="context") > 0
    assert value(m, "memengine_rpc_duration_seconds_bucket", method="context", le="+Inf") >= 4
    ok = "memengine_rpc_requests_total"
    assert value(m, ok, method="context", code="ok") - value(before, ok, method="context", code="ok") == 3
    assert value(m, ok, method="context", code="unknown_thread") - value(
        before, ok, method="context", code="unknown_thread") == 1

    # lag shows while the projector is held, and goes back to 0 when it resumes. Its run loop is cancelled first:
    # stop() alone releases the lock, and the loop, still running, took it back before the scrape now and then
    # (a flaky "projector_active == 1" on a loaded machine)
    loop_task = next(t for t in engine.tasks if t.get_name() == f"projector-{engine.runner.name}")
    loop_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loop_task
    engine.tasks.remove(loop_task)
    await engine.runner.stop()
    await client.record_turn("t", "user", "while stopped")
    held = await client.record_turn("t", "user", "while stopped 2")
    m = await scrape(server.port)
    assert value(m, "memengine_projection_lag", projection="messages") == 2
    assert value(m, "memengine_projector_active", projector="core") == 0
    # resumed as the engine runs it (the lifespan cancels the task at teardown)
    engine.tasks.append(asyncio.create_task(engine.runner.run(asyncio.Event()),
                                            name=f"projector-{engine.runner.name}"))
    await client.context("t", after_seq=held.seq)
    m = await scrape(server.port)
    assert value(m, "memengine_projection_lag", projection="messages") == 0

    # probes
    status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/healthz")
    assert status == 200 and msgspec.json.decode(body) == {"alive": True}
    status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/readyz")
    assert status == 200 and msgspec.json.decode(body) == {"ready": True, "nats": True, "postgres": True,
                                                             "query": True}
    assert (await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/nope"))[0] == 404

    # `memengine status` shows the same figures, and this process's counters from the endpoint
    env = {**os.environ, "NATS_URL": engine.nats_url, "DATABASE_URL": engine.database_url,
           "MEMENGINE_SUBJECT_ROOT": engine.subjects.root, "MEMENGINE_STREAM_PREFIX": engine.settings.stream_prefix,
           "MEMENGINE_EMBEDDER": "none"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memengine.engine.cli", "status", "--json", "--metrics-url",
        f"http://127.0.0.1:{server.port}/metrics", env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    st = msgspec.json.decode(out)
    m = await scrape(server.port)
    lags = {c["projection"]: c["lag"] for c in st["checkpoints"]}
    assert lags["messages"] == value(m, "memengine_projection_lag", projection="messages") == 0
    assert st["streams"][dlq]["messages"] == value(m, "memengine_stream_messages", stream=dlq)
    assert st["process"]["projection_events"]["core/messages"] == value(
        m, "memengine_projection_events_total", projector="core", projection="messages") == 6
    assert st["process"]["rpc"]["context"]["requests"] == sum(
        v for (name, labels), v in m.items() if name == ok and ("method", "context") in labels)
    assert st["process"]["rpc"]["context"]["mean_ms"] > 0


async def test_readyz_follows_postgres(served: tuple[Engine, MetricsServer], servers: ServerInfo) -> None:
    engine, server = served
    db = urlparse(engine.database_url).path.lstrip("/")
    admin = await asyncpg.connect(servers.admin_dsn)
    try:
        # the database goes away for this engine: no new connections, and the pool's connections are cut
        await admin.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false')
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", db)
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/readyz")
        assert status == 503 and msgspec.json.decode(body)["postgres"] is False
        status, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/healthz")
        assert status == 200  # alive: restarting the process would not bring the database back
        m = await scrape(server.port)
        assert value(m, "memengine_read_models_up") == 0  # and the scrape itself still answers
    finally:
        await admin.execute(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')
        await admin.close()

    async def ready() -> bool:
        return (await asyncio.to_thread(get, f"http://127.0.0.1:{server.port}/readyz"))[0] == 200

    await wait_until(ready, timeout=20)


@pytest.fixture
def fake_llm() -> FakeLLM:  # type: ignore[misc]
    llm = FakeLLM()
    yield llm
    llm.server.shutdown()
    llm.server.server_close()


async def test_llm_calls_and_tokens(settings: Settings, fake_llm: FakeLLM) -> None:
    s = msgspec.structs.replace(settings, api_base_url=fake_llm.url, deriver="openai", llm_model="test-model",
                                summary_threshold=4)
    async with lifespan(s) as engine:
        server = await MetricsServer(engine, 0, "127.0.0.1").start()
        try:
            for i in range(4):
                await engine.client().record_turn("trip", "user", f"I prefer aisle seats, take {i}", user_id="maya")

            async def summarised() -> bool:
                return bool(await engine.pool.fetchval("SELECT count(*) FROM conversation_summaries"))

            await wait_until(summarised, timeout=30)
            m = await scrape(server.port)
        finally:
            await server.stop()
    calls = len(fake_llm.calls)
    assert calls >= 2 and value(m, "memengine_llm_calls_total", model="test-model") == calls
    assert value(m, "memengine_llm_prompt_tokens_total", model="test-model") == 100 * calls  # as the server said
    assert value(m, "memengine_llm_completion_tokens_total", model="test-model") == 20 * calls
    assert value(m, "memengine_llm_failures_total", model="test-model") == 0


async def test_up_serves_metrics_port(settings: Settings) -> None:
    port = free_port()
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_EMBEDDER": "none", "MEMENGINE_METRICS_HOST": "127.0.0.1"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memengine.engine.cli", "up", "--json", "--role", "query", "--metrics-port", str(port),
        env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)  # type: ignore[union-attr]
        assert msgspec.json.decode(line)["metrics_port"] == port
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/readyz")
        assert status == 200 and msgspec.json.decode(body)["query"] is True
        status, text = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and "memengine_projection_lag" in text and "memengine_read_models_up 1.0" in text
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), timeout=60)
