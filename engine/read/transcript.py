"""Reading turns back from the log when the ``messages`` read model no longer holds them.

Physical pruning (seed 000 §3.1, ``MEMORY_MAX_MESSAGES_PER_THREAD``) removes old turns from ``messages`` once their
summary is recorded, but the log (``MEMORY_FACTS``) keeps every fact: "history still reaches them" (issue #4 §3).
``FactLog`` reads facts by stream sequence with JetStream's message-get API (``STREAM.MSG.GET`` with
``next_by_subj``: the server walks its per-subject index, one request per message), so paging through a pruned
stretch of a thread costs one round trip per turn and never scans other threads.

Used by ``QueryService.history`` (pruned pages), ``MemoryQueries.audit`` (source turns of old memories) and the
enricher (episodes whose session started before the prune mark).
"""

from __future__ import annotations

from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from memengine.engine.adapters.jetstream import stores_partitioned
from memengine.events import AnyFact, EventDecodeError, StreamNames, Subjects, TurnRecorded, decode_fact
from memengine.projections.content import message_tokens

_json = msgspec.json.Encoder()


class FactLog:
    """Facts of one deployment's ``MEMORY_FACTS`` stream, read by sequence. Errors from NATS propagate.

    Every fact read goes through ``events.decode_fact`` like the projectors' (issue #17 defect 1): one the
    projectors dead-lettered (undecodable, or its body names another tenant, thread or type than its subject) is
    not part of any transcript either."""

    def __init__(self, js: JetStreamContext, streams: StreamNames, subjects: Subjects) -> None:
        self.js = js
        self.streams = streams
        self.subjects = subjects
        self._partitioned: bool | None = None

    async def _decode(self, subject: str | None, data: bytes | None) -> AnyFact | None:
        if self._partitioned is None or (not self._partitioned and (subject or "").count(".") == 5):
            self._partitioned = await stores_partitioned(self.js, self.streams.facts)  # (re-)partitioned?
        try:
            return decode_fact(subject or "", data or b"", self.subjects, partitioned=self._partitioned)
        except EventDecodeError:
            return None

    async def at(self, seq: int) -> AnyFact | None:
        """The fact stored at stream sequence ``seq``, or ``None`` (deleted, purged, undecodable, out of range)."""
        if seq <= 0:
            return None
        try:
            msg = await self.js.get_msg(self.streams.facts, seq=seq)
        except NotFoundError:
            return None
        return await self._decode(msg.subject, msg.data)

    async def thread_turns(self, tenant: str, thread: str, *, after_seq: int, through_seq: int,
                           limit: int) -> list[tuple[int, TurnRecorded]]:
        """Up to ``limit`` ``TurnRecorded`` facts of the thread with ``after_seq < seq <= through_seq``, oldest
        first, as ``[(seq, event)]``. ``InvalidToken`` for a bad tenant/thread."""
        subject = self.subjects.fact(tenant, thread, "TurnRecorded")
        out: list[tuple[int, TurnRecorded]] = []
        seq = after_seq + 1
        while len(out) < limit and seq <= through_seq:
            try:
                msg = await self.js.get_msg(self.streams.facts, seq=seq, subject=subject, next=True)
            except NotFoundError:
                break
            if msg.seq is None or msg.seq > through_seq:
                break
            ev = await self._decode(msg.subject, msg.data)  # None: dead-lettered by the projectors
            if isinstance(ev, TurnRecorded):
                out.append((msg.seq, ev))
            seq = msg.seq + 1
        return out


def history_row(seq: int, ev: TurnRecorded) -> dict[str, Any]:
    """A turn read from the log in the shape of a ``messages`` row used by ``history`` (tokens counted now, with
    the same tokenizer the fold uses; content encoded exactly as the fold stores it)."""
    return {"seq": seq, "event_id": str(ev.event_id), "role": ev.role, "user_id": ev.user_id,
            "session_id": ev.session_id, "occurred_at": ev.occurred_at,
            "content": _json.encode(ev.content).decode(), "tokens_full": message_tokens(ev.content),
            "metadata": _json.encode(ev.metadata).decode()}
