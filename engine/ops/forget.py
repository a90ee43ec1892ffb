"""Verified forgetting: a thread or a user removed from every read model, every cache and the log itself, leaving a
tombstone (issue #5 §4; seed 000 §1.3/§2.2 thread deletion; the right to erasure of GDPR art. 17).

The order is what makes it verifiable and rebuild-proof:

1. **Collect** from the log what is to go: the thread's (or the user's) facts, and the derived events built from
   them, with their sequences and ids; the embedding hashes of their recall rows.
2. **Record the deletion fact** (``ThreadDeleted`` on the thread's subject, ``UserForgotten`` on the thread token
   ``_``). It carries no content. The core projections fold it (rows of the thread dropped, a ``tombstones`` row).
3. **Purge the log**: the thread's fact subject *below* the deletion fact (``purge`` with a subject filter and a
   sequence keeps the tombstone), the thread's derived subject entirely; for a user, each of the user's facts and
   every derived event built from them (or a rolling summary, topic list or episode of a thread the user spoke in,
   whose text carries the user's words) is deleted by sequence (JetStream erases the payload).
4. **Rebuild** the read models the deletion touched (engine/ops/rebuild.py): what is left equals a fresh fold of the
   purged log, by construction (a summary that mixed the user's words is gone, not half-edited).
5. **Scrub the caches**: applied-event ids, dead letters (table and DLQ stream) of the forgotten events, embedding
   cache entries and per-model vectors no longer referenced, and the working-memory KV keys of the thread.

**Resumable** (issue #17 defect 8): before step 2, a ``forget_runs`` row records what the later steps need once the
log is purged (the forgotten events' ids and sequences, the recall rows' embedding hashes, the threads), and each step
is recorded there once done. Every step is idempotent, so a forgetting killed at any point is finished by running
``forget-thread`` / ``forget-user`` again for the same scope: it resumes from the recorded steps (re-publishing the
same deletion fact, found in the log first) instead of answering "no thread" while applied-event ids, dead letters
and working memory of the forgotten events survive. The row keeps counts only once the run finishes.

Recorded in ``operations`` (ids and counts only). What is not erased: the server's in-memory de-duplication window
(message ids for 24 h, no content) and the JetStream file store's free space until compaction (payloads are
overwritten by the erase). Non-goal: content an agent copied elsewhere (its own prompts, logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
import msgspec
import structlog

from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.adapters.locks import lock_key
from memengine.engine.adapters.pull import replay
from memengine.engine.derive import working_memory
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.forget_served import purge_served
from memengine.engine.ops.operations import actor, operation
from memengine.engine.runtime.groups import GROUPS
from memengine.engine.wire.errors import Busy, NotFound
from memengine.events import ThreadDeleted, UserForgotten, check_token, new_event_id
from memengine.events.codec import EventDecodeError, decode, decode_derived

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

log = structlog.get_logger("memengine.forget")

#: Derived events that carry a rolling text of a whole thread: forgetting a user drops them in the user's threads.
_AGGREGATES = {"SummaryUpdated", "TopicsExtracted", "EpisodeRecorded", "MessagesPruned"}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class NothingToForget(NotFound, LookupError):
    """The thread or user has no event in the log (and no read-model row): nothing was changed."""


@dataclass
class ForgetReport:
    """What a forget removed (counts and the tombstone), never what the content was."""

    scope: str
    tenant: str
    scope_id: str
    tombstone_seq: int = 0
    facts_removed: int = 0
    derived_removed: int = 0
    dead_letters_removed: int = 0
    embeddings_removed: int = 0
    kv_keys_removed: int = 0
    rebuilt: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class _Found:
    seq: int
    event_id: str
    thread: str
    type: str
    sources: list[str] = field(default_factory=list)
    user: str | None = None


async def _scan(engine: "Engine", stream: str, subject: str, *, derived: bool) -> list[_Found]:
    """Every message of ``stream`` under ``subject``, decoded to the fields forgetting needs (ordered read)."""
    out: list[_Found] = []
    async for m in replay(engine.js, stream, subject):
        seq = m.metadata.sequence.stream
        parts = m.subject.split(".")
        thread, etype = (parts[3], parts[4]) if len(parts) >= 5 else ("", "")
        try:
            ev: Any = decode_derived(m.data) if derived else decode(m.data)
            out.append(_Found(seq=seq, event_id=str(ev.event_id), thread=ev.thread_id, type=type(ev).__name__,
                              sources=[str(s) for s in getattr(ev, "source_event_ids", [])], user=ev.user_id))
        except EventDecodeError:
            out.append(_Found(seq=seq, event_id="", thread=thread, type=etype))
    return out


async def _settle_core(engine: "Engine", seq: int, timeout: float = 120.0) -> None:
    """Wait until the core and recall projections have folded fact ``seq`` (fold here when this process holds
    their locks, as the CLI does; else the running ``memengine up`` does it)."""
    for runner in (engine.runner, engine.recall):
        if runner.active:
            await runner.catch_up(timeout=timeout)
    names = [p.name for p in (*engine.runner.projections, *engine.recall.projections)]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        low = await CheckpointStore(engine.pool).low_of(names)
        if (low or 0) >= seq:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"projections at {low}, the deletion fact is at {seq}")
        await asyncio.sleep(0.05)


class ForgetBusy(Busy, RuntimeError):
    """Another process is forgetting the same scope right now; try again when it ends."""


#: The steps of a forgetting after its run row is written, in order; each is recorded in ``forget_runs.steps`` once
#: done, and each is idempotent, so a run killed anywhere is finished by running it again (issue #17 defect 8).
STEPS = ("published", "purged", "rebuilt", "scrubbed")


@dataclass
class _Run:
    """One row of ``forget_runs`` (schema/0013_resumable_operations.sql): what the steps need once the log is
    purged, and the steps done."""

    id: int
    tenant: str
    scope: str
    scope_id: str
    tombstone_id: uuid.UUID
    tombstone_at: dt.datetime
    requested_by: str
    reason: str | None
    tombstone_seq: int | None
    event_ids: list[str]
    fact_seqs: list[int]
    derived_seqs: list[int]
    shas: list[bytes]
    threads: list[str]
    steps: list[str]
    counts: dict[str, int]
    resumed: bool = False

    @classmethod
    def of(cls, r: Any) -> "_Run":
        return cls(id=r["id"], tenant=r["tenant_id"], scope=r["scope"], scope_id=r["scope_id"],
                   tombstone_id=r["tombstone_id"], tombstone_at=r["tombstone_at"], requested_by=r["requested_by"],
                   reason=r["reason"], tombstone_seq=r["tombstone_seq"], event_ids=[str(i) for i in r["event_ids"]],
                   fact_seqs=list(r["fact_seqs"]), derived_seqs=list(r["derived_seqs"]),
                   shas=[bytes(b) for b in r["emb_shas"]], threads=list(r["threads"]), steps=list(r["steps"]),
                   counts=msgspec.json.decode(r["counts"]) if isinstance(r["counts"], str) else dict(r["counts"]))


async def _open_run(engine: "Engine", tenant: str, scope: str, scope_id: str) -> _Run | None:
    """The unfinished run of this scope, if a forgetting of it was interrupted."""
    row = await engine.pool.fetchrow(
        "SELECT * FROM forget_runs"
        " WHERE tenant_id = $1 AND scope = $2 AND scope_id = $3 AND finished_at IS NULL", tenant, scope, scope_id)
    if row is None:
        return None
    run = _Run.of(row)
    run.resumed = True
    return run


async def _new_run(engine: "Engine", tenant: str, scope: str, scope_id: str, *, reason: str | None,
                   event_ids: list[str], fact_seqs: list[int], derived_seqs: list[int], shas: list[bytes],
                   threads: list[str], counts: dict[str, int]) -> _Run:
    """Write the run row before anything changes: from here on a re-run resumes instead of scanning the log."""
    row = await engine.pool.fetchrow(
        "INSERT INTO forget_runs (tenant_id, scope, scope_id, tombstone_id, tombstone_at, requested_by, reason,"
        " event_ids, fact_seqs, derived_seqs, emb_shas, threads, counts)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[], $9::bigint[], $10::bigint[], $11::bytea[], $12::text[],"
        " $13::jsonb) RETURNING *",
        tenant, scope, scope_id, new_event_id(), _now(), actor(), reason,
        [uuid.UUID(i) for i in event_ids], fact_seqs, derived_seqs, shas, threads, msgspec.json.encode(counts).decode())
    return _Run.of(row)


async def _done(engine: "Engine", run: _Run, step: str) -> None:
    run.steps.append(step)
    await engine.pool.execute(
        "UPDATE forget_runs SET steps = array_append(steps, $2), tombstone_seq = $3, updated_at = now()"
        " WHERE id = $1", run.id, step, run.tombstone_seq)


async def _finish(engine: "Engine", run: _Run) -> None:
    """Close the run; the ids, sequences and hashes it kept for the steps go (counts stay)."""
    await engine.pool.execute(
        "UPDATE forget_runs SET finished_at = now(), updated_at = now(), counts = $2::jsonb, event_ids = '{}',"
        " fact_seqs = '{}', derived_seqs = '{}', emb_shas = '{}' WHERE id = $1",
        run.id, msgspec.json.encode(run.counts).decode())


async def _publish_tombstone(engine: "Engine", run: _Run) -> int:
    """Publish the run's deletion fact (the same event on every attempt) and return its sequence. A resumed run first
    looks for it in the log: the server's de-duplication window (``Nats-Msg-Id``) may have passed since."""
    thread = run.scope_id if run.scope == "thread" else "_"
    if run.resumed:
        async for m in replay(engine.js, engine.streams.facts, engine.subjects.thread_facts(run.tenant, thread)):
            with contextlib.suppress(EventDecodeError):
                if decode(m.data).event_id == run.tombstone_id:
                    return m.metadata.sequence.stream
    if run.scope == "thread":
        tomb: Any = ThreadDeleted(event_id=run.tombstone_id, tenant_id=run.tenant, thread_id=run.scope_id,
                                  occurred_at=run.tombstone_at, producer=run.requested_by, reason=run.reason)
    else:
        tomb = UserForgotten(event_id=run.tombstone_id, tenant_id=run.tenant, thread_id="_", user_id=run.scope_id,
                             occurred_at=run.tombstone_at, producer=run.requested_by, reason=run.reason)
    # the one publish path (engine.client.publishing, issue #26 item 2): a duplicate ack counts only if it names
    # this tombstone, so another tenant's forged message id cannot stand in for it
    return (await engine.client(run.tenant).publish(tomb)).seq


async def _run_steps(engine: "Engine", run: _Run, report: ForgetReport) -> None:
    """Every step not yet done, in order (module docstring, steps 2-5); each is recorded once done."""
    tenant = run.tenant
    if "published" not in run.steps or run.tombstone_seq is None:
        run.tombstone_seq = await _publish_tombstone(engine, run)
        await _done(engine, run, "published")
    report.tombstone_seq = run.tombstone_seq
    await _settle_core(engine, run.tombstone_seq)
    if "purged" not in run.steps:
        if run.scope == "thread":
            # every fact of the thread below the deletion fact, every derived event of the thread
            await engine.js.purge_stream(engine.streams.facts, seq=run.tombstone_seq,
                                         subject=engine.subjects.thread_facts(tenant, run.scope_id))
            await engine.js.purge_stream(engine.streams.derived,
                                         subject=f"{engine.subjects.root}.drv.{tenant}.{run.scope_id}.*")
        else:
            for stream, seqs in ((engine.streams.facts, run.fact_seqs), (engine.streams.derived, run.derived_seqs)):
                for seq in seqs:
                    with contextlib.suppress(Exception):  # already gone (an earlier attempt, a concurrent purge)
                        await engine.js.delete_msg(stream, seq)
        # the answers that held what is forgotten (issue #30, engine/ops/forget_served.py)
        await purge_served(engine, tenant, run.scope, run.scope_id, run.event_ids)
        await _done(engine, run, "purged")
    # the read models the deletion touched: equal to a fold of the purged log (and of the purged served stream)
    names = ([p.name for g in ("derived", "access") for p in GROUPS[g].projections] if run.scope == "thread"
             else rb.all_projection_names())
    report.rebuilt = names
    if "rebuilt" not in run.steps:
        await rb.rebuild(engine, names)
        await _done(engine, run, "rebuilt")
    if "scrubbed" not in run.steps:
        ids = set(run.event_ids)
        if run.scope == "thread":
            fact_prefix = f"{engine.subjects.root}.fact.{tenant}.{run.scope_id}."
            drv_prefix = f"{engine.subjects.root}.drv.{tenant}.{run.scope_id}."

            def dlq_match(subj: str, ev_id: str) -> bool:  # every dead letter of the thread, whatever its id
                return subj.startswith(fact_prefix) or subj.startswith(drv_prefix)
        else:
            prefixes = (f"{engine.subjects.root}.fact.{tenant}.", f"{engine.subjects.root}.drv.{tenant}.")

            def dlq_match(subj: str, ev_id: str) -> bool:
                # the tenant's subjects too: another tenant's dead letter may carry the same id (issue #17)
                return ev_id in ids and subj.startswith(prefixes)
        await _scrub(engine, report, ids=run.event_ids, shas=run.shas, tenant=tenant, threads=run.threads,
                     dlq_match=dlq_match)
        for k in ("dead_letters_removed", "embeddings_removed", "kv_keys_removed"):
            run.counts[k] = run.counts.get(k, 0) + getattr(report, k)
        await _done(engine, run, "scrubbed")
    report.facts_removed = run.counts.get("facts_removed", 0)
    report.derived_removed = run.counts.get("derived_removed", 0)
    for k in ("dead_letters_removed", "embeddings_removed", "kv_keys_removed"):
        setattr(report, k, run.counts.get(k, 0))
    await _finish(engine, run)


@contextlib.asynccontextmanager
async def _scope_lock(engine: "Engine", tenant: str, scope: str, scope_id: str) -> Any:
    """One forgetting of a scope at a time (two would both resume the same run). The session lock is held on a
    connection of its own, not one of the engine pool's (whose commits the forgetting waits for)."""
    conn = await asyncpg.connect(engine.database_url)
    try:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)",
                                   lock_key(f"memengine-forget:{tenant}:{scope}:{scope_id}")):
            raise ForgetBusy(f"another process is forgetting {scope} {scope_id!r} of tenant {tenant!r}; try again"
                             " when it ends")
        yield
    finally:
        with contextlib.suppress(Exception):  # closing the session releases the lock
            await conn.close()


async def forget_thread(engine: "Engine", tenant: str, thread: str, *, reason: str | None = None) -> ForgetReport:
    """Forget one thread of ``tenant`` everywhere (module docstring). Resumes an interrupted forgetting of the same
    thread (its ``forget_runs`` row) instead of starting again. Raises ``InvalidToken`` for a bad id,
    ``NothingToForget`` when the log holds nothing of it and no forgetting of it is unfinished, ``ForgetBusy`` while
    another process forgets it, ``rebuild.RebuildBusy`` while a rebuild runs (run it again later: it resumes)."""
    check_token("tenant", tenant)
    check_token("thread", thread)
    report = ForgetReport(scope="thread", tenant=tenant, scope_id=thread)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    async with _scope_lock(engine, tenant, "thread", thread), \
            operation(engine.pool, "forget-thread", scope={"tenant": tenant, "thread": thread},
                      dsn=engine.database_url) as op:
        run = await _open_run(engine, tenant, "thread", thread)
        if run is None:
            facts = await _scan(engine, engine.streams.facts, engine.subjects.thread_facts(tenant, thread),
                                derived=False)
            derived = await _scan(engine, engine.streams.derived,
                                  f"{engine.subjects.root}.drv.{tenant}.{thread}.*", derived=True)
            facts = [f for f in facts if f.type not in ("ThreadDeleted",)]
            if not facts and not derived:
                exists = await engine.pool.fetchval(
                    "SELECT 1 FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
                if not exists:
                    raise NothingToForget(f"no thread {thread!r} for tenant {tenant!r}")
            shas = await _recall_shas(engine, "tenant_id = $1 AND thread_id = $2", tenant, thread)
            run = await _new_run(engine, tenant, "thread", thread, reason=reason,
                                 event_ids=[f.event_id for f in (*facts, *derived) if f.event_id], fact_seqs=[],
                                 derived_seqs=[], shas=shas, threads=[thread],
                                 counts={"facts_removed": len(facts), "derived_removed": len(derived)})
        else:
            op.detail["resumed_run"] = run.id
            op.detail["steps_done_before"] = list(run.steps)
            log.info("resuming an interrupted forgetting", tenant=tenant, thread=thread, run=run.id, steps=run.steps)
        await _run_steps(engine, run, report)
        report.seconds = round(loop.time() - t0, 3)
        op.detail.update(msgspec.structs.asdict(_Counts.of(report)))
    log.info("thread forgotten", tenant=tenant, thread=thread, tombstone_seq=report.tombstone_seq)
    return report


async def forget_user(engine: "Engine", tenant: str, user: str, *, reason: str | None = None) -> ForgetReport:
    """Forget every fact of ``user`` in ``tenant`` and everything derived from them (module docstring). Resumes an
    interrupted forgetting of the same user. Raises ``NothingToForget`` when no fact of the user is in the log and no
    forgetting of them is unfinished, ``ForgetBusy`` / ``rebuild.RebuildBusy`` as ``forget_thread``."""
    check_token("tenant", tenant)
    if not user or len(user) > 1024:
        raise ValueError("user id must be 1-1024 characters")
    report = ForgetReport(scope="user", tenant=tenant, scope_id=user)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    async with _scope_lock(engine, tenant, "user", user), \
            operation(engine.pool, "forget-user", scope={"tenant": tenant, "user": user},
                      dsn=engine.database_url) as op:
        run = await _open_run(engine, tenant, "user", user)
        if run is None:
            all_facts = await _scan(engine, engine.streams.facts, f"{engine.subjects.root}.fact.{tenant}.>",
                                    derived=False)
            facts = [f for f in all_facts if f.user == user and f.type != "UserForgotten"]
            if not facts:
                raise NothingToForget(f"no fact of user {user!r} in tenant {tenant!r}")
            ids = {f.event_id for f in facts}
            threads = sorted({f.thread for f in facts})
            all_derived = await _scan(engine, engine.streams.derived, f"{engine.subjects.root}.drv.{tenant}.>",
                                      derived=True)
            derived = [d for d in all_derived if d.user == user or ids.intersection(d.sources)
                       or (d.type in _AGGREGATES and d.thread in threads)]
            shas = await _recall_shas(engine, "tenant_id = $1 AND thread_id = ANY($2::text[])", tenant, threads)
            run = await _new_run(engine, tenant, "user", user, reason=reason,
                                 event_ids=[f.event_id for f in (*facts, *derived) if f.event_id],
                                 fact_seqs=[f.seq for f in facts], derived_seqs=[d.seq for d in derived], shas=shas,
                                 threads=threads, counts={"facts_removed": len(facts), "derived_removed": len(derived)})
        else:
            op.detail["resumed_run"] = run.id
            op.detail["steps_done_before"] = list(run.steps)
            log.info("resuming an interrupted forgetting", tenant=tenant, run=run.id, steps=run.steps)
        await _run_steps(engine, run, report)
        report.seconds = round(loop.time() - t0, 3)
        op.detail.update(msgspec.structs.asdict(_Counts.of(report)))
    log.info("user forgotten", tenant=tenant, tombstone_seq=report.tombstone_seq)
    return report


class _Counts(msgspec.Struct):
    tombstone_seq: int
    facts_removed: int
    derived_removed: int
    dead_letters_removed: int
    embeddings_removed: int
    kv_keys_removed: int

    @classmethod
    def of(cls, r: ForgetReport) -> "_Counts":
        return cls(r.tombstone_seq, r.facts_removed, r.derived_removed, r.dead_letters_removed,
                   r.embeddings_removed, r.kv_keys_removed)


async def _recall_shas(engine: "Engine", where: str, *args: Any) -> list[bytes]:
    """Embedding hashes of the recall rows in scope, read before they go (the cache is keyed by them)."""
    rows = await engine.pool.fetch(f"SELECT DISTINCT emb_sha FROM memory_vectors WHERE {where}", *args)
    return [bytes(r["emb_sha"]) for r in rows if r["emb_sha"]]


async def _scrub(engine: "Engine", report: ForgetReport, *, ids: list[str], shas: list[bytes], tenant: str,
                 threads: list[str], dlq_match: Any) -> None:
    """Caches and bookkeeping outside the read models: applied-event ids, dead letters (table and stream), the
    embedding cache and per-model vectors no longer referenced, the working-memory KV keys."""
    uuids = [uuid.UUID(i) for i in ids]
    async with engine.pool.acquire() as conn, conn.transaction():
        # only this tenant's rows: another tenant may use the same ids (issue #17 defect 4; '*' = pre-0012 rows)
        await conn.execute("DELETE FROM applied_events WHERE event_id = ANY($1::uuid[]) AND tenant_id IN ($2, '*')",
                           uuids, tenant)
        dl = await conn.fetch("SELECT id, subject, event_id FROM dead_letters")
        gone = [r["id"] for r in dl if dlq_match(r["subject"], r["event_id"] or "")]
        if gone:
            await conn.execute("DELETE FROM dead_letters WHERE id = ANY($1::bigint[])", gone)
        report.dead_letters_removed = len(gone)
        for (table,) in await conn.fetch("SELECT table_name FROM embedding_models"):
            # vectors of recall rows that no longer exist (the embedder worker's GC, done now rather than later)
            res = await conn.execute(
                f"DELETE FROM {table} e WHERE e.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM memory_vectors v"
                " WHERE v.tenant_id = e.tenant_id AND v.thread_id = e.thread_id AND v.seq = e.seq)", tenant)
            report.embeddings_removed += int(res.split()[-1])
        if shas:
            await conn.execute(
                "DELETE FROM embedding_cache c WHERE c.sha256 = ANY($1::bytea[])"
                " AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.emb_sha = c.sha256)", shas)
    # the DLQ stream: messages whose original subject or event id is in scope
    with contextlib.suppress(Exception):
        info = await engine.js.stream_info(engine.streams.dlq)
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                m = await engine.js.get_msg(engine.streams.dlq, seq=seq)
            except Exception:  # noqa: BLE001 - a gap (deleted earlier)
                continue
            subj = (m.headers or {}).get("Memengine-Subject", "")
            ev_id = ""
            with contextlib.suppress(Exception):
                ev_id = str(msgspec.json.decode(m.data or b"{}").get("event_id", ""))
            if dlq_match(subj, ev_id):
                await engine.js.delete_msg(engine.streams.dlq, seq)
    for thread in threads:
        with contextlib.suppress(Exception):
            report.kv_keys_removed += int(await working_memory.purge_thread(
                engine.js, tenant, thread, prefix=engine.settings.stream_prefix) or 0)
