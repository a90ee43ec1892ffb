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
4. **Rebuild** the read models the deletion touched (engine/rebuild.py): what is left equals a fresh fold of the
   purged log, by construction (a summary that mixed the user's words is gone, not half-edited).
5. **Scrub the caches**: applied-event ids, dead letters (table and DLQ stream) of the forgotten events, embedding
   cache entries and per-model vectors no longer referenced, and the working-memory KV keys of the thread.

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

import msgspec
import structlog

from engine import rebuild as rb
from engine.operations import actor, operation
from engine.pull import replay
from events import ThreadDeleted, UserForgotten, check_token, new_event_id
from events.codec import EventDecodeError, decode, decode_derived, encode

if TYPE_CHECKING:
    from engine.bootstrap import Engine

log = structlog.get_logger("memengine.forget")

#: Derived events that carry a rolling text of a whole thread: forgetting a user drops them in the user's threads.
_AGGREGATES = {"SummaryUpdated", "TopicsExtracted", "EpisodeRecorded", "MessagesPruned"}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class NothingToForget(LookupError):
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
        low = await engine.pool.fetchval(
            "SELECT min(last_seq) FROM projection_checkpoints"
            " WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($1::text[])", names)
        if (low or 0) >= seq:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"projections at {low}, the deletion fact is at {seq}")
        await asyncio.sleep(0.05)


async def forget_thread(engine: "Engine", tenant: str, thread: str, *, reason: str | None = None) -> ForgetReport:
    """Forget one thread of ``tenant`` everywhere (module docstring). Raises ``InvalidToken`` for a bad id and
    ``NothingToForget`` when the log holds nothing of it."""
    check_token("tenant", tenant)
    check_token("thread", thread)
    report = ForgetReport(scope="thread", tenant=tenant, scope_id=thread)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    async with operation(engine.pool, "forget-thread", scope={"tenant": tenant, "thread": thread}) as op:
        facts = await _scan(engine, engine.streams.facts, engine.subjects.thread_facts(tenant, thread), derived=False)
        derived = await _scan(engine, engine.streams.derived,
                              f"{engine.subjects.root}.drv.{tenant}.{thread}.*", derived=True)
        facts = [f for f in facts if f.type not in ("ThreadDeleted",)]
        if not facts and not derived:
            exists = await engine.pool.fetchval(
                "SELECT 1 FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
            if not exists:
                raise NothingToForget(f"no thread {thread!r} for tenant {tenant!r}")
        shas = await _recall_shas(engine, "tenant_id = $1 AND thread_id = $2", tenant, thread)
        tomb = ThreadDeleted(event_id=new_event_id(), tenant_id=tenant, thread_id=thread, occurred_at=_now(),
                             producer=actor(), reason=reason)
        ack = await engine.js.publish(engine.subjects.fact(tenant, thread, "ThreadDeleted"), encode(tomb),
                                      headers={"Nats-Msg-Id": str(tomb.event_id)}, stream=engine.streams.facts)
        report.tombstone_seq = ack.seq
        await _settle_core(engine, ack.seq)
        # the log: every fact of the thread below the deletion fact, every derived event of the thread
        await engine.js.purge_stream(engine.streams.facts, subject=engine.subjects.thread_facts(tenant, thread),
                                     seq=ack.seq)
        await engine.js.purge_stream(engine.streams.derived, subject=f"{engine.subjects.root}.drv.{tenant}.{thread}.*")
        report.facts_removed, report.derived_removed = len(facts), len(derived)
        # derived read models: equal to a fold of the purged derived log
        derived_names = [p.name for p in rb.GROUPS["derived"][2]]
        await rb.rebuild(engine, derived_names)
        report.rebuilt = derived_names
        await _scrub(engine, report, ids=[f.event_id for f in (*facts, *derived) if f.event_id], shas=shas,
                     tenant=tenant, threads=[thread],
                     dlq_match=lambda subj, _d: subj.startswith(f"{engine.subjects.root}.fact.{tenant}.{thread}.")
                     or subj.startswith(f"{engine.subjects.root}.drv.{tenant}.{thread}."))
        report.seconds = round(loop.time() - t0, 3)
        op.detail.update(msgspec.structs.asdict(_Counts.of(report)))
    log.info("thread forgotten", tenant=tenant, thread=thread, tombstone_seq=report.tombstone_seq)
    return report


async def forget_user(engine: "Engine", tenant: str, user: str, *, reason: str | None = None) -> ForgetReport:
    """Forget every fact of ``user`` in ``tenant`` and everything derived from them (module docstring). Raises
    ``NothingToForget`` when no fact of the user is in the log."""
    check_token("tenant", tenant)
    if not user or len(user) > 1024:
        raise ValueError("user id must be 1-1024 characters")
    report = ForgetReport(scope="user", tenant=tenant, scope_id=user)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    async with operation(engine.pool, "forget-user", scope={"tenant": tenant, "user": user}) as op:
        all_facts = await _scan(engine, engine.streams.facts, f"{engine.subjects.root}.fact.{tenant}.>", derived=False)
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
        tomb = UserForgotten(event_id=new_event_id(), tenant_id=tenant, thread_id="_", user_id=user, occurred_at=_now(),
                             producer=actor(), reason=reason)
        ack = await engine.js.publish(engine.subjects.fact(tenant, "_", "UserForgotten"), encode(tomb),
                                      headers={"Nats-Msg-Id": str(tomb.event_id)}, stream=engine.streams.facts)
        report.tombstone_seq = ack.seq
        await _settle_core(engine, ack.seq)
        for f in facts:
            with contextlib.suppress(Exception):  # already gone (a concurrent purge): nothing to erase
                await engine.js.delete_msg(engine.streams.facts, f.seq)
        for d in derived:
            with contextlib.suppress(Exception):
                await engine.js.delete_msg(engine.streams.derived, d.seq)
        report.facts_removed, report.derived_removed = len(facts), len(derived)
        report.rebuilt = rb.all_projection_names()
        await rb.rebuild(engine)
        forgotten_ids = [f.event_id for f in (*facts, *derived) if f.event_id]
        await _scrub(engine, report, ids=forgotten_ids, shas=shas, tenant=tenant, threads=threads,
                     dlq_match=lambda _s, ev_id: ev_id in set(forgotten_ids))
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
        await conn.execute("DELETE FROM applied_events WHERE event_id = ANY($1::uuid[])", uuids)
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
    try:
        from engine import working_memory
    except ImportError:  # pragma: no cover - working memory not installed in this build
        return
    for thread in threads:
        with contextlib.suppress(Exception):
            report.kv_keys_removed += int(await working_memory.purge_thread(
                engine.js, tenant, thread, prefix=engine.settings.stream_prefix) or 0)
