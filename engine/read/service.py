"""The query service: SQL against the read models for ``rpc.context`` / ``history`` / ``threads`` / ``recall`` /
``scratchpad`` (thin; no domain objects rebuilt).

``QueryService`` takes validated requests (``engine.wire.requests`` / ``engine.wire.replies``) and returns replies; the
derived-memory reads are its ``memory`` (``engine.read.memories.MemoryQueries``), read-your-writes waits go through a
``engine.read.progress.ProgressWatcher``. Bytes in and out are ``engine.read.rpc``'s job, pushed context
``engine.read.push``'s.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any

import asyncpg
import msgspec
import structlog

from memengine.engine.adapters.settings import Settings
from memengine.engine.read.context import Assembly, Row, assemble, plan_budget, relevant_first, tier1_room
from memengine.engine.read.context_cache import Tier1Cache
from memengine.engine.read.context_query import live_query, pruned_tail, relevant_rows
from memengine.engine.read.context_sql import CONTENT_SQL, CONTEXT_SQL, THREAD_USER_SQL
from memengine.engine.read.crosslingual import lexical_question
from memengine.engine.read.memories import MemoryQueries, topics_kept
from memengine.engine.read.progress import CONTEXT_PROJECTIONS, RECALL_READ_PROJECTIONS, ProgressWatcher, Ryw
from memengine.engine.read.publish_checks import PublishChecks
from memengine.engine.read.recall import Recaller
from memengine.engine.read.releases import fetch_released, release_later
from memengine.engine.read.reply_parts import cancel_all, message_out
from memengine.engine.read.user_memory import (
    CORE_LIMIT,
    KEY_IMPORTANCE,
    MORE_LIMIT,
    RELEVANT_LIMIT,
    TURN_LIMIT,
    TURN_SCAN,
    USER_MEMORY_SQL,
    ThreadMemory,
    Tier1,
    UserMemory,
    build,
    fit_sure_first,
    fit_tier1_with_user,
    refit_tier1,
    sure_part,
    thread_user,
    unrestated,
    unrestated_text,
    unrestated_tier1,
)
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.replies import (
    ContextResult,
    DedupKeyReply,
    MessageOut,
    PublishedReply,
    RecallResult,
    UserMemoryOut,
)
from memengine.engine.wire.requests import (
    ContextRequest,
    DedupKeyRequest,
    HistoryRequest,
    PublishedRequest,
    RecallRequest,
    ThreadsRequest,
)
from memengine.events import Subjects
from memengine.projections.tokens import count_tokens_lines, tokenizer_name

log = structlog.get_logger("memengine.query")

#: Assemblies of one request before ``rpc.context`` answers ``unavailable``: each retry follows a commit that deleted a
#: placed row between the two statements (a prune or withdrawal), so a second is already rare.
_CONTENT_TRIES = 3

#: Placeholders in a window row until its content is fetched (``CONTENT_SQL``): never sent, only tested by identity.
_NO_CONTENT, _NO_CONDENSED = "\x00no content", "\x00no condensed"

#: Rows summed by the first try of ``CONTEXT_SQL`` per budget token for a thread not seen before: a row costs at
#: least this many condensed tokens in a typical transcript, so one scan usually covers every row that can fit (a
#: thread of cheaper rows, e.g. thinking-only turns whose condensed form is empty, takes another, wider scan).
_SCAN_PER_TOKEN = 1 / 8
_SCAN_MIN = 256
#: Scan sizes remembered (``QueryService._scan_hint``): per thread and budget, the rows that qualified last time.
_SCAN_HINTS = 16_384
#: ``CONTEXT_SQL``'s ``$7`` (Tier 2's share) for a window fetched whole: more than any sum of a thread's tokens
_WHOLE = 2**53

_new = tuple.__new__


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
        #: the working-memory bucket mirrored in process (``engine.read.working_mirror``), set by attach_nats()
        self.working: Any = None
        self.log: Any = None
        self.publish_checks: PublishChecks | None = None  # rpc.published / rpc.dedup_key, set by attach_nats()
        self.recaller = recaller or Recaller(pool, None, settings.recall_top_k)
        #: the user-memory part of Tier 1 (issue #18); a bench turns it off to measure what it costs
        self.user_memory = settings.context_user_memory
        #: Tier-1 parts keyed by request, served while no projector committed (``engine.read.context_cache``)
        self.tier1_cache = Tier1Cache()
        #: rows the window statement selected last time, per (tenant, thread, budget, recent count): its next scan's
        #: size (``_window``); only a cost hint, never a result (a short scan is widened until it is exact)
        self._scan_hint: OrderedDict[tuple[str, str, int, int], int] = OrderedDict()
        #: connections being given back to the pool after their request answered (``engine.read.releases``)
        self._releasing: set[asyncio.Task[None]] = set()
        #: the access trail (``engine.read.trail.AccessTrail``, issue #30): each answer queued after it is built
        self.trail: Any = None

    def attach_nats(self, js: Any, streams: Any, subjects: Subjects) -> None:
        """Give the service JetStream: ``history`` / ``audit`` read pruned turns from the log
        (``engine.read.transcript``), ``context`` shows the working memory and ``rpc.scratchpad`` serves it."""
        from memengine.engine.read.transcript import FactLog
        from memengine.engine.read.working_mirror import WorkingMemoryMirror

        self.js = js
        self.log = self.memory.log = FactLog(js, streams, subjects)
        self.publish_checks = PublishChecks(js, streams, subjects)
        self.working = WorkingMemoryMirror(js, prefix=self.settings.stream_prefix,
                                           ttl=self.settings.working_memory_ttl)

    async def close(self) -> None:
        """Stop what ``attach_nats`` started (the working-memory mirror's watch)."""
        if self.working is not None:
            await self.working.close()

    def _mirrored_lines(self, tenant: str, thread: str) -> list[str] | None:
        """Working-memory lines for Tier 1 from the in-process mirror of the bucket (``engine.read.working_mirror``),
        without a round trip; ``None`` when it cannot answer (not in step yet): read the KV (``_scratch_lines``)."""
        if self.working is None:
            return None
        try:
            lines: list[str] | None = self.working.lines(tenant, thread)
            return lines
        except Exception as exc:  # noqa: BLE001 - the direct read decides (and logs) what the context shows
            log.warning("working-memory mirror failed; reading the KV", error=repr(exc))
            return None

    async def _scratch_lines(self, tenant: str, thread: str) -> list[str]:
        """Working-memory lines for Tier 1 read from the KV (``engine.derive.working_memory``); none when the KV
        is unreachable."""
        if self.js is None:
            return []
        from memengine.engine.derive import working_memory

        try:
            items = await working_memory.entries(self.js, tenant, thread, prefix=self.settings.stream_prefix,
                                                 ttl=self.settings.working_memory_ttl)
        except Exception as exc:  # noqa: BLE001 - context without the scratchpad beats no context (seed 000 §6)
            log.warning("working memory unavailable; context without it", error=repr(exc))
            return []
        return working_memory.render_lines(items)

    async def scratchpad(self, req: Any) -> dict[str, Any]:
        """``rpc.scratchpad`` (``engine.derive.working_memory.handle``)."""
        from memengine.engine.derive import working_memory

        if self.js is None:
            raise RpcError("unavailable", "working memory needs JetStream")
        try:
            reply = await working_memory.handle(self.js, req, prefix=self.settings.stream_prefix,
                                                ttl=self.settings.working_memory_ttl,
                                                max_entries=self.settings.working_memory_max)
        except ValueError as exc:
            raise RpcError("invalid_request", str(exc)) from None
        if req.op != "get" and self.working is not None:
            # a context requested after this reply shows the write (engine.read.working_mirror "Freshness")
            await self.working.caught_up()
        return reply

    async def published(self, req: PublishedRequest) -> PublishedReply:
        """``rpc.published``: is the fact at ``req.seq`` the tenant's own (``engine.read.publish_checks``)."""
        if self.publish_checks is None:
            raise RpcError("unavailable", "checking a publish needs JetStream")
        return await self.publish_checks.published(req)

    async def dedup_key(self, req: DedupKeyRequest) -> DedupKeyReply:
        """``rpc.dedup_key``: the tenant's dedup key (``engine.read.publish_checks``)."""
        if self.publish_checks is None:
            raise RpcError("unavailable", "the dedup key needs JetStream")
        return await self.publish_checks.dedup_key(req)

    async def recall(self, req: RecallRequest, ryw: Ryw | None = None) -> RecallResult:
        """Hybrid recall over the tenant's turns (``engine.read.recall``); full-text only without an embedder.
        ``ryw``: the outcome of the ``after_seq`` wait if the caller already waited (``RpcHandlers``)."""
        applied, _stale, _waited = ryw or await self._read_your_writes(req.after_seq, None, RECALL_READ_PROJECTIONS)
        res = await self.recaller.recall(req, applied)
        if self.trail is not None:  # issue #30: queued, published off the hot path
            self.trail.recall(req, res)
        return res

    async def read_your_writes(self, req: Any) -> Ryw | None:
        """Wait for ``req.after_seq`` (``req.wait`` seconds, default ``MEMENGINE_RYW_TIMEOUT``): ``(applied, stale,
        waited_ms)``, or ``None`` when the request names no ``after_seq``. Holds no connection while it waits."""
        if getattr(req, "after_seq", None) is None:
            return None
        # each answer waits for the read models it is built from: recall reads memory_vectors (its own projector)
        projections = RECALL_READ_PROJECTIONS if isinstance(req, RecallRequest) else CONTEXT_PROJECTIONS
        return await self._read_your_writes(req.after_seq, getattr(req, "wait", None), projections)

    async def _read_your_writes(self, after_seq: int | None, wait: float | None,
                                projections: list[str] = CONTEXT_PROJECTIONS) -> Ryw:
        t0 = time.monotonic()
        if after_seq is None:
            return await self.progress.applied(projections), False, 0.0
        applied, reached = await self.progress.wait_for(
            after_seq, self.settings.ryw_timeout if wait is None else wait, projections)
        return applied, not reached, (time.monotonic() - t0) * 1000

    async def context(self, req: ContextRequest, ryw: Ryw | None = None) -> ContextResult:
        """Assemble the thread's context (``engine.read.context``). ``RpcError("unknown_thread")`` if it has none.
        ``ryw``: the outcome of the ``after_seq`` wait if the caller already waited (``RpcHandlers``)."""
        for _ in range(_CONTENT_TRIES):
            # None: a placed row was deleted (pruned, withdrawn) between the window statement and its content fetch;
            # the next try sees the read model after that commit
            res = await self._context_once(req, ryw)
            if res is not None:
                return res
        raise RpcError("unavailable", f"thread {req.thread!r} kept losing placed turns while its context was read;"
                       " retry")

    async def _context_once(self, req: ContextRequest, ryw: Ryw | None) -> ContextResult | None:
        if req.after_seq is None:  # the checkpoint comes with the rows: one round trip
            applied, stale, waited = 0, False, 0.0
        else:
            applied, stale, waited = ryw or await self._read_your_writes(req.after_seq, req.wait)
        window = req.window or self.settings.window
        budget = plan_budget(window, system_tokens=req.system_tokens, margin_ratio=self.settings.margin_ratio,
                             reserve_ratio=self.settings.output_reserve_ratio)
        # issue #14: the query's recall runs beside the window's fetch (context latency = max of the two + a fetch);
        # no query given (None, not ""): the thread's latest user turn is the query (issue #27 item 2)
        live = req.query is None and self.settings.context_live_query
        query_task: asyncio.Task[str | None] | None = None  # the live question, read first (issue #27 item 5)
        rel_task = None
        if (live or (req.query and req.query.strip())) and budget.tier2 > 0:
            if live:
                query_task = asyncio.create_task(live_query(self.pool, req.tenant, req.thread))
            rel_task = asyncio.create_task(relevant_rows(self.recaller, req, live=query_task))
        # the working memory (NATS KV, not a read model): from the in-process mirror of the bucket, else a KV read
        # beside the window statement, overlapped (issue #13 item 3; not the statement's generation rule: no projector)
        scratch: list[str] | None = None
        scratch_task = None
        if self.js is not None and budget.tier1 > 0:
            scratch = self._mirrored_lines(req.tenant, req.thread)
            if scratch is None:
                scratch_task = asyncio.create_task(self._scratch_lines(req.tenant, req.thread))
        try:
            records = await self._window(req, budget, whole=rel_task is not None)
        except BaseException:
            await cancel_all(query_task, rel_task, scratch_task)
            raise
        if req.after_seq is None:
            applied = records[0]["applied"] if records else await self.progress.applied()
        # tuple.__new__: a Row without NamedTuple's Python-level constructor (~212 a request at 8K)
        rows = [_new(Row, (r[0], r[9] or "", r[1], r[2], r[10], r[11], _NO_CONTENT if r[12] is None else r[12],
                           (_NO_CONDENSED if r[13] is None else r[13]) if r[3] else None, r[4], r[5], r[6], r[7]))
                for r in records]
        complete = not records or records[0]["total"] == len(records)  # fetched back to the thread's first turn
        # issue #27 item 5: with the query known (given, or the live question read), Tier 1's statements (the
        # thread's parts, the user-memory part) run while the query's recall still does: they read the query and
        # the thread's user, not the recalled rows, so the context costs one recall more than without a query,
        # not one recall plus them. The user-memory part starts early only where the window names the thread's user
        # (a user turn with a user id: older rows the recall adds cannot change it); else it runs after, as before.
        parts_task = mem_task = None
        if budget.tier1 > 0 and rel_task is not None:
            try:
                query = await query_task if query_task is not None else req.query
            except BaseException:
                await cancel_all(rel_task, scratch_task)
                raise
            early = msgspec.structs.replace(req, query=query) if query != req.query else req
            generation = records[0]["generation"] if records else None
            if not complete:  # tiered for sure (`full` needs the whole thread): the thread's parts are shown
                parts_task = asyncio.create_task(self._thread_parts(early, generation))
            if self.user_memory and query and (req.bound_user is not None
                                               or any(r.role == "user" and r.user_id for r in rows)):
                mem_task = asyncio.create_task(self._user_memory(early, rows, complete, generation))
        mark = await self._pruned_through(req.tenant, req.thread) if complete and records else 0
        if mark:
            complete = False  # older turns were pruned (seed 000 §3.1): not the whole thread, never `full`
            # the live transcript is all fetched and shorter than the budget: the pruned turns recall keeps fill
            # the rest, newest first (issue #27: pruning keeps the transcript small, the context does not forget)
            rows = await pruned_tail(self.pool, req.tenant, req.thread, mark,
                                     budget.total - sum(r.tokens_condensed for r in rows)) + rows
        relevant: list[int] = []
        if rel_task is not None:
            try:
                query, relevant, extra = await rel_task
            except BaseException:
                await cancel_all(scratch_task, parts_task, mem_task)
                raise
            if query != req.query:  # the live question: Tier 1's topics and user memory are ranked for it too
                req = msgspec.structs.replace(req, query=query)
            if extra:  # older relevant turns beyond the fetched window, with their neighbours and tool partners
                have = {r.seq for r in rows}
                rows = sorted(rows + [r for r in extra if r.seq not in have], key=lambda r: r.seq)
        scratch = await scratch_task if scratch_task is not None else scratch or []
        asm = assemble(rows, budget, full_recent_count=self.settings.full_recent_count, complete=complete,
                       relevant=relevant)
        newest: Any = None  # the newest window row's time (the Tier-1 message's)
        if records:
            filled = await self._with_content(req, rows, asm, budget.tier1 > 0 and self.user_memory)
            if filled is None:
                await cancel_all(rel_task, scratch_task, parts_task, mem_task)
                return None
            rows, asm, newest = filled
        tier1: Tier1 | None = None
        if budget.tier1 > 0:
            generation = records[0]["generation"] if records else None
            mem = (await mem_task if mem_task is not None
                   else await self._user_memory(req, rows, complete, generation))
            parts = await parts_task if parts_task is not None else None
            if asm.mode == "tiered":
                if parts is None:
                    parts = await self._thread_parts(req, generation)
                summary, topics, mems = parts  # issue #27: no summary line nor item restating a placed turn
                summary, mem, mems = unrestated_tier1(summary, mem, mems, rows, asm)
                shown = {ln.ref for ln in mem.lines} if mem is not None else set()
                # an item of the thread's user shows once, in the user-memory part; topics matching the query first
                own = [t for i, t, _ in mems if i not in shown]
                tier1 = fit_tier1_with_user(summary, relevant_first(topics, req.query), own, tier1_room(asm, budget),
                                            scratch, mem, keep_topics=topics_kept(req.query))
            else:  # full mode: the scratchpad and the user's memory, if they fit beside the transcript
                tier1 = fit_tier1_with_user(None, [], [], tier1_room(asm, budget), scratch, mem)
        claimed = tier1.tokens if tier1 is not None else 0
        if relevant and asm.mode == "tiered" and asm.dropped and tier1 is not None and (summary or topics or own):
            # recalled turns before Tier 1's filler (summary, topics, the thread's own memories; issue #27): down
            # to the floor, the working memory and the user part's sure lines (engine.read.user_memory.sure_part)
            kept = sure_part(mem, budget.tier1) if tier1.user is not None else None
            floor = sure.tokens if (sure := fit_tier1_with_user(None, [], [], claimed, scratch, kept)) else 0
            if floor < claimed:
                filled = await self._with_content(req, rows, assemble(
                    rows, budget, full_recent_count=self.settings.full_recent_count, complete=complete,
                    relevant=relevant, tier1_floor=floor), False)
                if filled is None:
                    return None
                rows, asm, _ = filled
                if tier1_room(asm, budget) < claimed:  # the turns took some: Tier 1 without filler nor restatements
                    kept, left = unrestated(kept, mems, {p.row.event_id for p in asm.placed})
                    own = [t for i, t, _ in left if i not in shown]
                    tier1 = fit_sure_first(own, tier1_room(asm, budget), scratch, kept)  # own: what is left
                    claimed = tier1.tokens if tier1 is not None else 0
        if asm.mode == "tiered" and claimed < budget.tier1 and asm.dropped:
            # Tier 1 took less than its share: Tier 2 takes the rest (issue #27 item 1), placed again
            filled = await self._with_content(req, rows, assemble(
                rows, budget, full_recent_count=self.settings.full_recent_count, complete=complete,
                relevant=relevant, tier1_claim=claimed), False)
            if filled is None:
                return None
            rows, asm, _ = filled  # Tier 2 reached further back: Tier 1 again, with no line restating it
            tier1 = (refit_tier1(parts, mem, tier1, rows, asm, tier1_room(asm, budget), scratch, req.query)
                     if not relevant and parts is not None else unrestated_text(tier1, rows, asm))
        messages = [message_out(p) for p in asm.placed]
        t1 = 0
        user_out = None
        thread_mems: list[str] = []  # the thread's memory items the Tier-1 text shows (the access trail's)
        if tier1 is not None:
            text, t1, placed = tier1
            if asm.mode == "tiered":
                thread_mems = [i for i, t, _ in mems if i not in shown and t in text]
            if placed is not None:
                user_out = UserMemoryOut(
                    user=mem.user if mem else "", tokens=count_tokens_lines(placed.text),
                    memory_ids=[ln.ref for ln in placed.lines if ln.kind != "turn"],
                    event_ids=[ln.ref for ln in placed.lines if ln.kind == "turn"], left_out=placed.left_out)
            messages.insert(0, MessageOut(
                tier=1, seq=0, event_id="", role="system", user_id=None, session_id=None,
                occurred_at=newest.isoformat(), tokens=t1, condensed=False,
                content=msgspec.Raw(msgspec.json.encode([{"type": "text", "text": text}]))))
        total = t1 + asm.tier2_tokens + asm.tier3_tokens
        result = ContextResult(
            tenant=req.tenant, thread=req.thread, mode=asm.mode, budget=budget,
            tokens={"tier1": t1, "tier2": asm.tier2_tokens, "tier3": asm.tier3_tokens, "total": total},
            tokenizer=tokenizer_name(), messages=messages, event_ids=[m.event_id for m in messages if m.event_id],
            dropped=asm.dropped, applied_seq=applied, stale=stale, waited_ms=round(waited, 3), user_memory=user_out,
        )
        if self.trail is not None:  # issue #30: queued, published off the hot path
            self.trail.context(req, result, thread_mems)
        return result

    async def _thread_parts(self, req: ContextRequest, generation: str | None
                            ) -> tuple[str | None, list[str], list[ThreadMemory]]:
        """The thread's own Tier-1 parts for ``req.query`` (``MemoryQueries.tier1_parts``), from the Tier-1 cache
        while the read models' ``generation`` is unchanged."""
        key = ("thread", req.tenant, req.thread, req.query, self.memory.clock)
        # the cache holds what tier1_parts returned for this key (typed here: its values are Any)
        parts: tuple[str | None, list[str], list[ThreadMemory]] | None = self.tier1_cache.get(key, generation)
        if parts is None:
            parts = await self.memory.tier1_parts(req.tenant, req.thread, req.query)
            self.tier1_cache.put(key, generation, parts)
        return parts

    async def _with_content(self, req: ContextRequest, rows: list[Row], asm: Assembly,
                            user_text: bool) -> tuple[list[Row], Assembly, Any] | None:
        """``rows`` and ``asm`` with the content, event id, session and time of every placed window row (and, when
        ``user_text``, of the latest user turn that names a user: ``thread_user`` ranks by its text): what the window
        statement left out is fetched in one more (``CONTENT_SQL``), none when nothing was. Placement never reads
        content, so it is the placement of the full rows (issue #13 item 3). ``None`` when a row asked for is gone
        (deleted by a projector since the window statement): the caller assembles again. Third: the time of the newest
        window row."""
        full: list[int] = []
        condensed: list[int] = []
        for p in asm.placed:
            if p.tier == 2 and p.row.content_condensed is not None:
                if p.row.content_condensed is _NO_CONDENSED:
                    condensed.append(p.row.seq)
            elif p.row.content is _NO_CONTENT:
                full.append(p.row.seq)
        if user_text:
            for r in reversed(rows):
                if r.role == "user" and r.user_id:
                    if r.content is _NO_CONTENT:
                        full.append(r.seq)
                    break
        # the newest window row (rn 1, always fetched whole; relevant rows from beyond the window are older)
        newest_at = rows[-1].occurred_at
        if not full and not condensed:
            return rows, asm, newest_at
        # after assembly, on the answer's path: not the connection's reset too (engine.read.releases)
        got = {c[0]: c for c in await fetch_released(self.pool, self._releasing, CONTENT_SQL, req.tenant, req.thread,
                                                     full, condensed)}
        if len(got) < len({*full, *condensed}):
            return None

        def filled(r: Row) -> Row:
            c = got.get(r.seq)
            if c is None:
                return r
            return r._replace(event_id=c[1], session_id=c[2], occurred_at=c[3],
                              content=c[4] if c[4] is not None else r.content,
                              content_condensed=c[5] if c[5] is not None else r.content_condensed)

        rows = [filled(r) for r in rows]
        placed = [p._replace(row=filled(p.row)) for p in asm.placed]
        return rows, msgspec.structs.replace(asm, placed=placed), newest_at

    async def _window(self, req: ContextRequest, budget: Any, whole: bool = False) -> list[Any]:
        """The thread's newest rows that can still fit ``budget`` (``CONTEXT_SQL``), oldest first;
        ``RpcError("unknown_thread")`` when the thread has no turns and no activity row. ``whole``: every row with
        the content it may show (``CONTEXT_SQL``'s Tier-2 estimate made unbounded): with a query the statement runs
        beside the recall, the content fetch after assembly (``_with_content``) on the answer's path (issue #27).

        Exact, not an estimate: the rows' "still fits" test is monotone newest-first (token sums only grow), so when
        the newest ``limit`` rows do not all pass it no older row can; when they all do, the scan is repeated four
        times as wide. ``limit`` starts at what qualified in this thread last time (``_scan_hint``) plus a margin."""
        recent = self.settings.full_recent_count + 1
        key = (req.tenant, req.thread, budget.total, recent)
        hint = self._scan_hint.get(key)
        # a thread seen before: the rows that qualified last time plus a margin for what arrived since (the scan
        # costs what it sums: 281 rows where 212 qualify, 1.3 ms p50 against 1.7 for 775); else the budget's estimate
        limit = (max(recent, hint + hint // 4 + 16) if hint is not None
                 else max(_SCAN_MIN, int(budget.total * _SCAN_PER_TOKEN), recent))
        conn = await self.pool.acquire()
        try:
            while True:
                records: list[Any] = await conn.fetch(CONTEXT_SQL, req.tenant, req.thread, budget.total, recent,
                                                      CONTEXT_PROJECTIONS, limit, _WHOLE if whole else budget.tier2)
                if not records or records[0]["total"] < limit or len(records) < limit:
                    break
                limit *= 4  # every one of the newest `limit` rows may still fit: older ones may too
            if not records:
                exists = await conn.fetchval(
                    "SELECT 1 FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2", req.tenant, req.thread)
                if not exists:
                    raise RpcError("unknown_thread", f"no thread {req.thread!r} for tenant {req.tenant!r}")
        except BaseException:
            await self.pool.release(conn)
            raise
        release_later(self.pool, conn, self._releasing)
        self._scan_hint[key] = len(records)
        self._scan_hint.move_to_end(key)
        if len(self._scan_hint) > _SCAN_HINTS:
            self._scan_hint.popitem(last=False)
        return records

    async def _user_memory(self, req: ContextRequest, rows: list[Row], complete: bool,
                           generation: str | None = None) -> UserMemory | None:
        """The candidates of the user-memory part (``engine.read.user_memory``) for the thread's user, ranked for
        ``req.query`` or the latest user turn; ``None`` when the part is switched off
        (``MEMORY_CONTEXT_USER_MEMORY``) or no turn of the thread names a user (``rows``: the fetched window,
        ``complete``: it is the whole thread). One statement; a user's items and turns only, never another user's
        (seed 001: ``user_id`` is the isolation key). ``generation``: the read models' state (``CONTEXT_SQL``); the
        candidates of an earlier request under the same state are reused (``engine.read.context_cache``)."""
        if not self.user_memory:
            return None
        user, latest = thread_user(rows)
        if req.bound_user is not None:
            # issue #26 item 4: a bound request shows its own user's memory (the thread's owner,
            # engine.read.scope), never that of whoever spoke last in the thread
            latest = latest if user == req.bound_user else None
            user = req.bound_user
        if user is None and rows and not complete:
            row = await self.pool.fetchrow(THREAD_USER_SQL, req.tenant, req.thread, rows[0].seq)
            if row is None:
                return None
            user, latest = row["user_id"], row["text"]
        if user is None:  # an anonymous thread: no one's memory to show
            return None
        key = ("user", req.tenant, req.thread, user, req.query or latest or "", self.memory.clock)
        cached = self.tier1_cache.get(key, generation)
        if cached is not None:
            hit: UserMemory | None = cached[0]
            return hit
        w = self.recaller.weights
        conn = await self.pool.acquire()
        try:
            # the generic plan: planning this statement afresh each time (PostgreSQL keeps choosing custom plans for
            # it) cost 1.3 ms of its 3.3 ms; the pool's reset on release (RESET ALL) undoes it before the connection
            # is handed out again, so no RESET round trip of our own (issue #27 item 5)
            await conn.execute("SET plan_cache_mode = force_generic_plan")
            records = await conn.fetch(
                # $6 as recall reads a question: CJK runs cut, the dictionary bridge's words added (issue #28)
                USER_MEMORY_SQL, req.tenant, None, user, None, None, lexical_question(req.query or latest or ""), None,
                RELEVANT_LIMIT, self.memory.now(), w.items(), w.decay_days, None,
                None, ["active"], False, req.thread, KEY_IMPORTANCE, CORE_LIMIT, TURN_LIMIT, TURN_SCAN,
                MORE_LIMIT)
        except BaseException:
            await self.pool.release(conn)
            raise
        release_later(self.pool, conn, self._releasing)
        mem = build(user, records) if records else None
        self.tier1_cache.put(key, generation, (mem,))
        return mem

    async def history(self, req: HistoryRequest, ryw: Ryw | None = None) -> dict[str, Any]:
        """The transcript oldest first: ``{"messages": [...], "next_from_seq": n | None}``. ``ryw`` as for
        ``context``."""
        applied, stale, _ = ryw or await self._read_your_writes(req.after_seq, req.wait)
        pruned = await self._pruned_through(req.tenant, req.thread)
        from_log: list[dict[str, Any]] = []
        if pruned > req.from_seq and self.log is not None:
            # seed 000 §3.1: pruned turns left the read model, not the log
            from memengine.engine.read.transcript import history_row

            from_log = [history_row(seq, ev) for seq, ev in await self.log.thread_turns(
                req.tenant, req.thread, after_seq=req.from_seq, through_seq=pruned, limit=req.limit + 1)]
        async with self.pool.acquire() as conn:
            records = from_log + await conn.fetch(
                "SELECT seq, event_id::text AS event_id, role, user_id, session_id, occurred_at, content::text AS"
                " content, tokens_full, metadata::text AS metadata FROM messages"
                " WHERE tenant_id = $1 AND thread_id = $2 AND seq > $3"
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
                       condensed=False, content=msgspec.Raw(r["content"].encode()),
                       metadata=msgspec.Raw(r["metadata"].encode()))
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
        """The tenant's threads, most recently active first (seed 000 §2.3 ``GET /api/conversations``); with
        ``bound_user``, that user's threads only (``owner_user``, ``engine.read.scope``). Each says its ``user``
        (the owner: the user of its first turn that names one)."""
        records = await self.pool.fetch(
            "SELECT thread_id, label, last_active_at, message_count, sessions_ended, last_seq, owner_user"
            " FROM thread_activity WHERE tenant_id = $1 AND ($4::text IS NULL OR owner_user = $4)"
            " ORDER BY last_active_at DESC, thread_id LIMIT $2 OFFSET $3",
            req.tenant, req.limit, req.offset, req.bound_user)
        return {
            "tenant": req.tenant,
            "threads": [
                {"thread": r["thread_id"], "label": r["label"], "last_active_at": r["last_active_at"].isoformat(),
                 "message_count": r["message_count"], "sessions_ended": r["sessions_ended"],
                 "last_seq": r["last_seq"], "user": r["owner_user"]}
                for r in records
            ],
        }
