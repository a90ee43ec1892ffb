"""``tombstones``: the minimal record left by verified forgetting (issue #5 §4): scope, who, when; no content.

Folded from the deletion facts themselves (``ThreadDeleted``, ``UserForgotten``), which the purge keeps in the log
(engine/ops/forget.py purges the thread's subject only *below* the deletion fact), so a rebuild re-creates these rows.
"""

from __future__ import annotations

from memengine.events.model import ThreadDeleted, UserForgotten
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

TABLE = "tombstones"
_INSERT = (
    "INSERT INTO tombstones (tenant_id, scope, scope_id, event_id, seq, requested_by, reason, deleted_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING"
)


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _INSERT, (e.tenant_id, "thread", e.thread_id, e.event_id, pos.seq, e.producer, e.reason,
                                   e.occurred_at))]


def on_user_forgotten(e: UserForgotten, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _INSERT, (e.tenant_id, "user", e.user_id or "", e.event_id, pos.seq, e.producer, e.reason,
                                   e.occurred_at))]


PROJECTION = Projection(
    name="tombstones",
    version=1,
    tables=(TABLE,),
    handlers={ThreadDeleted: on_thread_deleted, UserForgotten: on_user_forgotten},
)
