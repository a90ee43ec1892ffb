"""Parallel rebuild: the facts groups folded by N worker processes into one shadow schema (issue #13 item 2).

Why processes: a fold costs Python per event (decode, render, token counts, JSON of the rows; bench/RESULTS.md), so
one consumer is bound to one core while PostgreSQL and NATS idle. Each worker (engine/ops/rebuild_worker.py) is a
spawned ``python -m`` process with its own NATS connection, ordered durable consumer and PostgreSQL pool.

How the log is split (decided from the folds, measured in bench/RESULTS.md):

- **The key is (tenant, thread)**, the facts partitions' key (``Subjects.partition_transform``, issue #6). Every fold
  of the facts groups writes rows of one (tenant, thread) only: ``thread_activity`` (turns, sessions, labels,
  ``ThreadDeleted``), ``messages`` (turns, ``ThreadDeleted``, ``TurnsWithdrawn``: ids of its own thread only),
  ``memory_vectors`` (the window of a turn reads earlier rows of its thread; ``TurnsWithdrawn`` re-windows rows of
  its own thread only), ``tombstones`` (one row per deletion
  fact, keyed by its event id; ``UserForgotten`` sits on the thread token ``_``, forgetting a user publishes a
  ``ThreadDeleted`` on each of the user's threads). So a thread's events stay in stream order in one worker and the
  shares never write the same row: their union is the serial fold's rows.
- **What crosses the key**, and how it stays exact:
  * event-id dedupe (``applied_events``, keyed by tenant and event id, not thread): each worker dedupes its share
    in its own bookkeeping schema; an id found in two workers' shares (a publisher reusing an id across threads:
    the serial fold would apply the first copy and dead-letter or skip the other) makes the parent **fall back to
    the serial fold** (recorded in the report: ``parallel_fallback``), so the result is always the serial one;
  * prune marks (``message_prune_marks``, the derived stream) delete turns from ``messages``: the derived group is
    folded after the workers, by the parent, as the serial fold does (core and recall, then derived), and the
    prune guard makes either order exact anyway (projections/pruning.py);
  * the derived stream (memories across a user's threads, consolidation) is never split: one ordered fold.
- **Each worker's consumer delivers its share** when the parent can list it: one filter subject per (tenant,
  thread) key, ``<root>.fact.<tenant>.<thread>.>``, up to ``MAX_FILTER_KEYS`` keys (``share_filters``; five- and
  six-token subjects alike). Otherwise each worker reads the whole stream and skips the others' events from the
  subject alone (``rebuild_worker.worker_of``: no body decoded). Either way the share is the one ``worker_of``
  picks. Measured (bench/RESULTS.md, issue #13 item 2): the skipped half of the stream cost each worker its
  delivery and nats-py's parse, about a quarter of a worker's CPU at N = 2; the filters move part of that to the
  server, which matches every message against the filters.

Sequence: the parent creates the shadow and one bookkeeping schema per worker, notes the stream's last sequence
``T``, spawns the workers (each folds ``1..T``), relays their progress (the CLI's bar or plain lines), and on the
first worker failure kills the others and raises ``RebuildWorkerFailed`` (the caller drops the shadow: the live
read models are untouched). On success it merges the workers' applied event ids into the shadow's bookkeeping (a
copy into the table without its primary key, then one build of the key: ``_merge``) and
sets the shadow checkpoints of the facts projections to ``T``; the caller's ordinary serial runners then fold the
tail after ``T`` and the derived group, and swap once (engine/ops/rebuild.py ``_try_swap``: the live checkpoint rows,
``<projection>`` or ``<projection>@p<i>``, all move to the shadow's position).

Workers: ``default_workers()`` is the machine's cores capped at 8 (beyond that PostgreSQL's own commit work and the
N full reads of the stream dominate; the target machine of issue #13 item 7 has 16 cores), and ``auto_workers``
lowers it so that each worker folds at least ``MIN_EVENTS_PER_WORKER`` events: a spawned worker costs about a second
of start-up (imports, connections), more than a small log's whole fold. Verify and time travel stay serial folds.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
import msgspec
import structlog

from memengine.engine.ops.rebuild_worker import WorkerSpec, worker_of
from memengine.engine.ops.scratch import CONSUMER_PREFIX, SHADOW, WORKER_SCHEMA, create_scratch, drop_consumer
from memengine.engine.runtime.groups import GROUPS
from memengine.projections.ops import Projection

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

log = structlog.get_logger("memengine.rebuild")

#: Fewest events per worker worth a process: below it ``auto_workers`` uses fewer (a worker starts in ~1 s).
MIN_EVENTS_PER_WORKER = 25_000
#: Most workers ``default_workers`` picks (see the module docstring).
MAX_DEFAULT_WORKERS = 8
#: Most (tenant, thread) keys for which the workers' consumers filter their shares by subject (``share_filters``);
#: beyond it each worker reads the whole stream and skips the others' messages (a consumer with thousands of
#: filter subjects costs the server more than the skipped deliveries cost the workers).
MAX_FILTER_KEYS = 1024
#: The server lists at most this many subjects in one stream info (JSMaxSubjectDetails); nats-py drops the paging.
_SUBJECTS_PAGE = 100_000

Progress = Callable[[str, int, int], None]  # (group, done_seq, target_seq)


class RebuildWorkerFailed(RuntimeError):
    """A parallel-rebuild worker exited with an error (or was killed): ``worker`` of ``workers``, its exit status
    and the tail of its stderr. The other workers were killed; the shadow is dropped, the live read models are
    untouched."""

    def __init__(self, worker: int, workers: int, returncode: int | None, stderr: str) -> None:
        self.worker, self.workers, self.returncode = worker, workers, returncode
        tail = stderr.strip().splitlines()[-5:]
        super().__init__(f"rebuild worker {worker} of {workers} failed (exit status {returncode}); the live read "
                         f"models are untouched" + (": " + " | ".join(tail) if tail else ""))


@dataclass
class ParallelFold:
    """What the workers did: ``workers``, the sequence ``until`` they folded to, ``events`` applied per worker
    (``[{group: n}]``, worker order); ``fallback``: why the parallel result was discarded for the serial fold;
    ``filtered``: the workers' consumers delivered only their shares (``share_filters``)."""

    workers: int
    until: int
    events: list[dict[str, int]] = field(default_factory=list)
    fallback: str | None = None
    filtered: bool = False


def default_workers(cores: int | None = None) -> int:
    """The machine's cores (``os.cpu_count()``), capped at ``MAX_DEFAULT_WORKERS``; at least 1."""
    return max(1, min(cores or os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


def auto_workers(events: int, cores: int | None = None) -> int:
    """Workers for a log of ``events`` facts: ``default_workers`` but at least ``MIN_EVENTS_PER_WORKER`` each."""
    return max(1, min(default_workers(cores), events // MIN_EVENTS_PER_WORKER))


async def share_filters(engine: "Engine", workers: int, max_keys: int = MAX_FILTER_KEYS) -> list[list[str]] | None:
    """The subjects of each worker's share (``[[subject filter, ...] per worker]``), or ``None`` when they are not
    worth listing: more than ``max_keys`` (tenant, thread) keys in the facts stream, a listing the server paged, or
    a worker with an empty share. One filter per key, ``<root>.fact.<tenant>.<thread>.>`` (five- and six-token
    subjects alike), assigned by ``rebuild_worker.worker_of``: the very share the subject predicate picks.

    Read after the fold's last sequence is fixed: a key first stored later is beyond what the workers fold."""
    subjects = engine.subjects
    try:
        info = await engine.js.stream_info(engine.streams.facts, subjects_filter=subjects.all_facts)
    except Exception as exc:  # noqa: BLE001 - an optimisation: without the listing the workers skip by subject
        log.warning("parallel rebuild: cannot list the facts subjects; workers read the whole stream", error=repr(exc))
        return None
    listed = info.state.subjects or {}
    if not listed or len(listed) >= _SUBJECTS_PAGE:
        return None  # nothing listed, or only the first page of a longer listing
    prefix = f"{subjects.root}.fact."
    keys: set[str] = set()
    for subject in listed:
        rest = subject[len(prefix):]
        keys.add(rest[: rest.find(".", rest.find(".") + 1)])
        if len(keys) > max_keys:
            return None
    shares: list[list[str]] = [[] for _ in range(workers)]
    for key in sorted(keys):
        shares[worker_of(f"{prefix}{key}.", len(prefix), workers)].append(f"{prefix}{key}.>")
    return shares if all(shares) else None


def facts_groups(selection: dict[str, tuple[Projection, ...]]) -> dict[str, tuple[Projection, ...]]:
    """The selected groups that fold the facts stream (the ones a parallel rebuild splits)."""
    return {g: ps for g, ps in selection.items() if GROUPS[g].stream == "facts"}


async def fold_parallel(engine: "Engine", selection: dict[str, tuple[Projection, ...]], *, workers: int,
                        progress: Progress | None = None,
                        on_spawn: Callable[[list[int]], None] | None = None) -> ParallelFold:
    """Fold the facts groups of ``selection`` up to the stream's current last sequence in ``workers`` processes
    into the shadow schema (already created by the caller), then merge their bookkeeping; see the module docstring.

    ``on_spawn(pids)`` is called once the workers run (supervision, tests). Raises ``RebuildWorkerFailed``; the
    workers' schemas and consumers are gone on return either way."""
    groups = facts_groups(selection)
    until = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
    books = [WORKER_SCHEMA.format(i) for i in range(workers)]
    result = ParallelFold(workers=workers, until=until)
    async with engine.pool.acquire() as conn:
        for book in books:
            await create_scratch(conn, book, [])
    try:
        filters = await share_filters(engine, workers)
        result.filtered = filters is not None
        result.events = await _supervise(engine, groups, workers, until, books, progress, on_spawn, filters)
        async with engine.pool.acquire() as conn, conn.transaction():
            result.fallback = await _merge(conn, books, [p.name for ps in groups.values() for p in ps], until)
        if result.fallback:
            log.warning("parallel rebuild: falling back to the serial fold", reason=result.fallback)
    finally:
        async with engine.pool.acquire() as conn:
            for book in books:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{book}" CASCADE')
        for group in groups:
            for i in range(workers):
                await drop_consumer(engine.js, engine.streams.facts, f"{CONSUMER_PREFIX}{group}-w{i}")
    return result


async def _supervise(engine: "Engine", groups: dict[str, tuple[Projection, ...]], workers: int, until: int,
                     books: Sequence[str], progress: Progress | None,
                     on_spawn: Callable[[list[int]], None] | None,
                     filters: list[list[str]] | None) -> list[dict[str, int]]:
    s = engine.settings
    procs: list[asyncio.subprocess.Process] = []
    done = {g: [0] * workers for g in groups}
    results: list[dict[str, int] | None] = [None] * workers

    async def watch(i: int, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        stderr = asyncio.create_task(proc.stderr.read())
        async for line in proc.stdout:
            try:
                msg: dict[str, Any] = msgspec.json.decode(line)
            except msgspec.DecodeError:
                continue  # not a progress line (a library printing): ignore
            if "events" in msg:
                results[i] = msg["events"]
            elif msg.get("group") in done:
                done[msg["group"]][i] = int(msg["done"])
                if progress is not None:
                    progress(msg["group"], min(done[msg["group"]]), until)
        rc = await proc.wait()
        err = (await stderr).decode(errors="replace")
        if rc != 0 or results[i] is None:
            raise RebuildWorkerFailed(i, workers, rc, err)

    try:
        for i in range(workers):
            spec = WorkerSpec(nats_url=engine.nats_url, dsn=engine.database_url, subject_root=s.subject_root,
                              stream_prefix=s.stream_prefix, batch_size=s.batch_size,
                              condensed_tool_max=s.condensed_tool_max,
                              groups={g: [p.name for p in ps] for g, ps in groups.items()}, worker=i,
                              workers=workers, until=until, shadow=SHADOW, bookkeeping=books[i],
                              consumer_prefix=CONSUMER_PREFIX, filter_subjects=None if filters is None else filters[i])
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "memengine.engine.ops.rebuild_worker", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            procs.append(proc)
            assert proc.stdin is not None
            proc.stdin.write(msgspec.json.encode(spec) + b"\n")  # then stdin stays open: the worker's lifeline
            await proc.stdin.drain()
        if on_spawn is not None:
            on_spawn([p.pid for p in procs])
        tasks = [asyncio.create_task(watch(i, p)) for i, p in enumerate(procs)]
        finished, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for t in tasks:  # the first failure, in worker order among those that failed
            if t in finished and (failure := t.exception()) is not None:
                raise failure
    finally:
        for p in procs:  # a failure (or our own cancellation) ends every worker: none may outlive the rebuild
            if p.returncode is None:
                p.kill()
            await p.wait()
            if p.stdin is not None:
                p.stdin.close()
    return [r or {} for r in results]


async def _merge(conn: Any, books: Sequence[str], names: list[str], until: int) -> str | None:
    """Merge the workers' bookkeeping into the shadow's (in the caller's transaction); the reason to fall back to
    the serial fold, or ``None``: a worker short of ``until``, or an event id applied by two workers.

    The workers dedupe under the shadow runner's key (``ProjectorRunner.dedupe_as``), so their ``applied_events``
    rows are copied as they are, into the shadow's table without its primary key, which is then built in one sort
    (a bulk load: before, a renaming INSERT into the keyed table plus a separate GROUP BY for duplicates took 1.1
    to 1.6 s of the serial part for 100k rows; bench/RESULTS.md). The build is also the check for an id in two
    shares: a duplicate key fails it."""
    for b in books:
        low = await conn.fetchval(f'SELECT min(last_seq) FROM "{b}".projection_checkpoints'
                                  " WHERE projection = ANY($1::text[])", names)
        if (low or 0) < until:
            return f"worker schema {b} stopped at {low} of {until}"
    cols = ", ".join(f'"{r["attname"]}"' for r in await conn.fetch(
        "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped"
        " ORDER BY attnum", f'"{SHADOW}".applied_events'))
    pk = await conn.fetchrow(
        "SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint"
        " WHERE conrelid = $1::regclass AND contype = 'p'", f'"{SHADOW}".applied_events')
    if pk is not None:
        await conn.execute(f'ALTER TABLE "{SHADOW}".applied_events DROP CONSTRAINT "{pk["conname"]}"')
    await conn.execute(f'INSERT INTO "{SHADOW}".applied_events ({cols}) '
                       + " UNION ALL ".join(f'SELECT {cols} FROM "{b}".applied_events' for b in books))
    if pk is not None:
        try:
            async with conn.transaction():  # savepoint: the caller discards the shadow on a fallback anyway
                await conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
                await conn.execute(f'ALTER TABLE "{SHADOW}".applied_events ADD CONSTRAINT "{pk["conname"]}" '
                                   + pk["def"])
        except asyncpg.UniqueViolationError as exc:
            return (f"an event id occurs in the shares of two workers (an id reused across threads: {exc.detail}):"
                    " only the serial fold decides which copy applies")
    # the facts projections stand at ``until`` in the shadow: the serial runners fold the tail from there
    await conn.execute(f'INSERT INTO "{SHADOW}".projection_checkpoints'
                       f' SELECT * FROM "{books[0]}".projection_checkpoints'
                       " WHERE projection = ANY($1::text[])", names)
    await conn.execute(f'UPDATE "{SHADOW}".projection_checkpoints SET last_seq = $2'
                       " WHERE projection = ANY($1::text[])", names, until)
    return None
