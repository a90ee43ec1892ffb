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
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import asyncpg
import nats.errors
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from tenacity import AsyncRetrying, retry_if_exception, stop_never, wait_exponential_jitter

from engine.db import is_transient
from engine.dlq import RECORD_SQL, RETRY_SEQ_HEADER, retry_of_seq
from engine.pull import ConsumerGone, Puller
from events import AnyFact, EventDecodeError, StreamNames, Subjects, decode, decode_derived
from projections.ops import FoldConfig, Position, Projection, SqlOp
from projections.registry import handlers_for

log = structlog.get_logger("memengine.runner")

#: Channel on which committed progress is announced: payload ``{"projector": name, "seq": n}``.
PROGRESS_CHANNEL = "memengine_progress"

#: SQL: true for the checkpoint rows of projection $1 in every partition (``<projection>@p<i>``).
_PARTITION_ROWS = "projection ~ ('^' || $1::text || '@p[0-9]+$')"


def checkpoint_key(projection: str, partition: int | None = None) -> str:
    """Key of a projection's row in ``projection_checkpoints``: ``<projection>`` unpartitioned, else
    ``<projection>@p<i>`` (issue #6). The position of a partition row is a stream sequence of the facts stream: every
    event of that partition up to it is applied."""
    return projection if partition is None else f"{projection}@p{partition}"


def partition_consumer(name: str, partition: int) -> str:
    """Durable consumer (and advisory lock, and dead-letter consumer) name of one partition: ``<name>-p<i>``."""
    return f"{name}-p{partition}"

AfterCommit = Callable[[list[tuple[int, AnyFact]]], Awaitable[None]]


@dataclass(frozen=True)
class StreamSource:
    """What a runner folds: a ``stream``, the ``filter_subject`` of its consumer, how to ``decode`` a payload into a
    current-version event (raising ``EventDecodeError``), and how to split a subject into
    ``(tenant, thread, event type)`` (raising ``ValueError``)."""

    stream: str
    filter_subject: str
    decode: Callable[[bytes], Any]
    parse_subject: Callable[[str], tuple[str, str, str]]

    @classmethod
    def facts(cls, streams: StreamNames, subjects: Subjects) -> "StreamSource":
        return cls(streams.facts, subjects.all_facts, decode, subjects.parse_fact)

    @classmethod
    def derived(cls, streams: StreamNames, subjects: Subjects) -> "StreamSource":
        return cls(streams.derived, subjects.all_derived, decode_derived, subjects.parse_derived)


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
    event: AnyFact | None = None
    error: str | None = None
    ops: list[SqlOp] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)


class ProjectorBusy(RuntimeError):
    """Another process holds this projector's lock (it is running there); this one stands by."""


def lock_key(name: str) -> int:
    """Advisory-lock key of a projector: one live runner per durable consumer, because ``AckPolicy.ALL`` from two
    pullers could acknowledge each other's uncommitted messages."""
    return int.from_bytes(hashlib.sha256(f"memengine-projector:{name}".encode()).digest()[:8], "big", signed=True)


async def bind_at_checkpoint(js: JetStreamContext, stream: str, name: str, filter_subject: str, checkpoint: int, *,
                             batch_size: int, description: str, ack_wait: float = 60) -> None:
    """(Re-)create the durable consumer ``name`` so that delivery resumes at ``checkpoint + 1``.

    The checkpoint in PostgreSQL is the position of record, not the consumer's ack floor. After a crash the server
    would redeliver the unacknowledged batch only after ``ack_wait``, while newer messages flowed, and an
    ``AckPolicy.ALL`` ack of those would cover the lost batch (found by tests/integration/test_crash_recovery.py).
    So the single, lock-holding owner re-creates its consumer on every start: delivery resumes in stream order
    exactly where the read models stand. ``max_deliver`` is unlimited: poison events are dead-lettered by us.
    """
    try:
        await js.delete_consumer(stream, name)
    except NotFoundError:
        pass
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=name,
        ack_policy=AckPolicy.ALL,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if checkpoint else DeliverPolicy.ALL,
        opt_start_seq=checkpoint + 1 if checkpoint else None,
        filter_subject=filter_subject,
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=max(10_000, batch_size * 4),
        description=description,
    ))


class AdvisoryLock:
    """One live owner of ``name`` across processes: a PostgreSQL session advisory lock held on a dedicated pool
    connection (released when the process dies, since the session ends with it)."""

    def __init__(self, pool: asyncpg.Pool, name: str) -> None:
        self.pool = pool
        self.key = lock_key(name)
        self._conn: asyncpg.Connection | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def acquire(self) -> bool:
        """Try once; ``False`` when another session holds it."""
        if self._conn is not None:
            return True
        conn = await self.pool.acquire()
        try:
            got = await conn.fetchval("SELECT pg_try_advisory_lock($1)", self.key)
        except BaseException:
            await self.pool.release(conn)
            raise
        if not got:
            await self.pool.release(conn)
            return False
        self._conn = conn
        return True

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a dead connection released the lock already
                await conn.execute("SELECT pg_advisory_unlock($1)", self.key)
            await self.pool.release(conn)


class _PoisonBatch(Exception):
    """A non-transient error while applying a batch: re-run it event by event to isolate the culprit."""


class ProjectorRunner:
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
        after_commit: Sequence[AfterCommit] = (),
        until_seq: int | None = None,
        publish_dead_letters: bool = True,
        partition: int | None = None,
        partitions: int = 1,
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
        self.name = name
        self.projections = tuple(projections)
        self.nc = nc
        self.js = js
        self.pool = pool
        self.streams = streams
        self.subjects = subjects
        self.source = source or StreamSource.facts(streams, subjects)
        if partition is not None:
            if self.source.stream != streams.facts:
                raise ValueError("only the facts stream is partitioned")
            self.source = replace(self.source, filter_subject=subjects.fact_partition(partition))
        self._key_of = {p.name: checkpoint_key(p.name, partition) for p in self.projections}
        self._keys = list(self._key_of.values())
        # A partition that gets no message for this long checks whether it is at the stream's end (_advance_idle).
        self.idle_timeout = 1.0 if partition is None else 0.25
        self.cfg = fold_config
        self.batch_size = batch_size
        self.after_commit = list(after_commit)
        # Scratch and shadow folds (rebuild, verify, time travel) stop at a sequence and record dead letters in
        # their own schema only: the live consumers already published those to the DLQ stream.
        self.until_seq = until_seq
        self.publish_dead_letters = publish_dead_letters
        self._reached_until = False
        self.stats = RunnerStats()
        self.checkpoints: dict[str, int] = {}
        self._sub: Any = None
        self._handlers: dict[type, list[tuple[str, Any]]] = {}
        self._lock = AdvisoryLock(pool, name)
        self._inflight: asyncio.Task[None] | None = None
        self._since_analyze = 0
        self._rows_at_analyze = 0

    @property
    def active(self) -> bool:
        """True once this runner holds the projector lock and is bound to its consumer."""
        return self._sub is not None

    async def try_start(self) -> bool:
        """Take the projector lock and start; ``False`` (nothing started) when another process holds it."""
        if self.active:
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

    async def _release_lock(self) -> None:
        await self._lock.release()

    async def start(self) -> None:
        """Create checkpoint rows and (re-)create the durable consumer at the lowest checkpoint + 1.

        Call through ``try_start()``, which holds the projector lock first."""
        async with self.pool.acquire() as conn:
            async with conn.transaction():
                # One creator at a time: a switch between partitioned and unpartitioned rows reads the other kind.
                await conn.execute("SELECT pg_advisory_xact_lock($1)", lock_key("projection_checkpoints"))
                for p in self.projections:
                    await self._ensure_checkpoint(conn, p)
            rows = await conn.fetch(
                "SELECT projection, last_seq FROM projection_checkpoints WHERE projection = ANY($1::text[])",
                self._keys,
            )
        self.checkpoints = {r["projection"]: r["last_seq"] for r in rows}
        self.stats.last_seq = min(self.checkpoints.values(), default=0)
        low = self.stats.last_seq
        await bind_at_checkpoint(self.js, self.source.stream, self.name, self.source.filter_subject, low,
                                 batch_size=self.batch_size, description=f"memengine projector {self.name}")
        self._sub = Puller(self.nc, self.source.stream, self.name, batch=self.batch_size)
        await self._sub.start()

    async def _ensure_checkpoint(self, conn: asyncpg.Connection, p: Projection) -> None:
        """Create the checkpoint row of ``p`` if missing, starting where the other kind of row stands.

        Unpartitioned: a new ``<projection>`` row starts at the lowest partition row (every partition applied the
        log up to there; later events are re-read and skipped by ``applied_events``), and the partition rows go.
        Partition ``i`` of ``n``: a new ``<projection>@p<i>`` row starts at the ``<projection>`` row if any (else 0:
        a partition added by raising ``n`` only holds events stored since); the ``<projection>`` row goes once all
        ``n`` partition rows exist, and rows of partitions ``>= n`` go (raising or lowering ``n`` is safe once the
        projectors are drained: ``memengine status`` lag 0)."""
        if self.partition is None:
            await conn.execute(
                "INSERT INTO projection_checkpoints (projection, version, stream, last_seq)"
                f" SELECT $1, $2, $3, coalesce((SELECT min(last_seq) FROM projection_checkpoints WHERE {_PARTITION_ROWS}), 0)"
                " ON CONFLICT (projection) DO NOTHING",
                p.name, p.version, self.source.stream,
            )
            await conn.execute(f"DELETE FROM projection_checkpoints WHERE {_PARTITION_ROWS}", p.name)
            return
        await conn.execute(
            "INSERT INTO projection_checkpoints (projection, version, stream, last_seq)"
            " SELECT $1, $2, $3, coalesce((SELECT last_seq FROM projection_checkpoints WHERE projection = $4), 0)"
            " ON CONFLICT (projection) DO NOTHING",
            self._key_of[p.name], p.version, self.source.stream, p.name,
        )
        await conn.execute(
            f"DELETE FROM projection_checkpoints WHERE {_PARTITION_ROWS}"
            " AND substring(projection from '@p([0-9]+)$')::int >= $2", p.name, self.partitions)
        await conn.execute(
            "DELETE FROM projection_checkpoints WHERE projection = $1"
            f" AND (SELECT count(*) FROM projection_checkpoints WHERE {_PARTITION_ROWS}) >= $2",
            p.name, self.partitions)

    async def _resume(self) -> None:
        """After a failed step, drop what was fetched and re-bind at checkpoint + 1 (never skip a batch)."""
        with contextlib.suppress(Exception):
            await self.flush()
        if not self._lock.held:
            return
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.stop()
            self._sub = None
        with contextlib.suppress(Exception):
            await self.start()

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()
        if self._sub is not None:
            await self._sub.stop()
            self._sub = None
        await self._release_lock()

    # -- loops -------------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Fold until ``stop`` is set, standing by while another process holds the lock. Transient errors are
        retried with backoff; the loop never dies on data."""
        while not stop.is_set():
            try:
                if not self.active:
                    if not await self.try_start():
                        log.info("projector standing by: another process holds the lock", projector=self.name)
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(stop.wait(), timeout=2.0)
                        continue
                    self.stats.retries = 0
                await self.step(timeout=self.idle_timeout)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep projecting: log, back off, resume from the checkpoint
                self.stats.retries += 1
                log.warning("projector step failed; resuming from the checkpoint", projector=self.name,
                            error=repr(exc))
                await asyncio.sleep(min(5.0, 0.2 * self.stats.retries))
                await self._resume()
        with contextlib.suppress(Exception):
            await self.flush()

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
            except Exception as exc:  # noqa: BLE001
                if not _retryable(exc):
                    raise
                self.stats.retries += 1
                await asyncio.sleep(min(5.0, 0.2 * self.stats.retries))
                await self._resume()
                continue
            if progress is not None:
                progress(self.stats.last_seq, target)
            if got == 0:
                await self.flush()
                idle += 1
                # Messages at the end may have been deleted (forgotten threads): nothing left to deliver.
                ci = await self.js.consumer_info(self.source.stream, self.name)
                if ci.num_pending == 0 and ci.num_ack_pending == 0 and idle >= 2:
                    await self._skip_gap(target)
                    break
            else:
                idle = 0
        await self.flush()
        return target

    async def _skip_gap(self, target: int) -> None:
        """Nothing is left to deliver up to ``target`` but the checkpoint is below it: the messages in between were
        deleted (forgotten). Move the checkpoints to ``target`` so that a fold of the purged log stands at the same
        position as the live one (the rebuild's swap compares them)."""
        if self.stats.last_seq >= target:
            return
        names = [p.name for p in self.projections]
        await self.pool.execute(
            "UPDATE projection_checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now()"
            " WHERE projection = ANY($1::text[])", names, target)
        for n in names:
            self.checkpoints[n] = max(self.checkpoints.get(n, 0), target)
        self.stats.last_seq = max(self.stats.last_seq, target)

    async def step(self, timeout: float = 1.0) -> int:
        """Fetch and fold one batch while the previous batch commits, then start its commit; returns the number
        of messages fetched (0 when none arrived within ``timeout``).

        Pipelining (depth 2) lets PostgreSQL execute batch N while Python folds batch N+1; commits stay strictly
        in order (N+1 starts after N committed). ``flush()`` waits for the batch in flight.
        """
        waited = self._inflight is None
        msgs = await self._sub.fetch(timeout=0 if self._inflight else timeout)
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
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "UPDATE projection_checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now()"
                " WHERE projection = ANY($1::text[]) RETURNING projection, last_seq", self._keys, last)
            await conn.execute("SELECT pg_notify($1, $2)", PROGRESS_CHANNEL,
                               json.dumps({"projector": self.name, "seq": last}))
        for r in rows:
            self.checkpoints[r["projection"]] = max(self.checkpoints.get(r["projection"], 0), r["last_seq"])
        self.stats.last_seq = max(self.stats.last_seq, min(self.checkpoints.values(), default=0))

    async def flush(self) -> None:
        """Wait for the batch in flight (re-raising its error)."""
        task, self._inflight = self._inflight, None
        if task is not None:
            await task

    async def _prepare_async(self, msgs: list[Msg]) -> list[_Item]:
        """``_prepare`` in slices, yielding to the loop so the commit in flight keeps talking to PostgreSQL."""
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
            if not item.targets:
                continue  # redelivery of something already committed
            try:
                item.event = self.source.decode(msg.data)
            except EventDecodeError as exc:
                item.error = f"decode: {exc.reason}"
                continue
            try:
                tenant, thread, etype = self.source.parse_subject(msg.subject)
                if (tenant, thread, etype) != (item.event.tenant_id, item.event.thread_id, type(item.event).__name__):
                    raise ValueError(f"subject {msg.subject} does not match the event's tenant/thread/type")
            except ValueError as exc:
                item.error = f"subject: {exc}"
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
                    applied = await self._commit(items, isolate=False)
                except _PoisonBatch:
                    applied = await self._commit(items, isolate=True)
        await msgs[-1].ack()  # AckPolicy.ALL: acknowledges the whole batch, after the commit
        self._since_analyze += len(applied)
        if self._since_analyze >= max(1000, self._rows_at_analyze // 10):
            await self._analyze()
        if self.after_commit and applied:
            for hook in self.after_commit:
                try:
                    await hook(applied)
                except Exception as exc:  # noqa: BLE001 - a hook failure must not undo a committed batch
                    log.warning("after-commit hook failed", projector=self.name, error=repr(exc))

    async def _commit(self, items: list[_Item], *, isolate: bool) -> list[tuple[int, AnyFact]]:
        applied: list[tuple[int, AnyFact]] = []
        async with self.pool.acquire() as conn, conn.transaction():
            # The checkpoint rows are the position of record, and locking them first orders this commit against a
            # rebuild's swap (engine/rebuild.py locks the same rows, then the tables): if a swap moved a checkpoint
            # past what this process believes, fold the batch again against the new positions.
            rows = await conn.fetch(
                "SELECT projection, last_seq FROM projection_checkpoints WHERE projection = ANY($1::text[])"
                " FOR UPDATE", self._keys)
            if any(r["last_seq"] > self.checkpoints.get(r["projection"], 0) for r in rows):
                for r in rows:
                    self.checkpoints[r["projection"]] = max(self.checkpoints.get(r["projection"], 0), r["last_seq"])
                items = self._prepare([i.msg for i in items])
            dead: list[_Item] = [i for i in items if i.error is not None]
            live = [i for i in items if i.event is not None and i.error is None]
            fresh = await self._dedupe(conn, live)
            if isolate:
                for item in fresh:
                    try:
                        async with conn.transaction():  # savepoint
                            await _execute(conn, item.ops)
                        applied.append((item.seq, item.event))
                    except Exception as exc:  # noqa: BLE001
                        if is_transient(exc):
                            raise
                        item.error = f"apply: {type(exc).__name__}: {exc}"
                        dead.append(item)
                        # its event id must not count as applied
                        await conn.execute("DELETE FROM applied_events WHERE projector = $1 AND event_id = $2",
                                           self.base, item.event.event_id)
            else:
                try:
                    async with conn.transaction():  # savepoint: a data error leaves the outer tx usable
                        await _execute(conn, [op for item in fresh for op in item.ops])
                except Exception as exc:  # noqa: BLE001
                    if is_transient(exc):
                        raise
                    raise _PoisonBatch() from exc
                applied = [(i.seq, i.event) for i in fresh]
            if dead:
                await self._dead_letter(conn, dead)
            last = items[-1].seq
            await conn.execute(
                "UPDATE projection_checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now()"
                " WHERE projection = ANY($1::text[])",
                self._keys, last,
            )
            await conn.execute("SELECT pg_notify($1, $2)", PROGRESS_CHANNEL,
                               json.dumps({"projector": self.name, "seq": last}))
        for key in self._keys:
            self.checkpoints[key] = max(self.checkpoints.get(key, 0), last)
        self.stats.last_seq = max(self.stats.last_seq, last)
        self.stats.batches += 1
        self.stats.events += len(applied)
        self.stats.dead += len(dead)
        self.stats.skipped += len(items) - len(applied) - len(dead)
        return applied

    async def _analyze(self) -> None:
        """Refresh planner statistics after the read models grew by 10 % (at least 1,000 rows).

        Right after a bulk ingest the planner still believes the tables are empty and picks sequential scans inside
        the context query's per-row lookups: measured 1.1 s instead of 4 ms per request on 20k turns, until
        autovacuum's next analyze (up to a minute later). ANALYZE samples, so it stays cheap on large tables."""
        tables = sorted({t for p in self.projections for t in p.tables} | {"applied_events"})
        try:
            async with self.pool.acquire() as conn:
                await conn.execute("ANALYZE " + ", ".join(tables))
                rows = await conn.fetchval(
                    "SELECT coalesce(sum(reltuples), 0)::bigint FROM pg_class WHERE relname = ANY($1::text[])",
                    tables)
        except Exception as exc:  # noqa: BLE001 - statistics are an optimisation; the next batch tries again
            log.warning("analyze failed", projector=self.name, error=repr(exc))
            return
        self._since_analyze = 0
        self._rows_at_analyze = int(rows)

    async def _dedupe(self, conn: asyncpg.Connection, live: list[_Item]) -> list[_Item]:
        """Keep the items whose event id this projector has not applied before (first copy in the batch wins)."""
        if not live:
            return []
        first: dict[Any, _Item] = {}
        for item in live:
            first.setdefault(item.event.event_id, item)
        rows = await conn.fetch(
            "INSERT INTO applied_events (projector, event_id, seq)"
            " SELECT $1, e, s FROM unnest($2::uuid[], $3::bigint[]) AS t(e, s)"
            " ON CONFLICT DO NOTHING RETURNING event_id",
            self.base, list(first), [i.seq for i in first.values()],
        )
        new = {r["event_id"] for r in rows}
        return [i for i in live if i.event.event_id in new and first[i.event.event_id] is i]

    async def _dead_letter(self, conn: asyncpg.Connection, dead: list[_Item]) -> None:
        """Record dead letters on the DLQ stream (before the commit; the message id makes a repeat after a crash a
        no-op) and in the table (same transaction), with the DLQ message's sequence so that `memengine dlq` can
        delete it. A failing retry (engine/dlq.py) counts as another attempt on the original row (``RECORD_SQL``)."""
        for item in dead:
            event_id = str(item.event.event_id) if item.event is not None else None
            retry_of = retry_of_seq(item.msg.headers)
            dlq_seq = None
            if self.publish_dead_letters:
                headers = {
                    "Nats-Msg-Id": f"{self.name}:{self.source.stream}:{item.seq}",
                    "Memengine-Error": item.error[:1000].replace("\r", " ").replace("\n", " "),
                    "Memengine-Consumer": self.name,
                    "Memengine-Stream": self.source.stream,
                    "Memengine-Stream-Seq": str(item.seq),
                    "Memengine-Subject": item.msg.subject,
                }
                if retry_of is not None:
                    headers[RETRY_SEQ_HEADER] = str(retry_of)
                ack = await self.js.publish(self.subjects.dlq(self.name), item.msg.data, headers=headers)
                dlq_seq = ack.seq or None  # a duplicate's ack names the stored message's sequence
                log.warning("event dead-lettered", projector=self.name, seq=item.seq, error=item.error)
            await conn.execute(RECORD_SQL, self.name, self.source.stream, retry_of or item.seq, item.msg.subject,
                               event_id, item.error, item.msg.data, item.seq, dlq_seq)


class RunnerGroup:
    """The partition runners of one projector that this process owns, driven as one runner (issue #6).

    Offers what the composition root and the CLI use of a ``ProjectorRunner``: ``name``, ``active``, ``stats``,
    ``try_start``, ``run``, ``catch_up``, ``flush``, ``stop``. Each partition takes its own lock, so several processes
    given overlapping partitions share them: one owner per partition, the others stand by and take over."""

    def __init__(self, name: str, runners: Sequence[ProjectorRunner]) -> None:
        if not runners:
            raise ValueError("a runner group needs at least one partition")
        self.name = name
        self.runners = list(runners)

    @property
    def active(self) -> bool:
        """True when at least one partition of the group is held and bound here."""
        return any(r.active for r in self.runners)

    @property
    def stats(self) -> RunnerStats:
        """Counters summed over the partitions; ``last_seq`` is the lowest partition checkpoint."""
        parts = [r.stats for r in self.runners]
        return RunnerStats(events=sum(s.events for s in parts), skipped=sum(s.skipped for s in parts),
                           dead=sum(s.dead for s in parts), batches=sum(s.batches for s in parts),
                           retries=sum(s.retries for s in parts), last_seq=min(s.last_seq for s in parts),
                           started=min(s.started for s in parts))

    async def try_start(self) -> bool:
        """Start every partition whose lock is free; ``True`` if any of them runs here (see ``active``)."""
        return any([await r.try_start() for r in self.runners])

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(r.run(stop) for r in self.runners))

    async def catch_up(self, *, timeout: float | None = None,
                       progress: Callable[[int, int], None] | None = None) -> int:
        """Fold the partitions held here to the stream's current end, concurrently, then wait until the partitions
        other processes hold reach it too; returns that sequence. ``TimeoutError`` after ``timeout`` seconds."""
        held = [r for r in self.runners if r.active]
        others = [r for r in self.runners if not r.active]
        deadline = None if timeout is None else time.monotonic() + timeout

        def report(_done: int, target: int) -> None:
            if progress is not None:
                progress(min(r.stats.last_seq for r in held), target)

        target = (await self.runners[0].js.stream_info(self.runners[0].source.stream)).state.last_seq
        if held:
            target = max(await asyncio.gather(*(r.catch_up(timeout=timeout, progress=report) for r in held)))
        keys = [k for r in others for k in r._keys]
        while keys:
            low = await self.runners[0].pool.fetchval(
                "SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])", keys)
            if (low or 0) >= target:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"projector {self.name}: partitions held elsewhere at {low or 0} of {target}")
            await asyncio.sleep(0.05)
        return target

    async def flush(self) -> None:
        for r in self.runners:
            await r.flush()

    async def stop(self) -> None:
        for r in self.runners:
            await r.stop()


def build_projector(*, partitions: int = 1, owned: Collection[int] | None = None,
                    **kwargs: Any) -> "ProjectorRunner | RunnerGroup":
    """A ``ProjectorRunner`` (``partitions`` = 1, exactly the unpartitioned runner) or a ``RunnerGroup`` of the
    partitions ``owned`` (default all ``0..partitions-1``); ``kwargs`` go to ``ProjectorRunner``.
    ``ValueError`` for a partition outside ``0..partitions-1``."""
    if partitions <= 1:
        return ProjectorRunner(**kwargs)
    chosen = sorted(set(range(partitions) if owned is None else owned))
    return RunnerGroup(kwargs["name"], [ProjectorRunner(partition=i, partitions=partitions, **kwargs)
                                        for i in chosen])


def _retryable(exc: BaseException) -> bool:
    """PostgreSQL or NATS unavailable: retry the same batch (never dead-letter because of infrastructure)."""
    return is_transient(exc) or isinstance(exc, (nats.errors.Error, ConsumerGone))


async def _execute(conn: asyncpg.Connection, ops: list[SqlOp]) -> None:
    """Run ``ops``: grouped by table (order kept within a table), consecutive equal statements as one
    ``executemany`` (pipelined by asyncpg)."""
    by_table: dict[str, list[SqlOp]] = {}
    for op in ops:
        by_table.setdefault(op.table, []).append(op)
    # "lock:" pseudo-tables first: they guard the writes that follow (projections.pruning); the sort is stable
    for table_ops in sorted(by_table.values(), key=lambda g: not g[0].table.startswith("lock:")):
        run: list[SqlOp] = []
        for op in table_ops:
            if run and op.sql != run[0].sql:
                await _flush(conn, run)
                run = []
            run.append(op)
        if run:
            await _flush(conn, run)


async def _flush(conn: asyncpg.Connection, run: list[SqlOp]) -> None:
    first = run[0]
    if len(run) == 1:
        await conn.execute(first.sql, *first.args)
    elif first.bulk is not None:
        await conn.execute(first.bulk, *[list(col) for col in zip(*(op.args for op in run))])
    else:
        await conn.executemany(first.sql, [op.args for op in run])
