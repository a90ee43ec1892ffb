"""The follower loop shared by the projector runner and the enricher (docs/contributors/architecture.md "projector
contract", issue #2 §4).

A follower is the single live consumer of a stream under a name: it holds the advisory lock of that name (one owner
across processes: ``AckPolicy.ALL`` acks from two pullers would cover each other's uncommitted batches), binds its
durable consumer at its checkpoint of record + 1 on every start, folds or derives batch by batch (``step``), stands
by while another process holds the lock, and on a failed step follows its own recovery policy. What a step does, where
the checkpoint lives, and how it recovers are the subclass's: ``ProjectorRunner`` (engine/runtime/runner.py) resumes
from the checkpoint keeping its lock; the enricher (engine/derive/enricher.py) stops and starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import asyncpg
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from memengine.engine.adapters.locks import AdvisoryLock
from memengine.engine.adapters.pull import Puller
from memengine.engine.runtime.consumer import bind_at_checkpoint


class Follower:
    """Lock, bind-at-checkpoint, run and stop for one named follower of a stream.

    Subclasses implement ``start()`` (create their checkpoint row, read it, call ``_bind``) and ``step(timeout)``
    (one batch; returns the number of messages fetched), and may override the hooks ``_standing_by``, ``_started``,
    ``_stepped``, ``_step_failed`` and ``flush``. ``idle_timeout``: seconds ``run()`` waits for a batch per step."""

    #: Seconds a step of ``run()`` waits for messages.
    idle_timeout: float = 1.0

    def __init__(self, *, name: str, nc: NATS, js: JetStreamContext, pool: asyncpg.Pool) -> None:
        self.name = name
        self.nc = nc
        self.js = js
        self.pool = pool
        self._lock = AdvisoryLock(pool, name)
        self._sub: Puller | None = None
        #: one start at a time: ``run()``'s own ``try_start`` and a caller's (a test holding the projector, the CLI)
        #: or ``_resume`` could otherwise both bind, and the puller overwritten kept its fetched messages unacked
        self._start_lock = asyncio.Lock()
        #: raw bytes per batch at most (``Puller``'s ``batch_bytes``; ``None``: count only); live projectors set it
        self.batch_bytes: int | None = None

    @property
    def active(self) -> bool:
        """True once this follower holds its lock and is bound to its consumer."""
        return self._sub is not None

    async def try_start(self) -> bool:
        """Take the lock and ``start()``; ``False`` (nothing started) when another process holds it. An error of
        ``start()`` releases the lock and propagates. Concurrent calls start once (``_start_lock``)."""
        if self.active:
            return True
        async with self._start_lock:
            if self.active:  # started by the call this one waited for
                return True
            await self._lock.release()  # a lock left from a failed start (e.g. PostgreSQL restarted)
            if not await self._lock.acquire():
                return False
            try:
                await self.start()
            except BaseException:
                await self._lock.release()
                raise
            return True

    async def start(self) -> None:
        """Create the checkpoint row(s), read them and ``_bind`` at the checkpoint. Called under the lock."""
        raise NotImplementedError

    async def step(self, timeout: float) -> int:
        """Process one batch (waiting up to ``timeout`` seconds for it); returns the number of messages fetched."""
        raise NotImplementedError

    async def flush(self) -> None:
        """Wait for work in flight (none by default)."""

    async def _bind(self, stream: str, filter_subject: str, checkpoint: int, *, batch_size: int, description: str,
                    ack_wait: float = 60, filter_subjects: Sequence[str] | None = None) -> None:
        """(Re-)create the durable consumer ``name`` on ``stream`` at ``checkpoint + 1`` and start pulling from it
        (``bind_at_checkpoint``: the checkpoint of record, never the consumer's ack floor)."""
        await bind_at_checkpoint(self.js, stream, self.name, filter_subject, checkpoint, batch_size=batch_size,
                                 description=description, ack_wait=ack_wait, filter_subjects=filter_subjects)
        self._sub = Puller(self.nc, stream, self.name, batch=batch_size, batch_bytes=self.batch_bytes)
        await self._sub.start()

    async def stop(self) -> None:
        """Wait for work in flight (errors ignored: the checkpoint is the truth), unbind, release the lock."""
        with contextlib.suppress(Exception):
            await self.flush()
        if self._sub is not None:
            await self._sub.stop()
            self._sub = None
        await self._lock.release()

    # -- the loop ----------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Step until ``stop`` is set, standing by (polling every 2 s) while another process holds the lock. A failed
        step goes to ``_step_failed`` (the subclass's recovery policy); the loop never dies on data."""
        while not stop.is_set():
            try:
                if not self.active:
                    if not await self.try_start():
                        self._standing_by()
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(stop.wait(), timeout=2.0)
                        continue
                    self._started()
                await self.step(timeout=self.idle_timeout)
                self._stepped()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep following: the subclass logs, backs off and resumes
                await self._step_failed(exc)
        with contextlib.suppress(Exception):
            await self.flush()

    def _standing_by(self) -> None:
        """Another process holds the lock (``run()`` waits 2 s and tries again)."""

    def _started(self) -> None:
        """``run()`` just took the lock and started."""

    def _stepped(self) -> None:
        """A step of ``run()`` succeeded."""

    async def _step_failed(self, exc: Exception) -> None:
        """A step of ``run()`` raised ``exc``: back off and make the next step resume from the checkpoint."""
        raise NotImplementedError
