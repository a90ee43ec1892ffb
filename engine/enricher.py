"""The enricher: facts in, derived events out (a process manager, not a projection).

It follows ``MEMORY_FACTS`` with its own durable consumer and checkpoint, and for each batch, once the core
projections have applied it (it reads their transcript) and the derived projections have applied what it published
before (it reads existing memories to decide merges):

- every user turn -> typed memory candidates with merge decisions -> ``MemoriesExtracted`` (seed 001 "写入",
  seed 002 §4.1, seed 004 §6);
- every ``MEMORY_SUMMARY_THRESHOLD`` new messages of a thread -> ``SummaryUpdated`` (rolling, recursive
  compression at ``MEMORY_MAX_SUMMARY_TOKENS``, seed 000 §3.1) and ``TopicsExtracted``;
- every ``SessionEnded`` -> ``EpisodeRecorded`` (seed 004 §4), and a turn more than
  ``MEMENGINE_EPISODE_IDLE_SECONDS`` after the previous turn of its session (event time, never the wall clock, so a
  re-derivation decides the same) -> ``EpisodeRecorded(closed_by="idle")`` for the turns before it;
- ``MemoryAsserted`` facts -> ``MemoriesExtracted`` (model ``explicit``, confidence 1, merge decision as for
  extracted candidates); ``MemoryRetracted`` / ``MemoryPromoted`` facts -> ``MemoriesRevised`` (retract / promote,
  seed 003 quarantine). So ``memory_items`` has one writer, the derived projector, and a rebuild replays it all;
- a thread whose live transcript exceeds ``MEMORY_MAX_MESSAGES_PER_THREAD`` -> ``MessagesPruned`` for the oldest
  ``total - max + 20`` turns, never beyond what a published summary covers (seed 000 §3.1).

Side effect outside the log, by design: a new active TASK memory of a recent turn becomes the thread's current focus
in the working-memory KV (``engine.working_memory``, ephemeral, TTL 24 h, seed 003 / seed 004 Scratchpad).

Everything it derives is published on ``MEMORY_DERIVED`` *before* any read model changes, with a deterministic
event id (``Nats-Msg-Id``), so a redelivered batch publishes nothing twice; the derived projector folds those events.
Derivations come from a ``Deriver`` (``engine.derive.llm``): the offline default (extractive, keyphrase, rule-based)
or an OpenAI-compatible model when ``API_BASE_URL`` is set; episodes are always extractive.

State that cannot be rebuilt from the log: none. Its decisions are recorded in the events it publishes.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta, timezone
from typing import Any

import asyncpg
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from engine import working_memory
from engine.derive import offline
from engine.derive.llm import DerivationUnavailable, Deriver, build_deriver
from engine.pull import Puller
from engine.runner import AdvisoryLock, bind_at_checkpoint
from engine.settings import Settings
from engine.transcript import FactLog
from events import (
    EpisodeRecorded,
    EventDecodeError,
    ExtractedMemory,
    MemoriesExtracted,
    MemoriesRevised,
    MemoryAsserted,
    MemoryChange,
    MemoryPromoted,
    MemoryRetracted,
    MergeDecision,
    MessagesPruned,
    SessionEnded,
    StreamNames,
    Subjects,
    SummaryUpdated,
    TopicMention,
    TopicsExtracted,
    TurnRecorded,
    decode,
    derived_event_id,
    encode,
)
from projections.content import plain_text
from projections.registry import DERIVED_PROJECTIONS
from projections.tokens import count_tokens

log = structlog.get_logger("memengine.enricher")

NAME = "enricher"
#: seed 004 priorities -> lifetime (PERMANENT never expires).
PRIORITY_TTL = {"TRANSIENT": timedelta(days=1), "SHORT_TERM": timedelta(days=3), "LONG_TERM": timedelta(days=30)}
#: seed 003: candidates under this confidence wait in quarantine instead of entering memory.
QUARANTINE_BELOW = 0.8
#: seed 000 §3.1 "N = 总数 - 200 + 20 buffer": a prune leaves max - 20 turns, so it does not run on every turn.
PRUNE_BUFFER = 20
#: model name recorded on derived events that only restate an explicit fact (no model was involved).
EXPLICIT_MODEL = "explicit"
EXPLICIT_PROMPT_VERSION = "fact-1"


class Enricher:
    """Derives memory from facts; see the module docstring. One live enricher per deployment (advisory lock)."""

    def __init__(self, *, nc: NATS, js: JetStreamContext, pool: asyncpg.Pool, streams: StreamNames,
                 subjects: Subjects, settings: Settings, core: str = "core", derived: str = "derived",
                 batch_size: int = 500, deriver: Deriver | None = None) -> None:
        self.nc, self.js, self.pool = nc, js, pool
        self.streams, self.subjects, self.settings = streams, subjects, settings
        self.core, self.derived = core, derived
        self.batch_size = batch_size
        self.deriver = deriver or build_deriver(settings, count_tokens)
        self.checkpoint = 0
        self.published = 0  # derived events published since start
        self._derived_seq = 0  # last MEMORY_DERIVED sequence we published
        self._sub: Puller | None = None
        self._lock = AdvisoryLock(pool, NAME)
        self.log = FactLog(js, streams, subjects)
        self._focus: list[tuple[str, str, str]] = []  # (tenant, thread, text) for the working-memory KV

    @property
    def active(self) -> bool:
        return self._sub is not None

    async def try_start(self) -> bool:
        """Take the enricher lock, (re-)create the consumer at the checkpoint + 1; False if another process runs."""
        if self.active:
            return True
        if not await self._lock.acquire():
            return False
        await self.pool.execute(
            "INSERT INTO projection_checkpoints (projection, version, stream) VALUES ($1, 1, $2)"
            " ON CONFLICT (projection) DO NOTHING", NAME, self.streams.facts)
        self.checkpoint = int(await self.pool.fetchval(
            "SELECT last_seq FROM projection_checkpoints WHERE projection = $1", NAME))
        # What an earlier incarnation published must be folded before this one decides anything (merge decisions
        # and rolling summaries read memory_items / conversation_summaries): without this, a restarted enricher
        # read stale state while the derived projector was still behind, and decided differently (test_faults).
        self._derived_seq = max(self._derived_seq, (await self.js.stream_info(self.streams.derived)).state.last_seq)
        await bind_at_checkpoint(self.js, self.streams.facts, NAME, self.subjects.all_facts, self.checkpoint,
                                 batch_size=self.batch_size, description="memengine enricher", ack_wait=120)
        self._sub = Puller(self.nc, self.streams.facts, NAME, batch=self.batch_size)
        await self._sub.start()
        return True

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.stop()
            self._sub = None
        await self._lock.release()

    async def run(self, stop: asyncio.Event) -> None:
        """Derive until ``stop`` is set; on any error, back off and resume from the checkpoint."""
        failures = 0
        while not stop.is_set():
            try:
                if not self.active and not await self.try_start():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=2.0)
                    continue
                await self.step(timeout=1.0)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep deriving; nothing is acked before it is published
                failures += 1
                log.warning("enricher step failed; resuming from the checkpoint", error=repr(exc))
                await self.stop()
                await asyncio.sleep(min(5.0, 0.2 * failures))

    async def catch_up(self, timeout: float = 600.0) -> int:
        """Derive until the facts stream's current end; returns the checkpoint reached."""
        target = (await self.js.stream_info(self.streams.facts)).state.last_seq
        deadline = asyncio.get_running_loop().time() + timeout
        idle = 0
        while self.checkpoint < target:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"enricher at {self.checkpoint} of {target}")
            if await self.step(timeout=0.5) == 0:
                idle += 1
                if idle >= 3:
                    break
            else:
                idle = 0
        return self.checkpoint

    async def step(self, timeout: float) -> int:
        assert self._sub is not None
        msgs = await self._sub.fetch(timeout=timeout)
        if not msgs:
            return 0
        last = msgs[-1].metadata.sequence.stream
        facts: list[tuple[int, Any]] = []
        for m in msgs:
            seq = m.metadata.sequence.stream
            if seq <= self.checkpoint:
                continue
            try:
                facts.append((seq, decode(m.data)))
            except EventDecodeError:
                continue  # the core projector dead-letters it
        await self._wait_for_projections(last)
        derived = await self._derive(facts)
        for ev in derived:
            ack = await self.js.publish(self.subjects.derived(ev.tenant_id, ev.thread_id, type(ev).__name__),
                                        encode(ev), headers={"Nats-Msg-Id": str(ev.event_id)},
                                        stream=self.streams.derived)
            self._derived_seq = max(self._derived_seq, ack.seq)
            self.published += 0 if ack.duplicate else 1
        await self._write_focus()
        await self.pool.execute("UPDATE projection_checkpoints SET last_seq = GREATEST(last_seq, $2), updated_at = now()"
                                " WHERE projection = $1", NAME, last)
        self.checkpoint = max(self.checkpoint, last)
        await msgs[-1].ack()
        return len(msgs)

    async def _wait_for_projections(self, facts_seq: int, timeout: float = 60.0) -> None:
        """The transcript must hold this batch, and our earlier derived events must be folded, before deciding."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            row = await self.pool.fetchrow(
                "SELECT (SELECT min(last_seq) FROM projection_checkpoints"
                " WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($1::text[])) AS core,"
                " (SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($2::text[])) AS drv",
                ["thread_activity", "messages"], [p.name for p in DERIVED_PROJECTIONS])
            if (row["core"] or 0) >= facts_seq and (self._derived_seq == 0 or (row["drv"] or 0) >= self._derived_seq):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("projections did not catch up with the enricher")
            await asyncio.sleep(0.02)

    # -- derivations -------------------------------------------------------------------------------------------

    async def _derive(self, facts: list[tuple[int, Any]]) -> list[Any]:
        out: list[Any] = []
        touched: dict[tuple[str, str], int] = {}
        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]] = {}
        last_turn: dict[tuple[str, str, str], tuple[int, Any]] = {}  # (tenant, thread, session) -> (seq, time)
        bounds: dict[tuple[str, str, str], int] = {}  # last seq covered by an episode published in this batch
        for seq, ev in facts:
            if isinstance(ev, TurnRecorded):
                touched[(ev.tenant_id, ev.thread_id)] = seq
                idle = await self._idle_episode(seq, ev, last_turn, bounds)
                if idle is not None:
                    out.append(idle)
                if ev.role == "user":
                    mem = await self._memories(seq, ev, overlay)
                    if mem is not None:
                        out.append(mem)
            elif isinstance(ev, SessionEnded) and ev.session_id:
                episode = await self._episode(seq, ev, bounds)
                if episode is not None:
                    out.append(episode)
            elif isinstance(ev, MemoryAsserted):
                out.append(await self._asserted(seq, ev, overlay))
            elif isinstance(ev, (MemoryRetracted, MemoryPromoted)):
                revised = await self._revised(seq, ev, out, overlay)
                if revised is not None:
                    out.append(revised)
        if self.settings.enable_summary:
            for (tenant, thread), upto in touched.items():
                out.extend(await self._summary(tenant, thread, upto))
        if self.settings.max_messages_per_thread > 0:
            for tenant, thread in touched:
                pruned = await self._prune(tenant, thread, out)
                if pruned is not None:
                    out.append(pruned)
        return out

    async def _memories(self, seq: int, ev: TurnRecorded,
                        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesExtracted | None:
        turn = offline.Turn(event_id=str(ev.event_id), seq=seq, role=ev.role, user_id=ev.user_id,
                            text=plain_text(ev.content), occurred_at=ev.occurred_at)
        candidates, model, prompt_version = await self.deriver.extract([turn])
        if not candidates:
            return None
        return await self._decide(seq, ev, candidates, overlay, model, prompt_version)

    async def _decide(self, seq: int, ev: Any, candidates: list[offline.Candidate],
                      overlay: dict[tuple[str, str | None], list[offline.ExistingItem]], model: str,
                      prompt_version: str) -> MemoriesExtracted:
        """Merge decisions (seed 002 §4.1) of ``candidates`` from fact ``ev`` against the user's active items."""
        key = (ev.tenant_id, ev.user_id)
        if key not in overlay:
            rows = await self.pool.fetch(
                "SELECT memory_id, type, text, user_id FROM memory_items WHERE tenant_id = $1"
                " AND user_id IS NOT DISTINCT FROM $2 AND status = 'active'", ev.tenant_id, ev.user_id)
            overlay[key] = [offline.ExistingItem(memory_id=r["memory_id"], memory_type=r["type"], text=r["text"],
                                                 user_id=r["user_id"]) for r in rows]
        existing = overlay[key]
        memories = []
        for i, c in enumerate(candidates):
            d = offline.decide_merge(c, existing)
            memory_id = (d.target_ids[0] if d.action == "merge" and d.target_ids
                         else str(derived_event_id(ev.tenant_id, str(ev.event_id), "memory", str(i))))
            ttl = PRIORITY_TTL.get(c.priority)
            quarantined = c.confidence < QUARANTINE_BELOW
            m = ExtractedMemory(
                memory_id=memory_id, user_id=c.user_id, memory_type=c.memory_type, text=c.text,
                importance=c.importance, confidence=c.confidence, tags=list(c.tags), priority=c.priority,
                expires_at=ev.occurred_at + ttl if ttl else None,
                dedupe_hash=str(c.data.get("dedupe_hash") or offline.dedupe_hash(c.user_id, c.text)),
                data={k: v for k, v in c.data.items() if k != "dedupe_hash"},
                status="quarantined" if quarantined else "active",
                decision=MergeDecision(action=d.action, target_ids=list(d.target_ids), reason=d.reason[:1000]),
                source_event_ids=[ev.event_id])
            memories.append(m)
            if c.memory_type == "TASK" and not quarantined and d.action != "ignore":
                self._note_focus(ev, c.text)
            if quarantined or d.action == "ignore":
                continue
            if d.action == "replace":
                existing[:] = [x for x in existing if x.memory_id not in d.target_ids]
            if d.action == "merge":
                existing[:] = [x for x in existing if x.memory_id != memory_id]
            existing.append(offline.ExistingItem(memory_id=memory_id, memory_type=c.memory_type, text=c.text,
                                                 user_id=c.user_id))
        return MemoriesExtracted(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "memories", str(ev.event_id)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[ev.event_id], source_seq_range=[seq, seq], model=model,
            prompt_version=prompt_version, memories=memories)

    async def _turns(self, tenant: str, thread: str, where: str, *args: Any) -> list[offline.Turn]:
        rows = await self.pool.fetch(
            "SELECT event_id::text AS event_id, seq, role, user_id, text, occurred_at FROM messages"
            f" WHERE tenant_id = $1 AND thread_id = $2 AND {where} ORDER BY seq", tenant, thread, *args)
        return [offline.Turn(event_id=r["event_id"], seq=r["seq"], role=r["role"], user_id=r["user_id"],
                             text=r["text"], occurred_at=r["occurred_at"]) for r in rows]

    async def _episode(self, seq: int, ev: SessionEnded,
                       bounds: dict[tuple[str, str, str], int]) -> EpisodeRecorded | None:
        """The episode a ``SessionEnded`` closes: the session's turns after its last idle-closed episode."""
        key = (ev.tenant_id, ev.thread_id, ev.session_id or "")
        after = await self._episode_bound(key, bounds)
        turns = await self._session_turns(ev.tenant_id, ev.thread_id, ev.session_id, after, seq - 1)
        if not turns:
            return None
        bounds[key] = turns[-1].seq
        ep = offline.episode(turns)
        return EpisodeRecorded(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "episode", str(ev.event_id)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[t.event_id for t in turns], source_seq_range=[turns[0].seq, turns[-1].seq],
            model=offline.OFFLINE_MODEL, prompt_version=offline.PROMPT_VERSION,
            episode_id=f"{ev.thread_id}:{ev.session_id}", summary=ep.summary, goal=ep.goal, outcome=ep.outcome,
            entities=list(ep.entities)[:64], tools_used=list(ep.tools_used)[:64], started_at=ep.started_at,
            ended_at=ep.ended_at)

    async def _idle_episode(self, seq: int, ev: TurnRecorded, last_turn: dict[tuple[str, str, str], tuple[int, Any]],
                            bounds: dict[tuple[str, str, str], int]) -> EpisodeRecorded | None:
        """Seed 004 §4 idle timeout, decided on event time: when this turn comes more than
        ``episode_idle_seconds`` after the previous turn of its session, the turns up to that previous one form an
        episode (``closed_by="idle"``). Its id depends only on the last turn it covers, so the wall-clock sweep and
        this path can never record the same stretch twice."""
        idle = self.settings.episode_idle_seconds
        key = (ev.tenant_id, ev.thread_id, ev.session_id or "")
        prev = last_turn.get(key)
        last_turn[key] = (seq, ev.occurred_at)
        if idle <= 0:
            return None
        if prev is None:
            row = await self.pool.fetchrow(
                "SELECT seq, occurred_at FROM messages WHERE tenant_id = $1 AND thread_id = $2"
                " AND session_id IS NOT DISTINCT FROM $3::text AND seq < $4 ORDER BY seq DESC LIMIT 1",
                ev.tenant_id, ev.thread_id, ev.session_id, seq)
            prev = (row["seq"], row["occurred_at"]) if row else None
        if prev is None or (ev.occurred_at - prev[1]).total_seconds() <= idle:
            return None
        return await self.idle_episode(ev.tenant_id, ev.thread_id, ev.session_id, prev[0], bounds)

    async def idle_episode(self, tenant: str, thread: str, session_id: str | None, last_seq: int,
                           bounds: dict[tuple[str, str, str], int] | None = None) -> EpisodeRecorded | None:
        """The idle-closed episode of ``session_id`` ending with the turn at ``last_seq`` (``None`` when no turn
        after the session's previous episode is left). ``occurred_at`` = that turn's time + the idle timeout."""
        bounds = {} if bounds is None else bounds
        key = (tenant, thread, session_id or "")
        after = await self._episode_bound(key, bounds)
        if after >= last_seq:
            return None
        turns = await self._session_turns(tenant, thread, session_id, after, last_seq)
        if not turns:
            return None
        bounds[key] = turns[-1].seq
        ep = offline.episode(turns)
        idle = timedelta(seconds=self.settings.episode_idle_seconds)
        return EpisodeRecorded(
            event_id=derived_event_id(tenant, thread, "episode-idle", session_id or "", str(turns[-1].seq)),
            tenant_id=tenant, thread_id=thread, occurred_at=turns[-1].occurred_at + idle,
            user_id=next((t.user_id for t in turns if t.role == "user" and t.user_id), None),
            session_id=session_id, producer="memengine-enricher",
            source_event_ids=[t.event_id for t in turns], source_seq_range=[turns[0].seq, turns[-1].seq],
            model=offline.OFFLINE_MODEL, prompt_version=offline.PROMPT_VERSION,
            episode_id=f"{thread}:{session_id or '-'}:idle:{turns[-1].seq}", summary=ep.summary, goal=ep.goal,
            outcome=ep.outcome, entities=list(ep.entities)[:64], tools_used=list(ep.tools_used)[:64],
            started_at=ep.started_at, ended_at=ep.ended_at, closed_by="idle")

    async def _episode_bound(self, key: tuple[str, str, str], bounds: dict[tuple[str, str, str], int]) -> int:
        """Last facts sequence already covered by an episode of this session (0 if none)."""
        if key in bounds:
            return bounds[key]
        v = await self.pool.fetchval(
            "SELECT max(d.source_last_seq) FROM episodes e JOIN derived_events d"
            " ON d.tenant_id = e.tenant_id AND d.event_id = e.event_id"
            " WHERE e.tenant_id = $1 AND e.thread_id = $2 AND coalesce(e.session_id, '') = $3", *key)
        bounds[key] = int(v or 0)
        return bounds[key]

    async def _session_turns(self, tenant: str, thread: str, session_id: str | None, after: int,
                             through: int) -> list[offline.Turn]:
        """Turns of a session with ``after < seq <= through``: from ``messages``, plus, when the thread was pruned
        and the oldest live turn belongs to this session, its pruned turns from the log (``engine.transcript``)."""
        turns = await self._turns(tenant, thread, "session_id IS NOT DISTINCT FROM $3::text AND seq > $4 AND seq <= $5",
                                  session_id, after, through)
        row = await self.pool.fetchrow(
            "SELECT pm.through_seq, (SELECT session_id FROM messages m WHERE m.tenant_id = $1 AND m.thread_id = $2"
            " ORDER BY seq LIMIT 1) AS oldest_session FROM message_prune_marks pm"
            " WHERE pm.tenant_id = $1 AND pm.thread_id = $2", tenant, thread)
        if row is None or row["through_seq"] <= after or row["oldest_session"] != session_id:
            return turns
        older = await self.log.thread_turns(tenant, thread, after_seq=after,
                                            through_seq=min(row["through_seq"], through), limit=100_000)
        early = [offline.Turn(event_id=str(e.event_id), seq=s, role=e.role, user_id=e.user_id,
                              text=plain_text(e.content), occurred_at=e.occurred_at)
                 for s, e in older if e.session_id == session_id]
        return early + [t for t in turns if t.seq > row["through_seq"]]

    # -- explicit memory facts ---------------------------------------------------------------------------------

    async def _asserted(self, seq: int, ev: MemoryAsserted,
                        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesExtracted:
        """``MemoryAsserted`` -> ``MemoriesExtracted`` with one candidate: confidence 1 (never quarantined), the
        asserted type (unknown types become FACT, the given name kept in ``data.asserted_type``), priority from
        ``metadata.priority`` else PERMANENT (an explicit "remember this" is meant to last, seed 004 §6)."""
        mtype = ev.memory_type.strip().upper()
        data: dict[str, Any] = {"asserted": True}
        if mtype not in offline.MEMORY_TYPES:
            data["asserted_type"] = ev.memory_type
            mtype = "FACT"
        meta = ev.metadata if isinstance(ev.metadata, dict) else {}
        priority = str(meta.get("priority") or "PERMANENT").upper()
        if priority not in ("TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"):
            priority = "PERMANENT"
        cand = offline.Candidate(memory_type=mtype, text=ev.text.strip(), importance=ev.importance, confidence=1.0,
                                 tags=list(ev.tags), priority=priority, user_id=ev.user_id,
                                 source_event_ids=[str(ev.event_id)], data=data)
        return await self._decide(seq, ev, [cand], overlay, EXPLICIT_MODEL, EXPLICIT_PROMPT_VERSION)

    async def _revised(self, seq: int, ev: MemoryRetracted | MemoryPromoted, out: list[Any],
                       overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesRevised | None:
        """``MemoryRetracted`` / ``MemoryPromoted`` -> ``MemoriesRevised``, when the change applies to the item as it
        stands (retract: active or quarantined; promote: quarantined). Otherwise nothing is derived (logged)."""
        action = "retract" if isinstance(ev, MemoryRetracted) else "promote"
        status = await self._status(ev.tenant_id, ev.memory_id, out)
        allowed = ("active", "quarantined") if action == "retract" else ("quarantined",)
        if status not in allowed:
            log.warning("memory change not applicable; nothing derived", action=action, memory_id=ev.memory_id,
                        status=status)
            return None
        if action == "retract":
            for items in overlay.values():
                items[:] = [x for x in items if x.memory_id != ev.memory_id]
        reason = ev.reason or ("retracted" if action == "retract" else "promoted from quarantine")
        return MemoriesRevised(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "revised", str(ev.event_id)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[ev.event_id], source_seq_range=[seq, seq], model=EXPLICIT_MODEL,
            prompt_version=EXPLICIT_PROMPT_VERSION,
            changes=[MemoryChange(memory_id=ev.memory_id, action=action, reason=reason[:1000])])

    async def _status(self, tenant: str, memory_id: str, out: list[Any]) -> str | None:
        """Status of an item as the derived events published so far leave it (this batch's first, newest last)."""
        status: str | None = None
        found = False
        for d in out:
            if d.tenant_id != tenant:
                continue
            if isinstance(d, MemoriesExtracted):
                for m in d.memories:
                    if m.memory_id == memory_id and m.decision.action in ("add", "keep_both", "replace"):
                        status, found = m.status, True
            elif isinstance(d, MemoriesRevised):
                for c in d.changes:
                    if c.memory_id == memory_id:
                        status, found = ("retracted" if c.action == "retract" else "active"), True
        if found:
            return status
        return await self.pool.fetchval("SELECT status FROM memory_items WHERE tenant_id = $1 AND memory_id = $2",
                                        tenant, memory_id)

    # -- physical pruning (seed 000 §3.1) ----------------------------------------------------------------------

    async def _prune(self, tenant: str, thread: str, out: list[Any]) -> MessagesPruned | None:
        """``MessagesPruned`` when the thread's live transcript exceeds ``max_messages_per_thread``: the oldest
        ``total - max + PRUNE_BUFFER`` turns, cut back to what the summaries published so far cover (their topics
        are published with them; their recall rows are never pruned). ``None`` when nothing may go."""
        limit = self.settings.max_messages_per_thread
        row = await self.pool.fetchrow(
            "SELECT count(*) AS n, max(occurred_at) AS latest,"
            " (SELECT through_seq FROM message_prune_marks WHERE tenant_id = $1 AND thread_id = $2) AS mark,"
            " (SELECT covers_until_seq FROM conversation_summaries WHERE tenant_id = $1 AND thread_id = $2) AS covered"
            " FROM messages WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
        total = int(row["n"])
        if total <= limit:
            return None
        covered = int(row["covered"] or 0)
        for d in out:
            if isinstance(d, SummaryUpdated) and (d.tenant_id, d.thread_id) == (tenant, thread):
                covered = max(covered, d.source_seq_range[1])
        n = total - limit + PRUNE_BUFFER
        gone = await self.pool.fetch(
            "SELECT seq, event_id FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq <= $3"
            " ORDER BY seq LIMIT $4", tenant, thread, covered, n)
        if not gone or gone[-1]["seq"] <= int(row["mark"] or 0):
            return None
        through = gone[-1]["seq"]
        ids = [r["event_id"] for r in gone]
        return MessagesPruned(
            event_id=derived_event_id(tenant, thread, "prune", str(through)), tenant_id=tenant, thread_id=thread,
            occurred_at=row["latest"], producer="memengine-enricher",
            # provenance: the pruned turns (bounded: a first prune of a huge imported thread names its range only)
            source_event_ids=ids if len(ids) <= 2000 else [], source_seq_range=[gone[0]["seq"], through],
            model="rule", prompt_version=f"max{limit}+{PRUNE_BUFFER}", through_seq=through, pruned=len(gone),
            remaining=total - len(gone))

    # -- working memory (ephemeral, engine.working_memory) -----------------------------------------------------

    def _note_focus(self, ev: Any, text: str) -> None:
        """Remember a TASK as the thread's focus, if the fact is recent (a replay of old turns must not set it)."""
        age = (datetime.now(timezone.utc) - ev.occurred_at).total_seconds()
        if -60 <= age <= self.settings.working_memory_ttl:
            self._focus.append((ev.tenant_id, ev.thread_id, text))

    async def _write_focus(self) -> None:
        """Best effort: the KV is a cache of the moment, never a reason to hold back derived memory."""
        focus, self._focus = self._focus, []
        for tenant, thread, text in focus:
            try:
                await working_memory.put(self.js, tenant, thread, "focus", text, prefix=self.settings.stream_prefix,
                                         ttl=self.settings.working_memory_ttl,
                                         max_entries=self.settings.working_memory_max)
            except Exception as exc:  # noqa: BLE001
                log.warning("working-memory focus not written", thread=thread, error=repr(exc))

    async def _summary(self, tenant: str, thread: str, upto: int) -> list[Any]:
        """Summarise the thread's messages after the last summary once there are ``summary_threshold`` of them."""
        prev = await self.pool.fetchrow(
            "SELECT summary, message_count, covers_until_seq FROM conversation_summaries"
            " WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
        after = prev["covers_until_seq"] if prev else 0
        out: list[Any] = []
        while True:
            turns = await self._turns(tenant, thread, "seq > $3 AND seq <= $4 AND role IN ('user', 'assistant')",
                                      after, upto)
            n = self.settings.summary_threshold
            if len(turns) < n:
                return out
            chunk = turns[:n]
            previous = prev["summary"] if prev else None
            try:
                text = await self.deriver.summarize(chunk, self.settings.max_summary_tokens, previous)
            except DerivationUnavailable as exc:
                # seed 000 §6: warn, keep the old summary; the messages stay pending for the next batch
                log.warning("summary skipped: model unavailable; old summary kept", thread=thread, error=str(exc))
                return out
            last = chunk[-1]
            count = (prev["message_count"] if prev else 0) + len(chunk)
            ids = [t.event_id for t in chunk]
            common = dict(tenant_id=tenant, thread_id=thread, occurred_at=last.occurred_at,
                          producer="memengine-enricher", source_event_ids=ids,
                          source_seq_range=[chunk[0].seq, last.seq], model=self.deriver.model,
                          prompt_version=self.deriver.prompt_version)
            out.append(SummaryUpdated(event_id=derived_event_id(tenant, thread, "summary", str(last.seq)),
                                      summary=text, message_count=count, **common))
            topics = await self.deriver.topics(chunk)
            if topics:
                out.append(TopicsExtracted(event_id=derived_event_id(tenant, thread, "topics", str(last.seq)),
                                           topics=[TopicMention(topic=t, mentions=1) for t in topics], **common))
            prev = {"summary": text, "message_count": count, "covers_until_seq": last.seq}
            after = last.seq

