"""A forged dedup header cannot drop another tenant's write on any surface (issue #26 item 2), on the real servers.

JetStream de-duplicates on ``Nats-Msg-Id`` alone, and the publisher writes it. Tenant ``mallory`` publishes on its
own subject a message carrying the id the victim's next event will have (``events.msg_id``: predictable for UUIDv5
ids and known content); before the fix the victim's ``MemoryClient.publish`` (and so the HTTP gateway and every
adapter) took the server's ``duplicate`` answer, with mallory's sequence, as its own, and its turn never existed.
Now the id's digest is keyed by the tenant's dedup key, which mallory cannot compute (the server-side defence), and
every publish goes through ``engine.client.publishing.settle`` (for a leaked key): the write is recorded, and a
genuine retry is still answered ``duplicate`` with the first sequence.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
import pytest
from langchain_core.messages import HumanMessage

from memengine.engine.bootstrap import Engine
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.client.publishing import tenant_dedup_key
from memengine.engine.integrations import langgraph_middleware
from memengine.engine.integrations.langgraph_middleware import MemengineMiddleware
from memengine.events import DEDUP_SECRET_KEY, Event, TextBlock, TurnRecorded, encode, msg_id, stable_event_id
from tests.integration.http_fixtures import http_engine_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration

AT = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


async def forge(engine: Engine, victim_event: Event, *, leaked_key: bool = True) -> int:
    """Mallory publishes her own turn, on her own subject, under the dedup id of ``victim_event``; its seq. With
    ``leaked_key`` she knows the victim's dedup key (a leak, or a deployment without a secret): the id is exactly
    the victim's; without it, the id she can compute from public data (the plain digest)."""
    theirs = msgspec.structs.replace(victim_event, tenant_id="mallory", content=[TextBlock(text="mallory was here")])
    key = tenant_dedup_key(engine.dedup_secret, victim_event.tenant_id) if leaked_key and engine.dedup_secret else None
    ack = await engine.js.publish(engine.subjects.fact("mallory", victim_event.thread_id, type(theirs).__name__),
                                  encode(theirs),
                                  headers={"Nats-Msg-Id": msg_id(victim_event.tenant_id, victim_event.event_id,
                                                                 encode(victim_event), key=key)})
    assert not ack.duplicate
    return int(ack.seq)


def turn(tenant: str, thread: str, text: str, event_id: uuid.UUID, *, producer: str = "memengine-client",
         user: str | None = None, metadata: dict[str, Any] | None = None) -> TurnRecorded:
    """The exact event the surface under test will publish (what an attacker who knows the content predicts)."""
    return TurnRecorded(event_id=event_id, tenant_id=tenant, thread_id=thread, occurred_at=AT, user_id=user,
                        producer=producer, metadata=metadata or {}, role="user", content=[TextBlock(text=text)])


async def texts(client: MemoryClient, thread: str, seq: int) -> list[tuple[str | None, str]]:
    msgs = (await client.history(thread, after_seq=seq)).messages
    return [(m.event_id, m.content[0]["text"]) for m in msgs if isinstance(m.content, list)]


async def test_memory_client_records_a_turn_whose_dedup_id_another_tenant_took(engine: Engine) -> None:
    client = engine.client("victim")
    event_id = stable_event_id("known", "key")
    expected = turn("victim", "chat", "yes", event_id)
    taken = await forge(engine, expected)

    rec = await client.record_turn("chat", "user", "yes", event_id=event_id, occurred_at=AT)
    assert not rec.duplicate and rec.seq != taken  # never mallory's sequence as the victim's duplicate
    assert await texts(client, "chat", rec.seq) == [(str(event_id), "yes")]

    # exactly-once is kept: a genuine retry (same tenant, id and bytes) is the duplicate of the victim's own write
    again = await client.record_turn("chat", "user", "yes", event_id=event_id, occurred_at=AT)
    assert again.duplicate and again.seq == rec.seq
    # and the check does not depend on reading the stream: an agent's client asks the query handler
    agent = MemoryClient(engine.nc, tenant="victim", subject_root=engine.subjects.root,
                         stream_prefix=engine.settings.stream_prefix)
    other_id = stable_event_id("known", "key-2")
    taken2 = await forge(engine, turn("victim", "chat", "no", other_id))
    rec2 = await agent.record_turn("chat", "user", "no", event_id=other_id, occurred_at=AT)
    assert not rec2.duplicate and rec2.seq != taken2
    again2 = await agent.record_turn("chat", "user", "no", event_id=other_id, occurred_at=AT)
    assert again2.duplicate and again2.seq == rec2.seq
    assert await texts(client, "chat", rec2.seq) == [(str(event_id), "yes"), (str(other_id), "no")]
    # mallory's turns stayed hers
    assert [t for _, t in await texts(engine.client("mallory"), "chat", rec2.seq)] == ["mallory was here"] * 2


async def test_http_post_turn_with_an_idempotency_key_another_tenant_forged(http_engine: Engine) -> None:
    key = "order-42"
    event_id = stable_event_id("http-idempotency-key", "default", key)  # the gateway's mapping of the key
    taken = await forge(http_engine, turn("default", "web", "book it", event_id))
    body = {"role": "user", "content": "book it", "occurred_at": AT.isoformat()}
    async with httpx.AsyncClient(base_url=http_engine.http.url, timeout=30) as api:
        first = await api.post("/v1/threads/web/turns", json=body, headers={"Idempotency-Key": key})
        assert first.status_code == 200, first.text
        rec = first.json()
        assert not rec["duplicate"] and rec["seq"] != taken
        again = (await api.post("/v1/threads/web/turns", json=body, headers={"Idempotency-Key": key})).json()
        assert again["duplicate"] and again["seq"] == rec["seq"]
    assert await texts(http_engine.client("default"), "web", rec["seq"]) == [(str(event_id), "book it")]


async def test_an_adapter_records_a_turn_whose_dedup_id_another_tenant_took(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:  # the attacker knows when the turn is written (here: exactly)
            return AT

    class Middleware(MemengineMiddleware):
        @staticmethod
        def _thread() -> str:  # outside a graph run: the thread a run's config would give
            return "agent"

    monkeypatch.setattr(langgraph_middleware, "datetime", Clock)
    client = engine.client("victim")
    event_id = stable_event_id("langgraph", "agent", "msg-1")  # the middleware's id of the message
    expected = turn("victim", "agent", "yes please", event_id, producer="memengine-langgraph", user="maya",
                    metadata={"langgraph_message_id": "msg-1"})
    taken = await forge(engine, expected)

    await Middleware(client, user="maya").aafter_model(
        {"messages": [HumanMessage(id="msg-1", content="yes please")]}, None)
    facts = (await engine.js.stream_info(engine.streams.facts)).state
    assert facts.last_seq > taken  # the victim's turn was stored
    assert await texts(client, "agent", facts.last_seq) == [(str(event_id), "yes please")]


async def test_without_the_tenant_key_a_forged_id_takes_nothing(engine: Engine) -> None:
    """What mallory can compute from public data (tenant, UUIDv5 id, content) is no longer the victim's message id:
    the victim's publish is stored at once. Each tenant's key differs, and an agent's client (no stream access)
    gets its own tenant's key from the query handler, the same the engine uses (so retries still match)."""
    event_id = stable_event_id("known", "key-3")
    taken = await forge(engine, turn("victim", "chat", "maybe", event_id), leaked_key=False)
    client = engine.client("victim")
    rec = await client.record_turn("chat", "user", "maybe", event_id=event_id, occurred_at=AT)
    assert not rec.duplicate and rec.seq == taken + 1  # stored at once: nothing to reclaim
    agent = MemoryClient(engine.nc, tenant="victim", subject_root=engine.subjects.root,
                         stream_prefix=engine.settings.stream_prefix)
    assert engine.dedup_secret and await agent.dedup_key() == await client.dedup_key()
    mallory = MemoryClient(engine.nc, tenant="mallory", subject_root=engine.subjects.root,
                           stream_prefix=engine.settings.stream_prefix)
    assert await mallory.dedup_key() not in (None, await client.dedup_key())
    again = await agent.record_turn("chat", "user", "maybe", event_id=event_id, occurred_at=AT)
    assert again.duplicate and again.seq == rec.seq
    # the key lives in the facts stream's config, kept across a restart's ensure_streams
    info = await engine.js.stream_info(engine.streams.facts)
    assert info.config.metadata and info.config.metadata[DEDUP_SECRET_KEY] == engine.dedup_secret


async def test_a_bound_agent_client_gets_its_dedup_key_and_is_checked(engine: Engine) -> None:
    """A client bound to a user (``MemoryClient(..., user=)``, MCP ``--user``) sends ``bound_user`` with every request,
    ``dedup_key`` and ``published`` included: both must answer it (a refusal would fail every bound write), and a
    forged id must not take the bound agent's turn either (found merging issue #26 items 2 and 4)."""
    agent = MemoryClient(engine.nc, tenant="victim", subject_root=engine.subjects.root,
                         stream_prefix=engine.settings.stream_prefix, user="maya")
    assert await agent.dedup_key() == await engine.client("victim").dedup_key()
    event_id = stable_event_id("known", "bound")
    taken = await forge(engine, turn("victim", "maya-chat", "hello", event_id, user="maya"))
    rec = await agent.record_turn("maya-chat", "user", "hello", user_id="maya", event_id=event_id, occurred_at=AT)
    assert not rec.duplicate and rec.seq != taken
    again = await agent.record_turn("maya-chat", "user", "hello", user_id="maya", event_id=event_id, occurred_at=AT)
    assert again.duplicate and again.seq == rec.seq
