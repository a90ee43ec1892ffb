"""Memory consolidation: semantic dedupe and merge, decay, delete, demote, expire, compress (one event per run).

Requirements: seed 004 §7 "每日归纳流程" (daily: 语义去重合并 -> compute_decay 衰减 -> importance < 0.1 直接删除 ->
< 0.3 降级为 TRANSIENT -> cleanup_expired 清理过期), seed 004 §4 priorities / ``expires_at`` (PERMANENT is never
deleted), seed 002 §4.1 ``compress_old_memories(days_threshold=90)`` (old memories with ``access_count < 5``, grouped
by type, groups of 3 or more compressed into core memories, the originals archived) and §2.2 (time decay
``exp(-days / 30)``).

Event sourcing: ``plan()`` computes the decision from the read models and a clock (``as_of``); ``run()`` publishes it
as ONE ``MemoriesConsolidated`` derived event listing every change with its reason, and the derived projector applies
it (``projections.memory_items``). The tables change only through that event, so a rebuild reproduces the run
without recomputing it, and nothing is destroyed: merged and compressed items are ``superseded`` (``invalid_at``,
``superseded_by``), deleted and expired ones keep their row with status ``deleted`` / ``expired``.

Choices where the seeds are silent (recorded in the event's ``policy``):

- "access count" is the item's evidence count (rows of ``memory_item_sources``): memengine records no reads as
  events, and evidence is what a rebuild can reproduce;
- decay runs from ``max(updated_at, decayed_at)``: a daily run never decays the same interval twice; PERMANENT items
  do not decay;
- a dedupe merge keeps the item with more evidence, then higher importance, then the older one; it gains the
  duplicate's sources and the higher importance;
- the offline compression is extractive (the group's statements joined, most important first, up to 1,000
  characters); originals stay queryable as ``superseded``.

Every run is also recorded in the ``operations`` table (``engine.ops.operations``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import asyncpg
import msgspec
import structlog

from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.adapters.locks import AdvisoryLock
from memengine.engine.derive import offline
from memengine.engine.derive.policy import (
    COMPRESS_AFTER_DAYS,
    COMPRESS_MAX_EVIDENCE,
    COMPRESS_MIN_GROUP,
    DECAY_DAYS,
    DELETE_BELOW,
    DEMOTE_BELOW,
    PRIORITY_RANK,
    PRIORITY_TTL,
)
from memengine.engine.ops.operations import operation
from memengine.events import (
    ExtractedMemory,
    MemoriesConsolidated,
    MemoryChange,
    MergeDecision,
    derived_event_id,
    encode,
    msg_id,
)
from memengine.events.derived import MemoryType, Priority

log = structlog.get_logger("memengine.consolidate")

MODEL = offline.OFFLINE_MODEL
PROMPT_VERSION = "consolidate-1"


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """Thresholds of one run (seed 004 §7, seed 002 §2.2 / §4.1); recorded in the event."""

    duplicate_similarity: float = offline.DUPLICATE_SIMILARITY
    decay_days: float = DECAY_DAYS  # seed 002: time_decay = exp(-days / 30)
    min_decay_days: float = 1.0  # decay no interval shorter than a day (daily runs)
    delete_below: float = DELETE_BELOW  # seed 004 §7
    demote_below: float = DEMOTE_BELOW  # seed 004 §7
    compress_after_days: float = COMPRESS_AFTER_DAYS  # seed 002 compress_old_memories(days_threshold=90)
    compress_max_evidence: int = COMPRESS_MAX_EVIDENCE  # seed 002: access_count < 5
    compress_min_group: int = COMPRESS_MIN_GROUP  # seed 002: groups under 3 are left alone
    compress_max_chars: int = 1000
    max_changes: int = 2000  # keeps one event under the stream's message size; the rest waits for the next run


class Item(msgspec.Struct, kw_only=True):
    """A memory item as the planner sees it (mutable: the plan mirrors what the fold will do)."""

    memory_id: str
    user_id: str | None
    thread_id: str | None
    type: str
    text: str
    importance: float
    confidence: float
    tags: list[str]
    priority: str
    expires_at: datetime | None
    status: str
    valid_at: datetime
    updated_at: datetime
    decayed_at: datetime | None
    last_event_id: str
    sources: list[str]
    closed: bool = False


class Plan(msgspec.Struct, kw_only=True):
    """``changes`` in fold order, ``created`` items, per-action ``counts``, ``truncated`` when ``max_changes`` cut
    the run short, ``source_event_ids`` (derived events that last changed the items acted on)."""

    changes: list[MemoryChange]
    created: list[ExtractedMemory]
    counts: dict[str, int]
    truncated: bool
    source_event_ids: list[str]


async def load_items(pool: asyncpg.Pool, tenant: str, user: str | None = None) -> list[Item]:
    """Open items (active or quarantined, no ``invalid_at``) of the tenant (or one user), by ``memory_id``."""
    rows = await pool.fetch(
        "SELECT i.memory_id, i.user_id, i.thread_id, i.type, i.text, i.importance, i.confidence, i.tags, i.priority,"
        " i.expires_at, i.status, i.valid_at, i.updated_at, i.decayed_at, i.last_event_id::text AS last_event_id,"
        " ARRAY(SELECT DISTINCT s.source_event_id::text FROM memory_item_sources s WHERE s.tenant_id = i.tenant_id"
        "  AND s.memory_id = i.memory_id ORDER BY 1) AS sources"
        " FROM memory_items i WHERE i.tenant_id = $1 AND ($2::text IS NULL OR i.user_id = $2)"
        " AND i.invalid_at IS NULL AND i.status IN ('active', 'quarantined') ORDER BY i.memory_id", tenant, user)
    return [Item(**{**dict(r), "tags": list(r["tags"]), "sources": list(r["sources"]),
                    "importance": float(r["importance"]), "confidence": float(r["confidence"])}) for r in rows]


def decide(tenant: str, items: Sequence[Item], as_of: datetime, policy: Policy = Policy()) -> Plan:
    """The consolidation decision over ``items`` at ``as_of`` (pure: same input, same plan). Steps in seed 004 §7
    order: dedupe/merge, decay, delete < ``delete_below``, demote < ``demote_below``, expire, then compress
    (seed 002 §4.1). ``items`` are modified to mirror the fold."""
    changes: list[MemoryChange] = []
    created: list[ExtractedMemory] = []
    counts = {a: 0 for a in ("merge", "decay", "delete", "demote", "expire", "compress")}
    touched: dict[str, str] = {}
    by_id = {i.memory_id: i for i in items}

    def add(c: MemoryChange) -> bool:
        if len(changes) >= policy.max_changes:
            return False
        changes.append(c)
        counts[c.action] += 1
        touched.setdefault(c.memory_id, by_id[c.memory_id].last_event_id if c.memory_id in by_id else "")
        return True

    def strength(i: Item) -> tuple[Any, ...]:
        return (len(i.sources), i.importance, -i.valid_at.timestamp(), i.memory_id)

    # 1. semantic dedupe and merge, per user and type, among active items (seed 004 §7 "语义去重合并")
    groups: dict[tuple[str | None, str], list[Item]] = {}
    for i in items:
        if i.status == "active":
            groups.setdefault((i.user_id, i.type), []).append(i)
    for (user, _type), members in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        survivors: list[Item] = []
        for i in sorted(members, key=lambda x: (x.valid_at, x.memory_id)):
            match = None
            for s in survivors:
                same, sim = offline.near_duplicate(s.text, i.text, user)
                if same and sim >= policy.duplicate_similarity:
                    match = (s, sim)
                    break
            if match is None:
                survivors.append(i)
                continue
            s, sim = match
            keep, drop = (s, i) if strength(s) >= strength(i) else (i, s)
            if not add(MemoryChange(memory_id=drop.memory_id, action="merge", superseded_by=keep.memory_id,
                                    reason=f"duplicate of {keep.memory_id} (similarity {sim:.2f})")):
                break
            keep.importance = max(keep.importance, drop.importance)
            keep.sources = sorted(set(keep.sources) | set(drop.sources))
            drop.closed = True
            survivors[survivors.index(s)] = keep

    # 2-5. decay, delete, demote, expire (PERMANENT never decays nor is deleted: seed 004 §4)
    for i in items:
        if i.closed:
            continue
        if i.status == "active" and i.priority != "PERMANENT":
            base = max(i.updated_at, i.decayed_at or i.updated_at)
            days = (as_of - base).total_seconds() / 86400
            if days >= policy.min_decay_days:
                new = round(i.importance * math.exp(-days / policy.decay_days), 4)
                if new < i.importance - 1e-4 and add(MemoryChange(
                        memory_id=i.memory_id, action="decay", importance=new,
                        reason=f"{days:.1f} days since last reinforced: {i.importance:.3f} -> {new:.3f}")):
                    i.importance = new
            if i.importance < policy.delete_below:
                if add(MemoryChange(memory_id=i.memory_id, action="delete",
                                    reason=f"importance {i.importance:.3f} < {policy.delete_below}")):
                    i.closed = True
                continue
            if i.importance < policy.demote_below and i.priority != "TRANSIENT":
                expires = min(x for x in (i.expires_at, as_of + PRIORITY_TTL["TRANSIENT"]) if x is not None)
                if add(MemoryChange(memory_id=i.memory_id, action="demote", priority="TRANSIENT", expires_at=expires,
                                    reason=f"importance {i.importance:.3f} < {policy.demote_below}: "
                                           f"{i.priority} -> TRANSIENT")):
                    i.priority, i.expires_at = "TRANSIENT", expires
        if i.expires_at is not None and i.expires_at <= as_of:
            if add(MemoryChange(memory_id=i.memory_id, action="expire",
                                reason=f"expired at {i.expires_at.isoformat()} ({i.priority})")):
                i.closed = True

    # 6. compress old, rarely reinforced memories (seed 002 §4.1 compress_old_memories)
    old: dict[tuple[str | None, str, str | None], list[Item]] = {}
    for i in items:
        if (not i.closed and i.status == "active" and len(i.sources) < policy.compress_max_evidence
                and (as_of - i.valid_at).total_seconds() >= policy.compress_after_days * 86400):
            old.setdefault((i.user_id, i.type, i.thread_id), []).append(i)
    for (user, mtype, thread), members in sorted(old.items(), key=lambda kv: tuple(x or "" for x in kv[0])):
        if len(members) < policy.compress_min_group:
            continue
        if len(changes) + len(members) > policy.max_changes:
            break
        members.sort(key=lambda x: (-x.importance, x.valid_at, x.memory_id))
        ids = sorted(m.memory_id for m in members)
        new_id = str(derived_event_id(tenant, "compressed", *ids))
        text = _join([m.text for m in members], policy.compress_max_chars)
        priority = max((m.priority for m in members), key=lambda p: PRIORITY_RANK.get(p, 0))
        ttl = PRIORITY_TTL.get(priority)
        sources = sorted({s for m in members for s in m.sources})[:500]
        # a compressed item is a new memory candidate: it passes the inbound gate (issue #26 item 5). Joined
        # statements can say together what none says alone ("Task: ...; Action: ...; Result: ..." is a forged
        # record), and a promoted member's text would otherwise be re-activated under a new id without anyone
        # releasing it; a group whose joined text the gate holds is left as it is (its members stay as they are)
        gated = offline.gate(offline.Candidate(
            memory_type=mtype, text=text, importance=max(m.importance for m in members),
            confidence=max(m.confidence for m in members), tags=[], priority=priority, user_id=user,
            source_event_ids=[], data={}))
        if offline.quarantined(gated):
            continue
        created.append(ExtractedMemory(
            # the members' type and priority are read back from memory_items, written only from decoded events
            memory_id=new_id, user_id=user, memory_type=cast(MemoryType, mtype), text=text,
            importance=max(m.importance for m in members), confidence=max(m.confidence for m in members),
            tags=sorted({t for m in members for t in m.tags})[:16], priority=cast(Priority, priority),
            expires_at=as_of + ttl if ttl else None, dedupe_hash=offline.dedupe_hash(user, text),
            data={"compressed_from": ids[:100], "thread_id": thread},
            status="quarantined" if offline.quarantined(gated) else "active",
            decision=MergeDecision(action="add", target_ids=ids[:100],
                                   reason=f"compressed {len(members)} {mtype} memories older than "
                                          f"{policy.compress_after_days:g} days with < {policy.compress_max_evidence} "
                                          f"sources"),
            source_event_ids=[_uuid(s) for s in sources]))
        for m in members:
            add(MemoryChange(memory_id=m.memory_id, action="compress", superseded_by=new_id,
                             reason=f"compressed into {new_id}"))
            m.closed = True
    return Plan(changes=changes, created=created, counts=counts, truncated=len(changes) >= policy.max_changes,
                source_event_ids=sorted({v for v in touched.values() if v})[:1000])


def _uuid(s: str) -> Any:
    import uuid

    return uuid.UUID(s)


def _join(texts: list[str], limit: int) -> str:
    out: list[str] = []
    size = 0
    for t in texts:
        t = t.strip().rstrip(".")
        if out and size + len(t) + 2 > limit:
            break
        out.append(t)
        size += len(t) + 2
    return "; ".join(out)[:limit]


def build_event(tenant: str, plan: Plan, as_of: datetime, policy: Policy, user: str | None,
                derived_last_seq: int) -> MemoriesConsolidated:
    """The run's ``MemoriesConsolidated`` (thread ``_``: a tenant-level event). Its id is a hash of the decision,
    so publishing the same plan twice stores it once (``Nats-Msg-Id``)."""
    body = msgspec.json.encode([plan.changes, plan.created])
    digest = hashlib.sha256(body).hexdigest()[:32]
    return MemoriesConsolidated(
        event_id=derived_event_id(tenant, "consolidate", user or "*", as_of.isoformat(), digest),
        tenant_id=tenant, thread_id="_", occurred_at=as_of, user_id=user, producer="memengine-consolidate",
        source_event_ids=[_uuid(s) for s in plan.source_event_ids],
        source_seq_range=[1 if derived_last_seq else 0, derived_last_seq], model=MODEL, prompt_version=PROMPT_VERSION,
        as_of=as_of, scope_user=user, policy=msgspec.to_builtins(policy), changes=plan.changes, created=plan.created)


async def run(engine: Any, tenant: str, *, user: str | None = None, as_of: datetime | None = None,
              dry_run: bool = False, policy: Policy = Policy(), wait: float = 60.0) -> dict[str, Any]:
    """Plan, publish ONE ``MemoriesConsolidated`` (nothing when nothing changes or ``dry_run``), wait until the
    derived projector folded it (``wait`` seconds), and record the run in ``operations``.

    ``engine``: an ``engine.bootstrap.Engine`` (pool, js, streams, subjects, derived runner). ``as_of`` defaults to
    now (UTC). Returns ``{"tenant", "user", "as_of", "dry_run", "published", "event_id", "seq", "counts",
    "truncated", "changes": [...], "created": [...], "operation_id"}``. Raises ``TimeoutError`` when the fold does
    not happen in time (the event is published; the projector will apply it)."""
    as_of = (as_of or datetime.now(UTC)).astimezone(UTC)
    async with operation(engine.pool, "consolidate",
                         scope={"tenant": tenant, "user": user, "dry_run": dry_run}) as op:
        derived_last = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
        items = await load_items(engine.pool, tenant, user)
        plan = decide(tenant, items, as_of, policy)
        result: dict[str, Any] = {
            "tenant": tenant, "user": user, "as_of": as_of.isoformat(), "dry_run": dry_run, "published": False,
            "event_id": None, "seq": None, "items_considered": len(items), "counts": plan.counts,
            "truncated": plan.truncated, "changes": msgspec.to_builtins(plan.changes),
            "created": msgspec.to_builtins(plan.created), "operation_id": op.id}
        if (plan.changes or plan.created) and not dry_run:
            ev = build_event(tenant, plan, as_of, policy, user, derived_last)
            ack = await engine.js.publish(engine.subjects.derived(tenant, "_", "MemoriesConsolidated"), encode(ev),
                                          headers={"Nats-Msg-Id": msg_id(tenant, ev.event_id)},
                                          stream=engine.streams.derived)
            result.update(published=not ack.duplicate, event_id=str(ev.event_id), seq=ack.seq)
            await wait_folded(engine, ack.seq, wait)
            if not await engine.pool.fetchval("SELECT 1 FROM derived_events WHERE tenant_id = $1 AND event_id = $2",
                                              tenant, ev.event_id):
                raise RuntimeError(f"consolidation event {ev.event_id} was dead-lettered (see `memengine dlq`)")
        op.detail.update({k: result[k] for k in ("as_of", "published", "event_id", "seq", "items_considered",
                                                  "counts", "truncated")})
    return result


async def wait_folded(engine: Any, seq: int, timeout: float) -> None:
    """Until the derived projections applied MEMORY_DERIVED ``seq``: fold here when this process holds the derived
    projector, else wait for the process that does."""
    from memengine.projections.registry import DERIVED_PROJECTIONS

    if engine.derived.active:
        await engine.derived.catch_up(timeout=timeout)
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    names = [p.name for p in DERIVED_PROJECTIONS]
    while True:
        v = await CheckpointStore(engine.pool).low(names)
        if (v or 0) >= seq:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"derived projections at {v}, consolidation event at {seq}")
        await asyncio.sleep(0.05)


async def schedule(engine: Any, stop: asyncio.Event, interval: float) -> None:
    """``memengine up``: consolidate every tenant every ``interval`` seconds (``MEMENGINE_CONSOLIDATE_INTERVAL``,
    default daily; the first run one interval after start). One process runs it per deployment (advisory lock);
    a failed run is logged and retried at the next tick."""
    lock = AdvisoryLock(engine.pool, "consolidate")
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
        if stop.is_set():
            return
        try:
            if not await lock.acquire():
                continue
            try:
                tenants = [r["tenant_id"] for r in await engine.pool.fetch(
                    "SELECT DISTINCT tenant_id FROM memory_items WHERE invalid_at IS NULL ORDER BY 1")]
                for tenant in tenants:
                    res = await run(engine, tenant)
                    log.info("scheduled consolidation", tenant=tenant, counts=res["counts"], event_id=res["event_id"])
            finally:
                await lock.release()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the schedule survives; the operations row says what failed
            log.warning("scheduled consolidation failed", error=repr(exc))
