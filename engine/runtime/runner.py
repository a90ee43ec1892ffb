"""The projector runner: folds ``MEMORY_FACTS`` into read models with an exactly-once effect.

Contract (DESIGN.md "Projector contract", issue #2 §4):

1. Pull a batch from a durable consumer (explicit acks, ``AckPolicy.ALL``: one ack covers the batch).
2. In one PostgreSQL transaction: skip events at or below each projection's checkpoint, skip event ids already
   applied (a publish repeated after the server's dedup window), apply the pure folds' SQL in order, record dead
   letters, advance the checkpoints, ``pg_notify`` the progress (read-your-writes waiters).
3. Ack after commit. A crash anywhere repeats work but never loses or doubles it.
4. An event that cannot be decoded or applied goes to the DLQ stream and ``dead_letters`` with the error, and the
   projector goes on. Transient failures (PostgreSQL or NATS down) are retried with backoff, never dead-lettered.

Nothing here relies on FastStream's ack policy: its default reject-on-error would terminate messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import asyncpg
import nats.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from tenacity import AsyncRetrying, retry_if_exception, stop_never, wait_exponential_jitter

from memengine.engine.adapters import jetstream as bus
from memengine.engine.adapters.checkpoints import CheckpointStore, checkpoint_key
from memengine.engine.adapters.postgres import is_transient
from memengine.engine.adapters.pull import ConsumerGone
from memengine.engine.runtime.consumer import StreamSource, partition_consumer
from memengine.engine.runtime.dead_letters import DeadLetter, record_dead_letters
from memengine.engine.runtime.dedupe import claim
from memengine.engine.runtime.follower import Follower
from memengine.engine.runtime.sql import execute_ops
from memengine.engine.runtime.statistics import TableStatistics
from memengine.engine.wire import tracing
from memengine.events import (
    Event,
    EventDecodeError,
    StreamNames,
    SubjectMismatch,
    Subjects,
    content_digest,
    retry_digest,
)
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp
from memengine.projections.registry import handlers_for

log = structlog.get_logger("memengine.runner")

AfterCommit = Callable[[list[tuple[int, Event]]], Awaitable[None]]


@dataclass
class RunnerStats:
    """Counters since start: ``events`` applied, ``skipped`` (already applied), ``dead`` (dead-lettered),
    ``batches`` committed, ``retries`` after transient errors, ``last_seq`` committed."""

    events: int = 0
    skipped: int = 0
    dead: int = 0
    batches: int = 0
    retries: int = 0
    last_seq: int = 0
    started: float = field(default_factory=time.monotonic)


@dataclass
class _Item:
    msg: Msg
    seq: int
    event: Event | None = None
    error: str | None = None
    ops: list[SqlOp] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


def _retryable(exc: BaseException) -> bool:
    """PostgreSQL or NATS unavailable: retry the same batch (never dead-letter because of infrastructure)."""
    return is_transient(exc) or isinstance(exc, (nats.errors.Error, ConsumerGone))


class _PoisonBatch(Exception):
    """A non-transient error while applying a batch: re-run it event by event to isolate the culprit."""


class ProjectorRunner(Follower):
    """Runs ``projections`` over the facts stream as the durable consumer ``name``.

    ``after_commit`` hooks get ``[(seq, event)]`` of each committed batch (pushed context). Use ``run()`` for a
    long-running projector and ``catch_up()`` to fold until the stream's current end, then return.
    """

    def __init__(
        self,
        *,
        name: str,
        projections: Sequence[Projection],
        nc: NATS,
        js: JetStreamContext,
        pool: asyncpg.Pool,
        streams: StreamNames,
        subjects: Subjects,
        fold_config: FoldConfig,
        source: "StreamSource | None" = None,
        batch_size: int = 1000,
        batch_bytes: int | None = None,
        after_commit: Sequence[AfterCommit] = (),
        until_seq: int | None = None,
        publish_dead_letters: bool = True,
        partition: int | None = None,
        partitions: int = 1,
        only: Callable[[str], bool] | None = None,
        dedupe_as: str | None = None,
        analyze_target: int | None = None,
        filter_subjects: Sequence[str] | None = None,
    ) -> None:
        # Partitioned (issue #6): this runner folds one partition of the facts stream (``Subjects.fact_partition``)
        # as the consumer ``<name>-p<i>`` with checkpoint rows ``<projection>@p<i>``. ``applied_events`` stays keyed
        # by ``name``: an event lives in exactly one partition, and a shared key keeps the dedupe valid when the
        # partition count changes.
        if partition is not None and not 0 <= partition < partitions:
            raise ValueError(f"partition {partition} out of range 0..{partitions - 1}")
        self.base = name
        self.partition = partition
        self.partitions = partitions if partition is not None else 1
        if partition is not None:
            name = partition_consumer(name, partition)
        super().__init__(name=name, nc=nc, js=js, pool=pool)
        self.projections = tuple(projections)
        self.streams = streams
        self.subjects = subjects
        self.source = source or StreamSource.facts(streams, subjects)
        if partition is not None:
            if self.source.stream != streams.facts:
                raise ValueError("only the facts stream is partitioned")
            self.source = replace(self.source, filter_subject=subjects.fact_partition(partition))
        # six-token stored subjects are accepted only from a stream that partitions (set again by start())
        self._partitioned = partition is not None
        self._key_of = {p.name: checkpoint_key(p.name, partition) for p in self.projections}
        self._keys = list(self._key_of.values())
        # A partition that gets no message for this long checks whether it is at the stream's end (_advance_idle).
        self.idle_timeout = 1.0 if partition is None else 0.25
        self.cfg = fold_config
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes or None  # MEMENGINE_BATCH_BYTES for live runners; rebuilds leave it unset
        self.after_commit = list(after_commit)
        # Scratch and shadow folds (rebuild, verify, time travel) stop at a sequence and record dead letters in
        # their own schema only: the live consumers already published those to the DLQ stream.
        self.until_seq = until_seq
        self.publish_dead_letters = publish_dead_letters
        # A parallel rebuild's worker folds its share of the stream (engine/ops/rebuild_parallel.py): a message whose
        # subject ``only`` refuses is skipped undecoded, yet its sequence still advances the checkpoint.
        self.only = only
        # ... and, when the parent could list the share's subjects, its consumer delivers only those
        # (``filter_subjects``, non-empty; ``None``: the source's filter subject): skipping another worker's message
        # still costs its delivery and nats-py's parse of it.
        self.filter_subjects = list(filter_subjects) if filter_subjects else None
        # The ``applied_events.projector`` key (default: ``name`` before any partition suffix). A parallel rebuild's
        # workers dedupe under the shadow runner's key, so their rows merge into the shadow as they are.
        self.dedupe_key = dedupe_as or self.base
        # Whether applied_events holds rows of this key from before schema/0012 (tenant ``'*'``): read at start();
        # only that migration writes such rows, so a key without them (every scratch fold) never gets any.
        self._legacy_ids = True
        self._drained = False  # the last fetch emptied the consumer (see catch_up)
        self._reached_until = False
        self.stats = RunnerStats()
        self.checkpoints: dict[str, int] = {}
        self._handlers: dict[type, list[tuple[str, Any]]] = {}
        self._inflight: asyncio.Task[None] | None = None
        # One step at a time per runner: ``catch_up()`` may be called while ``run()`` loops on the same runner (CLI,
        # tests); two interleaved steps committed batches out of order and the window fold of memory_vectors
        # diverged from a fresh fold (issue #17 defect 13, tests/integration/ops/test_verify_under_load.py).
        self._step_lock = asyncio.Lock()
        # ANALYZE as the tables grow, at ``analyze_target`` (``None``: the server's statistics target; scratch folds
        # take a small one: mid-fold plans need row counts, not histograms, engine/ops/rebuild.py)
        self.statistics = TableStatistics(pool, [t for p in self.projections for t in p.tables] + ["applied_events"],
                                          target=analyze_target, name=self.name)

    @property
    def checkpoint_keys(self) -> list[str]:
        """The keys of this runner's rows in ``projection_checkpoints`` (``<projection>`` or ``<projection>@p<i>``)."""
        return list(self._keys)

    async def start(self) -> None:
        """Create checkpoint rows and (re-)create the durable consumer at the lowest checkpoint + 1.

        Call through ``try_start()``, which holds the projector lock first."""
        async with self.pool.acquire() as conn:
            store = CheckpointStore(conn)
            async with conn.transaction():
                await store.lock_creators()
                for p in self.projections:
                    await store.ensure_projection(p.name, p.version, self.source.stream, partition=self.partition,
                                                  partitions=self.partitions)
            self.checkpoints = await store.positions(self._keys)
            self._legacy_ids = bool(await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM applied_events WHERE projector = $1 AND tenant_id = '*')",
                self.dedupe_key))
        self.stats.last_seq = min(self.checkpoints.values(), default=0)
        self._partitioned = self.partition is not None or (
            self.source.stream == self.streams.facts and await bus.stores_partitioned(self.js, self.source.stream))
        low = self.stats.last_seq
        await self._bind(self.source.stream, self.source.filter_subject, low, batch_size=self.batch_size,
                         description=f"memengine projector {self.name}", filter_subjects=self.filter_subjects)

    async def _resume(self) -> None:
        """After a failed step, drop what was fetched and re-bind at checkpoint + 1 (never skip a batch)."""
        async with self._step_lock:
            await self._resume_locked()

    async def _resume_locked(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()
        async with self._start_lock:  # not beside a try_start() binding the same consumer
            if not self._lock.held:
                return
            if self._sub is not None:
                with contextlib.suppress(Exception):
                    await self._sub.stop()
                self._sub = None
            with contextlib.suppress(Exception):
                await self.start()

    # -- loops: run() is Follower.run with these hooks --------------------------------------------------------

    def _standing_by(self) -> None:
        log.info("projector standing by: another process holds the lock", projector=self.name)

    def _started(self) -> None:
        self.stats.retries = 0

    async def _step_failed(self, exc: Exception) -> None:
        """Keep projecting: log, back off (0.2 s per consecutive failure, at most 5 s), resume from the checkpoint
        keeping the lock (``_resume``)."""
        self.stats.retries += 1
        log.warning("projector step failed; resuming from the checkpoint", projector=self.name, error=repr(exc))
        await asyncio.sleep(min(5.0, 0.2 * self.stats.retries))
        await self._resume()

    async def catch_up(self, *, timeout: float | None = None,
                       progress: Callable[[int, int], None] | None = None) -> int:
        """Fold until every projection has reached the stream's last sequence as of now; returns that sequence.

        ``progress(done_seq, target_seq)`` is called after each batch. Raises ``TimeoutError`` after ``timeout``
        seconds.
        """
        info = await self.js.stream_info(self.source.stream)
        target = info.state.last_seq if self.until_seq is None else min(self.until_seq, info.state.last_seq)
        deadline = None if timeout is None else time.monotonic() + timeout
        idle = 0
        while self.stats.last_seq < target and not self._reached_until:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"projector {self.name} at {self.stats.last_seq} of {target}")
            try:
                got = await self.step(timeout=0.5)
            except Exception as exc:
                if not _retryable(exc):
                    raise
                self.stats.retries += 1
                await asyncio.sleep(min(5.0, 0.2 * self.stats.retries))
                await self._resume()
                continue
            if progress is not None:
                progress(self.stats.last_seq, target)
            if got and self.filter_subjects and self._drained:
                # A share's consumer has delivered all it holds (num_pending 0 on its last message), usually before
                # ``target`` (another share's message): when the stream stores nothing more of the share up to it,
                # the share is folded, without waiting for an empty fetch (_skip_gap checks the stream itself).
                async with self._step_lock:
                    await self.flush()
                    await self._skip_gap(target)
                idle = 0
                continue
            if got == 0:
                idle += 1
                # Messages at the end may have been deleted (forgotten threads): nothing left to deliver. Under the
                # step lock: a concurrent run() loop must not hold a fetched, uncommitted batch meanwhile.
                async with self._step_lock:
                    await self.flush()
                    ci = await self.js.consumer_info(self.source.stream, self.name)
                    # a share's consumer (filter_subjects) is often done before ``target`` (another share's
                    # message): _stored_after checks every one of its subjects, so one idle fetch is enough
                    if ci.num_pending == 0 and ci.num_ack_pending == 0 and idle >= (1 if self.filter_subjects else 2):
                        await self._skip_gap(target)
                        break
            else:
                idle = 0
        if self._reached_until and self.stats.last_seq < target:
            # A message past ``until_seq`` was delivered, so every earlier one of this consumer was (delivery is in
            # stream order, holes raise ConsumerGone): a share's consumer (filter_subjects) whose last message is
            # below ``target`` is done; _skip_gap moves its checkpoints there after checking the stream.
            async with self._step_lock:
                await self.flush()
                await self._skip_gap(target)
        await self.flush()
        await self.statistics.settled()  # the caller reads next: with the statistics of what it just folded
        return target

    async def _skip_gap(self, target: int) -> None:
        """Nothing is left to deliver up to ``target`` but the checkpoint is below it: the messages in between were
        deleted (forgotten). Move the checkpoints to ``target`` so that a fold of the purged log stands at the same
        position as the live one (the rebuild's swap compares them)."""
        if self.stats.last_seq >= target:
            return
        if await self._stored_after(self.stats.last_seq, target):
            return  # not a gap: a message is there, the consumer's counters just had not caught up; keep folding
        names = [p.name for p in self.projections]
        # by projection name as it always was (a partition runner's rows are ``<projection>@p<i>``: none matches)
        await CheckpointStore(self.pool).advance(names, target)
        for n in names:
            self.checkpoints[n] = max(self.checkpoints.get(n, 0), target)
        self.stats.last_seq = max(self.stats.last_seq, target)

    async def _stored_after(self, seq: int, target: int) -> bool:
        """Whether the stream still stores a message of this runner's subjects in ``(seq, target]``, asked of the
        stream itself. The consumer's ``num_pending`` / ``num_ack_pending`` alone are not proof of a gap: CI once saw
        both at 0 while a just-published batch of 7 turns waited, and skipping it lost those rows for good."""
        for subject in self.filter_subjects or [self.source.filter_subject]:
            try:
                msg = await self.js.get_msg(self.source.stream, seq=seq + 1, subject=subject, next=True)
            except NotFoundError:
                continue
            if msg.seq is not None and msg.seq <= target:
                return True
        return False

    async def step(self, timeout: float = 1.0) -> int:
        """One ``_step`` under the runner's step lock (callers may share a runner: ``run()`` and ``catch_up()``)."""
        async with self._step_lock:
            return await self._step(timeout)

    async def _step(self, timeout: float) -> int:
        """Fetch and fold one batch while the previous batch commits, then start its commit; returns the number
        of messages fetched (0 when none arrived within ``timeout``).

        Pipelining (depth 2) lets PostgreSQL execute batch N while Python folds batch N+1; commits stay strictly
        in order (N+1 starts after N committed). ``flush()`` waits for the batch in flight.
        """
        assert self._sub is not None, "step() before start()"
        waited = self._inflight is None
        msgs = await self._sub.fetch(timeout=0 if self._inflight else timeout)
        self._drained = bool(msgs) and msgs[-1].metadata.num_pending == 0
        if self.until_seq is not None and msgs and msgs[-1].metadata.sequence.stream > self.until_seq:
            msgs = [m for m in msgs if m.metadata.sequence.stream <= self.until_seq]
            self._reached_until = True
        items = await self._prepare_async(msgs) if msgs else None
        await self.flush()
        if items:
            self._inflight = asyncio.create_task(self._apply(msgs, items))
        elif not msgs:
            if waited and self.partition is not None:
                await self._advance_idle()
            return 0
        return len(msgs)

    async def _advance_idle(self) -> None:
        """An idle partition moves its checkpoint to the stream's last sequence when it has nothing left.

        A partition sees only its own events, so its checkpoint would stay at its last event while the others move
        on, and ``min(checkpoint)`` over the partitions (read-your-writes, the enricher, ``memengine status``) would
        never reach the stream's end. Sound because the stream's last sequence ``L`` is read first: when the
        consumer then has nothing pending and nothing unacknowledged (acks go out after the commit), every event of
        this partition up to ``L`` is committed. Costs two JetStream API calls per idle period."""
        last = (await self.js.stream_info(self.source.stream)).state.last_seq
        if self.until_seq is not None:
            last = min(last, self.until_seq)
        if last <= min(self.checkpoints.values(), default=0):
            return
        ci = await self.js.consumer_info(self.source.stream, self.name)
        if ci.num_pending or ci.num_ack_pending or self._sub is None or self._sub.buf:
            return
        if await self._stored_after(min(self.checkpoints.values(), default=0), last):
            return  # counters lag the stream (see _stored_after)
        async with self.pool.acquire() as conn, conn.transaction():
            store = CheckpointStore(conn)
            moved = await store.advance(self._keys, last)
            await store.notify(self.name, last)
        for key, seq in moved.items():
            self.checkpoints[key] = max(self.checkpoints.get(key, 0), seq)
        self.stats.last_seq = max(self.stats.last_seq, min(self.checkpoints.values(), default=0))

    async def flush(self) -> None:
        """Wait for the batch in flight (re-raising its error).

        The pointer is cleared only once that batch is done: ``catch_up()`` flushes outside the step lock, and when
        it took the pointer first, a concurrent ``step()`` saw no batch in flight and started the next commit beside
        it. The later batch could commit first; the earlier one then found the checkpoint past it and skipped its
        events for good (CI's verify-under-load: memory_vectors 7 to 120 rows short of a fresh fold)."""
        task = self._inflight
        if task is None:
            return
        try:
            await task
        finally:
            if self._inflight is task:
                self._inflight = None

    async def _prepare_async(self, msgs: list[Msg]) -> list[_Item]:
        """``_prepare`` in slices, yielding to the loop so the commit in flight keeps talking to PostgreSQL."""
        if not self._partitioned and self.source.stream == self.streams.facts and any(
                m.subject.count(".") == 5 for m in msgs):  # re-partitioned since start()? (else: a relic, refused)
            self._partitioned = await bus.stores_partitioned(self.js, self.source.stream)
        items: list[_Item] = []
        for i in range(0, len(msgs), 128):
            items.extend(self._prepare(msgs[i : i + 128]))
            await asyncio.sleep(0)
        return items

    # -- one batch ---------------------------------------------------------------------------------------------

    def _prepare(self, msgs: list[Msg]) -> list[_Item]:
        items: list[_Item] = []
        for msg in msgs:
            seq = msg.metadata.sequence.stream
            item = _Item(msg=msg, seq=seq)
            items.append(item)
            item.targets = [p.name for p in self.projections
                            if seq > self.checkpoints.get(self._key_of[p.name], 0)]
            if not item.targets or (self.only is not None and not self.only(msg.subject)):
                continue  # redelivery of something already committed, or another worker's share
            try:
                item.event = self.source.read(msg.subject, msg.data, self._partitioned)
            except EventDecodeError as exc:
                # a mismatch keeps the body only so the dead letter names its event id; nothing folds it
                item.event = exc.event if isinstance(exc, SubjectMismatch) else None
                item.error = f"{exc.stage}: {exc.reason}"
                continue
            except Exception as exc:  # noqa: BLE001 - any failure of one event isolates that event (issue #17)
                item.error = f"decode: {type(exc).__name__}: {exc}"
                continue
            handlers = self._handlers.get(type(item.event))
            if handlers is None:
                handlers = handlers_for(type(item.event), self.projections)
                self._handlers[type(item.event)] = handlers
            pos = Position(seq, msg.subject)
            try:
                for proj, fold in handlers:
                    if proj in item.targets:
                        item.ops.extend(fold(item.event, pos, self.cfg))
            except Exception as exc:  # noqa: BLE001 - a fold bug on one event must not stop the projector
                item.error = f"fold: {type(exc).__name__}: {exc}"
                item.ops = []
        return items

    async def handle(self, msgs: list[Msg]) -> None:
        """Apply ``msgs`` (one fetch) under the contract above, retrying transient errors with backoff."""
        await self.flush()
        await self._apply(msgs, self._prepare(msgs))

    async def _apply(self, msgs: list[Msg], items: list[_Item]) -> None:
        traced = [m.headers for m in msgs if m.headers and "traceparent" in m.headers] if tracing.enabled() else []
        # one span per committed batch (engine.wire.tracing): linked to each traced publish, its child when only one
        with tracing.span(f"project {self.base}", kind="consumer", parent=traced[0] if len(traced) == 1 else None,
                          links=traced, attributes={
                              "messaging.system": "nats", "messaging.destination.name": self.source.stream,
                              "messaging.batch.message_count": len(msgs), "memengine.projector": self.name,
                              "memengine.projections": [p.name for p in self.projections],
                              "memengine.first_seq": items[0].seq, "memengine.last_seq": items[-1].seq}) as sp:
            applied = await self._commit_retrying(items)
            await msgs[-1].ack()  # AckPolicy.ALL: acknowledges the whole batch, after the commit
            tracing.set_attributes(sp, memengine__applied=len(applied))
        self.statistics.grew(len(applied))  # ANALYZE in the background (engine.runtime.statistics)
        if self.after_commit and applied:
            for hook in self.after_commit:
                try:
                    await hook(applied)
                except Exception as exc:  # noqa: BLE001 - a hook failure must not undo a committed batch
                    log.warning("after-commit hook failed", projector=self.name, error=repr(exc))

    async def _commit_retrying(self, items: list[_Item]) -> list[tuple[int, Event]]:
        """``_commit``, retrying transient errors with backoff; a poison batch is committed again event by event."""
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_retryable),
            wait=wait_exponential_jitter(multiplier=0.1, max=5.0, jitter=0.1),
            stop=stop_never,
            reraise=True,
        ):
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    self.stats.retries += 1
                    log.warning("retrying batch after transient error", projector=self.name,
                                attempt=attempt.retry_state.attempt_number)
                try:
                    return await self._commit(items, isolate=False)
                except _PoisonBatch:
                    return await self._commit(items, isolate=True)
        raise AssertionError("unreachable: stop_never retries until success or a non-transient error")

    async def _commit(self, items: list[_Item], *, isolate: bool) -> list[tuple[int, Event]]:
        applied: list[tuple[int, Event]] = []
        async with self.pool.acquire() as conn, conn.transaction():
            store = CheckpointStore(conn)
            # The checkpoint rows are the position of record, and locking them first orders this commit against a
            # rebuild's swap (engine/ops/rebuild.py locks the same rows, then the tables): if a swap moved a checkpoint
            # past what this process believes, fold the batch again against the new positions.
            held = await store.positions(self._keys, for_update=True)
            if any(seq > self.checkpoints.get(key, 0) for key, seq in held.items()):
                for key, seq in held.items():
                    self.checkpoints[key] = max(self.checkpoints.get(key, 0), seq)
                items = self._prepare([i.msg for i in items])
            dead: list[_Item] = [i for i in items if i.error is not None]
            live = [i for i in items if i.event is not None and i.error is None]
            fresh = await self._dedupe(conn, live)
            dead += [i for i in live if i.error is not None]  # id conflicts (_dedupe)
            if isolate:
                for item in fresh:
                    event = item.event
                    assert event is not None  # live items are decoded ones (filtered above)
                    try:
                        async with conn.transaction():  # savepoint
                            await execute_ops(conn, item.ops)
                        applied.append((item.seq, event))
                    except Exception as exc:
                        if is_transient(exc):
                            raise
                        item.error = f"apply: {type(exc).__name__}: {exc}"
                        dead.append(item)
                        # its event id must not count as applied
                        await conn.execute("DELETE FROM applied_events WHERE projector = $1 AND tenant_id = $2"
                                           " AND event_id = $3", self.dedupe_key, event.tenant_id,
                                           event.event_id)
            else:
                try:
                    async with conn.transaction():  # savepoint: a data error leaves the outer tx usable
                        await execute_ops(conn, [op for item in fresh for op in item.ops])
                except Exception as exc:
                    if is_transient(exc):
                        raise
                    raise _PoisonBatch() from exc
                applied = [(i.seq, i.event) for i in fresh if i.event is not None]  # all of them (live)
            if dead:
                await self._dead_letter(conn, dead)
            last = items[-1].seq
            await store.advance(self._keys, last)
            await store.notify(self.name, last)
        for key in self._keys:
            self.checkpoints[key] = max(self.checkpoints.get(key, 0), last)
        self.stats.last_seq = max(self.stats.last_seq, last)
        self.stats.batches += 1
        self.stats.events += len(applied)
        self.stats.dead += len(dead)
        self.stats.skipped += len(items) - len(applied) - len(dead)
        return applied

    async def stop(self) -> None:
        """``Follower.stop``, then wait for the ANALYZE in flight (it holds a pool connection)."""
        await super().stop()
        await self.statistics.settled()

    async def _dedupe(self, conn: asyncpg.Connection, live: list[_Item]) -> list[_Item]:
        """Keep the items whose ``(tenant, event id)`` this projector has not applied before (first copy wins);
        another event reusing an applied id gets ``item.error`` (``engine.runtime.dedupe.claim``)."""
        return await claim(conn, live, key=self.dedupe_key, legacy_ids=self._legacy_ids,
                           original_digest=self._original_digest, projector=self.name)

    async def _original_digest(self, seq: int) -> tuple[bytes, bytes] | None:
        """``(content_digest, retry_digest)``, under this engine's codecs, of the message at ``seq`` of the source
        stream; ``None`` when it is gone (deleted, aged out) or no longer decodes."""
        try:
            msg = await self.js.get_msg(self.source.stream, seq, direct=True)
            if msg.subject is None or msg.data is None:  # nats-py types both optional; a stored message has both
                return None
            event = self.source.read(msg.subject, msg.data, self._partitioned)
            return content_digest(event), retry_digest(event)
        except (NotFoundError, EventDecodeError):
            return None

    async def _dead_letter(self, conn: asyncpg.Connection, dead: list[_Item]) -> None:
        """Record dead letters (``record_dead_letters``) as this runner's consumer."""
        await record_dead_letters(
            conn, self.js, self.subjects, consumer=self.name, stream=self.source.stream,
            dead=[DeadLetter(i.msg, i.seq, i.error or "unknown",
                             str(i.event.event_id) if i.event is not None else None) for i in dead],
            publish=self.publish_dead_letters, max_payload=self.nc.max_payload)
