"""Helpers of the poison-event tests (issue #17 defects 1, 2, 3, 10, 12): raw fact bodies a producer could publish,
and waits for "every consumer has processed everything stored" on the real servers."""

from __future__ import annotations

import json
import uuid
from typing import Any

import nats.errors

from memengine.engine.bootstrap import Engine
from tests.conftest import wait_until


def fact(type_: str, tenant: str, thread: str, **fields: Any) -> dict[str, Any]:
    """A fact body as a producer writes it (JSON object), ``type_`` one of the fact types; ``fields`` override."""
    body: dict[str, Any] = {"type": type_, "v": 2 if type_ == "TurnRecorded" else 1, "event_id": str(uuid.uuid4()),
                            "tenant_id": tenant, "thread_id": thread, "occurred_at": "2026-03-02T09:15:05Z"}
    if type_ == "TurnRecorded":
        body.update(role="user", content=[{"type": "text", "text": "hello"}])
    body.update(fields)
    return body


def turn(tenant: str, thread: str, text: str, **fields: Any) -> dict[str, Any]:
    """A user turn's body (``TurnRecorded`` v2 with one text block)."""
    return fact("TurnRecorded", tenant, thread, **{"content": [{"type": "text", "text": text}], **fields})


def nested(depth: int, *, width: int = 6) -> bytes:
    """A user turn whose ``metadata.x`` nests ``depth`` objects (about ``width`` bytes per level)."""
    body = json.dumps(turn("acme", "t", "deep", metadata={"x": 0})).encode()
    key = b'{"' + b"a" * max(1, width - 4) + b'":'
    return body.replace(b'"x": 0', b'"x": ' + key * depth + b"0" + b"}" * depth)


async def publish_raw(engine: Engine, subject: str, data: bytes | dict[str, Any]) -> int:
    """Publish bytes (or a JSON object) on ``subject`` of the facts stream as any producer could; its sequence."""
    payload = data if isinstance(data, bytes) else json.dumps(data).encode()
    ack = await engine.js.publish(subject, payload, headers={"Nats-Msg-Id": str(uuid.uuid4())},
                                  stream=engine.streams.facts)
    return ack.seq


async def drained(engine: Engine, timeout: float = 30.0) -> None:
    """Wait until every consumer of the facts and derived streams (core, recall, enricher, derived) has reached the
    streams' current end, the derived events of the last facts included."""

    # every consumer's checkpoint row must exist, not only those already written: a projector that has not committed
    # its first batch yet has no row, and "every row is at the end" held vacuously (test_poison_isolation read the
    # core projector's dead letter before it existed, under load)
    from memengine.engine.derive.enricher import NAME as ENRICHER
    from memengine.engine.runtime.runner import ProjectorRunner

    def names(*runners: object) -> set[str]:  # a partitioned group keys its rows per partition: not required here
        return {p.name for r in runners if isinstance(r, ProjectorRunner) for p in r.projections}

    on_facts = names(engine.runner, engine.recall) | {ENRICHER}
    on_derived = names(engine.derived)

    async def done() -> bool:
        try:
            return await _done()
        except nats.errors.TimeoutError:
            # one slow reply is "not yet": the in-process enricher may hold the event loop for a second or more on a
            # megabyte turn, and a poll must not fail the test on it (the deadline of wait_until still does)
            return False

    async def _done() -> bool:
        facts = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
        rows = await engine.pool.fetch("SELECT projection, stream, last_seq FROM projection_checkpoints")
        at = {(r["projection"], r["stream"]): r["last_seq"] for r in rows}
        if any(r["stream"] == engine.streams.facts and r["last_seq"] < facts for r in rows):
            return False
        if facts and any(at.get((n, engine.streams.facts), 0) < facts for n in on_facts):
            return False
        derived = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
        if derived and any(at.get((n, engine.streams.derived), 0) < derived for n in on_derived):
            return False
        return all(r["last_seq"] >= derived for r in rows if r["stream"] == engine.streams.derived)

    await wait_until(done, timeout=timeout, interval=0.05)


async def dead_letters(engine: Engine, seq: int) -> dict[str, str]:
    """``{consumer: error}`` of the dead letters recorded for facts sequence ``seq``."""
    rows = await engine.pool.fetch("SELECT consumer, error FROM dead_letters WHERE stream = $1 AND stream_seq = $2",
                                   engine.streams.facts, seq)
    return {r["consumer"]: r["error"] for r in rows}


async def memories_of(engine: Engine, tenant: str) -> list[tuple[str, str, str]]:
    """``(memory_id, status, text)`` of every memory item of ``tenant``, sorted."""
    rows = await engine.pool.fetch("SELECT memory_id, status, text FROM memory_items WHERE tenant_id = $1"
                                   " ORDER BY memory_id", tenant)
    return [(r["memory_id"], r["status"], r["text"]) for r in rows]


async def healthy_tenant_turn(engine: Engine, tenant: str, text: str, *, user: str = "li",
                              timeout: float = 20.0) -> int:
    """Record a turn of ``tenant`` that the offline deriver turns into a memory; wait until it is projected
    (context, read-your-writes) and its memories derived (the ``MemoriesExtracted`` built from it is folded) within
    ``timeout`` seconds; returns its sequence."""
    client = engine.client(tenant)
    ack = await client.record_turn("good", "user", text, user_id=user)
    ctx = await client.context("good", after_seq=ack.seq, window=100_000)
    assert ctx.messages[-1].content[0]["text"] == text and not ctx.stale

    async def derived() -> bool:
        return bool(await engine.pool.fetchval(
            "SELECT count(*) FROM derived_events WHERE tenant_id = $1 AND type = 'MemoriesExtracted'"
            " AND source_last_seq = $2", tenant, ack.seq))

    await wait_until(derived, timeout=timeout)
    return ack.seq


#: A turn text that the folds fail to apply once ``refuse_in_folds`` ran (issue #26 item 3: the contract now refuses
#: the NUL turn that used to be the example of an event that decodes but fails in PostgreSQL).
UNAPPLIABLE = "apply-poison: a turn the folds cannot store"


async def refuse_in_folds(engine: Engine) -> None:
    """Make the real PostgreSQL refuse, as a fold's error, any ``messages`` or ``memory_vectors`` row carrying
    ``UNAPPLIABLE`` (a trigger of this test database): the stand-in for a fact that decodes but cannot be applied
    (a future constraint, a bug), so the apply-error path (isolation in a batch, dead letter with stage ``apply``,
    retry) stays tested now that the contract refuses everything the folds are known to reject."""
    await engine.pool.execute("""
        CREATE OR REPLACE FUNCTION test_refuse_unappliable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF to_jsonb(NEW)::text LIKE '%apply-poison%' THEN
                RAISE EXCEPTION 'apply-poison: refused by the test trigger';
            END IF;
            RETURN NEW;
        END $$;
        CREATE OR REPLACE TRIGGER test_refuse_unappliable BEFORE INSERT OR UPDATE ON messages
            FOR EACH ROW EXECUTE FUNCTION test_refuse_unappliable();
        CREATE OR REPLACE TRIGGER test_refuse_unappliable BEFORE INSERT OR UPDATE ON memory_vectors
            FOR EACH ROW EXECUTE FUNCTION test_refuse_unappliable();
    """)
