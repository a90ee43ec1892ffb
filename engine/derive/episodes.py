"""When the enricher records an episode (seed 004 §4 "情节记忆"), and of which turns.

An episode closes when its session ends (``SessionEnded``) or, decided on event time, when a turn comes more than
``MEMENGINE_EPISODE_IDLE_SECONDS`` after the previous turn of its session (``closed_by="idle"``). Its turns are the
session's turns after the previous episode of that session, read from ``messages`` plus, when the thread was pruned,
from the log (``engine.read.transcript``). What an episode says is ``offline.episode`` (always extractive).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg

from memengine.engine.adapters.settings import Settings
from memengine.engine.derive import offline
from memengine.engine.derive.turns import load_turns
from memengine.engine.read.transcript import FactLog
from memengine.events import EpisodeRecorded, SessionEnded, ToolUseBlock, TurnRecorded, derived_event_id
from memengine.projections.content import plain_text


class Episodes:
    """The enricher's episode decisions. ``bounds`` (passed in by the caller, one per batch) maps
    ``(tenant, thread, session)`` to the last facts sequence an episode published in this batch covers, so a batch
    never records the same stretch twice; ``last_turn`` maps it to the ``(seq, occurred_at)`` of its latest turn."""

    def __init__(self, *, pool: asyncpg.Pool, settings: Settings, log: FactLog) -> None:
        self.pool, self.settings, self.log = pool, settings, log

    async def session_ended(self, seq: int, ev: SessionEnded,
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
            source_event_ids=[uuid.UUID(t.event_id) for t in turns], source_seq_range=[turns[0].seq, turns[-1].seq],
            model=offline.OFFLINE_MODEL, prompt_version=offline.PROMPT_VERSION,
            episode_id=f"{ev.thread_id}:{ev.session_id}", summary=ep.summary, goal=ep.goal, outcome=ep.outcome,
            entities=list(ep.entities)[:64], tools_used=list(ep.tools_used)[:64], started_at=ep.started_at,
            ended_at=ep.ended_at)

    async def idle_gap(self, seq: int, ev: TurnRecorded, last_turn: dict[tuple[str, str, str], tuple[int, Any]],
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
            source_event_ids=[uuid.UUID(t.event_id) for t in turns], source_seq_range=[turns[0].seq, turns[-1].seq],
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
        and the oldest live turn belongs to this session, its pruned turns from the log (``engine.read.transcript``)."""
        turns = await load_turns(self.pool, tenant, thread,
                                 "session_id IS NOT DISTINCT FROM $3::text AND seq > $4 AND seq <= $5",
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
                              text=plain_text(e.content), occurred_at=e.occurred_at,
                              tools=[b.name for b in e.content if isinstance(b, ToolUseBlock)])
                 for s, e in older if e.session_id == session_id]
        return early + [t for t in turns if t.seq > row["through_seq"]]
