"""OpenTelemetry tracing (issue #12 item 3) on the real engine, spans caught by the SDK's in-memory exporter: a turn
published and a context query make one trace ``publish`` -> ``project core`` -> ``query context``, carried by the
W3C ``traceparent`` in the event's NATS headers; off (the default), no header is written and no span made."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id, format_trace_id

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.publish import publish_all
from memengine.engine.wire import tracing
from memengine.events import TextBlock, TurnRecorded, new_event_id
from tests.conftest import wait_until
from tests.integration.http_fixtures import api_fixture, http_engine_fixture  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """Tracing on, into an in-memory exporter (a provider of the test's own: the process-wide global is untouched)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield provider, exporter
    tracing.disable()
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def traceparent_of(span: Any) -> str:
    """The W3C traceparent header naming ``span`` (version 00; flags: sampled, random trace id)."""
    c = span.context
    return f"00-{format_trace_id(c.trace_id)}-{format_span_id(c.span_id)}-{int(c.trace_flags):02x}"


async def stored_headers(engine: Engine, seq: int) -> dict[str, str]:
    msg = await engine.js.get_msg(engine.streams.facts, seq, direct=True)
    return dict(msg.headers or {})


async def test_a_turn_is_traced_from_publish_through_the_projector_commit_to_the_query_reply(
        engine: Engine, traced: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = traced
    client = engine.client()
    with provider.get_tracer("agent").start_as_current_span("agent turn") as root:
        rec = await client.record_turn("trip", "user", "I prefer aisle seats.", user_id="maya")
        ctx = await client.context("trip", window=8000, after_seq=rec.seq)
    assert rec.seq in [m.seq for m in ctx.messages]  # (a tier-1 system message, seq 0, may come first)

    [publish] = named(exporter, "publish")
    assert publish.kind is SpanKind.PRODUCER and publish.parent is not None
    assert publish.parent.span_id == root.get_span_context().span_id
    assert publish.attributes is not None and publish.attributes["memengine.seq"] == rec.seq
    # the header the projector reads: the publish span's own context
    assert (await stored_headers(engine, rec.seq))["traceparent"] == traceparent_of(publish)

    async def committed() -> list[ReadableSpan]:  # the span ends after the ack, just after the reply may arrive
        return [s for s in named(exporter, "project core") if s.attributes
                and s.attributes["memengine.first_seq"] <= rec.seq <= s.attributes["memengine.last_seq"]]

    [project] = await wait_until(committed)
    assert project.kind is SpanKind.CONSUMER
    assert project.context.trace_id == publish.context.trace_id
    assert project.parent is not None and project.parent.span_id == publish.context.span_id  # a batch of one
    assert [link.context.span_id for link in project.links] == [publish.context.span_id]
    assert project.attributes is not None and project.attributes["memengine.applied"] == 1

    [query] = named(exporter, "query context")
    assert query.kind is SpanKind.SERVER and query.parent is not None
    assert query.parent.span_id == root.get_span_context().span_id  # the request's traceparent
    assert query.attributes is not None and query.attributes["memengine.reply_code"] == "ok"
    assert query.context.trace_id == publish.context.trace_id

    # the header is carried next to the event, never in it: every read model still equals a fresh fold
    tracing.disable()
    assert (await rb.verify(engine)).ok


async def test_a_batch_import_is_one_publish_span_that_every_commit_links_to(
        engine: Engine, traced: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    _, exporter = traced
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    evs = [TurnRecorded(event_id=new_event_id(), tenant_id="default", thread_id="batch", role="user",
                        occurred_at=t0 + timedelta(seconds=i), content=[TextBlock(text=f"turn {i}")])
           for i in range(5)]
    pub = await publish_all(engine, evs, "default", quiet=True)
    [publish] = named(exporter, "publish")
    assert publish.attributes is not None and publish.attributes["messaging.batch.message_count"] == 5
    for seq in pub["seqs"]:  # one span, its context in every event's headers
        assert (await stored_headers(engine, seq))["traceparent"] == traceparent_of(publish)

    async def covered() -> set[int]:
        seen = {seq for s in named(exporter, "project core") if s.attributes
                and publish.context.span_id in [link.context.span_id for link in s.links]
                for seq in range(s.attributes["memengine.first_seq"], s.attributes["memengine.last_seq"] + 1)}
        return seen if set(pub["seqs"]) <= seen else set()

    await wait_until(covered)


async def test_tracing_off_writes_no_header_and_makes_no_span(engine: Engine) -> None:
    assert not tracing.enabled()
    rec = await engine.client().record_turn("quiet", "user", "no trace here")
    headers = await stored_headers(engine, rec.seq)
    assert "Nats-Msg-Id" in headers and "traceparent" not in headers and "tracestate" not in headers
    with tracing.span("publish") as sp:
        assert sp is None


async def test_an_http_request_is_the_parent_of_its_publish_and_query_spans(
        api: httpx.AsyncClient, traced: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    _, exporter = traced
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"  # the W3C spec's example
    r = await api.post("/v1/threads/web/turns", json={"role": "user", "content": "hello"},
                       headers={"traceparent": caller})
    assert r.status_code == 200, r.text
    r = await api.get("/v1/threads/web/context", params={"window": 4000, "after_seq": r.json()["seq"]},
                      headers={"traceparent": caller})
    assert r.status_code == 200, r.text

    [post] = named(exporter, "POST /v1/threads/{thread}/turns")
    [get] = named(exporter, "GET /v1/threads/{thread}/context")
    for span in (post, get):
        assert span.kind is SpanKind.SERVER and span.parent is not None
        assert format_trace_id(span.context.trace_id) == caller.split("-")[1]
        assert format_span_id(span.parent.span_id) == caller.split("-")[2]
    [publish] = named(exporter, "publish")
    [query] = named(exporter, "query context")
    assert publish.parent is not None and publish.parent.span_id == post.context.span_id
    assert query.parent is not None and query.parent.span_id == get.context.span_id
