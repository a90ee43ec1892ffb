"""``episodes``: one row per ``EpisodeRecorded`` (seed 004 §4: summary, goal, outcome, entities, tools, span, and
``closed_by``: ``session_ended`` or ``idle``)."""

from __future__ import annotations

from memengine.events.derived import EpisodeRecorded
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


PROJECTION = Projection(name="episodes", version=1, tables=("episodes",),
                        handlers={EpisodeRecorded: on_episode_recorded})
