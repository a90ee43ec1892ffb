"""``episodes``: one row per ``EpisodeRecorded`` (seed 004 §4: summary, goal, outcome, entities, tools, span, and
``closed_by``: ``session_ended`` or ``idle``).

Withdrawal (``TurnsWithdrawn`` through the enricher's ``SourcesWithdrawn``, issue #26 item 6): an episode of the
thread that quotes a withdrawn turn (``source_event_ids`` overlap) is dropped; the ``derived_events`` index keeps its
audit entry. The session's turns it covered that are left are covered again by the session's next episode (its
bound is the latest episode left, ``engine.derive.episodes``)."""

from __future__ import annotations

from memengine.events.derived import EpisodeRecorded, SourcesWithdrawn
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

_INSERT = """
INSERT INTO episodes (tenant_id, episode_id, thread_id, session_id, user_id, summary, goal, outcome, entities,
                      tools_used, started_at, ended_at, event_id, source_event_ids, closed_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (tenant_id, episode_id) DO NOTHING
"""


def on_episode_recorded(e: EpisodeRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp("episodes", _INSERT, (
        e.tenant_id, e.episode_id, e.thread_id, e.session_id, e.user_id, e.summary, e.goal, e.outcome,
        list(e.entities), list(e.tools_used), e.started_at, e.ended_at, e.event_id, list(e.source_event_ids),
        e.closed_by))]


_DROP = """
DELETE FROM episodes WHERE tenant_id = $1 AND thread_id = $2 AND source_event_ids && $3::uuid[]
"""


def on_sources_withdrawn(e: SourcesWithdrawn, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Drop the thread's episodes that quote a withdrawn turn (their summary, goal and outcome are its words)."""
    if not e.withdrawn_event_ids:
        return []
    return [SqlOp("episodes", _DROP, (e.tenant_id, e.thread_id, list(e.withdrawn_event_ids)))]


PROJECTION = Projection(name="episodes", version=2,  # 2: SourcesWithdrawn (issue #26 item 6)
                        tables=("episodes",),
                        handlers={EpisodeRecorded: on_episode_recorded, SourcesWithdrawn: on_sources_withdrawn})
