"""An in-process copy of the working-memory KV bucket (``engine.derive.working_memory``), kept by a KV watch, so that
``rpc.context`` reads a thread's scratchpad without a NATS round trip per request (issue #13 item 3).

Measured (session 8, ``bench/context_ab_trees.py``, 100k turns, 8K window, 1,000 requests each, load ~4.7): the
same tree with and without the per-request KV read, p50 4.90 -> 3.97 ms (thread-7) and 5.95 -> 5.04 ms (thread-42):
the read overlapped the window statement, but on 2 cores its NATS round trip (two more process wake-ups and the
server's work) still delayed the answer.

What it holds: for every key ``<tenant>.<thread>`` of the bucket, the latest value's bytes (decoded when read),
fed by an ordered consumer over the bucket's stream (``KeyValue.watchall``: the latest value of each key first,
then every write, delete and purge in stream order). Memory: the bucket's live values (at most ``max_entries``
entries of <= 2,000 characters per thread, dropped by the bucket's TTL).

When it answers (``lines``): only once the watch delivered the bucket's state at its start, and while no
stream-deleted advisory arrived since; otherwise ``None`` and the caller reads the KV itself (as before). Entries
older than ``ttl`` are dropped at read time, exactly as a direct read drops them (``working_memory._live``), so
the bucket's silent expiry of a whole value needs no event here.

Freshness: a write made through this process's ``rpc.scratchpad`` is waited for (``caught_up``: the mirror has
applied the KV stream's last sequence) before that request answers, so a context requested after the scratchpad
reply shows it, as a direct read did. A write made by another process (the enricher setting a focus, another
query replica) shows once its watch update arrives, typically well under a millisecond later; a direct read saw
it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

import msgspec
import structlog
from nats.js import JetStreamContext
from nats.js.kv import KV_DEL, KV_PURGE

from memengine.engine.adapters.tasks import cancel_and_wait
from memengine.engine.derive import working_memory as wm

log = structlog.get_logger("memengine.query")

#: Seconds a ``rpc.scratchpad`` write waits for the mirror to apply it before the mirror is restarted (the caller
#: then reads the KV directly until it is ready again).
CATCH_UP_S = 2.0
#: Seconds between attempts to start the watch after it failed (the bucket may not exist yet).
RETRY_S = 1.0

_dec = msgspec.json.Decoder(list[wm.Entry])


class WorkingMemoryMirror:
    """``lines(tenant, thread)`` -> the thread's Tier-1 working-memory lines, or ``None`` when the mirror cannot
    answer yet (module docstring). Started by the first ``lines`` call; ``close()`` stops it. One event loop."""

    def __init__(self, js: JetStreamContext, *, prefix: str, ttl: float) -> None:
        self.js = js
        self.prefix = prefix
        self.ttl = ttl
        self._values: dict[str, bytes] = {}
        self._rev = 0  # the highest KV stream sequence applied
        self._ready = False
        self._applied = asyncio.Event()  # set on each applied update (caught_up waits on it)
        self._task: asyncio.Task[None] | None = None
        self._next_try = 0.0

    @property
    def ready(self) -> bool:
        return self._ready

    def lines(self, tenant: str, thread: str, now: datetime | None = None) -> list[str] | None:
        """The thread's working-memory lines as ``working_memory.render_lines`` of a direct read gives them, or
        ``None`` when the mirror is not (yet) in step with the bucket. Raises ``InvalidToken`` for a bad name."""
        if not self._ready:
            self._start()
            return None
        raw = self._values.get(wm._key(tenant, thread))
        if not raw:
            return []
        try:
            items = _dec.decode(raw)
        except msgspec.DecodeError:
            return []  # as a direct read (working_memory._read)
        return wm.render_lines(wm._live(items, self.ttl, now or datetime.now(UTC)))

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is not None or loop.time() < self._next_try:
            return
        self._task = asyncio.create_task(self._run(), name="working-memory-mirror")

    async def _run(self) -> None:
        name = wm.bucket_name(self.prefix)
        sub = None
        watcher = None
        try:
            kv = await wm.bucket(self.js, prefix=self.prefix, ttl=self.ttl)

            async def deleted(_msg: Any) -> None:  # the bucket's stream was deleted: stop answering at once
                self._ready = False
                if self._task is not None:
                    self._task.cancel()

            # on the JetStream context's own connection
            sub = await self.js._nc.subscribe(f"$JS.EVENT.ADVISORY.STREAM.DELETED.KV_{name}", cb=deleted)
            watcher = await kv.watchall()
            async for entry in watcher:
                if entry is None:  # the bucket's state at the watch's start has arrived
                    self._ready = True
                    self._applied.set()
                    continue
                if entry.operation in (KV_DEL, KV_PURGE):
                    self._values.pop(entry.key, None)
                else:
                    self._values[entry.key] = entry.value or b""
                self._rev = max(self._rev, entry.revision or 0)
                self._applied.set()
        except Exception as exc:  # noqa: BLE001 - context reads the KV directly meanwhile
            log.warning("working-memory mirror stopped; context reads the KV directly", error=repr(exc))
        finally:
            self._ready = False
            self._values.clear()
            self._rev = 0
            self._task = None
            self._next_try = asyncio.get_running_loop().time() + RETRY_S
            if watcher is not None:
                with contextlib.suppress(Exception):
                    await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py leaves KeyWatcher.stop unannotated
            if sub is not None:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    async def caught_up(self, timeout: float = CATCH_UP_S) -> None:
        """Wait until the mirror applied every write the bucket's stream holds now (after this process wrote to
        it); restart the mirror when that takes longer than ``timeout`` seconds (it then answers ``None`` until it
        is in step again). Nothing to wait for while it is not ready (the caller reads the KV directly)."""
        if not self._ready:
            return
        try:
            info = await self.js.stream_info(f"KV_{wm.bucket_name(self.prefix)}")
            last = info.state.last_seq
            async with asyncio.timeout(timeout):
                while self._ready and self._rev < last:
                    self._applied.clear()
                    await self._applied.wait()
        except Exception as exc:  # noqa: BLE001 - not in step: answer from the KV until it is again
            log.warning("working-memory mirror behind; restarting it", error=repr(exc))
            await self.close()

    async def close(self) -> None:
        """Stop the watch (the mirror restarts on the next ``lines`` call)."""
        task = self._task
        self._ready = False
        if task is not None:
            await cancel_and_wait(task)  # again and again: one cancel can be lost inside nats-py (its docstring)
