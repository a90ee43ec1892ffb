"""The read side: SQL against the read models, answered over NATS request/reply (thin; no domain objects rebuilt).

``QueryService`` holds the queries; ``RpcHandlers`` turns bytes into typed requests and every failure into a typed
error reply; ``ProgressWatcher`` implements read-your-writes (``after_seq``) from the projectors' ``pg_notify``;
``ContextPusher`` publishes context on ``<root>.ctx.<tenant>.<thread>`` for turns that ask for it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import msgspec
import structlog

from engine.context import Budget, Row, assemble, plan_budget
from engine.db import is_transient
from engine.profiles import render_profiles
from engine.protocol import (
    AuditRequest,
    ContextRequest,
    HistoryRequest,
    MemoriesRequest,
    ProfileRequest,
    RpcError,
    ThreadRequest,
    ThreadsRequest,
    encode_error,
    encode_ok,
)
from engine.recall import Recaller, RecallRequest, RecallResult
from engine.runner import PROGRESS_CHANNEL
from engine.working_memory import ScratchpadRequest
from engine.settings import Settings
from events import AnyFact, InvalidToken, Subjects, TurnRecorded, check_token
from projections.tokens import MESSAGE_OVERHEAD, count_tokens, tokenizer_name

log = structlog.get_logger("memengine.query")

#: Read models the context and history answers are built from; read-your-writes waits for these.
CONTEXT_PROJECTIONS = ["thread_activity", "messages"]


class MessageOut(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a context or history reply. ``content`` is the stored block list, spliced verbatim."""

    tier: int
    seq: int
    event_id: str
    role: str
    user_id: str | None
    session_id: str | None
    occurred_at: str
    tokens: int
    condensed: bool
    content: msgspec.Raw


class ContextResult(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.context``: ``mode`` (``full``: everything verbatim; ``tiered``), the ``budget``, tokens used per
    tier, ``messages`` oldest first (Tier 1, then 2, then 3), the ``event_ids`` used, ``applied_seq`` (the
    projections' checkpoint the answer reflects) and ``stale`` (true when ``after_seq`` was not reached in time)."""

    tenant: str
    thread: str
    mode: str
    budget: Budget
    tokens: dict[str, int]
    tokenizer: str
    messages: list[MessageOut]
    event_ids: list[str]
    dropped: int
    applied_seq: int
    stale: bool
    waited_ms: float


class ProgressWatcher:
    """Knows how far the projections have applied the log, across processes (``LISTEN memengine_progress``)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self._conn: asyncpg.Connection | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        try:
            self._conn = await self.pool.acquire()
            await self._conn.add_listener(PROGRESS_CHANNEL, self._on_notify)
        except Exception as exc:  # noqa: BLE001 - polling still works without LISTEN
            log.warning("progress listener unavailable; polling", error=repr(exc))
            self._conn = None

    async def stop(self) -> None:
        if self._conn is not None:
            try:
                await self._conn.remove_listener(PROGRESS_CHANNEL, self._on_notify)
            except Exception:  # noqa: BLE001
                pass
            await self.pool.release(self._conn)
            self._conn = None

    def _on_notify(self, *_: Any) -> None:
        self._changed.set()

    async def applied(self, projections: list[str] = CONTEXT_PROJECTIONS) -> int:
        """The lowest checkpoint among ``projections`` (0 before anything was applied)."""
        v = await self.pool.fetchval(
            "SELECT min(last_seq) FROM projection_checkpoints"
            # partitioned rows (<projection>@p<i>, issue #6) count too: the projection is where its slowest part is
            " WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($1::text[])", projections)
        return int(v or 0)

    async def wait_for(self, seq: int, timeout: float) -> tuple[int, bool]:
        """Wait until the checkpoint reaches ``seq`` or ``timeout`` seconds pass: ``(applied, reached)``."""
        deadline = time.monotonic() + timeout
        while True:
            self._changed.clear()
            applied = await self.applied()
            if applied >= seq:
                return applied, True
            left = deadline - time.monotonic()
            if left <= 0:
                return applied, False
            try:  # woken by a notify; the short cap is a fallback if the LISTEN connection dropped
                await asyncio.wait_for(self._changed.wait(), timeout=min(left, 0.05))
            except asyncio.TimeoutError:
                pass


#: One round trip: token sums over the thread newest-first (narrow columns), keep the rows that can still fit the
#: budget or are among the most recent, then fetch content for those rows only (index lookups).
_CONTEXT_SQL = """
WITH w AS (
    SELECT seq, tokens_full, tokens_condensed,
           sum(tokens_full)      OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS cf,
           sum(tokens_condensed) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS cc,
           row_number()          OVER (ORDER BY seq DESC) AS rn,
           count(*)              OVER () AS total
    FROM messages WHERE tenant_id = $1 AND thread_id = $2
), sel AS (
    SELECT seq, rn, total FROM w
    WHERE cf - tokens_full < $3 OR cc - tokens_condensed < $3 OR rn <= $4
)
SELECT m.seq, m.event_id::text AS event_id, m.role, m.user_id, m.session_id, m.occurred_at,
       m.content::text AS content, m.content_condensed::text AS content_condensed,
       m.tokens_full, m.tokens_condensed, m.tool_use_ids, m.tool_result_ids, sel.rn, sel.total,
       (SELECT min(last_seq) FROM projection_checkpoints
        WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($5::text[])) AS applied
FROM sel CROSS JOIN LATERAL (
    SELECT * FROM messages mm WHERE mm.tenant_id = $1 AND mm.thread_id = $2 AND mm.seq = sel.seq
) m
ORDER BY m.seq
"""


class QueryService:
    """SQL over the read models. Methods take validated requests and return reply structs; they raise
    ``RpcError`` for caller errors (unknown thread) and let infrastructure errors propagate."""

    def __init__(self, pool: asyncpg.Pool, settings: Settings, progress: ProgressWatcher,
                 recaller: Recaller | None = None) -> None:
        self.pool = pool
        self.settings = settings
        self.progress = progress
        self.memory = MemoryQueries(pool)
        self.js: Any = None  # set by attach_nats(): the pruned-history log reader and the working-memory KV
        self.log: Any = None
        self.recaller = recaller or Recaller(pool, None, settings.recall_top_k)

    def attach_nats(self, js: Any, streams: Any, subjects: Subjects) -> None:
        """Give the service JetStream: ``history`` / ``audit`` read pruned turns from the log
        (``engine.transcript``), ``context`` shows the working memory and ``rpc.scratchpad`` serves it."""
        from engine.transcript import FactLog

        self.js = js
        self.log = self.memory.log = FactLog(js, streams, subjects)

    async def _scratch_lines(self, tenant: str, thread: str) -> list[str]:
        """Working-memory lines for Tier 1 (``engine.working_memory``); none when the KV is unreachable."""
        if self.js is None:
            return []
        from engine import working_memory

        try:
            items = await working_memory.entries(self.js, tenant, thread, prefix=self.settings.stream_prefix,
                                                 ttl=self.settings.working_memory_ttl)
        except Exception as exc:  # noqa: BLE001 - context without the scratchpad beats no context (seed 000 §6)
            log.warning("working memory unavailable; context without it", error=repr(exc))
            return []
        return working_memory.render_lines(items)

    async def scratchpad(self, req: Any) -> dict[str, Any]:
        """``rpc.scratchpad`` (``engine.working_memory.handle``)."""
        from engine import working_memory

        if self.js is None:
            raise RpcError("unavailable", "working memory needs JetStream")
        try:
            return await working_memory.handle(self.js, req, prefix=self.settings.stream_prefix,
                                               ttl=self.settings.working_memory_ttl,
                                               max_entries=self.settings.working_memory_max)
        except ValueError as exc:
            raise RpcError("invalid_request", str(exc)) from None

    async def recall(self, req: RecallRequest) -> RecallResult:
        """Hybrid recall over the tenant's turns (``engine.recall``); full-text only without an embedder."""
        applied, _stale, _waited = await self._read_your_writes(req.after_seq, None)
        return await self.recaller.recall(req, applied)

    async def _read_your_writes(self, after_seq: int | None, wait: float | None) -> tuple[int, bool, float]:
        t0 = time.monotonic()
        if after_seq is None:
            return await self.progress.applied(), False, 0.0
        applied, reached = await self.progress.wait_for(
            after_seq, self.settings.ryw_timeout if wait is None else wait)
        return applied, not reached, (time.monotonic() - t0) * 1000

    async def context(self, req: ContextRequest) -> ContextResult:
        """Assemble the thread's context (``engine.context``). ``RpcError("unknown_thread")`` if it has none."""
        if req.after_seq is None:  # the checkpoint comes with the rows: one round trip
            applied, stale, waited = 0, False, 0.0
        else:
            applied, stale, waited = await self._read_your_writes(req.after_seq, req.wait)
        window = req.window or self.settings.window
        budget = plan_budget(window, system_tokens=req.system_tokens, margin_ratio=self.settings.margin_ratio,
                             reserve_ratio=self.settings.output_reserve_ratio)
        async with self.pool.acquire() as conn:
            records = await conn.fetch(_CONTEXT_SQL, req.tenant, req.thread, budget.total,
                                       self.settings.full_recent_count + 1, CONTEXT_PROJECTIONS)
            if not records:
                exists = await conn.fetchval(
                    "SELECT 1 FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2", req.tenant, req.thread)
                if not exists:
                    raise RpcError("unknown_thread", f"no thread {req.thread!r} for tenant {req.tenant!r}")
        if req.after_seq is None:
            applied = records[0]["applied"] if records else await self.progress.applied()
        rows = [Row._make(tuple(r)[:12]) for r in records]
        complete = not records or records[0]["total"] == len(records)  # fetched back to the thread's first turn
        if complete and records and await self._pruned_through(req.tenant, req.thread):
            complete = False  # older turns were pruned (seed 000 §3.1): only Tier 1's summary still holds them
        scratch = await self._scratch_lines(req.tenant, req.thread)
        asm = assemble(rows, budget, full_recent_count=self.settings.full_recent_count, complete=complete)
        tier1 = None
        if asm.mode == "tiered" and budget.tier1 > 0:
            tier1 = await self.memory.tier1(req.tenant, req.thread, req.query, budget.tier1, scratch)
        elif scratch and budget.tier1 > 0:  # full mode: the scratchpad alone, if it fits beside the transcript
            tier1 = fit_tier1(None, [], [], min(budget.tier1, budget.total - asm.tier3_tokens), scratch)
        messages = [
            MessageOut(tier=p.tier, seq=p.row.seq, event_id=p.row.event_id, role=p.row.role, user_id=p.row.user_id,
                       session_id=p.row.session_id, occurred_at=p.row.occurred_at.isoformat(), tokens=p.tokens,
                       condensed=p.tier == 2 and p.row.content_condensed is not None,
                       content=msgspec.Raw(p.content.encode()))
            for p in asm.placed
        ]
        t1 = 0
        if tier1 is not None:
            text, t1 = tier1
            messages.insert(0, MessageOut(
                tier=1, seq=0, event_id="", role="system", user_id=None, session_id=None,
                occurred_at=records[-1]["occurred_at"].isoformat(), tokens=t1, condensed=False,
                content=msgspec.Raw(msgspec.json.encode([{"type": "text", "text": text}]))))
        total = t1 + asm.tier2_tokens + asm.tier3_tokens
        return ContextResult(
            tenant=req.tenant, thread=req.thread, mode=asm.mode, budget=budget,
            tokens={"tier1": t1, "tier2": asm.tier2_tokens, "tier3": asm.tier3_tokens, "total": total},
            tokenizer=tokenizer_name(), messages=messages, event_ids=[m.event_id for m in messages if m.event_id],
            dropped=asm.dropped, applied_seq=applied, stale=stale, waited_ms=round(waited, 3),
        )

    async def history(self, req: HistoryRequest) -> dict[str, Any]:
        """The transcript oldest first: ``{"messages": [...], "next_from_seq": n | None}``."""
        applied, stale, _ = await self._read_your_writes(req.after_seq, req.wait)
        pruned = await self._pruned_through(req.tenant, req.thread)
        from_log: list[dict[str, Any]] = []
        if pruned > req.from_seq and self.log is not None:
            # seed 000 §3.1: pruned turns left the read model, not the log
            from engine.transcript import history_row

            from_log = [history_row(seq, ev) for seq, ev in await self.log.thread_turns(
                req.tenant, req.thread, after_seq=req.from_seq, through_seq=pruned, limit=req.limit + 1)]
        async with self.pool.acquire() as conn:
            records = from_log + await conn.fetch(
                "SELECT seq, event_id::text AS event_id, role, user_id, session_id, occurred_at, content::text AS"
                " content, tokens_full FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq > $3"
                " ORDER BY seq LIMIT $4",
                req.tenant, req.thread, max(req.from_seq, pruned), req.limit + 1 - len(from_log))
            if not records and req.from_seq == 0:
                exists = await conn.fetchval(
                    "SELECT 1 FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2", req.tenant, req.thread)
                if not exists:
                    raise RpcError("unknown_thread", f"no thread {req.thread!r} for tenant {req.tenant!r}")
        more = len(records) > req.limit
        records = records[: req.limit]
        messages = [
            MessageOut(tier=3, seq=r["seq"], event_id=r["event_id"], role=r["role"], user_id=r["user_id"],
                       session_id=r["session_id"], occurred_at=r["occurred_at"].isoformat(), tokens=r["tokens_full"],
                       condensed=False, content=msgspec.Raw(r["content"].encode()))
            for r in records
        ]
        return {"tenant": req.tenant, "thread": req.thread, "messages": messages,
                "next_from_seq": records[-1]["seq"] if more else None, "applied_seq": applied, "stale": stale,
                # where the page came from: turns with seq <= pruned_through_seq are read from the log
                "pruned_through_seq": pruned, "from_log": sum(1 for r in records if r["seq"] <= pruned)}

    async def _pruned_through(self, tenant: str, thread: str) -> int:
        """The thread's prune mark (``message_prune_marks.through_seq``), 0 when nothing was pruned."""
        v = await self.pool.fetchval(
            "SELECT through_seq FROM message_prune_marks WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
        return int(v or 0)

    async def threads(self, req: ThreadsRequest) -> dict[str, Any]:
        """The tenant's threads, most recently active first (seed 000 §2.3 ``GET /api/conversations``)."""
        records = await self.pool.fetch(
            "SELECT thread_id, label, last_active_at, message_count, sessions_ended, last_seq FROM thread_activity"
            " WHERE tenant_id = $1 ORDER BY last_active_at DESC, thread_id LIMIT $2 OFFSET $3",
            req.tenant, req.limit, req.offset)
        return {
            "tenant": req.tenant,
            "threads": [
                {"thread": r["thread_id"], "label": r["label"], "last_active_at": r["last_active_at"].isoformat(),
                 "message_count": r["message_count"], "sessions_ended": r["sessions_ended"],
                 "last_seq": r["last_seq"]}
                for r in records
            ],
        }


Handler = Callable[[bytes], Awaitable[bytes]]


class MemoryQueries:
    """Reads of the derived-memory read models: memories, audit chains, summaries, episodes, and Tier 1."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.log: Any = None  # engine.transcript.FactLog, for source turns that were pruned

    async def memories(self, req: MemoriesRequest) -> dict[str, Any]:
        """Items with their sources (event ids of the turns they came from), newest first."""
        rows = await self.pool.fetch(
            "SELECT i.*, ARRAY(SELECT DISTINCT s.source_event_id::text FROM memory_item_sources s"
            "  WHERE s.tenant_id = i.tenant_id AND s.memory_id = i.memory_id) AS sources"
            " FROM memory_items i WHERE i.tenant_id = $1"
            " AND ($2::text IS NULL OR i.user_id = $2) AND ($3::text IS NULL OR i.thread_id = $3)"
            " AND ($4::text IS NULL OR i.type = upper($4)) AND ($5 = 'all' OR i.status = $5)"
            " ORDER BY i.valid_at DESC, i.memory_id LIMIT $6",
            req.tenant, req.user, req.thread, req.type, req.status, req.limit)
        return {"tenant": req.tenant, "memories": [_memory_row(r) for r in rows]}

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
            "SELECT s.derived_event_id::text AS derived_event_id, s.action, s.source_event_id::text AS source_event_id,"
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
                "occurred_at": r["derived_at"].isoformat() if r["derived_at"] else None, "sources": []})
            if r["source_event_id"] == r["derived_event_id"]:
                continue  # a consolidation change: the derived event is its own evidence
            d["sources"].append({
                "event_id": r["source_event_id"], "seq": r["seq"], "thread": r["thread_id"], "role": r["role"],
                "user_id": r["user_id"], "session_id": r["session_id"],
                "occurred_at": r["occurred_at"].isoformat() if r["occurred_at"] else None, "text": r["text"],
                "metadata": msgspec.json.decode(r["metadata"]) if r["metadata"] else None})
        return {"tenant": req.tenant, "memory": _memory_row(item), "derived_events": list(derived.values())}

    async def profile(self, req: ProfileRequest) -> dict[str, Any]:
        """``{"user", "files": {"MEMORY.md": ..., "USER.md": ...}, "memories": n}`` (``engine.profiles``)."""
        items = (await self.memories(MemoriesRequest(tenant=req.tenant, user=req.user, limit=1000)))["memories"]
        return {"tenant": req.tenant, "user": req.user, "memories": len(items),
                "files": render_profiles(req.user, items)}

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
                    from projections.content import plain_text

                    row.update(seq=seq, thread_id=ev.thread_id, user_id=ev.user_id, session_id=ev.session_id,
                               occurred_at=ev.occurred_at, metadata=msgspec.json.encode(ev.metadata).decode(),
                               role=getattr(ev, "role", type(ev).__name__),
                               text=(plain_text(ev.content) if isinstance(ev, TurnRecorded)
                                     else getattr(ev, "text", None)))
            out.append(row)
        return out

    async def tier1(self, tenant: str, thread: str, query: str | None, budget: int,
                    scratch: list[str] | None = None) -> tuple[str, int] | None:
        """The Tier-1 message of seed 000 §4.4 within ``budget`` tokens, or ``None`` when there is nothing to say:

            [Conversation Summary]
            ...
            [Recallable Topics]: a, b, c
            Use the recall_memory tool to retrieve details about any topic above.

        plus, when ``query`` is given, up to 5 active memories of the thread that match it (seed 001 "读取")."""
        row = await self.pool.fetchrow(
            "SELECT s.summary, ARRAY(SELECT topic FROM memory_topics t WHERE t.tenant_id = $1 AND t.thread_id = $2"
            "  ORDER BY mention_count DESC, last_seen_at DESC, topic LIMIT 20) AS topics"
            " FROM (SELECT 1) one LEFT JOIN conversation_summaries s ON s.tenant_id = $1 AND s.thread_id = $2",
            tenant, thread)
        summary, topics = row["summary"], list(row["topics"])
        memories: list[str] = []
        if query:
            memories = [r["text"] for r in await self.pool.fetch(
                "SELECT text FROM memory_items WHERE tenant_id = $1 AND thread_id = $2 AND status = 'active'"
                " AND to_tsvector('english', text) @@ to_tsquery('english', $3)"
                " ORDER BY ts_rank(to_tsvector('english', text), to_tsquery('english', $3)) DESC, importance DESC"
                " LIMIT 5", tenant, thread, _or_query(query))] if _or_query(query) else []
        if not summary and not topics and not memories and not scratch:
            return None
        return fit_tier1(summary, topics, memories, budget, scratch)


def _or_query(text: str) -> str:
    """A tsquery that ORs the words of ``text`` (plainto_tsquery ANDs them, which rarely matches a question)."""
    words = [w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split() if len(w) > 2]
    return " | ".join(dict.fromkeys(words))


def fit_tier1(summary: str | None, topics: list[str], memories: list[str], budget: int,
              scratch: list[str] | None = None) -> tuple[str, int] | None:
    """Render the Tier-1 text and shrink it to ``budget`` tokens: oldest summary lines go first, then memories,
    then working-memory lines (``scratch``, seed 003 / seed 004 Scratchpad, newest kept), then topics. Returns
    ``(text, tokens)`` or ``None`` if not even the header fits."""
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
        tokens = MESSAGE_OVERHEAD + count_tokens(text)
        if tokens <= budget:
            return text, tokens
        if len(lines) > 1:
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
            "valid_at": r["valid_at"].isoformat(), "invalid_at": r["invalid_at"].isoformat() if r["invalid_at"] else None,
            "superseded_by": r["superseded_by"], "data": msgspec.json.decode(r["data"]) if isinstance(r["data"], str)
            else r["data"], "sources": list(r["sources"])}


class RpcHandlers:
    """Bytes in, bytes out, never an exception: one handler per method (``context``, ``history``, ``threads``)."""

    def __init__(self, service: QueryService, settings: Settings) -> None:
        self.service = service
        self.settings = settings

    def methods(self) -> dict[str, Handler]:
        """Every ``<root>.rpc.<method>``: the one place that says which request type each method takes."""
        mq = self.service.memory
        return {
            "context": self._wrap(ContextRequest, self.service.context),
            "history": self._wrap(HistoryRequest, self.service.history),
            "threads": self._wrap(ThreadsRequest, self.service.threads),
            "memories": self._wrap(MemoriesRequest, mq.memories),
            "audit": self._wrap(AuditRequest, mq.audit),
            "summary": self._wrap(ThreadRequest, mq.summary),
            "episodes": self._wrap(ThreadRequest, mq.episodes),
            "profile": self._wrap(ProfileRequest, mq.profile),
            "recall": self._wrap(RecallRequest, self.service.recall),
            "scratchpad": self._wrap(ScratchpadRequest, self.service.scratchpad),
        }

    def _wrap(self, req_type: type, fn: Callable[[Any], Awaitable[Any]]) -> Handler:
        decoder = msgspec.json.Decoder(req_type)

        async def handle(data: bytes) -> bytes:
            if len(data) > self.settings.max_request_bytes:
                return encode_error("payload_too_large",
                                    f"request of {len(data)} bytes exceeds {self.settings.max_request_bytes}")
            try:
                req = decoder.decode(data)
                check_token("tenant", req.tenant)
                if getattr(req, "thread", None) is not None:
                    check_token("thread", req.thread)
            except InvalidToken as exc:
                return encode_error("invalid_token", str(exc))
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:  # bad UTF-8 in a string
                return encode_error("invalid_request", str(exc))
            try:
                return encode_ok(await fn(req))
            except RpcError as exc:
                return encode_error(exc.code, exc.message)
            except Exception as exc:  # noqa: BLE001 - the process stays up; the caller gets a typed error
                if is_transient(exc):
                    log.warning("query failed: database unavailable", error=repr(exc))
                    return encode_error("unavailable", "the read models are unreachable; retry shortly")
                log.exception("query failed", method=req_type.__name__)
                return encode_error("internal", f"{type(exc).__name__}: {exc}")

        return handle


class ContextPusher:
    """After-commit hook: for each projected ``TurnRecorded`` with ``want_context``, publish the assembled context
    on ``<root>.ctx.<tenant>.<thread>`` (the reply envelope, header ``Memengine-Seq`` = the turn's sequence)."""

    def __init__(self, service: QueryService, nc: Any, subjects: Subjects) -> None:
        self.service = service
        self.nc = nc
        self.subjects = subjects

    async def __call__(self, applied: list[tuple[int, AnyFact]]) -> None:
        for seq, event in applied:
            if not isinstance(event, TurnRecorded) or event.want_context is None:
                continue
            want = event.want_context
            req = ContextRequest(tenant=event.tenant_id, thread=event.thread_id, window=want.window or None,
                                 query=want.query, system_tokens=want.system_tokens)
            try:
                body = encode_ok(await self.service.context(req))
            except RpcError as exc:
                body = encode_error(exc.code, exc.message)
            await self.nc.publish(self.subjects.context(event.tenant_id, event.thread_id), body,
                                  headers={"Memengine-Seq": str(seq), "Memengine-Event-Id": str(event.event_id)})


def json_default(obj: Any) -> Any:  # pragma: no cover - used by the CLI for --json output
    return json.loads(msgspec.json.encode(obj))
