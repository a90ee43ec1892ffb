"""Dead-letter tooling: list, show, retry and drop the events a consumer could not decode or apply (issue #5 §6).

A dead letter is a ``dead_letters`` row (schema/0001_core.sql, 0009_dlq.sql) plus one message per failing delivery on
``<PREFIX>_DLQ`` (subject ``<root>.dlq.<consumer>``), both written by ``record_dead_letters``
(engine/runtime/dead_letters.py). Rules:

- **Retry goes back through the normal path.** The payload is republished on its stream (facts or derived) with a
  fresh ``Nats-Msg-Id`` ``retry:<dead-letter id>:<n>`` (the event id would be swallowed by the server's 24 h dedup
  window), and the headers ``Memengine-Retry-Of`` / ``Memengine-Retry-Stream-Seq``. Every consumer of the stream
  sees it: those that applied the event skip it (``applied_events``), the one that failed applies it, or fails again
  and then the runner increments ``attempts`` on the SAME row (runtime ``RECORD_SQL``). Republishing rather than
  applying in place keeps the log the source of truth: a rebuild folds the original (fails again) and the retry
  (applies), and ends where the live read models are.
- **A corrected payload** (``retry(..., payload=...)``, ``memengine dlq retry ID --payload-file F``) must decode; it is
  published on the subject its event names (which fixes a subject/event mismatch), kept in
  ``corrected_payload`` (``payload`` stays the producer's bytes, for audit) and recorded in ``operations``.
- **Retry is per message.** Open dead letters of other consumers for the same stream message are retried with it
  (they receive the republished event anyway).
- **Nothing is dropped without a command.** ``drop`` sets ``status='dropped'`` and deletes the row's DLQ stream
  messages; the row and its payload stay for audit (a forget erases them like any other copy of the content).
- The DLQ stream holds the *open* dead letters: retry and drop delete the row's DLQ messages; a new failure
  publishes a new one.

Every retry and drop is recorded in ``operations`` (``dlq-retry`` / ``dlq-drop``, ids only) and logged via structlog.
"""

from __future__ import annotations

import base64
import hashlib
import unicodedata
from collections.abc import Sequence
from typing import Any, Protocol

import asyncpg
import msgspec
import structlog
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from memengine.engine.ops.operations import operation
from memengine.engine.runtime.dead_letters import RETRY_SEQ_HEADER
from memengine.engine.wire.errors import InvalidInput
from memengine.events import EventDecodeError, InvalidToken, StreamNames, Subjects, decode, decode_derived

log = structlog.get_logger("memengine.dlq")

STATUSES = ("open", "retried", "dropped")
RETRY_OF_HEADER = "Memengine-Retry-Of"

_SUMMARY_COLS = ("id, consumer, stream, stream_seq, last_seq, subject, event_id, error, attempts, retries, status,"
                 " retried_seq, created_at, updated_at, octet_length(payload) AS payload_bytes,"
                 " corrected_payload IS NOT NULL AS corrected")


#: SQL: the row belongs to consumer $1 (NULL: any), or to one of its partitions ``<name>-p<i>`` (issue #6). Consumer
#: names are subject tokens ([A-Za-z0-9_-]), so none holds a regex metacharacter.
_CONSUMER_IS = "($1::text IS NULL OR consumer = $1 OR consumer ~ ('^' || $1 || '-p[0-9]+$'))"


def _consumer_is(name: str, wanted: str) -> bool:
    return name == wanted or (name.startswith(wanted + "-p") and name[len(wanted) + 2:].isdigit())


class DeadLetterError(InvalidInput, ValueError):
    """A dead-letter command that cannot be carried out: ``code`` is ``not_found`` (unknown id), ``invalid_state``
    (e.g. retrying a dropped one) or ``invalid_payload`` (a corrected payload that does not decode)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class DlqTarget(Protocol):
    """What the tooling needs from ``engine.bootstrap.Engine`` (any object with these attributes will do)."""

    pool: asyncpg.Pool
    js: JetStreamContext
    subjects: Subjects
    streams: StreamNames


def _summary(r: asyncpg.Record) -> dict[str, Any]:
    return {"id": r["id"], "consumer": r["consumer"], "stream": r["stream"], "stream_seq": r["stream_seq"],
            "last_seq": r["last_seq"], "subject": r["subject"], "event_id": r["event_id"], "error": r["error"],
            "attempts": r["attempts"], "retries": r["retries"], "status": r["status"],
            "retried_seq": r["retried_seq"], "created_at": r["created_at"].isoformat(),
            "updated_at": r["updated_at"].isoformat(), "payload_bytes": r["payload_bytes"],
            "corrected": r["corrected"]}


async def list_dead_letters(pool: asyncpg.Pool, *, consumer: str | None = None, status: str = "open",
                            limit: int = 100) -> list[dict[str, Any]]:
    """Dead letters, oldest first, without payloads.

    ``consumer`` also matches its partitions (``core`` -> ``core-p0``...). ``status``: ``open`` | ``retried`` |
    ``dropped`` | ``all``. Returns ``[{id, consumer, stream, stream_seq, last_seq, subject, event_id, error, attempts,
    retries, status, retried_seq, created_at, updated_at (ISO 8601), payload_bytes, corrected}]``.
    Raises ``DeadLetterError('invalid_state')`` for an unknown status.
    """
    if status != "all" and status not in STATUSES:
        raise DeadLetterError("invalid_state", f"status must be one of {', '.join(STATUSES)} or all, not {status!r}")
    rows = await pool.fetch(
        f"SELECT {_SUMMARY_COLS} FROM dead_letters WHERE {_CONSUMER_IS}"
        " AND ($2::text = 'all' OR status = $2) ORDER BY id LIMIT $3", consumer, status, limit)
    return [_summary(r) for r in rows]


def payload_view(data: bytes) -> dict[str, Any]:
    """The raw bytes shown safely: ``{bytes, sha256, text (UTF-8, else None), base64}``; nothing is interpreted."""
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "text": text,
            "base64": base64.b64encode(data).decode()}


def printable(text: str, limit: int = 4000) -> str:
    """``text`` for a terminal: control and format characters (ANSI escapes, NUL, bidi overrides) as ``\\xNN`` /
    ``\\uNNNN``, newlines and tabs kept, cut at ``limit`` characters."""
    out = []
    for ch in text[:limit]:
        if ch in "\n\t" or unicodedata.category(ch)[0] != "C":
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
    return "".join(out) + (f"... ({len(text) - limit} more characters)" if len(text) > limit else "")


def _decoder(streams: StreamNames, stream: str) -> Any:
    if stream == streams.facts:
        return decode
    if stream == streams.derived:
        return decode_derived
    return None


def _decoded(streams: StreamNames, stream: str, data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    dec = _decoder(streams, stream)
    if dec is None:
        return None, f"no decoder for stream {stream}"
    try:
        return msgspec.to_builtins(dec(data)), None
    except EventDecodeError as exc:
        return None, exc.reason


async def show(target: DlqTarget, dead_letter_id: int) -> dict[str, Any]:
    """One dead letter in full.

    Returns ``{dead_letter: <list_dead_letters item> + dlq_seqs, event: the decoded (upcast) event or None,
    decode_error: why not or None, payload: payload_view(original bytes), corrected: {event, decode_error, payload}
    or None, operations: [{id, kind, actor, status, started_at}] that touched it}``.
    Raises ``DeadLetterError('not_found')``.
    """
    row = await target.pool.fetchrow(
        f"SELECT {_SUMMARY_COLS}, payload, corrected_payload, dlq_seqs FROM dead_letters WHERE id = $1",
        dead_letter_id)
    if row is None:
        raise DeadLetterError("not_found", f"no dead letter {dead_letter_id}")
    event, error = _decoded(target.streams, row["stream"], row["payload"])
    corrected = None
    if row["corrected_payload"] is not None:
        cev, cerr = _decoded(target.streams, row["stream"], row["corrected_payload"])
        corrected = {"event": cev, "decode_error": cerr, "payload": payload_view(row["corrected_payload"])}
    ops = await target.pool.fetch(
        "SELECT id, kind, actor, status, started_at FROM operations WHERE kind LIKE 'dlq-%'"
        " AND scope->'ids' @> to_jsonb(ARRAY[$1::bigint]) ORDER BY id", dead_letter_id)
    return {"dead_letter": {**_summary(row), "dlq_seqs": list(row["dlq_seqs"])}, "event": event,
            "decode_error": error, "payload": payload_view(row["payload"]), "corrected": corrected,
            "operations": [{"id": o["id"], "kind": o["kind"], "actor": o["actor"], "status": o["status"],
                            "started_at": o["started_at"].isoformat()} for o in ops]}


async def _select(pool: asyncpg.Pool, ids: Sequence[int] | None, *, all_open: bool, consumer: str | None,
                  allowed: tuple[str, ...]) -> tuple[list[asyncpg.Record], list[dict[str, Any]]]:
    """The rows a command acts on, and ``[{id, reason}]`` skipped. Explicit ids must exist (``not_found``)."""
    if all_open:
        rows = await pool.fetch(f"SELECT * FROM dead_letters WHERE status = 'open' AND {_CONSUMER_IS} ORDER BY id",
                                consumer)
        return list(rows), []
    wanted = sorted(set(ids or []))
    rows = await pool.fetch("SELECT * FROM dead_letters WHERE id = ANY($1::bigint[]) ORDER BY id", wanted)
    missing = sorted(set(wanted) - {r["id"] for r in rows})
    if missing:
        raise DeadLetterError("not_found", f"no dead letter(s) {', '.join(map(str, missing))}")
    keep = [r for r in rows if r["status"] in allowed and (consumer is None or _consumer_is(r["consumer"], consumer))]
    skipped = [{"id": r["id"], "reason": f"status {r['status']}" if r["status"] not in allowed
                else f"consumer {r['consumer']}"} for r in rows if r not in keep]
    return keep, skipped


async def _delete_dlq_messages(target: DlqTarget, row: asyncpg.Record) -> int:
    """Delete the row's messages from the DLQ stream; returns how many were there. Rows written before migration
    0009 have no ``dlq_seqs``: their messages are found by the runner's headers on the consumer's DLQ subject."""
    seqs = list(row["dlq_seqs"] or [])
    if not seqs:
        seqs = await _find_dlq_seqs(target, row)
    deleted = 0
    for seq in seqs:
        try:
            if await target.js.delete_msg(target.streams.dlq, seq):
                deleted += 1
        except NotFoundError:
            pass  # already gone (an earlier drop that failed before its commit, or the stream's limits)
    return deleted


async def _find_dlq_seqs(target: DlqTarget, row: asyncpg.Record) -> list[int]:
    subject = target.subjects.dlq(row["consumer"])
    wanted = {str(row["stream_seq"]), str(row["last_seq"] or row["stream_seq"])}
    found: list[int] = []
    seq = 1
    while True:
        try:
            msg = await target.js.get_msg(target.streams.dlq, seq=seq, subject=subject, next=True)
        except NotFoundError:
            return found
        assert msg.seq is not None  # nats-py types it optional; a stored message always has its sequence
        headers = msg.headers or {}
        if headers.get("Memengine-Stream") == row["stream"] and headers.get("Memengine-Stream-Seq") in wanted:
            found.append(msg.seq)
        seq = msg.seq + 1


def _published_subject(target: DlqTarget, row: asyncpg.Record) -> str:
    """The subject the producer published on: a partitioned facts stream stores ``<subject>.<partition>`` (issue #6
    subject transform), and republishing the 5-token subject lets the transform place it again."""
    parts = row["subject"].split(".")
    if row["stream"] == target.streams.facts and len(parts) == 6 and parts[5].isdigit():
        return ".".join(parts[:5])
    subject: str = row["subject"]
    return subject


def _retry_subject(target: DlqTarget, row: asyncpg.Record, payload: bytes, corrected: bool) -> str:
    """Where to republish: an unchanged payload goes back to its original subject (an undecodable one, or one whose
    body names another tenant than its subject, fails again, which is what the operator asked for: a retry must
    never move a forged fact into the tenant its body names, issue #17 defect 1); a corrected one to the subject
    the event names (tenant, thread, type), which is how an operator fixes a mismatch."""
    if not corrected:
        return _published_subject(target, row)
    dec = _decoder(target.streams, row["stream"])
    if dec is None:
        raise DeadLetterError("invalid_payload", f"no decoder for stream {row['stream']}")
    try:
        ev = dec(payload)
    except EventDecodeError as exc:
        raise DeadLetterError("invalid_payload", f"the corrected payload does not decode: {exc.reason}") from None
    build = target.subjects.fact if row["stream"] == target.streams.facts else target.subjects.derived
    try:
        return build(ev.tenant_id, ev.thread_id, type(ev).__name__)
    except InvalidToken as exc:
        raise DeadLetterError("invalid_payload", str(exc)) from None


async def retry(target: DlqTarget, ids: Sequence[int] | None = None, *, all_open: bool = False,
                consumer: str | None = None, payload: bytes | None = None,
                payload_source: str | None = None) -> dict[str, Any]:
    """Republish dead letters on their stream (module docstring), mark them ``retried``, delete their DLQ messages.

    ``ids`` (open or retried rows) or ``all_open`` (every open row, of ``consumer`` if given). ``payload``: corrected
    bytes for exactly one id (``payload_source`` names where they came from, for the audit record).
    Returns ``{operation_id, retried: [{ids, stream, original_seq, subject, retry_seq, msg_id, duplicate, corrected,
    dlq_messages_deleted}], skipped: [{id, reason}]}``; ``retry_seq`` is where the event now sits on its stream.
    Raises ``DeadLetterError`` (``not_found``, ``invalid_state``, ``invalid_payload``) before publishing anything.
    """
    if bool(ids) == all_open:
        raise DeadLetterError("invalid_state", "give dead-letter ids or all_open, not both or neither")
    if payload is not None and (all_open or len(set(ids or [])) != 1):
        raise DeadLetterError("invalid_state", "a corrected payload applies to exactly one dead letter")
    rows, skipped = await _select(target.pool, ids, all_open=all_open, consumer=consumer,
                                  allowed=("open", "retried"))
    if payload is not None:
        if not rows:
            assert ids is not None  # a payload needs exactly one id (checked above)
            raise DeadLetterError("invalid_state", f"dead letter {ids[0]} cannot be retried ({skipped[0]['reason']})")
        _retry_subject(target, rows[0], payload, corrected=True)  # validate before recording anything
    # one republish per stream message: rows of several consumers for the same message go together
    groups: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        groups.setdefault((r["stream"], r["stream_seq"]), []).append(r["id"])
    scope: dict[str, Any] = {"ids": [r["id"] for r in rows], "all": all_open, "consumer": consumer}
    async with operation(target.pool, "dlq-retry", scope=scope) as op:
        if payload is not None:
            op.detail["corrected_payload"] = {"sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload),
                                              "source": payload_source}
        retried: list[dict[str, Any]] = []
        for (stream, seq), group_ids in groups.items():
            done = await _retry_group(target, stream, seq, group_ids, payload)
            if done is None:
                skipped.extend({"id": i, "reason": "changed meanwhile"} for i in group_ids)
                continue
            retried.append(done)
        op.detail.update(retried=len(retried), skipped=len(skipped),
                         retry_seqs=[d["retry_seq"] for d in retried],
                         ids=sorted(i for d in retried for i in d["ids"]))
    return {"operation_id": op.id, "retried": retried, "skipped": skipped}


async def _retry_group(target: DlqTarget, stream: str, seq: int, ids: list[int],
                       payload: bytes | None) -> dict[str, Any] | None:
    async with target.pool.acquire() as conn, conn.transaction():
        # The row locks order this against the runner recording a new failure of the republished event: its update
        # waits for this commit, then counts the attempt and reopens the row.
        rows = await conn.fetch(
            "SELECT * FROM dead_letters WHERE (id = ANY($1::bigint[]) AND status IN ('open', 'retried'))"
            " OR (stream = $2 AND stream_seq = $3 AND status = 'open') ORDER BY id FOR UPDATE", ids, stream, seq)
        if not any(r["id"] in ids for r in rows):
            return None
        primary = next(r for r in rows if r["id"] in ids)
        corrected = payload is not None
        data: bytes = payload if payload is not None else (primary["corrected_payload"] or primary["payload"])
        subject = _retry_subject(target, primary, data, corrected=corrected)
        # Same id for a repeat of this retry (crash before the commit): the server drops the second publish.
        msg_id = f"retry:{primary['id']}:{primary['retries'] + 1}"
        ack = await target.js.publish(subject, data, stream=stream, headers={
            "Nats-Msg-Id": msg_id, RETRY_OF_HEADER: str(primary["id"]), RETRY_SEQ_HEADER: str(seq)})
        deleted = 0
        for r in rows:
            deleted += await _delete_dlq_messages(target, r)
        all_ids = [r["id"] for r in rows]
        await conn.execute(
            "UPDATE dead_letters SET status = 'retried', retries = retries + 1, retried_seq = $2, dlq_seqs = '{}',"
            " corrected_payload = coalesce($3, corrected_payload), updated_at = now() WHERE id = ANY($1::bigint[])",
            all_ids, ack.seq, payload)
    log.info("dead letter retried", ids=all_ids, stream=stream, original_seq=seq, subject=subject,
             retry_seq=ack.seq, msg_id=msg_id, duplicate=bool(ack.duplicate), corrected=corrected)
    return {"ids": all_ids, "stream": stream, "original_seq": seq, "subject": subject, "retry_seq": ack.seq,
            "msg_id": msg_id, "duplicate": bool(ack.duplicate), "corrected": corrected,
            "dlq_messages_deleted": deleted}


async def drop(target: DlqTarget, ids: Sequence[int] | None = None, *, all_open: bool = False,
               consumer: str | None = None) -> dict[str, Any]:
    """Give up on dead letters: ``status='dropped'``, their DLQ stream messages deleted, the rows (and payloads)
    kept for audit. ``ids`` (open or retried rows) or ``all_open`` (every open row, of ``consumer`` if given).

    The caller is the confirmation (``memengine dlq drop`` asks, or needs ``--yes``); this function does not ask.
    Returns ``{operation_id, dropped: [ids], dlq_messages_deleted, skipped: [{id, reason}]}``.
    Raises ``DeadLetterError`` (``not_found``, ``invalid_state``).
    """
    if bool(ids) == all_open:
        raise DeadLetterError("invalid_state", "give dead-letter ids or all_open, not both or neither")
    rows, skipped = await _select(target.pool, ids, all_open=all_open, consumer=consumer,
                                  allowed=("open", "retried"))
    scope: dict[str, Any] = {"ids": [r["id"] for r in rows], "all": all_open, "consumer": consumer}
    dropped: list[int] = []
    deleted = 0
    async with operation(target.pool, "dlq-drop", scope=scope) as op:
        for r in rows:
            async with target.pool.acquire() as conn, conn.transaction():
                row = await conn.fetchrow("SELECT * FROM dead_letters WHERE id = $1 AND status IN ('open', 'retried')"
                                          " FOR UPDATE", r["id"])
                if row is None:
                    skipped.append({"id": r["id"], "reason": "changed meanwhile"})
                    continue
                n = await _delete_dlq_messages(target, row)
                await conn.execute("UPDATE dead_letters SET status = 'dropped', dlq_seqs = '{}', updated_at = now()"
                                   " WHERE id = $1", r["id"])
            deleted += n
            dropped.append(r["id"])
            log.info("dead letter dropped", id=r["id"], consumer=r["consumer"], stream=r["stream"],
                     stream_seq=r["stream_seq"], dlq_messages_deleted=n)
        op.detail.update(dropped=dropped, dlq_messages_deleted=deleted, skipped=len(skipped))
    return {"operation_id": op.id, "dropped": dropped, "dlq_messages_deleted": deleted, "skipped": skipped}
