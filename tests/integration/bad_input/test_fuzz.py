"""Bad input, fuzzed (issue #6 §5), on the real servers:

- every RPC method (``RpcHandlers.methods()``), on the plain and the tenant-scoped subject, with malformed JSON,
  invalid UTF-8, wrong types, unknown fields, huge strings and wildcard characters in ids: each reply is a typed
  envelope (``ok``, or an error code of ``engine.wire.errors.ErrorCode`` other than ``internal``), the handler keeps
  answering, and no stored row changes;
- the projector fed malformed events (bytes, unknown types, missing or mistyped fields, wildcards in ids, too many
  blocks, oversized text, invalid UTF-8, a tenant other than the subject's, text PostgreSQL refuses): each one
  becomes a dead letter, no read model changes, and the next good event is applied.
"""

from __future__ import annotations

import asyncio
import json
import typing
import uuid
from collections.abc import AsyncIterator

import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read.rpc import RpcHandlers
from memengine.engine.wire.errors import ErrorCode
from memengine.engine.wire.requests import REQUESTS
from memengine.events.model import MAX_BLOCKS, MAX_TEXT
from tests.conftest import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TYPED = set(typing.get_args(ErrorCode)) - {"internal", "unavailable"}
#: Tables that change by design while nothing is written: checkpoints, dead letters and the operator log, and
#: recall's corpus statistics (a cache refreshed by a recall request).
NOT_STATE = {"projection_checkpoints", "dead_letters", "schema_migrations", "operations", "recall_term_stats",
             "recall_tenant_stats"}

WILD = st.sampled_from(["*", ">", "a.b", "a.*", "acme.>", "", " ", "\x00", "ünï", "a" * 129, "acme", "t",
                        "%", "_", "2026-01-01T00:00:00Z", "01890a5d-ac96-774b-bcce-b302099a8057"])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30) | WILD)
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                    max_leaves=8)


def _request_fields() -> list[str]:
    """Every field of every request type, so that fuzzed bodies reach past the unknown-field check."""
    names: set[str] = set()
    for req_type in REQUESTS.values():
        names.update(f.name for f in msgspec.structs.fields(req_type))
    return sorted(names)


FIELDS = _request_fields()
BODIES = st.one_of(
    st.binary(max_size=300),  # mostly not JSON, often not UTF-8
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6).map(lambda d: json.dumps(d).encode()),
    st.fixed_dictionaries({"tenant": st.just("acme") | WILD, "thread": st.just("t") | WILD},
                          optional={f: JSON for f in FIELDS if f not in ("tenant", "thread")}
                          ).map(lambda d: json.dumps(d).encode()),
    st.sampled_from(["query", "thread", "user", "memory_id"]).map(  # huge strings, over and under the limit
        lambda f: json.dumps({"tenant": "acme", f: "x" * 70_000}).encode()),
    st.just(b'{"tenant":"acme","thread":"\xff\xfe"}'),
)


async def snapshot(engine: Engine) -> dict[str, str]:
    """md5 of every row of every state table, order-independent."""
    tables = [r["tablename"] for r in await engine.pool.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1") if r["tablename"] not in NOT_STATE]
    out = {}
    for t in tables:
        out[t] = await engine.pool.fetchval(
            f'SELECT md5(coalesce(string_agg(md5(x::text), \'\' ORDER BY md5(x::text)), \'\')) FROM "{t}" x')
    return out


async def quiesce(engine: Engine) -> dict[str, str]:
    """Wait until every consumer (projectors, recall, enricher, derived) has reached the end of its stream and the
    state stopped moving; return the snapshot then. The access trail's queue is published first: a served answer
    still in memory is on no stream yet, so no checkpoint could show it as pending."""
    if engine.trail is not None:
        await engine.trail.settled()

    async def settled() -> dict[str, str] | None:
        ends = {name: (await engine.js.stream_info(name)).state.last_seq
                for name in (engine.streams.facts, engine.streams.derived, engine.streams.served)}
        behind = await engine.pool.fetchval(
            "SELECT count(*) FROM projection_checkpoints WHERE stream = ANY($1::text[])"
            " AND last_seq < ($2::jsonb ->> stream)::bigint", list(ends), json.dumps(ends))
        if behind:
            return None
        first = await snapshot(engine)
        await asyncio.sleep(0.2)
        return first if await snapshot(engine) == first else None

    return await wait_until(settled, timeout=30, interval=0.1)


@pytest.fixture
async def unlimited(settings: Settings) -> AsyncIterator[Engine]:
    """An engine without the per-tenant rate limit: the fuzz sends 240 requests as fast as they are answered, and
    a ``rate_limited`` answer (``tests/integration/context/test_rpc_concurrency.py`` tests the limiter) would hide what
    the handler made of the body."""
    async with lifespan(msgspec.structs.replace(settings, rpc_rate=0.0)) as e:
        yield e


@pytest.fixture
async def seeded(unlimited: Engine) -> tuple[Engine, list[str], dict[str, str]]:
    """The engine with a little of everything stored, its RPC methods, and the state snapshot (a dict the test
    replaces in place after a request that was answered: a served context is recorded, which is a change)."""
    engine = unlimited
    client = engine.client("acme")
    for i in range(4):
        last = await client.record_turn("t", "user", f"I prefer aisle seats, message {i}", user_id="maya")
    await client.context("t", after_seq=last.seq)
    methods = sorted(RpcHandlers(engine.service, engine.settings).methods())
    return engine, methods, await quiesce(engine)


@given(data=st.data())
@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
async def test_rpc_handlers_answer_bad_input_with_typed_errors(seeded, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    engine, methods, baseline = seeded
    method = data.draw(st.sampled_from(methods), label="method")
    body = data.draw(BODIES, label="body")
    scoped = data.draw(st.booleans(), label="scoped")
    subject = engine.subjects.rpc_scoped(method, "acme") if scoped else engine.subjects.rpc(method)
    msg = await engine.nc.request(subject, body, timeout=10)
    reply = msgspec.json.decode(msg.data)
    assert isinstance(reply, dict) and isinstance(reply.get("ok"), bool), reply
    if not reply["ok"]:
        assert reply["error"]["code"] in TYPED, reply
        assert reply["error"]["message"]
    # the handler is still up, and nothing stored changed
    alive = msgspec.json.decode((await engine.nc.request(engine.subjects.rpc("threads"), b'{"tenant":"acme"}',
                                                         timeout=10)).data)
    assert alive["ok"] is True and [t["thread"] for t in alive["result"]["threads"]] == ["t"]
    if reply["ok"]:
        # A body that happens to be a valid request (``context`` for tenant acme, thread t) is answered, and what was
        # served is recorded on the served stream and folded later (issue #30's access trail): a legitimate change.
        # Re-baseline once it has landed, so it is never blamed on a later, refused draw (CI failed that way).
        baseline.clear()
        baseline.update(await quiesce(engine))
        return
    assert await snapshot(engine) == baseline


def _turn(**over: object) -> dict:  # type: ignore[type-arg]
    ev = {"type": "TurnRecorded", "v": 2, "event_id": str(uuid.uuid4()), "tenant_id": "acme", "thread_id": "t",
          "occurred_at": "2026-03-02T09:15:05Z", "role": "user", "content": [{"type": "text", "text": "hi"}]}
    ev.update(over)
    return {k: v for k, v in ev.items() if v is not _DROP}


_DROP = object()
#: Each strategy yields bytes the projector must dead-letter.
POISON = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(["event_id", "tenant_id", "thread_id", "occurred_at", "role", "content"]).map(
        lambda f: _turn(**{f: _DROP})),
    st.sampled_from([
        {"type": "NoSuchEvent"}, {"type": 7}, {"type": None}, {"v": 99}, {"v": "2"}, {"event_id": "not-a-uuid"},
        {"event_id": 12}, {"occurred_at": "yesterday"}, {"occurred_at": "2026-03-02T09:15:05"},  # no zone
        {"role": "robot"}, {"content": []}, {"content": "hi"}, {"content": [{"type": "video"}]},
        {"thread_id": "a.*"}, {"thread_id": ">"}, {"thread_id": "x" * 129}, {"tenant_id": "acme.>"},
        {"tenant_id": "globex"},  # valid event, but not the subject's tenant
        {"content": [{"type": "text", "text": "b"}] * (MAX_BLOCKS + 1)},
        {"content": [{"type": "text", "text": "y" * (MAX_TEXT + 1)}]},
        {"content": [{"type": "text", "text": "nul \x00 byte"}]},  # refused at decode: no fold can store it (#26)
        {"metadata": "not an object"},
    ]).map(lambda over: _turn(**over)),
    st.dictionaries(st.sampled_from(["type", "v", "event_id", "tenant_id", "thread_id", "role", "content"]),
                    JSON, max_size=5),
)


def _encode(p: bytes | dict) -> bytes:  # type: ignore[type-arg]
    return p if isinstance(p, bytes) else json.dumps(p).encode()


@given(payloads=st.lists(POISON, min_size=1, max_size=3), utf8_break=st.sampled_from([None, "key", "value"]))
@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
async def test_projector_dead_letters_bad_events(seeded, payloads: list, utf8_break: str | None) -> None:  # type: ignore[no-untyped-def]
    engine, _methods, _ = seeded
    before = await quiesce(engine)  # the previous example's good turn is fully derived
    dead_before = await engine.pool.fetchval("SELECT count(*) FROM dead_letters WHERE consumer = 'core'")
    subject = engine.subjects.fact("acme", "t", "TurnRecorded")
    for p in payloads:
        data = _encode(p)
        if utf8_break == "key" and not isinstance(p, bytes):
            data = data.replace(b'"', b'"\xff', 1)
        elif utf8_break == "value" and not isinstance(p, bytes):
            data = data.replace(b': "', b': "\xff', 1)
        await engine.js.publish(subject, data, headers={"Nats-Msg-Id": str(uuid.uuid4())})

    async def all_dead() -> bool:
        n = await engine.pool.fetchval("SELECT count(*) FROM dead_letters WHERE consumer = 'core'")
        return n - dead_before == len(payloads)

    await wait_until(all_dead, timeout=20)
    assert await snapshot(engine) == before
    # and the projector goes on: a good turn is applied after them
    ack = await engine.client("acme").record_turn("t", "user", "still here")
    ctx = await engine.client("acme").context("t", after_seq=ack.seq, window=100_000)
    assert ctx.messages[-1].content[0]["text"] == "still here" and not ctx.stale
