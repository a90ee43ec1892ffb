"""Read-your-writes: how far the projections have applied the log, and waiting until they reach a sequence.

``ProgressWatcher`` listens on ``PROGRESS_CHANNEL`` (``engine.adapters.checkpoints``: the projectors' ``pg_notify`` on
every commit) and reads ``projection_checkpoints``; ``QueryService`` (``engine.read.service``) and ``RpcHandlers``
(``engine.read.rpc``) use it to answer requests that name an ``after_seq``. The outcome of one wait is a ``Ryw``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import asyncpg
import structlog

from memengine.engine.adapters.checkpoints import BASE_PROJECTION, PROGRESS_CHANNEL
from memengine.projections.registry import RECALL_PROJECTIONS

log = structlog.get_logger("memengine.query")  # the name the read side logged under before it was split

#: Read models the context and history answers are built from; read-your-writes waits for these.
CONTEXT_PROJECTIONS = ["thread_activity", "messages"]
#: Read models recall is answered from (``memory_vectors``, folded by the recall projector's own consumer): a recall
#: that names ``after_seq`` waits for these, not for the context ones, which run ahead of them.
RECALL_READ_PROJECTIONS = [p.name for p in RECALL_PROJECTIONS]
#: The outcome of a read-your-writes wait: (applied checkpoint, stale = not reached in time, waited ms).
Ryw = tuple[int, bool, float]


class ProgressWatcher:
    """Knows how far the projections have applied the log, across processes (``LISTEN memengine_progress``).

    Waiters share one checkpoint query (issue #17 defect 5): however many read-your-writes requests wait, the
    database sees at most one query per notify and one per ``poll`` seconds (the fallback when a notify was missed
    or the LISTEN connection is gone), and a wait holds no connection while it sleeps.
    """

    def __init__(self, pool: asyncpg.Pool, *, poll: float = 0.05) -> None:
        self.pool = pool
        self.poll = poll
        self._conn: asyncpg.Connection | None = None
        self._changed = asyncio.Event()  # replaced by a fresh one on every notify: no waiter clears another's
        self._notified = 0  # notifies seen: a shared query started before the last one may be stale
        # per projection set: the query in flight and (notifies seen, monotonic time) when it started
        self._fetch: dict[tuple[str, ...], asyncio.Future[int]] = {}
        self._fetch_at: dict[tuple[str, ...], tuple[int, float]] = {}
        self.waiting = 0  # requests in wait_for() now (metrics, tests)

    async def start(self) -> None:
        conn = None
        try:
            conn = await self.pool.acquire()
            await conn.add_listener(PROGRESS_CHANNEL, self._on_notify)
        except BaseException as exc:
            if conn is not None:  # given back, not dropped: Pool.close() waits for every connection out
                await self.pool.release(conn)
            if not isinstance(exc, Exception):
                raise
            log.warning("progress listener unavailable; polling", error=repr(exc))
            return
        self._conn = conn

    async def stop(self) -> None:
        """Stop listening and give the LISTEN connection back (always, even when cancelled midway)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                with contextlib.suppress(Exception):
                    await conn.remove_listener(PROGRESS_CHANNEL, self._on_notify)
            finally:  # back to the pool even when cancelled during the UNLISTEN (a step past its deadline)
                await self.pool.release(conn)

    def _on_notify(self, *_: Any) -> None:
        self._notified += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def applied(self, projections: list[str] = CONTEXT_PROJECTIONS) -> int:
        """The lowest checkpoint among ``projections`` (0 before anything was applied)."""
        v = await self.pool.fetchval(
            "SELECT min(last_seq) FROM projection_checkpoints"
            # partitioned rows (<projection>@p<i>, issue #6) count too: the projection is where its slowest part is
            f" WHERE {BASE_PROJECTION} = ANY($1::text[])", projections)
        return int(v or 0)

    async def _shared_applied(self, projections: list[str]) -> int:
        """``applied(projections)`` for waiters: joins the query in flight for the same projections unless a notify
        arrived since it started or it finished more than ``poll`` seconds ago."""
        now = time.monotonic()
        key = tuple(projections)
        fetch, (seen, at) = self._fetch.get(key), self._fetch_at.get(key, (-1, 0.0))
        if fetch is None or seen != self._notified or (fetch.done() and now - at >= self.poll):
            self._fetch_at[key] = (self._notified, now)
            self._fetch[key] = fetch = asyncio.ensure_future(self.applied(projections))
            # retrieved here too: if every waiter gave up, its error must not be reported as never retrieved
            fetch.add_done_callback(lambda f: f.cancelled() or f.exception())
        return await asyncio.shield(fetch)  # a waiter that gives up does not cancel the others' query

    async def wait_for(self, seq: int, timeout: float,
                       projections: list[str] = CONTEXT_PROJECTIONS) -> tuple[int, bool]:
        """Wait until the lowest checkpoint of ``projections`` reaches ``seq`` or ``timeout`` seconds pass:
        ``(applied, reached)``."""
        deadline = time.monotonic() + timeout
        self.waiting += 1
        try:
            while True:
                changed = self._changed  # taken before the query: a notify during it wakes this waiter
                applied = await self._shared_applied(projections)
                if applied >= seq:
                    return applied, True
                left = deadline - time.monotonic()
                if left <= 0:
                    return applied, False
                try:  # woken by a notify; the short cap is a fallback if the LISTEN connection dropped
                    await asyncio.wait_for(changed.wait(), timeout=min(left, self.poll))
                except TimeoutError:
                    pass
        finally:
            self.waiting -= 1
