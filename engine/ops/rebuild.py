"""Folding the log again: blue/green rebuild, verify, and time travel (issue #5 §1-3, DESIGN.md "Replay").

All three use one mechanism: a **scratch schema** holding empty copies (``LIKE ... INCLUDING ALL``) of the read-model
tables being folded plus the runner's own bookkeeping (checkpoints, applied event ids, dead letters), and the
ordinary ``ProjectorRunner`` driven over a pool whose ``search_path`` puts that schema first. The folds are therefore
the very code the live projectors run (no second implementation to drift), and a scratch fold never touches the live
tables, the live consumers or the DLQ stream.

- **rebuild** folds from sequence 1 into ``memengine_shadow``, catches up with the live tail, then swaps in one
  transaction: lock the live checkpoint rows (the runner locks them first in each commit, so the two orders agree and
  cannot deadlock), check the shadow is at or past them (else catch up again), ``LOCK`` the live tables, move them out
  to ``memengine_retired`` and the shadow ones in, and set the checkpoints to the shadow's. Queries keep being answered
  throughout; they wait only for the swap's few milliseconds of ``ACCESS EXCLUSIVE``. A live runner whose in-memory
  checkpoint is behind re-reads it in its next commit and re-folds its batch (engine/runtime/runner.py ``_commit``).
  A rebuild killed at any point leaves the live read models untouched; the next run drops the leftovers and starts
  again. With ``workers`` > 1 the facts groups are first folded up to the stream's end by that many worker
  processes, split by (tenant, thread) (engine/ops/rebuild_parallel.py: the design, why it equals the serial fold,
  and the fallback to it); the tail, the derived group and the swap are the serial steps above.
- **verify** (a serial fold: the reference a parallel rebuild is checked against) folds into a scratch schema up to the
  live checkpoints, read under a REPEATABLE READ snapshot taken first, and compares per table the row count and a
  checksum (md5 over the sorted md5 of every row's text form); differing tables are named with sample rows from both
  sides.
- **time travel** (serial too) folds the facts up to a sequence (or a time) and the derived events published by then
  into a scratch schema, and answers the same queries there ("what did the agent know when it answered?"). Chosen over
  the bi-temporal columns because it covers every read model (transcript, summaries, topics, episodes), not only memory
  items, with code that is already proven equal to the live fold; its cost is one fold of the prefix (measured in
  bench/RESULTS.md).

The per-model embedding tables (``memory_embeddings_<hash>``) are not read models of the log but a cache keyed by
(tenant, thread, seq, sha256 of the text): they stay in place and the embedder worker reconciles them with the rebuilt
``memory_vectors`` from ``embedding_cache``, so a rebuild embeds nothing that was embedded before.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
import structlog
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.adapters.locks import AdvisoryLock
from memengine.engine.adapters.pull import replay
from memengine.engine.ops import rebuild_parallel as par
from memengine.engine.ops.scratch import (
    CONSUMER_PREFIX,
    RETIRED,
    SCRATCH_ANALYZE_TARGET,
    SCRATCH_PREFIX,
    SHADOW,
    create_scratch,
    drop_consumer,
    drop_worker_schemas,
    scratch_pool,
)
from memengine.engine.runtime.groups import GROUPS
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.engine.wire.errors import Busy, InvalidInput, NotFound
from memengine.events import EventDecodeError, decode_derived
from memengine.projections.ops import FoldConfig, Projection

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

log = structlog.get_logger("memengine.rebuild")

Progress = Callable[[str, int, int], None]  # (group, done_seq, target_seq)

class RebuildBusy(Busy, RuntimeError):
    """Another process holds the rebuild lock (a rebuild, or a forget that rebuilds)."""


class UnknownProjection(NotFound, ValueError):
    """A projection name that is not in projections/registry.py; the message lists the valid names."""


def all_projection_names() -> list[str]:
    """Every projection name, in registry order."""
    return [p.name for g in GROUPS.values() for p in g.projections]


def select(names: Sequence[str] | None) -> dict[str, tuple[Projection, ...]]:
    """``{group: projections}`` for ``names`` (``None`` or empty = all). Raises ``UnknownProjection``."""
    if not names:
        return {name: g.projections for name, g in GROUPS.items()}
    known = all_projection_names()
    bad = [n for n in names if n not in known]
    if bad:
        raise UnknownProjection(f"unknown projection(s) {bad}; known: {known}")
    out: dict[str, tuple[Projection, ...]] = {}
    for g in GROUPS.values():
        chosen = tuple(p for p in g.projections if p.name in names)
        if chosen:
            out[g.name] = chosen
    return out


def _pool_size(selection: dict[str, tuple[Projection, ...]]) -> int:
    """Connections of a scratch fold's pool: each group's runner holds one for good (its lock), and the commits and
    the background ANALYZE need theirs. A fixed 4 deadlocked once a fourth group (access, issue #30) was selected:
    four runners held every connection and the fourth's start waited for one forever."""
    return len(selection) + 2


def tables_of(selection: dict[str, tuple[Projection, ...]]) -> list[str]:
    """The read-model tables of the selected projections, sorted (the lock order of the swap)."""
    return sorted({t for ps in selection.values() for p in ps for t in p.tables})


async def fold_into(engine: "Engine", pool: asyncpg.Pool, selection: dict[str, tuple[Projection, ...]], *,
                    consumer_prefix: str, until: dict[str, int] | None = None,
                    progress: Progress | None = None, keep_runners: bool = False,
                    ) -> dict[str, ProjectorRunner]:
    """Fold each selected group from its checkpoint in ``pool``'s schema to the stream's end (or ``until[group]``).

    Each group runs as the durable consumer ``<consumer_prefix><group>``, re-created at the scratch checkpoint + 1.
    Returns the runners (stopped unless ``keep_runners``; their consumers are deleted when stopped here)."""
    runners: dict[str, ProjectorRunner] = {}
    s = engine.settings
    for group, projections in selection.items():
        source = GROUPS[group].source(engine.streams, engine.subjects)
        name = f"{consumer_prefix}{group}"
        runner = ProjectorRunner(
            name=name, projections=projections, nc=engine.nc, js=engine.js, pool=pool, streams=engine.streams,
            subjects=engine.subjects, fold_config=FoldConfig(condensed_tool_max=s.condensed_tool_max),
            batch_size=max(s.batch_size, 2000), source=source, publish_dead_letters=False,
            until_seq=None if until is None else until.get(group, 0), analyze_target=SCRATCH_ANALYZE_TARGET)
        if not await runner.try_start():
            raise RuntimeError(f"another process is folding {name}")
        try:
            if until is None or until.get(group, 0) > 0:
                await runner.catch_up(progress=None if progress is None else functools.partial(progress, group))
        except BaseException:
            await runner.stop()
            await drop_consumer(engine.js, source.stream, name)
            raise
        runners[group] = runner
        if not keep_runners:
            await runner.stop()
            await drop_consumer(engine.js, source.stream, name)
    return runners


# -- rebuild -------------------------------------------------------------------------------------------------------

@dataclass
class RebuildReport:
    """What a rebuild did: projections and tables swapped, events folded per group, seconds, the swap attempts;
    ``workers`` that folded the facts groups, ``worker_events`` (``[{group: events}]`` per worker, empty when
    serial), ``parallel_fallback``: why a parallel fold was discarded for the serial one (engine/ops/
    rebuild_parallel.py)."""

    projections: list[str]
    tables: list[str]
    checkpoints: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    swap_attempts: int = 0
    swap_ms: float = 0.0
    workers: int = 1
    worker_events: list[dict[str, int]] = field(default_factory=list)
    parallel_fallback: str | None = None


async def _cleanup_leftovers(engine: "Engine") -> None:
    """Drop what a killed rebuild left: the shadow and retired schemas and its durable consumers."""
    async with engine.pool.acquire() as conn:
        await conn.execute(f"DROP SCHEMA IF EXISTS {SHADOW} CASCADE")
        await conn.execute(f"DROP SCHEMA IF EXISTS {RETIRED} CASCADE")
        await drop_worker_schemas(conn)
    for stream in (engine.streams.facts, engine.streams.derived, engine.streams.served):
        with contextlib.suppress(Exception):
            for ci in await engine.js.consumers_info(stream):
                if ci.name.startswith(CONSUMER_PREFIX):
                    await drop_consumer(engine.js, stream, ci.name)


async def rebuild(engine: "Engine", names: Sequence[str] | None = None, *, progress: Progress | None = None,
                  max_swap_attempts: int = 20, workers: int | None = 1,
                  on_spawn: Callable[[list[int]], None] | None = None) -> RebuildReport:
    """Blue/green rebuild of the named projections (all when ``names`` is empty); see the module docstring.

    ``workers`` > 1 folds the facts groups in that many processes first (engine/ops/rebuild_parallel.py); ``None``
    picks ``rebuild_parallel.auto_workers`` for the stream's length; 1 (the default) is the serial fold.
    ``on_spawn(pids)``: called with the workers' process ids (supervision, tests). Raises
    ``rebuild_parallel.RebuildWorkerFailed`` (a ``RuntimeError``) when a worker fails: the others are killed, the
    shadow dropped, the live read models untouched.

    Raises ``UnknownProjection`` for a bad name, ``RebuildBusy`` while another rebuild runs, ``RuntimeError`` if the
    shadow cannot catch the live tail in ``max_swap_attempts`` rounds (an ingest faster than the fold: try again
    when it slows down). Live read models are untouched unless the swap commits."""
    selection = select(names)
    tables = tables_of(selection)
    report = RebuildReport(projections=[p.name for ps in selection.values() for p in ps], tables=tables)
    # one rebuild at a time: a second one would drop the first one's shadow schema as "leftovers"
    lock = AdvisoryLock(engine.pool, "memengine-rebuild")
    if not await lock.acquire():
        raise RebuildBusy("another rebuild (or forget) is running against this database; try again when it ends")
    try:
        if workers is None:
            workers = par.auto_workers((await engine.js.stream_info(engine.streams.facts)).state.last_seq)
        if not par.facts_groups(selection):
            workers = 1  # only the derived stream: never split (rebuild_parallel)
        return await _rebuild(engine, selection, tables, report, progress=progress,
                              max_swap_attempts=max_swap_attempts, workers=max(1, workers), on_spawn=on_spawn)
    finally:
        await lock.release()


async def _rebuild(engine: "Engine", selection: dict[str, tuple[Projection, ...]], tables: list[str],
                   report: RebuildReport, *, progress: Progress | None, max_swap_attempts: int, workers: int,
                   on_spawn: Callable[[list[int]], None] | None) -> RebuildReport:
    t0 = time.monotonic()
    await _cleanup_leftovers(engine)
    async with engine.pool.acquire() as conn:
        await create_scratch(conn, SHADOW, tables)
    pool: asyncpg.Pool | None = None
    runners: dict[str, ProjectorRunner] = {}
    try:
        if workers > 1:
            folded = await par.fold_parallel(engine, selection, workers=workers, progress=progress,
                                             on_spawn=on_spawn)
            report.workers, report.worker_events = workers, folded.events
            if folded.fallback:  # start again, serially, from an empty shadow
                report.parallel_fallback = folded.fallback
                async with engine.pool.acquire() as conn:
                    await create_scratch(conn, SHADOW, tables)
        pool = await scratch_pool(engine.database_url, SHADOW, max_size=_pool_size(selection))
        runners = await fold_into(engine, pool, selection, consumer_prefix=CONSUMER_PREFIX, progress=progress,
                                  keep_runners=True)
        names_ = [p.name for ps in selection.values() for p in ps]
        for attempt in range(1, max_swap_attempts + 1):
            report.swap_attempts = attempt
            if await _try_swap(engine, pool, names_, tables, report):
                break
            for runner in runners.values():  # the live tail moved on: fold it too, then try again
                await runner.catch_up()
        else:
            raise RuntimeError(f"rebuild could not catch the live tail in {max_swap_attempts} attempts")
        report.events = {g: r.stats.events + (0 if report.parallel_fallback else
                                              sum(w.get(g, 0) for w in report.worker_events))
                         for g, r in runners.items()}
    finally:
        for group, runner in runners.items():
            await runner.stop()
            await drop_consumer(engine.js, GROUPS[group].stream_name(engine.streams), f"{CONSUMER_PREFIX}{group}")
        if pool is not None:
            await pool.close()
        async with engine.pool.acquire() as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {SHADOW} CASCADE")
            await conn.execute(f"DROP SCHEMA IF EXISTS {RETIRED} CASCADE")
    report.seconds = round(time.monotonic() - t0, 3)
    # Fresh planner statistics for the swapped-in tables (the live runner's ANALYZE counter knows nothing of them).
    async with engine.pool.acquire() as conn:
        await conn.execute("ANALYZE " + ", ".join(f'"{t}"' for t in tables))
    return report


async def _try_swap(engine: "Engine", shadow_pool: asyncpg.Pool, names: list[str], tables: list[str],
                    report: RebuildReport) -> bool:
    """One swap attempt in one transaction; False (nothing changed) when the live checkpoints are ahead."""
    shadow_cp = await CheckpointStore(shadow_pool).positions(names)
    t0 = time.monotonic()
    async with engine.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL lock_timeout = '30s'")
        store = CheckpointStore(conn, schema="public")
        # Same order as ProjectorRunner._commit: checkpoint rows first, then the tables.
        live = await store.lock_rows_of(names)
        behind = {k: v for k, v in live.items() if v > shadow_cp.get(k.split("@")[0], 0)}
        if behind:
            log.info("rebuild: live projector ahead of the shadow; catching up", behind=behind, shadow=shadow_cp)
            return False
        await conn.execute("LOCK TABLE " + ", ".join(f'public."{t}"' for t in tables) + " IN ACCESS EXCLUSIVE MODE")
        await conn.execute(f"CREATE SCHEMA {RETIRED}")
        for t in tables:
            await conn.execute(f'ALTER TABLE public."{t}" SET SCHEMA {RETIRED}')
            await conn.execute(f'ALTER TABLE {SHADOW}."{t}" SET SCHEMA public')
        for name in names:
            # partitioned projectors keep one checkpoint per partition (<projection>@p<i>): all of them move
            if await store.set_rows_of(name, shadow_cp.get(name, 0)) == 0:
                await store.copy_row_from(SHADOW, name)
    report.swap_ms = round((time.monotonic() - t0) * 1000, 1)
    report.checkpoints = {n: shadow_cp.get(n, 0) for n in names}
    log.info("rebuild swapped", tables=tables, checkpoints=report.checkpoints, swap_ms=report.swap_ms)
    return True


# -- verify --------------------------------------------------------------------------------------------------------

@dataclass
class TableCheck:
    """One table compared: rows and checksum on each side; ``only_live`` / ``only_fold`` hold sample rows (text
    form, at most 5 each) when they differ."""

    table: str
    live_rows: int
    fold_rows: int
    live_checksum: str
    fold_checksum: str
    only_live: list[str] = field(default_factory=list)
    only_fold: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.live_rows == self.fold_rows and self.live_checksum == self.fold_checksum


@dataclass
class VerifyReport:
    """``ok`` when every table equals a fresh fold; ``checkpoints``: the live positions the fold was taken to."""

    tables: list[TableCheck]
    checkpoints: dict[str, int]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def differing(self) -> list[str]:
        return [t.table for t in self.tables if not t.ok]


_CHECKSUM = ("SELECT count(*) AS n, coalesce(md5(string_agg(h, '' ORDER BY h)), '') AS sum"
             " FROM (SELECT md5(t::text) AS h FROM {table} t) s")
_SAMPLE = ("SELECT t::text AS row FROM {a} t WHERE md5(t::text) <> ALL($1::text[]) ORDER BY 1 LIMIT 5")


#: ``message_prune_marks`` as ``verify`` copies it from its snapshot (schema/0005_memory_lifecycle.sql)
_MARK_COLUMNS = "tenant_id, thread_id, through_seq, pruned, event_id, pruned_at"


async def verify(engine: "Engine", names: Sequence[str] | None = None, *,
                 progress: Progress | None = None) -> VerifyReport:
    """Fold the log into scratch tables up to the live checkpoints and compare them with the live read models.

    The live side is read under one REPEATABLE READ snapshot taken before the fold, together with the checkpoints
    it reflects, so a projector running meanwhile cannot produce a false difference. Raises ``UnknownProjection``."""
    selection = select(names)
    tables = tables_of(selection)
    t0 = time.monotonic()
    schema = f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
    live_conn = await engine.pool.acquire()
    tr = live_conn.transaction(isolation="repeatable_read", readonly=True)
    try:  # the snapshot connection goes back whatever fails, its start included
        await tr.start()
        cps = await CheckpointStore(live_conn, schema="public").lows_by_projection()
        until = {g: min((cps.get(p.name, 0) for p in ps), default=0) for g, ps in selection.items()}
        live_sums = {t: await live_conn.fetchrow(_CHECKSUM.format(table=f'public."{t}"')) for t in tables}
        # The messages fold reads the prune marks (projections/pruning.py, a cross-stream read). Verified without
        # them, the scratch fold would read the live table as it is during the fold, not as of the snapshot: a mark
        # the derived projector commits meanwhile skipped turns the snapshot still has (a false difference, seen
        # under live pruning in tests/integration/ops/test_verify_under_load.py). The snapshot's marks go with the fold.
        marks = (await live_conn.fetch(f"SELECT {_MARK_COLUMNS} FROM public.message_prune_marks")
                 if "messages" in tables and "message_prune_marks" not in tables else None)
        try:  # the scratch schema is dropped whatever fails once it may exist, its pool's start included
            async with engine.pool.acquire() as conn:
                await create_scratch(conn, schema, [*tables, "message_prune_marks"] if marks is not None else tables)
            pool = await scratch_pool(engine.database_url, schema, max_size=_pool_size(selection))
            try:
                checks = await _verify_fold(engine, pool, live_conn, schema, selection, tables, until, live_sums,
                                            marks, progress)
            finally:
                await pool.close()
        finally:
            async with engine.pool.acquire() as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        with contextlib.suppress(Exception):
            await tr.rollback()
        await engine.pool.release(live_conn)
    return VerifyReport(tables=checks, checkpoints=until, seconds=round(time.monotonic() - t0, 3))


async def _verify_fold(engine: "Engine", pool: asyncpg.Pool, live_conn: Any, schema: str,
                       selection: Any, tables: Sequence[str], until: dict[str, int],
                       live_sums: dict[str, Any], marks: list[Any] | None,
                       progress: Progress | None) -> list[TableCheck]:
    """``verify``'s fold into ``schema`` and its table-by-table comparison with the live snapshot."""
    if marks:
        await pool.copy_records_to_table("message_prune_marks", schema_name=schema,
                                         columns=_MARK_COLUMNS.split(", "), records=marks)
    await fold_into(engine, pool, selection, consumer_prefix=f"verify-{schema[-12:]}-", until=until,
                    progress=progress)
    checks: list[TableCheck] = []
    for t in tables:
        fold = await pool.fetchrow(_CHECKSUM.format(table=f'"{schema}"."{t}"'))
        live = live_sums[t]
        check = TableCheck(table=t, live_rows=live["n"], fold_rows=fold["n"], live_checksum=live["sum"],
                           fold_checksum=fold["sum"])
        if not check.ok:
            live_h = [r["h"] for r in await live_conn.fetch(f'SELECT md5(t::text) AS h FROM public."{t}" t')]
            fold_h = [r["h"] for r in await pool.fetch(f'SELECT md5(t::text) AS h FROM "{schema}"."{t}" t')]
            check.only_live = [r["row"][:500] for r in await live_conn.fetch(
                _SAMPLE.format(a=f'public."{t}"'), fold_h)]
            check.only_fold = [r["row"][:500] for r in await pool.fetch(
                _SAMPLE.format(a=f'"{schema}"."{t}"'), live_h)]
        checks.append(check)
    return checks


# -- time travel ---------------------------------------------------------------------------------------------------

@dataclass
class AsOf:
    """Where a time-travel fold stopped: the facts and derived sequences included, and the instant they stood for."""

    facts_seq: int
    derived_seq: int
    at: dt.datetime
    seconds: float = 0.0


class TimeTravelError(InvalidInput, ValueError):
    """An ``--as-of`` that cannot be answered: a sequence beyond the log, a time before it, both or neither given."""


async def _last_seq_at(engine: "Engine", stream: str, at: dt.datetime) -> int:
    """The last stream sequence whose server timestamp is <= ``at`` (0 when none): an ephemeral consumer starting
    just after ``at`` delivers the first later message; everything before it is the answer."""
    info = await engine.js.stream_info(stream)
    if info.state.messages == 0:
        return 0
    cfg = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME,
                         opt_start_time=at + dt.timedelta(microseconds=1), ack_policy=AckPolicy.NONE,
                         inactive_threshold=10.0)
    sub = await engine.js.pull_subscribe(">", stream=stream, config=cfg)
    try:
        msgs = await sub.fetch(1, timeout=2.0)
        return max(0, msgs[0].metadata.sequence.stream - 1)
    except TimeoutError:
        return info.state.last_seq
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


async def _time_of(engine: "Engine", stream: str, seq: int) -> dt.datetime:
    msg = await engine.js.get_msg(stream, seq=seq)
    if msg.time is None:
        raise TimeTravelError(f"no timestamp for {stream} seq {seq}")
    return msg.time


#: What ``--as-of`` means, in every message that rejects one (issue #15 item 2: ``--as-of 2023-07-01`` answered
#: ``unknown_thread`` after an import of 2023 chats, as if the thread did not exist).
STORAGE_TIME = ("--as-of is storage time: when memengine stored the facts, not when the conversation happened "
                "(event time, a turn's occurred_at; an import of 2023 chats made today was stored today). "
                "For event time use recall --since/--until; for a point in the log use --as-of-seq N")


async def _check_span(engine: "Engine", facts: Any, at: dt.datetime) -> None:
    """``TimeTravelError`` when ``at`` is outside the stored span of the log: before its first kept fact (nothing
    was stored yet: every thread and user would be unknown) or in the future (nothing can be known of it)."""
    if facts.state.messages == 0:
        raise TimeTravelError(f"--as-of {at.isoformat()}: the log holds no facts yet. {STORAGE_TIME}")
    first = await _time_of(engine, engine.streams.facts, facts.state.first_seq)
    try:
        last = (await _time_of(engine, engine.streams.facts, facts.state.last_seq)).isoformat()
    except Exception:  # noqa: BLE001 - the last message was deleted (forgotten): the span is only for the message
        last = "now"
    span = f"facts were stored from {first.isoformat()} to {last}"
    if at < first:
        raise TimeTravelError(f"--as-of {at.isoformat()} is before anything was stored ({span}). {STORAGE_TIME}")
    if at > dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1):  # a minute of clock skew between hosts
        raise TimeTravelError(f"--as-of {at.isoformat()} is in the future ({span}). {STORAGE_TIME}")


async def resolve_as_of(engine: "Engine", *, seq: int | None = None, at: dt.datetime | None = None) -> AsOf:
    """Turn ``--as-of-seq N`` or ``--as-of TIME`` into (facts seq, derived seq, instant).

    ``seq``: facts up to N and the derived events built from them (the state once fact N was fully processed, enricher
    lag excluded). ``at``: everything stored no later than ``at`` (what a reader could have seen at that instant;
    storage time, ``STORAGE_TIME``). Raises ``TimeTravelError`` (both or neither given, N beyond the log, N < 1,
    ``at`` before the first stored fact or in the future)."""
    if (seq is None) == (at is None):
        raise TimeTravelError("give exactly one of --as-of TIME or --as-of-seq N")
    facts = await engine.js.stream_info(engine.streams.facts)
    if seq is not None:
        if seq < 1 or seq > facts.state.last_seq:
            raise TimeTravelError(f"--as-of-seq {seq} is outside the log (1..{facts.state.last_seq})")
        try:
            at = await _time_of(engine, engine.streams.facts, seq)
        except Exception:  # noqa: BLE001 - the message was deleted (forgotten): fall back to the next one kept
            at = await _time_of(engine, engine.streams.facts, (await _first_kept_after(engine, seq)))
        facts_seq = seq
        derived_seq = await _derived_through_fact(engine, seq)
        return AsOf(facts_seq=facts_seq, derived_seq=derived_seq, at=at)
    else:
        assert at is not None
        if at.tzinfo is None:
            at = at.replace(tzinfo=dt.UTC)
        await _check_span(engine, facts, at)
        facts_seq = await _last_seq_at(engine, engine.streams.facts, at)
    derived_seq = await _last_seq_at(engine, engine.streams.derived, at)
    return AsOf(facts_seq=facts_seq, derived_seq=derived_seq, at=at)


async def _derived_through_fact(engine: "Engine", fact_seq: int) -> int:
    """The last derived sequence before the first derived event built from a fact after ``fact_seq``: the derived
    state "once fact N was fully processed". The enricher publishes in fact order, so this is a prefix of the
    derived stream. (A consolidation's range is over the derived stream itself: it does not end the prefix.)"""
    last = 0
    async for m in replay(engine.js, engine.streams.derived):
        try:
            ev = decode_derived(m.data)
        except EventDecodeError:
            last = m.metadata.sequence.stream
            continue
        if type(ev).__name__ != "MemoriesConsolidated" and ev.source_seq_range[1] > fact_seq:
            return last
        last = m.metadata.sequence.stream
    return last


async def _first_kept_after(engine: "Engine", seq: int) -> int:
    msg = await engine.js.get_msg(engine.streams.facts, seq=seq, next=True)
    assert msg.seq is not None  # nats-py types it optional; a stored message always has its sequence
    return msg.seq


@contextlib.asynccontextmanager
async def as_of_pool(engine: "Engine", point: AsOf, *, progress: Progress | None = None, recall: bool = False,
                     ) -> AsyncIterator[asyncpg.Pool]:
    """A pool over a scratch schema holding the read models folded to ``point``; dropped on exit.

    Core and derived read models always (context, history, threads, summary, memories, episodes); the recall rows
    (``memory_vectors``, two tsvectors a row) only with ``recall=True``: their vectors then come from the live
    per-model table through ``search_path``, and the join on (tenant, thread, seq) keeps the turns that existed."""
    # the access trail is no state of the past memory (issue #30): never folded for time travel
    selection = {g: ps for g, ps in select(None).items() if (recall or g != "recall") and g != "access"}
    schema = f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
    t0 = time.monotonic()
    async with engine.pool.acquire() as conn:
        await create_scratch(conn, schema, tables_of(selection))
    pool = await scratch_pool(engine.database_url, schema, max_size=_pool_size(selection))
    try:
        until = {"core": point.facts_seq, "recall": point.facts_seq, "derived": point.derived_seq}
        await fold_into(engine, pool, selection, consumer_prefix=f"asof-{schema[-12:]}-", until=until,
                        progress=progress)
        point.seconds = round(time.monotonic() - t0, 3)
        yield pool
    finally:
        await pool.close()
        async with engine.pool.acquire() as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def parse_time(text: str) -> dt.datetime:
    """ISO 8601 (``2026-11-22T10:00:00Z``, ``2026-11-22 10:00``); naive times are UTC. ``TimeTravelError`` else."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise TimeTravelError(f"cannot read {text!r} as a time: use ISO 8601, e.g. 2026-11-22T10:00:00Z") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
