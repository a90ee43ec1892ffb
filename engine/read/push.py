"""Pushed context: ``<root>.ctx.<tenant>.<thread>`` for projected turns that ask for it (``want_context``).

``ContextPusher`` is the core projector's after-commit hook plus a lifespan task (``engine.bootstrap``); it assembles
with ``engine.read.service.QueryService.context`` and publishes the same envelope ``rpc.context`` replies with.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import nats.errors
import structlog

from memengine.engine.adapters.postgres import is_transient
from memengine.engine.read.service import QueryService
from memengine.engine.read.trail import PUSHED
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.replies import encode_error, encode_ok
from memengine.engine.wire.requests import ContextRequest
from memengine.events import Event, Subjects, TurnRecorded

log = structlog.get_logger("memengine.query")  # the name the read side logged under before it was split


class ContextPusher:
    """Pushed context: for projected ``TurnRecorded`` events with ``want_context``, publish the assembled context on
    ``<root>.ctx.<tenant>.<thread>`` (the reply envelope, headers ``Memengine-Seq`` / ``Memengine-Event-Id`` = the
    turn's).

    Off the projector's commit path (issue #17 defect 6: 2,000 turns asking for a 10M window, each assembled inside
    the core projector's after-commit hook, delayed every other tenant's next turn by ~30 s). ``__call__`` is the
    after-commit hook and only records the latest wanting turn per thread; ``run()``, a task owned by the lifespan
    (``engine.bootstrap``), assembles and publishes them, ``concurrency`` at a time, oldest thread first. So:

    - **coalesced per thread**: turns of a thread projected before its push was assembled get one push, for the
      latest of them (its ``Memengine-Seq``); the context reflects at least that turn;
    - **bounded window**: a push is assembled for at most ``max_window`` tokens (``MEMENGINE_PUSH_MAX_WINDOW``,
      default 128K = NATS's default 1 MiB message at ~4 bytes a token); ``budget.window`` in the push says what was
      used. Larger windows are what ``rpc.context`` is for: the caller paces it;
    - **bounded queue**: at most ``max_pending`` threads wait for a push; beyond that a push is dropped, counted in
      ``dropped`` and logged (the agent can still ask ``rpc.context``).
    """

    def __init__(self, service: QueryService, nc: Any, subjects: Subjects, *, max_window: int = 128_000,
                 max_pending: int = 10_000, concurrency: int = 2) -> None:
        self.service = service
        self.nc = nc
        self.subjects = subjects
        self.max_window = max_window
        self.max_pending = max_pending
        self.concurrency = concurrency
        self.pending: dict[tuple[str, str], tuple[int, TurnRecorded]] = {}  # insertion order = oldest first
        self.pushed = 0
        self.dropped = 0
        self._inflight: set[tuple[str, str]] = set()
        self._wake = asyncio.Event()

    async def __call__(self, applied: list[tuple[int, Event]]) -> None:
        """The after-commit hook: note what to push, never wait for it."""
        for seq, event in applied:
            if not isinstance(event, TurnRecorded) or event.want_context is None:
                continue
            key = (event.tenant_id, event.thread_id)
            if key not in self.pending and len(self.pending) >= self.max_pending:
                self.dropped += 1
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    log.warning("pushed context dropped: queue full", tenant=event.tenant_id,
                                thread=event.thread_id, seq=seq, max_pending=self.max_pending, dropped=self.dropped)
                continue
            self.pending[key] = (seq, event)  # a thread keeps its place in line; its latest turn wins
        if self.pending:
            self._wake.set()

    async def run(self) -> None:
        """Publish pending pushes until cancelled (the lifespan cancels it on exit)."""
        slots = asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                # a thread whose push is being assembled waits for it: pushes of one thread stay in order
                key = next((k for k in self.pending if k not in self._inflight), None)
                if key is None:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await slots.acquire()
                seq, event = self.pending.pop(key)
                self._inflight.add(key)
                task = asyncio.create_task(self._push(key, seq, event, slots), name="context-push")
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            for t in list(tasks):
                t.cancel()

    async def _push(self, key: tuple[str, str], seq: int, event: TurnRecorded, slots: asyncio.Semaphore) -> None:
        try:
            await self.push(seq, event)
        finally:
            self._inflight.discard(key)
            slots.release()
            self._wake.set()  # the thread may have a newer turn waiting behind this push

    async def push(self, seq: int, event: TurnRecorded) -> None:
        """Assemble and publish the context ``event`` asked for; errors are published as error envelopes."""
        want = event.want_context
        assert want is not None
        window = min(want.window or self.service.settings.window, self.max_window)
        req = ContextRequest(tenant=event.tenant_id, thread=event.thread_id, window=window, query=want.query,
                             system_tokens=want.system_tokens)
        token = PUSHED.set(True)  # the access trail records this answer as pushed (issue #30)
        try:
            body = encode_ok(await self.service.context(req))
        except RpcError as exc:
            body = encode_error(exc.code, exc.message)
        except Exception as exc:  # one push failing must not stop the others
            if is_transient(exc):
                body = encode_error("unavailable", "the read models are unreachable; ask rpc.context")
            else:
                ref = uuid.uuid4().hex[:12]
                log.exception("pushed context failed", tenant=event.tenant_id, thread=event.thread_id, ref=ref)
                body = encode_error("internal", f"internal error (ref {ref}); it was logged")
        finally:
            PUSHED.reset(token)
        subject = self.subjects.context(event.tenant_id, event.thread_id)
        headers = {"Memengine-Seq": str(seq), "Memengine-Event-Id": str(event.event_id)}
        try:
            try:
                await self.nc.publish(subject, body, headers=headers)
            except nats.errors.MaxPayloadError:
                await self.nc.publish(subject, encode_error(
                    "payload_too_large", f"the context ({len(body)} bytes) exceeds the server's message limit; ask"
                    " rpc.context with a smaller window"), headers=headers)
            self.pushed += 1
        except Exception as exc:  # noqa: BLE001 - NATS reconnecting: the push is lost, the agent can ask
            log.warning("pushed context not published", subject=subject, error=repr(exc))
