"""The enricher: facts in, derived events out (a process manager, not a projection).

It follows ``MEMORY_FACTS`` with its own durable consumer and checkpoint, and for each batch, once the core
projections have applied it (it reads their transcript) and the derived projections have applied what it published
before (it reads existing memories to decide merges):

- every user turn -> typed memory candidates with merge decisions -> ``MemoriesExtracted`` (seed 001 "写入",
  seed 002 §4.1, seed 004 §6);
- every ``MEMORY_SUMMARY_THRESHOLD`` new messages of a thread -> ``SummaryUpdated`` (rolling, recursive
  compression at ``MEMORY_MAX_SUMMARY_TOKENS``, seed 000 §3.1) and ``TopicsExtracted``;
- every ``SessionEnded`` -> ``EpisodeRecorded`` (seed 004 §4).

Everything it derives is published on ``MEMORY_DERIVED`` *before* any read model changes, with a deterministic
event id (``Nats-Msg-Id``), so a redelivered batch publishes nothing twice; the derived projector folds those events.
Derivations come from a ``Deriver`` (``engine.derive.llm``): the offline default (extractive, keyphrase, rule-based)
or an OpenAI-compatible model when ``API_BASE_URL`` is set; episodes are always extractive.

State that cannot be rebuilt from the log: none. Its decisions are recorded in the events it publishes.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

import asyncpg
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from engine.derive import offline
from engine.derive.llm import DerivationUnavailable, Deriver, build_deriver
from engine.pull import Puller
from engine.runner import AdvisoryLock, bind_at_checkpoint
from engine.settings import Settings
from events import (
    EpisodeRecorded,
    EventDecodeError,
    ExtractedMemory,
    MemoriesExtracted,
    MergeDecision,
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
                "SELECT (SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])) AS core,"
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
        for seq, ev in facts:
            if isinstance(ev, TurnRecorded):
                touched[(ev.tenant_id, ev.thread_id)] = seq
                if ev.role == "user":
                    mem = await self._memories(seq, ev, overlay)
                    if mem is not None:
                        out.append(mem)
            elif isinstance(ev, SessionEnded) and ev.session_id:
                episode = await self._episode(seq, ev)
                if episode is not None:
                    out.append(episode)
        if self.settings.enable_summary:
            for (tenant, thread), upto in touched.items():
                out.extend(await self._summary(tenant, thread, upto))
        return out

    async def _memories(self, seq: int, ev: TurnRecorded,
                        overlay: dict[tuple[str, str | None], list[offline.ExistingItem]]) -> MemoriesExtracted | None:
        turn = offline.Turn(event_id=str(ev.event_id), seq=seq, role=ev.role, user_id=ev.user_id,
                            text=plain_text(ev.content), occurred_at=ev.occurred_at)
        candidates, model, prompt_version = await self.deriver.extract([turn])
        if not candidates:
            return None
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

    async def _episode(self, seq: int, ev: SessionEnded) -> EpisodeRecorded | None:
        turns = await self._turns(ev.tenant_id, ev.thread_id, "session_id = $3 AND seq < $4", ev.session_id, seq)
        if not turns:
            return None
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

