"""The access trail's writer (issue #30): every context and recall answer recorded on the served stream, off the
request's hot path.

The answering code calls ``AccessTrail.context`` / ``recall`` after the reply is built: one ``deque.append`` of the
request and the reply, no I/O, no encoding. A task owned by the engine's lifespan (engine/bootstrap.py) turns the
pending answers into ``ContextServed`` / ``RecallServed`` events (events/served.py) and publishes them in batches of
``MEMENGINE_TRAIL_BATCH`` with their acks awaited together. Nothing here can fail or delay an answer:

- a full queue (``MEMENGINE_TRAIL_QUEUE`` answers pending) drops the new record and counts it (``dropped_full``);
- a publish that fails (stream missing, NATS away, no ack within ``PUBLISH_TIMEOUT_S``) drops that record and counts
  it (``dropped_failed``); the trail is an audit aid, not a second source of truth for memory, and a retry queue
  that grows while NATS is away would only move the loss to the process's memory.

``stats()`` feeds ``status`` and ``/metrics``. ``MEMENGINE_ACCESS_TRAIL=off`` builds no trail (``enabled`` false:
the calls return at once). Whether an answer was pushed is said by ``PUSHED`` (a context variable the pusher sets),
so the one call site in the query service serves the NATS, HTTP, MCP and pushed paths alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
from collections import deque
from dataclasses import dataclass
from typing import Any

import structlog

from memengine.events import Subjects, new_event_id
from memengine.events.served import MAX_PLACED, NO_THREAD, ContextServed, Placed, RecallServed, encode_served

log = structlog.get_logger("memengine.trail")

#: set by engine/read/push.py around the assembly of a pushed context
PUSHED: contextvars.ContextVar[bool] = contextvars.ContextVar("memengine_pushed", default=False)
#: seconds the flusher waits for one batch's acks before it counts the rest as dropped
PUBLISH_TIMEOUT_S = 5.0


@dataclass
class TrailStats:
    """Counters since start: ``recorded`` (answers queued), ``published`` (acked by the served stream), ``bytes``
    published, ``dropped_full`` (queue full), ``dropped_failed`` (publish failed), ``pending`` (queued now)."""

    recorded: int = 0
    published: int = 0
    bytes: int = 0
    dropped_full: int = 0
    dropped_failed: int = 0
    pending: int = 0


class AccessTrail:
    """Bounded in-process queue of answers, flushed to ``<root>.served.<tenant>.<thread>.<Type>`` by ``run()``.

    ``js``: a JetStream context; ``stream``: the served stream's name (published with ``stream=`` so a missing
    stream fails instead of being answered by another); ``max_pending`` / ``batch``: the settings of the same names."""

    def __init__(self, js: Any, subjects: Subjects, stream: str, *, max_pending: int = 10_000, batch: int = 256,
                 producer: str = "memengine-query") -> None:
        self.js = js
        self.subjects = subjects
        self.stream = stream
        self.max_pending = max_pending
        self.batch = batch
        self.producer = producer
        self.enabled = True
        self.counters = TrailStats()
        self._queue: deque[tuple[str, Any, Any, Any, bool, dt.datetime]] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    # -- the hot path: no I/O ----------------------------------------------------------------------------------

    def context(self, req: Any, res: Any, thread_memory_ids: list[str] | None = None) -> None:
        """Queue a context answer (``ContextRequest``, ``ContextResult``); ``thread_memory_ids``: the thread's own
        memory items the Tier-1 text shows (the reply names only the user-memory part's)."""
        self._put("context", req, res, thread_memory_ids, PUSHED.get())

    def recall(self, req: Any, res: Any) -> None:
        """Queue a recall answer (``RecallRequest``, ``RecallResult``)."""
        self._put("recall", req, res, None, False)

    def _put(self, kind: str, req: Any, res: Any, extra: Any, pushed: bool) -> None:
        if not self.enabled:
            return
        if len(self._queue) >= self.max_pending:
            self.counters.dropped_full += 1
            return
        self._queue.append((kind, req, res, extra, pushed, dt.datetime.now(dt.UTC)))
        self.counters.recorded += 1
        self._idle.clear()
        self._wake.set()

    # -- the flusher ---------------------------------------------------------------------------------------------

    def stats(self) -> TrailStats:
        """The counters, ``pending`` filled in."""
        self.counters.pending = len(self._queue)
        return self.counters

    async def run(self, stop: asyncio.Event) -> None:
        """Flush until ``stop`` is set, then flush what is left (bounded by ``PUBLISH_TIMEOUT_S`` a batch)."""
        while not stop.is_set():
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):  # a short nap: ``stop`` is looked at twice a second
                    await asyncio.wait_for(self._wake.wait(), 0.5)
                continue
            await self.flush_once()
        await self.drain()

    async def drain(self) -> None:
        """Publish everything pending now (shutdown, tests, benches)."""
        while self._queue:
            await self.flush_once()
        self._idle.set()

    async def settled(self, timeout: float = 10.0) -> None:
        """Wait until the queue is empty and its last batch answered (tests, one-shot commands)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)

    async def flush_once(self) -> int:
        """Publish up to ``batch`` pending answers, acks awaited together; returns how many were acked."""
        taken = [self._queue.popleft() for _ in range(min(self.batch, len(self._queue)))]
        if not taken:
            return 0
        sends = []
        for item in taken:
            try:
                subject, data, msg_id = self._encode(*item)
            except Exception as exc:  # noqa: BLE001 - an answer that cannot be recorded is counted, not raised
                self.counters.dropped_failed += 1
                log.warning("served record not encodable", error=repr(exc))
                continue
            sends.append((subject, data, msg_id))
        results = await asyncio.gather(*(self._publish(*s) for s in sends), return_exceptions=True)
        ok = 0
        for (_, data, _), r in zip(sends, results, strict=True):
            if isinstance(r, BaseException):
                self.counters.dropped_failed += 1
            else:
                ok += 1
                self.counters.published += 1
                self.counters.bytes += len(data)
        if ok < len(sends):
            log.warning("served records not published", dropped=len(sends) - ok,
                        error=next((repr(r) for r in results if isinstance(r, BaseException)), ""))
        return ok

    async def _publish(self, subject: str, data: bytes, msg_id: str) -> None:
        await self.js.publish(subject, data, timeout=PUBLISH_TIMEOUT_S, stream=self.stream,
                              headers={"Nats-Msg-Id": msg_id})

    def _encode(self, kind: str, req: Any, res: Any, extra: Any, pushed: bool,
                at: dt.datetime) -> tuple[str, bytes, str]:
        event: ContextServed | RecallServed
        if kind == "context":
            items = context_items(res, extra or [])
            user = res.user_memory.user if res.user_memory is not None and res.user_memory.user else None
            if user is None:  # no user-memory part: the newest placed turn that names its user
                user = next((m.user_id for m in reversed(res.messages) if m.user_id), None)
            event = ContextServed(
                event_id=new_event_id(), tenant_id=res.tenant, thread_id=res.thread, occurred_at=at,
                user_id=getattr(req, "bound_user", None) or user, producer=self.producer, pushed=pushed,
                query=(req.query or None) and req.query[:1024], window=res.budget.window,
                applied_seq=res.applied_seq, mode=res.mode, items=items[:MAX_PLACED],
                truncated=len(items) > MAX_PLACED)
            thread = res.thread
        else:
            items = recall_items(res)
            thread = req.thread or NO_THREAD
            event = RecallServed(
                event_id=new_event_id(), tenant_id=req.tenant, thread_id=thread, occurred_at=at,
                user_id=getattr(req, "bound_user", None) or req.user, producer=self.producer,
                query=req.query[:1024], as_of=getattr(req, "as_of", None), applied_seq=res.applied_seq,
                items=items[:MAX_PLACED], truncated=len(items) > MAX_PLACED)
        subject = self.subjects.served(event.tenant_id, thread, type(event).__name__)
        return subject, encode_served(event), f"{event.tenant_id}:{event.event_id}"


def context_items(res: Any, thread_memory_ids: list[str]) -> list[Placed]:
    """The items a ``ContextResult`` placed, in reading order: Tier 1's thread memories and user-memory part
    (memory items, then the user's past turns it quotes), then every Tier-2/3 turn; ``rank`` counts from 1."""
    out: list[Placed] = []
    for mid in thread_memory_ids:
        out.append(Placed(kind="memory", id=mid, tier=1, rank=len(out) + 1))
    um = res.user_memory
    if um is not None:
        for mid in um.memory_ids:
            out.append(Placed(kind="memory", id=mid, tier=1, rank=len(out) + 1))
        for eid in um.event_ids:
            out.append(Placed(kind="turn", id=eid, tier=1, rank=len(out) + 1))
    for m in res.messages:
        if m.event_id and m.tier in (2, 3):
            out.append(Placed(kind="turn", id=m.event_id, tier=m.tier, rank=len(out) + 1))
    return out


def recall_items(res: Any) -> list[Placed]:
    """The hits of a ``RecallResult`` in score order (tier 0): a memory hit by its memory id, a turn by its event
    id."""
    out: list[Placed] = []
    for h in res.hits:
        if h.kind == "memory" and getattr(h, "memory_id", None):
            out.append(Placed(kind="memory", id=h.memory_id, tier=0, rank=len(out) + 1))
        elif h.event_id:
            out.append(Placed(kind="turn", id=h.event_id, tier=0, rank=len(out) + 1))
    return out
