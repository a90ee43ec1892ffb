"""Reads of the derived-memory read models (``rpc.memories`` / ``audit`` / ``profile`` / ``summary`` /
``episodes``) and the Tier-1 message of the context (``MemoryQueries.tier1``, ``fit_tier1``; seed 000 §4.4).

Replies are dicts today (see each method); caller errors raise ``RpcError`` (``unknown_memory``), infrastructure
errors propagate to ``engine.read.rpc.RpcHandlers``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import asyncpg
import msgspec

from memengine.engine.read.access import AccessQueries
from memengine.engine.read.profiles import render_profiles
from memengine.engine.read.releases import release_later
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.requests import AuditRequest, MemoriesRequest, ProfileRequest, ThreadRequest
from memengine.events import TurnRecorded
from memengine.projections.segment import has_cjk, lexical_text
from memengine.projections.tokens import MESSAGE_OVERHEAD, count_tokens_lines


class MemoryQueries:
    """Reads of the derived-memory read models: memories, audit chains, summaries, episodes, and Tier 1."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.log: Any = None  # engine.transcript.FactLog, for source turns that were pruned
        #: the clock validity is judged by when a request gives none: ``None`` = now; time travel sets the point's
        #: storage time (``engine.cli.options.answer_as_of``), so a fold answers as a reader would have then
        self.clock: datetime | None = None
        #: connections being given back after ``tier1_parts`` (``engine.read.releases``)
        self._releasing: set[asyncio.Task[None]] = set()

    def now(self) -> datetime:
        """The default ``as_of`` of validity (``clock`` or the current time, UTC)."""
        return self.clock or datetime.now(UTC)

    async def memories(self, req: MemoriesRequest) -> dict[str, Any]:
        """Items with their sources (event ids of the turns they came from), newest first.

        Validity is applied when read (issue #15 item 2; seed 004 §4 ``expires_at``, seed 004 §6 search_memory
        "过滤已过期"): with ``status`` ``active`` an item counts only if its status is active and it is still valid at
        ``as_of`` (default ``now()``): ``expires_at`` and ``invalid_at`` unset or later. Consolidation records the
        expiry as an event later (``MemoriesConsolidated``), but a read does not wait for it. ``expired`` lists
        those lapsed active items beside the recorded ones. Reply: ``{"tenant", "memories": [...],
        "expired_left_out": n}`` (the clock is not echoed: the same state answers the same reply)."""
        as_of = req.as_of or self.now()
        if as_of.tzinfo is None:
            as_of = as_of.replace(tzinfo=UTC)
        rows = await self.pool.fetch(
            "SELECT i.*, ARRAY(SELECT DISTINCT s.source_event_id::text FROM memory_item_sources s"
            "  WHERE s.tenant_id = i.tenant_id AND s.memory_id = i.memory_id) AS sources"
            f" FROM memory_items i WHERE {_FILTER} AND CASE $5"
            f"   WHEN 'all' THEN true WHEN 'active' THEN i.status = 'active' AND ($8 OR NOT {_LAPSED})"
            f"   WHEN 'expired' THEN i.status = 'expired' OR (i.status = 'active' AND {_LAPSED})"
            "   ELSE i.status = $5 END"
            " ORDER BY i.valid_at DESC, i.memory_id LIMIT $6",
            req.tenant, req.user, req.thread, req.type, req.status, req.limit, as_of, req.include_expired)
        left_out = 0
        if req.status == "active" and not req.include_expired:
            left_out = await self.pool.fetchval(
                f"SELECT count(*) FROM memory_items i WHERE {_FILTER} AND i.status = 'active'"
                f" AND {_LAPSED.replace('$7', '$5')}", req.tenant, req.user, req.thread, req.type, as_of)
        return {"tenant": req.tenant, "memories": [_memory_row(r) for r in rows], "expired_left_out": left_out}

    async def audit(self, req: AuditRequest) -> dict[str, Any]:
        """memory item -> derived events (type, model, prompt version, decision) -> source turns (text, time)."""
        item = await self.pool.fetchrow(
            "SELECT *, ARRAY[]::text[] AS sources FROM memory_items WHERE tenant_id = $1 AND memory_id = $2",
            req.tenant, req.memory_id)
        if item is None and len(req.memory_id) >= 6:  # the short id printed in MEMORY.md / USER.md lines
            found = await self.pool.fetch(
                "SELECT *, ARRAY[]::text[] AS sources FROM memory_items WHERE tenant_id = $1"
                " AND memory_id LIKE $2 || '%' LIMIT 2", req.tenant, req.memory_id.replace("%", "").replace("_", ""))
            item = found[0] if len(found) == 1 else None
        if item is None:
            raise RpcError("unknown_memory", f"no memory {req.memory_id!r} for tenant {req.tenant!r}")
        links = await self.pool.fetch(
            "SELECT s.derived_event_id::text AS derived_event_id, s.action, s.reason,"
            " s.source_event_id::text AS source_event_id,"
            " d.seq AS derived_seq, d.type, d.model, d.prompt_version, d.occurred_at AS derived_at,"
            " m.seq, m.thread_id, m.role, m.user_id, m.session_id, m.occurred_at, m.text, m.metadata::text AS metadata"
            " FROM memory_item_sources s"
            " LEFT JOIN derived_events d ON d.tenant_id = s.tenant_id AND d.event_id = s.derived_event_id"
            " LEFT JOIN messages m ON m.event_id = s.source_event_id AND m.tenant_id = s.tenant_id"
            " WHERE s.tenant_id = $1 AND s.memory_id = $2 ORDER BY d.seq, m.seq", req.tenant, item["memory_id"])
        derived: dict[str, dict[str, Any]] = {}
        links = await self._resolve_pruned(req.tenant, links)
        for r in links:
            d = derived.setdefault(r["derived_event_id"], {
                "event_id": r["derived_event_id"], "seq": r["derived_seq"], "type": r["type"], "model": r["model"],
                "prompt_version": r["prompt_version"], "action": r["action"],
                "occurred_at": r["derived_at"].isoformat() if r["derived_at"] else None, "sources": [],
                "reason": r["reason"]})
            if r["source_event_id"] == r["derived_event_id"]:
                continue  # a consolidation change: the derived event is its own evidence
            d["sources"].append({
                "event_id": r["source_event_id"], "seq": r["seq"], "thread": r["thread_id"], "role": r["role"],
                "user_id": r["user_id"], "session_id": r["session_id"],
                "occurred_at": r["occurred_at"].isoformat() if r["occurred_at"] else None, "text": r["text"],
                "metadata": msgspec.json.decode(r["metadata"]) if r["metadata"] else None})
        chain = await self.pool.fetch(
            "SELECT r.from_id = $2 AS outgoing, r.relation, r.reason, i.memory_id, i.type, i.text, i.status,"
            " i.valid_at, i.invalid_at FROM memory_relations r JOIN memory_items i ON i.tenant_id = r.tenant_id"
            " AND i.memory_id = CASE WHEN r.from_id = $2 THEN r.to_id ELSE r.from_id END"
            " WHERE r.tenant_id = $1 AND (r.from_id = $2 OR r.to_id = $2) AND r.relation <> 'related'"
            " ORDER BY i.valid_at, i.memory_id", req.tenant, item["memory_id"])
        chained: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        for r in chain:
            chained[r["outgoing"]].append({
                "relation": r["relation"], "memory_id": r["memory_id"], "type": r["type"], "text": r["text"],
                "status": r["status"], "valid_at": r["valid_at"].isoformat() if r["valid_at"] else None,
                "invalid_at": r["invalid_at"].isoformat() if r["invalid_at"] else None, "reason": r["reason"]})
        # how often and where it was used (the access trail, issue #30): access_count, last_accessed_at, used_in
        access = await AccessQueries(self.pool).usage(req.tenant, "memory", item["memory_id"])
        return {"tenant": req.tenant, "memory": _memory_row(item), "derived_events": list(derived.values()),
                "supersedes": chained[True], "superseded_by": chained[False], "access": access}

    async def profile(self, req: ProfileRequest) -> dict[str, Any]:
        """``{"user", "files": {"MEMORY.md": ..., "USER.md": ...}, "memories": n, "expired_left_out": n}``
        (``engine.read.profiles``) from the items ``memories`` counts as active at ``as_of``."""
        got = await self.memories(MemoriesRequest(tenant=req.tenant, user=req.user, limit=1000, as_of=req.as_of,
                                                  include_expired=req.include_expired))
        items = got["memories"]
        return {"tenant": req.tenant, "user": req.user, "memories": len(items),
                "files": render_profiles(req.user, items, expired_left_out=got["expired_left_out"]),
                "expired_left_out": got["expired_left_out"]}

    async def summary(self, req: ThreadRequest) -> dict[str, Any]:
        row = await self.pool.fetchrow(
            "SELECT summary, message_count, covers_until_seq, updated_at, event_id::text AS event_id, model"
            " FROM conversation_summaries WHERE tenant_id = $1 AND thread_id = $2", req.tenant, req.thread)
        topics = await self.pool.fetch(
            "SELECT topic, mention_count, last_seen_at FROM memory_topics WHERE tenant_id = $1 AND thread_id = $2"
            " ORDER BY mention_count DESC, last_seen_at DESC, topic LIMIT 50", req.tenant, req.thread)
        return {"tenant": req.tenant, "thread": req.thread,
                "summary": None if row is None else {**dict(row), "updated_at": row["updated_at"].isoformat()},
                "topics": [{"topic": t["topic"], "mentions": t["mention_count"],
                            "last_seen_at": t["last_seen_at"].isoformat()} for t in topics]}

    async def episodes(self, req: ThreadRequest) -> dict[str, Any]:
        rows = await self.pool.fetch(
            "SELECT episode_id, session_id, summary, goal, outcome, entities, tools_used, started_at, ended_at,"
            " event_id::text AS event_id, cardinality(source_event_ids) AS turns FROM episodes"
            " WHERE tenant_id = $1 AND thread_id = $2 ORDER BY started_at", req.tenant, req.thread)
        return {"tenant": req.tenant, "thread": req.thread, "episodes": [
            {**dict(r), "started_at": r["started_at"].isoformat(), "ended_at": r["ended_at"].isoformat(),
             "entities": list(r["entities"]), "tools_used": list(r["tools_used"])} for r in rows]}

    async def _resolve_pruned(self, tenant: str, links: list[Any]) -> list[Any]:
        """Source facts missing from ``messages`` (pruned turns, explicit memory facts) read from the log by the
        sequence their derived event records (single-fact derivations: ``source_seq_range`` = ``[s, s]``)."""
        if self.log is None or all(r["text"] is not None or r["source_event_id"] == r["derived_event_id"]
                                   for r in links):
            return links
        seqs = {r["event_id"]: r["source_first_seq"] for r in await self.pool.fetch(
            "SELECT event_id::text AS event_id, source_first_seq FROM derived_events WHERE tenant_id = $1"
            " AND event_id = ANY($2::uuid[]) AND source_first_seq = source_last_seq",
            tenant, list({r["derived_event_id"] for r in links}))}
        out = []
        for r in links:
            row = dict(r)
            if row["text"] is None and row["source_event_id"] != row["derived_event_id"]:
                seq = seqs.get(row["derived_event_id"])
                ev = await self.log.at(seq) if seq else None
                if ev is not None and str(ev.event_id) == row["source_event_id"]:
                    from memengine.projections.content import plain_text

                    row.update(seq=seq, thread_id=ev.thread_id, user_id=ev.user_id, session_id=ev.session_id,
                               occurred_at=ev.occurred_at, metadata=msgspec.json.encode(ev.metadata).decode(),
                               role=getattr(ev, "role", type(ev).__name__),
                               text=(plain_text(ev.content) if isinstance(ev, TurnRecorded)
                                     else getattr(ev, "text", None)))
            out.append(row)
        return out

    async def tier1_parts(self, tenant: str, thread: str, query: str | None
                          ) -> tuple[str | None, list[str], list[tuple[str, str, tuple[str, ...]]]]:
        """The thread's own Tier-1 content (seed 000 §4.4): ``(summary, topics, memories)``, ``memories`` as
        ``(memory_id, text, source event ids)`` of up to 5 active items of the thread, valid at ``now()``, that match
        ``query`` (seed 001 "读取"; none without a query); the sources (``memory_item_sources``) let the context leave
        out an item whose turns it places (issue #27, ``engine.read.user_memory.without_placed``)."""
        # one connection for both statements, given back after (engine.read.releases): no pool reset waited for
        # between or after them (issue #27 item 5)
        conn = await self.pool.acquire()
        try:
            row = await conn.fetchrow(
                "SELECT s.summary, ARRAY(SELECT topic FROM memory_topics t WHERE t.tenant_id = $1 AND t.thread_id = $2"
                "  ORDER BY mention_count DESC, last_seen_at DESC, topic LIMIT 20) AS topics"
                " FROM (SELECT 1) one LEFT JOIN conversation_summaries s ON s.tenant_id = $1 AND s.thread_id = $2",
                tenant, thread)
            memories: list[tuple[str, str, tuple[str, ...]]] = []
            if query and _or_query(query):
                memories = [(r["memory_id"], r["text"], tuple(r["src"])) for r in await conn.fetch(
                    "SELECT memory_id, text, ARRAY(SELECT DISTINCT s.source_event_id::text FROM memory_item_sources s"
                    "  WHERE s.tenant_id = i.tenant_id AND s.memory_id = i.memory_id ORDER BY 1) AS src"
                    " FROM memory_items i WHERE tenant_id = $1 AND thread_id = $2"
                    f" AND status = 'active' AND NOT {_LAPSED.replace('$7', '$4')}"
                    " AND memengine_tsv(coalesce(lex_text, text)) @@ to_tsquery('english', $3)"
                    " ORDER BY ts_rank(memengine_tsv(coalesce(lex_text, text)), to_tsquery('english', $3)) DESC,"
                    " importance DESC, memory_id"  # ids come from the log: the same order after a rebuild
                    " LIMIT 5", tenant, thread, _or_query(query), self.now())]
        except BaseException:
            await self.pool.release(conn)
            raise
        release_later(self.pool, conn, self._releasing)
        return row["summary"], list(row["topics"]), memories

    async def tier1(self, tenant: str, thread: str, query: str | None, budget: int,
                    scratch: list[str] | None = None) -> tuple[str, int] | None:
        """The Tier-1 message of seed 000 §4.4 within ``budget`` tokens, or ``None`` when there is nothing to say:

            [Conversation Summary]
            ...
            [Recallable Topics]: a, b, c
            Use the recall_memory tool to retrieve details about any topic above.

        plus, when ``query`` is given, up to 5 active memories of the thread that match it (seed 001 "读取"). The
        context adds the user-memory part to it (``engine.read.user_memory.fit_tier1_with_user``)."""
        summary, topics, memories = await self.tier1_parts(tenant, thread, query)
        if not summary and not topics and not memories and not scratch:
            return None
        return fit_tier1(summary, topics, [t for _, t, _ in memories], budget, scratch)


#: The filters of ``memories``: $1 tenant, $2 user, $3 thread, $4 type (any case).
_FILTER = ("i.tenant_id = $1 AND ($2::text IS NULL OR i.user_id = $2) AND ($3::text IS NULL OR i.thread_id = $3)"
           " AND ($4::text IS NULL OR i.type = upper($4))")
#: An item no longer valid at ``$7`` (as_of): expired (seed 004 §4: ``expires_at`` follows the turn's event time)
#: or invalidated (superseded: ``invalid_at``), whether or not a consolidation has recorded it yet (issue #15).
_LAPSED = "((i.expires_at IS NOT NULL AND i.expires_at <= $7) OR (i.invalid_at IS NOT NULL AND i.invalid_at <= $7))"


def _or_query(text: str) -> str:
    """A tsquery that ORs the words of ``text`` (plainto_tsquery ANDs them, which rarely matches a question): words
    of three letters or more, and CJK words (cut as the fold cuts items, ``projections.segment``; issue #28)."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in lexical_text(text).lower()).split()
             if len(w) > 2 or has_cjk(w)]
    return " | ".join(dict.fromkeys(words))


#: Topics Tier 1 keeps before it gives up summary lines for them (seed 000 §4.4's example lists four): a topic is
#: one or two words pointing at ``recall_memory``, a summary line an old turn's sentence the window does not show
#: (issue #27: at 4K the topics line of 20 held ~90 of Tier 1's ~310 tokens while the summary kept one line)
TOPICS_KEPT = 5
#: without a query: the most mentioned few, so the topic index of seed 000 §4.4 ("长期摘要 + 主题索引") stays in Tier 1
#: and the agent sees what it can recall, while summary lines of old turns take the rest
TOPICS_KEPT_NO_QUERY = 3


def topics_kept(query: str | None) -> int:
    """Topics Tier 1 keeps before summary lines for a request asked with ``query`` (issue #27): ``TOPICS_KEPT``
    with a query (``relevant_first`` puts the topics matching it first: they point at what the agent asks about);
    ``TOPICS_KEPT_NO_QUERY`` without one (``query=""``, or no live question), where the first topics are only the
    most mentioned words of the thread and name what a summary line of an old turn shows: the index stays (seed
    000 §4.4), its tail gives way to summary lines. More topics still come after the summary when the room holds
    both."""
    return TOPICS_KEPT if query and query.strip() else TOPICS_KEPT_NO_QUERY


def fit_tier1(summary: str | None, topics: list[str], memories: list[str], budget: int,
              scratch: list[str] | None = None, *, keep_topics: int = TOPICS_KEPT) -> tuple[str, int] | None:
    """Render the Tier-1 text and shrink it to ``budget`` tokens: topics past the first ``keep_topics`` (default
    ``TOPICS_KEPT``; ``topics_kept``) go first (the least mentioned; ``relevant_first`` puts a query's topics
    ahead), then the oldest summary lines, then memories, then working-memory lines (``scratch``, seed 003 / seed
    004 Scratchpad, newest kept), then the remaining topics. Returns ``(text, tokens)`` or ``None`` if not even the
    header fits."""
    lines = summary.splitlines() if summary else []
    mems, tops, pad = list(memories), list(topics), list(scratch or [])

    def render() -> str:
        parts = []
        if pad:
            parts.append("[Working Memory]\n" + "\n".join(pad))
        if lines:
            parts.append("[Conversation Summary]\n" + "\n".join(lines))
        if mems:
            parts.append("[Relevant Memories]\n" + "\n".join(f"- {m}" for m in mems))
        if tops:
            parts.append(f"[Recallable Topics]: {', '.join(tops)}\n"
                         "Use the recall_memory tool to retrieve details about any topic above.")
        return "\n\n".join(parts)

    while True:
        text = render()
        if not text:
            return None
        tokens = MESSAGE_OVERHEAD + count_tokens_lines(text)
        if tokens <= budget:
            return text, tokens
        if len(tops) > keep_topics:
            tops.pop()
        elif len(lines) > 1:
            lines.pop(0)
        elif mems:
            mems.pop()
        elif pad:
            pad.pop()
        elif len(tops) > 1:
            tops.pop()
        elif lines:
            lines.pop()
        elif tops:
            tops.pop()
        else:
            return None


def _memory_row(r: Any) -> dict[str, Any]:
    return {"memory_id": r["memory_id"], "user_id": r["user_id"], "thread": r["thread_id"], "type": r["type"],
            "text": r["text"], "importance": round(r["importance"], 3), "confidence": round(r["confidence"], 3),
            "tags": list(r["tags"]), "priority": r["priority"],
            "expires_at": r["expires_at"].isoformat() if r["expires_at"] else None, "status": r["status"],
            "valid_at": r["valid_at"].isoformat(),
            "invalid_at": r["invalid_at"].isoformat() if r["invalid_at"] else None,
            "superseded_by": r["superseded_by"], "data": msgspec.json.decode(r["data"]) if isinstance(r["data"], str)
            else r["data"], "sources": list(r["sources"])}
