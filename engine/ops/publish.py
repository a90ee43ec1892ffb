"""Publishing events and bringing the read models current: what ``memengine ingest`` / ``demo``, the CLI's reading
commands, ``eval locomo``, tests and benchmarks share.

- ``publish_all(engine, evs, tenant)``: publish a batch pipelined, counting new / duplicate / reclaimed events.
- ``ensure_current(engine)``: fold the facts up to the stream's end (or a target sequence) here if this process can
  take the projector lock, else wait for the process that holds it (``memengine up``), then derive and embed.
- ``dead_lettered(engine, seqs)``: how many of the published facts ended as open dead letters.

Progress goes to stderr unless ``quiet``: a rich bar or spinner on a terminal, periodic plain lines otherwise
(``engine.ops.progress_lines``; issue #15 item 5: a piped first ingest said nothing for 34 s while it loaded the
embedding model), so the functions are silent under tests, benchmarks and ``--json``. Moved out of the CLI (issue #10):
operations and benchmarks must not import the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memengine.engine.client.publishing import settle, stored_owner
from memengine.engine.ops.progress_lines import ProgressLines, mode, said_if_slow
from memengine.engine.wire import tracing
from memengine.events import encode, msg_id

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

# The logger keeps the CLI's name: these messages were logged as memengine.cli before the move, and log filters
# or dashboards keyed on it keep working.
log = structlog.get_logger("memengine.cli")
#: Progress and warnings go to stderr, never stdout (stdout carries ``--json``).
err = Console(stderr=True)


async def publish_all(engine: Engine, evs: list[Any], tenant: str, *, quiet: bool = False) -> dict[str, Any]:
    """Publish ``evs`` pipelined (up to 512 unacknowledged) with a progress bar; count new vs duplicate.

    Returns ``{tenant, threads, events, published, duplicates, reclaimed, last_seq, seqs}``: ``seqs`` are the stream
    sequences of the events (stored now, or found stored). A duplicate acknowledgement is checked against the message
    it names (issue #17 defect 4): only the same bytes on the same tenant and thread count as ``duplicates``. Anything
    else means another publisher used this event's ``Nats-Msg-Id`` (``events.msg_id``; a publisher writes that header
    itself, so another tenant can forge it); the event is then published again under a unique message id and counted
    in ``reclaimed`` (and ``published``). The check is the one every publisher uses
    (``engine.client.publishing.settle``; issue #26 item 2)."""
    client = engine.client(tenant)
    js = engine.js
    published = duplicates = reclaimed = last_seq = 0
    seqs: list[int] = []
    pending: list[Any] = []
    show = mode(quiet) == "bar"
    lines = ProgressLines("publishing", enabled=mode(quiet) == "lines")

    owns = stored_owner(js, engine.streams.facts, client.subjects)
    key = await client.dedup_key()  # the tenant's dedup key (engine.client.publishing, issue #26 item 2)

    async def drain(n: int) -> None:
        nonlocal published, duplicates, reclaimed, last_seq
        while len(pending) > n:
            ev, subject, data, future = pending.pop(0)
            dedup_id = msg_id(ev.tenant_id, ev.event_id, data, key=key)

            async def republish(unique: str, subject: str = subject, data: bytes = data) -> Any:
                return await js.publish(subject, data, stream=engine.streams.facts, headers={"Nats-Msg-Id": unique})

            # the one publish path's check (engine.client.publishing.settle, issue #26 item 2)
            ack, taken = await settle(await future, subject=subject, data=data, dedup_id=dedup_id, owns=owns,
                                      republish=republish)
            if taken:
                log.warning("message id taken by another message; published under a unique id",
                            tenant=ev.tenant_id, event_id=str(ev.event_id), seq=ack.seq)
                reclaimed += 1
            last_seq = max(last_seq, ack.seq)
            seqs.append(ack.seq)
            if ack.duplicate:
                duplicates += 1
            else:
                published += 1

    # one span for the batch (engine.wire.tracing), not one per event: its traceparent goes into every event's
    # headers, and each projector commit span links to it
    with Progress(TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, disable=not show, transient=True) as bar, tracing.span("publish", kind="producer",
                  attributes={"messaging.system": "nats", "messaging.batch.message_count": len(evs),
                              "memengine.tenant": tenant}):
        trace_headers: dict[str, str] = tracing.inject({})
        task = bar.add_task("publish", total=len(evs))
        for i, ev in enumerate(evs):
            subject = client.subjects.fact(ev.tenant_id, ev.thread_id, type(ev).__name__)
            data = encode(ev)
            pending.append((ev, subject, data, await js.publish_async(
                subject, data, headers={"Nats-Msg-Id": msg_id(ev.tenant_id, ev.event_id, data, key=key),
                                        **trace_headers})))
            await drain(512)
            if i % 64 == 0:
                bar.update(task, completed=i)
                lines.update(i, len(evs))
        await drain(0)
        bar.update(task, completed=len(evs))
        lines.finish(len(evs))
    threads = sorted({ev.thread_id for ev in evs})
    return {"tenant": tenant, "threads": threads, "events": len(evs), "published": published,
            "duplicates": duplicates, "reclaimed": reclaimed, "last_seq": last_seq, "seqs": seqs}


async def dead_lettered(engine: Engine, seqs: list[int]) -> dict[str, int]:
    """Of the facts stored at ``seqs``, how many are open dead letters (not in memory; an operator has not retried
    or dropped them): ``{"dead_lettered": n, "conflicts": m}``, ``conflicts`` being those refused as ``duplicate event
    id with different content`` (engine/runtime/runner.py ``_dedupe``: the tenant applied another event under the
    same id first). Call after the projectors caught up. A re-run of the same import reports them again: they are
    still not in memory."""
    row = await engine.pool.fetchrow(
        "SELECT count(DISTINCT s) AS dead,"
        " count(DISTINCT s) FILTER (WHERE error LIKE 'duplicate event id with different content%') AS conflicts"
        " FROM (SELECT error, unnest(ARRAY[stream_seq, last_seq]) AS s FROM dead_letters"
        "       WHERE stream = $1 AND status = 'open') d"
        " WHERE s = ANY($2::bigint[])", engine.streams.facts, seqs)
    return {"dead_lettered": row["dead"], "conflicts": row["conflicts"]}


async def ensure_current(engine: Engine, *, quiet: bool, target: int | None = None, embed: bool = False,
                         derived: bool = False) -> int:
    """Bring the read models up to the stream's end (or ``target``): fold here if this process holds the
    projector lock, else wait for the process that does. Returns the sequence reached. ``derived``: when another
    process (``memengine up``) runs the enricher, wait until it derived to the facts' end too, or take it over
    (``wait_for_enricher``; ``memengine eval``, whose answers depend on the summaries and memories)."""
    info = await engine.js.stream_info(engine.streams.facts)
    goal = info.state.last_seq if target is None else target
    show = mode(quiet) == "bar"
    lines = ProgressLines("projecting", enabled=mode(quiet) == "lines")
    with Progress(TextColumn("projecting"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TimeRemainingColumn(), console=err, disable=not show, transient=True) as bar:
        start_seq = engine.runner.stats.last_seq
        task = bar.add_task("fold", total=max(goal - start_seq, 0), rate="")
        t0 = time.monotonic()

        def report(done: int, _target: int) -> None:
            rate = (done - start_seq) / max(time.monotonic() - t0, 1e-6)
            bar.update(task, completed=max(done - start_seq, 0), rate=f"{rate:,.0f} events/s")
            if goal > start_seq:  # nothing to fold: no line
                lines.update(max(done - start_seq, 0), goal - start_seq)

        if engine.runner.active:
            reached = await engine.runner.catch_up(progress=report)
        else:
            reached, ok = await wait_or_take_over(engine, goal, report)
            if not ok:
                err.print(f"[yellow]warning[/yellow]: projections at {reached}, stream at {goal}")
        if lines.done:
            lines.finish()
    if engine.recall.active:
        await engine.recall.catch_up()
    elif await wait_for_recall(engine, reached, embed=embed):
        await engine.recall.catch_up()  # taken over: fold (and below, embed) here
    if engine.access is not None and engine.access.active:  # the access trail's read models (issue #30)
        await engine.access.catch_up()
    if derived and "enricher" in engine.roles and not engine.enricher.active:
        await wait_for_enricher(engine)
    await derive_current(engine, quiet=quiet)
    if embed:
        await embed_current(engine, quiet=quiet)
    return reached


async def wait_or_take_over(engine: Engine, goal: int, report: Callable[[int, int], None], *,
                             timeout: float = 600.0) -> tuple[int, bool]:
    """Wait for the process that holds the projector lock (``memengine up``) to fold up to ``goal``, and take the fold
    over as soon as the lock is free: a dead ``up``'s session lock is released by PostgreSQL when its connection ends
    (issue #17 defect 11: ingest waited 600 s for a dead ``up``). The other roles' locks are taken too where free, so
    recall, derivation and embedding run here as well. Returns ``(sequence reached, reached goal)``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if await engine.runner.try_start():
            log.info("projector lock free: folding here", goal=goal)
            for other in (engine.recall, engine.derived):
                await other.try_start()
            await engine.enricher.try_start()
            return await engine.runner.catch_up(progress=report), True
        reached, ok = await engine.service.progress.wait_for(goal, timeout=max(0.0, min(2.0, deadline - loop.time())))
        report(reached, goal)
        if ok or loop.time() >= deadline:
            return reached, ok


async def embed_current(engine: Engine, *, quiet: bool) -> None:
    """Embed the turns that have no vector yet (recall's dense list), when this process projects."""
    if engine.embed_worker is None or not engine.recall.active:
        return
    with err.status(f"embedding turns ({engine.embed_worker.embedder.name})", spinner="dots") if (
            mode(quiet) == "bar") else contextlib.nullcontext():
        # piped: the first run loads the model (~30 s): say so rather than fall silent
        name = engine.embed_worker.embedder.name
        await said_if_slow(engine.embed_worker.catch_up(), f"embedding turns for recall ({name}; the first run loads "
                           "the model)", enabled=mode(quiet) == "lines")


async def wait_for_recall(engine: Engine, goal: int, *, embed: bool, timeout: float = 600.0,
                          poll: float = 0.1) -> bool:
    """Wait until the recall projector another process runs (``memengine up``) has folded the facts up to ``goal``
    and, with ``embed``, its embedder worker left no turn of the active model waiting
    (``engine.embedding.backlog``), or take the recall projector over as soon as its lock is free (the caller then
    folds and embeds here). ``True`` when taken over. ``TimeoutError`` after ``timeout`` seconds.

    Why: recall reads ``memory_vectors`` and its vectors, which ``up``'s recall projector and embedder write; beside
    a running ``up`` ``ensure_current`` returned once the core read models were current, and ``memengine eval``
    asked recall questions of turns not yet recallable (or recallable by words only)."""
    from memengine.engine.embedding.backlog import embedding_backlog  # lazy: the CLI's import cost
    from memengine.projections.registry import RECALL_PROJECTIONS

    names = [p.name for p in RECALL_PROJECTIONS]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if await engine.recall.try_start():
            return True
        at = await engine.pool.fetchval(
            "SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])", names)
        folded = (at or 0) >= goal
        waiting = 0
        if folded and embed:
            backlog = await embedding_backlog(engine.pool)
            waiting = sum(m["waiting"] for m in backlog if m["state"] == "active")
        if folded and not waiting:
            return False
        if loop.time() >= deadline:
            raise TimeoutError(f"the recall projector of another process is at {at} of {goal}, {waiting} turns "
                               "wait for a vector")
        await asyncio.sleep(poll)


#: $1 the derived projections' names: the enricher's checkpoint and the lowest of theirs
_DERIVED_AT = ("SELECT (SELECT last_seq FROM projection_checkpoints WHERE projection = 'enricher') AS enr,"
               " (SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])) AS drv")


async def wait_for_enricher(engine: Engine, *, timeout: float = 600.0, poll: float = 0.1) -> bool:
    """Wait until the enricher another process runs (``memengine up``) has derived up to the facts stream's end as
    it is now and the derived projections folded what it published (seen twice: it may publish once more after its
    checkpoint moved), or take the enricher and the derived projector over as soon as their lock is free (then
    ``derive_current`` derives here). ``True`` when taken over. ``TimeoutError`` after ``timeout`` seconds.

    Why (issue #27): ``derive_current`` derives only where this process holds the enricher; beside a running ``up``
    it returned at once, and ``memengine eval`` asked its contexts while ``up`` was still writing the summaries,
    topics and memories they show (and pruning), so what they showed depended on how far ``up`` had got."""
    from memengine.projections.registry import DERIVED_PROJECTIONS  # lazy: the CLI's import cost

    names = [p.name for p in DERIVED_PROJECTIONS]
    goal = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen = 0
    while True:
        if await engine.enricher.try_start():
            await engine.derived.try_start()
            return True
        end = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
        row = await engine.pool.fetchrow(_DERIVED_AT, names)
        seen = seen + 1 if (row["enr"] or 0) >= goal and (row["drv"] or 0) >= end else 0
        if seen >= 2:
            return False
        if loop.time() >= deadline:
            raise TimeoutError(f"the enricher of another process is at {row['enr']} of {goal}")
        await asyncio.sleep(poll)


async def derive_current(engine: Engine, *, quiet: bool) -> None:
    """Run the enricher to the end of the facts while the derived projector folds what it publishes."""
    if not (engine.enricher.active and engine.derived.active):
        return
    stop = asyncio.Event()
    folding = asyncio.create_task(engine.derived.run(stop))
    try:
        with err.status("deriving memory (summaries, topics, memories, episodes)", spinner="dots") if (
                mode(quiet) == "bar") else contextlib.nullcontext():
            await said_if_slow(engine.enricher.catch_up(), "deriving memory (summaries, topics, memories, episodes)",
                               enabled=mode(quiet) == "lines")
    finally:
        stop.set()
        await folding
    await engine.derived.catch_up()

