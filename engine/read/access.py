"""The auditor's reads over the access trail (issue #30): which answers a thread was given and exactly what each
held (``served``), how often and where a memory item or turn was used (``usage``), a user's hot memories (seed 002
§6.2) and per-user figures (seed 002 §7).

Reads ``served_answers``, ``memory_access`` and ``turn_access`` (projections/access.py), joined with the memory read
models for provenance: a placed memory item names its type, text, status and the turns it came from (the first
links of ``memengine audit``), a placed turn its thread, sequence, speaker and time.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import asyncpg
import msgspec

from memengine.engine.wire.errors import RpcError

#: hot memories listed per user (seed 002 §6.2 ``limit=20``)
HOT_LIMIT = 20

_LIST = """
SELECT seq, kind, pushed, user_id, query, window_tokens, applied_seq, mode, served_at, jsonb_array_length(items) AS n,
       truncated
  FROM served_answers WHERE tenant_id = $1 AND thread_id = $2
 ORDER BY seq DESC LIMIT $3
"""
_ONE = """
SELECT * FROM served_answers WHERE tenant_id = $1 AND thread_id = $2
   AND ($3::bigint IS NULL OR seq = $3) AND ($4::timestamptz IS NULL OR served_at <= $4)
 ORDER BY seq DESC LIMIT 1
"""
_MEMORIES = """
SELECT i.memory_id, i.type, i.text, i.status, i.user_id, i.thread_id,
       ARRAY(SELECT DISTINCT s.source_event_id::text FROM memory_item_sources s
              WHERE s.tenant_id = i.tenant_id AND s.memory_id = i.memory_id
                AND s.source_event_id <> s.derived_event_id) AS sources
  FROM memory_items i WHERE i.tenant_id = $1 AND i.memory_id = ANY($2::text[])
"""
_TURNS = """
SELECT event_id::text AS event_id, thread_id, seq, speaker, occurred_at FROM memory_vectors
 WHERE tenant_id = $1 AND event_id = ANY($2::uuid[])
"""


def _iso(v: Any) -> str | None:
    return v.isoformat() if v is not None else None


class AccessQueries:
    """Reads of the access read models on ``pool``. Methods raise ``RpcError("unknown_thread")`` /
    ``RpcError("not_found")`` for what is not there."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def served(self, tenant: str, thread: str, *, at: dt.datetime | None = None, seq: int | None = None,
                     limit: int = 50) -> dict[str, Any]:
        """Without ``at`` / ``seq``: the thread's answers, newest first (``limit``). With ``seq`` (the served
        stream's sequence) or ``at`` (the last answer given at or before it): that answer, every item with its
        tier, rank and provenance."""
        if at is None and seq is None:
            rows = await self.pool.fetch(_LIST, tenant, thread, limit)
            return {"tenant": tenant, "thread": thread, "answers": [{
                "seq": r["seq"], "kind": r["kind"], "pushed": r["pushed"], "user": r["user_id"], "query": r["query"],
                "window": r["window_tokens"], "applied_seq": r["applied_seq"], "mode": r["mode"],
                "served_at": _iso(r["served_at"]), "items": r["n"], "truncated": r["truncated"]} for r in rows]}
        r = await self.pool.fetchrow(_ONE, tenant, thread, seq, at)
        if r is None:
            raise RpcError("not_found", f"no answer served in thread {thread!r} of tenant {tenant!r}"
                           + (f" at seq {seq}" if seq is not None else f" at or before {at}"))
        items = msgspec.json.decode(r["items"]) if isinstance(r["items"], str) else r["items"]
        mem_ids = [i[1] for i in items if i[0] == "memory"]
        turn_ids = [i[1] for i in items if i[0] == "turn"]
        mems = {m["memory_id"]: m for m in await self.pool.fetch(_MEMORIES, tenant, mem_ids)} if mem_ids else {}
        turns = {t["event_id"]: t for t in await self.pool.fetch(_TURNS, tenant, _uuids(turn_ids))} if turn_ids \
            else {}
        placed = []
        for kind, iid, tier, rank in items:
            entry: dict[str, Any] = {"kind": kind, "id": iid, "tier": tier, "rank": rank}
            if kind == "memory":
                m = mems.get(iid)
                entry["provenance"] = None if m is None else {
                    "type": m["type"], "text": m["text"], "status": m["status"], "user": m["user_id"],
                    "thread": m["thread_id"], "source_event_ids": list(m["sources"]),
                    "audit": f"memengine audit {iid}"}
            else:
                t = turns.get(iid)
                entry["provenance"] = None if t is None else {
                    "thread": t["thread_id"], "seq": t["seq"], "speaker": t["speaker"],
                    "occurred_at": _iso(t["occurred_at"])}
            placed.append(entry)
        return {"tenant": tenant, "thread": thread, "answer": {
            "seq": r["seq"], "event_id": str(r["event_id"]), "kind": r["kind"], "pushed": r["pushed"],
            "user": r["user_id"], "query": r["query"], "window": r["window_tokens"], "as_of": _iso(r["as_of"]),
            "applied_seq": r["applied_seq"], "mode": r["mode"], "served_at": _iso(r["served_at"]),
            "truncated": r["truncated"], "items": placed}}

    async def usage(self, tenant: str, kind: str, item_id: str, *, recent: int = 10) -> dict[str, Any]:
        """``access_count``, ``last_accessed_at`` (seed 002 §3.1; 0 / ``None`` when never served) and the
        ``recent`` latest answers that placed the item (thread, seq, tier, rank, time)."""
        table, key = ("memory_access", "memory_id") if kind == "memory" else ("turn_access", "event_id")
        row = await self.pool.fetchrow(
            f"SELECT access_count, last_accessed_at FROM {table} WHERE tenant_id = $1 AND {key} = $2",
            tenant, item_id)
        uses = await self.pool.fetch(
            "SELECT thread_id, seq, kind, served_at, e->>2 AS tier, e->>3 AS rank"
            "  FROM served_answers a, jsonb_array_elements(a.items) e"
            " WHERE a.tenant_id = $1 AND a.items @> $2::jsonb AND e->>0 = $3 AND e->>1 = $4"
            " ORDER BY served_at DESC, seq DESC LIMIT $5",
            tenant, msgspec.json.encode([[kind, item_id]]).decode(), kind, item_id, recent)
        return {"access_count": row["access_count"] if row else 0,
                "last_accessed_at": _iso(row["last_accessed_at"]) if row else None,
                "used_in": [{"thread": u["thread_id"], "seq": u["seq"], "kind": u["kind"],
                             "served_at": _iso(u["served_at"]), "tier": int(u["tier"]), "rank": int(u["rank"])}
                            for u in uses]}

    async def hot(self, tenant: str, user: str, limit: int = HOT_LIMIT) -> list[dict[str, Any]]:
        """Seed 002 §6.2 ``get_hot_memories``: the user's items by ``access_count`` descending (ties: the latest
        access first). Read from the folded counters, so no cache is needed to keep it cheap."""
        rows = await self.pool.fetch(
            "SELECT i.memory_id, i.type, i.text, i.status, a.access_count, a.last_accessed_at"
            "  FROM memory_access a JOIN memory_items i ON i.tenant_id = a.tenant_id AND i.memory_id = a.memory_id"
            " WHERE a.tenant_id = $1 AND i.user_id = $2"
            " ORDER BY a.access_count DESC, a.last_accessed_at DESC, i.memory_id LIMIT $3", tenant, user, limit)
        return [{"memory_id": r["memory_id"], "type": r["type"], "text": r["text"], "status": r["status"],
                 "access_count": r["access_count"], "last_accessed_at": _iso(r["last_accessed_at"])} for r in rows]

    async def user_metrics(self, tenant: str, user: str) -> dict[str, Any]:
        """Seed 002 §7 ``MemoryMetrics.collect`` for one user: ``total_memories`` (active), ``by_type``,
        ``avg_importance``, and from the trail ``answers_served`` / ``last_served_at`` and ``hot_memories``.
        Retrieval latency is a process-wide histogram on ``/metrics`` (``memengine_rpc_seconds``), not per user:
        a per-user label would be unbounded."""
        by_type = await self.pool.fetch(
            "SELECT type, count(*) AS n, avg(importance) AS imp FROM memory_items"
            " WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' GROUP BY type ORDER BY type", tenant, user)
        served = await self.pool.fetchrow(
            "SELECT count(*) AS n, max(served_at) AS last FROM served_answers WHERE tenant_id = $1 AND user_id = $2",
            tenant, user)
        total = sum(r["n"] for r in by_type)
        avg = sum(r["imp"] * r["n"] for r in by_type) / total if total else None
        return {"user": user, "total_memories": total, "by_type": {r["type"]: r["n"] for r in by_type},
                "avg_importance": None if avg is None else round(float(avg), 4),
                "answers_served": served["n"], "last_served_at": _iso(served["last"]),
                "hot_memories": await self.hot(tenant, user)}


async def http_view(pool: asyncpg.Pool, admin: bool, tenant: str, what: str, **kw: Any) -> dict[str, Any]:
    """The HTTP API's access routes (``/v1/threads/{thread}/served``, ``/v1/users/{user}/access``): admin keys only,
    in the key's tenant. The trail names every user's answers, and a tenant key may be bound to one user (issue
    #26): until a per-user filter is agreed, only an operator reads it. Raises ``Forbidden`` for other keys,
    ``InvalidToken`` for a bad thread id."""
    from memengine.engine.wire.errors import Forbidden
    from memengine.events import check_token

    if not admin:
        raise Forbidden("the access trail names every user's answers: an admin key is needed")
    q = AccessQueries(pool)
    if what == "served":
        return await q.served(tenant, check_token("thread", kw["thread"]), at=kw.get("at"), seq=kw.get("seq"),
                              limit=kw.get("limit", 50))
    return await q.user_metrics(tenant, kw["user"])


def _uuids(ids: list[str]) -> list[Any]:
    import uuid

    out = []
    for i in ids:
        try:
            out.append(uuid.UUID(i))
        except ValueError:
            continue
    return out
