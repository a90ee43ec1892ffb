"""Recording dead letters: the runtime half of the dead-letter queue (issue #5 §6, issue #17 defects 3 and 4).

A consumer (a projector, or the enricher) that cannot decode or apply a delivery records it here, inside its commit:
one message on ``<PREFIX>_DLQ`` (subject ``<root>.dlq.<consumer>``) and one ``dead_letters`` row
(schema/0001_core.sql, 0009_dlq.sql). Listing, retrying and dropping them is operations' business
(engine/ops/dead_letters.py), which republishes a retry with ``RETRY_SEQ_HEADER`` so that a failing retry counts as
another attempt on the original row (``RECORD_SQL``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import structlog
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from memengine.events import Subjects

log = structlog.get_logger("memengine.runner")

#: Header of a republished retry: the stream sequence of the original delivery it retries.
RETRY_SEQ_HEADER = "Memengine-Retry-Stream-Seq"

#: How a consumer records a failing delivery (``record_dead_letters``). Parameters: $1 consumer, $2 stream,
#: $3 key seq (the original delivery's seq for a retry, else this delivery's), $4 subject, $5 event id or NULL,
#: $6 error, $7 payload, $8 this delivery's stream seq, $9 its DLQ stream seq or NULL (not published).
#: The row is found by its key seq, else by (consumer, stream, event_id, subject): the subject names the tenant, and
#: ids are unique per tenant only (issue #17 defect 4). Only a delivery beyond the last one recorded
#: counts as an attempt and reopens the row: a replay of an old sequence (consumer re-bound below it) changes
#: nothing, so a dropped dead letter is not resurrected by replaying the log.
RECORD_SQL = """
WITH prior AS (
    SELECT id FROM dead_letters
    WHERE consumer = $1 AND stream = $2
      AND (stream_seq = $3 OR ($5::text IS NOT NULL AND event_id = $5::text AND subject = $4))
    ORDER BY (stream_seq = $3) DESC, id
    LIMIT 1
    FOR UPDATE
), hit AS (
    UPDATE dead_letters d SET
        attempts = d.attempts + CASE WHEN $8 > coalesce(d.last_seq, d.stream_seq) THEN 1 ELSE 0 END,
        status = CASE WHEN $8 > coalesce(d.last_seq, d.stream_seq) THEN 'open' ELSE d.status END,
        error = $6,
        last_seq = GREATEST(coalesce(d.last_seq, d.stream_seq), $8),
        dlq_seqs = CASE WHEN $9::bigint IS NULL OR $9::bigint = ANY(d.dlq_seqs) THEN d.dlq_seqs
                        ELSE array_append(d.dlq_seqs, $9::bigint) END,
        updated_at = now()
    FROM prior WHERE d.id = prior.id
    RETURNING d.id
)
INSERT INTO dead_letters (consumer, stream, stream_seq, subject, event_id, error, payload, last_seq, dlq_seqs)
SELECT $1, $2, $3, $4, $5::text, $6, $7, $8,
       CASE WHEN $9::bigint IS NULL THEN '{}'::bigint[] ELSE ARRAY[$9::bigint] END
WHERE NOT EXISTS (SELECT 1 FROM hit)
ON CONFLICT (consumer, stream, stream_seq) DO NOTHING
"""


def retry_of_seq(headers: dict[str, str] | None) -> int | None:
    """The original stream seq a republished message retries (``Memengine-Retry-Stream-Seq``), else ``None``."""
    raw = (headers or {}).get(RETRY_SEQ_HEADER)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None  # a producer's garbage header must not fail the projector


@dataclass(frozen=True)
class DeadLetter:
    """One failing delivery: the message, its stream sequence, the error (``<stage>: <reason>``), the event id if
    the payload decoded."""

    msg: Msg
    seq: int
    error: str
    event_id: str | None = None


async def record_dead_letters(conn: asyncpg.Connection, js: JetStreamContext, subjects: Subjects, *, consumer: str,
                              stream: str, dead: Sequence[DeadLetter], publish: bool = True,
                              max_payload: int = 1024 * 1024) -> None:
    """Record dead letters of ``consumer`` (a projector, or the enricher) on the DLQ stream (before the commit; the
    message id makes a repeat after a crash a no-op) and in the table (``conn``'s transaction), with the DLQ
    message's sequence so that `memengine dlq` can delete it. A failing retry (engine/ops/dead_letters.py) counts as
    another attempt on the original row (``RECORD_SQL``). ``publish=False``: the table only (scratch and shadow
    folds).

    A payload too large to travel with the headers (``max_payload``: the connection's, i.e. the server's) goes to the
    DLQ stream cut, with ``Memengine-Payload-Bytes`` giving its size; the table keeps it whole (a retry republishes
    from there). Sent whole, it failed the publish on every attempt: a NATS error is retried, never dead-lettered."""
    for d in dead:
        retry_of = retry_of_seq(d.msg.headers)
        dlq_seq = None
        if publish:
            headers = {
                "Nats-Msg-Id": f"{consumer}:{stream}:{d.seq}",
                "Memengine-Error": d.error[:1000].replace("\r", " ").replace("\n", " "),
                "Memengine-Consumer": consumer,
                "Memengine-Stream": stream,
                "Memengine-Stream-Seq": str(d.seq),
                "Memengine-Subject": d.msg.subject,
            }
            if retry_of is not None:
                headers[RETRY_SEQ_HEADER] = str(retry_of)
            payload = d.msg.data
            room = max_payload - sum(len(k) + len(v.encode()) + 4 for k, v in headers.items()) - 256
            if len(payload) > room:
                headers["Memengine-Payload-Bytes"] = str(len(payload))
                payload = payload[:max(0, room - 64)]
            ack = await js.publish(subjects.dlq(consumer), payload, headers=headers)
            dlq_seq = ack.seq or None  # a duplicate's ack names the stored message's sequence
            log.warning("event dead-lettered", consumer=consumer, seq=d.seq, error=d.error)
        await conn.execute(RECORD_SQL, consumer, stream, retry_of or d.seq, d.msg.subject, d.event_id, d.error,
                           d.msg.data, d.seq, dlq_seq)
