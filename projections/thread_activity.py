"""``thread_activity``: one row per thread with its label, last activity and counts (seed 000 §1.2).

``last_active_at`` is the event's ``occurred_at``, never the wall clock, so that a rebuild gives the same rows.

``owner_user`` (issue #26 item 4): the ``user_id`` of the thread's first turn that names a user, in stream order; a
later turn never changes it (``COALESCE(t.owner_user, ...)``), so a turn of another user that reaches the thread
cannot make its owner lose it. The query handler answers a request bound to a user only for that user's threads
(``engine.read.scope``).

``TurnsWithdrawn`` (issue #26 item 6) is not folded here, by decision: ``message_count`` counts the turns recorded
(activity, like ``last_active_at``), withdrawn ones included, and holds no text of them. Counting only the live
turns would need the withdrawn turns' number, which only the ``messages`` table knows (pruned turns excepted), and a
fold reads only its own tables.
"""

from __future__ import annotations

from memengine.events.model import SessionEnded, ThreadDeleted, ThreadLabelled, TurnRecorded
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

TABLE = "thread_activity"

_TOUCH = """
INSERT INTO thread_activity AS t (tenant_id, thread_id, last_active_at, message_count, sessions_ended, first_seq,
                                  last_seq, owner_user)
VALUES ($1, $2, $3, $4, $5, $6, $6, $7)
ON CONFLICT (tenant_id, thread_id) DO UPDATE SET
    owner_user     = COALESCE(t.owner_user, EXCLUDED.owner_user),
    last_active_at = GREATEST(t.last_active_at, EXCLUDED.last_active_at),
    message_count  = t.message_count + EXCLUDED.message_count,
    sessions_ended = t.sessions_ended + EXCLUDED.sessions_ended,
    last_seq       = GREATEST(t.last_seq, EXCLUDED.last_seq)
"""
#: Bulk form of _TOUCH over one JSON document of rows (``SqlOp.rows``): rows of one thread are summed first (the
#: update is commutative: GREATEST and +); the owner is the user of the run's earliest row naming one, kept only
#: when the thread had none (as the rows applied one by one in stream order).
_TOUCH_BULK = """
INSERT INTO thread_activity AS t (tenant_id, thread_id, last_active_at, message_count, sessions_ended, first_seq,
                                  last_seq, owner_user)
SELECT r->>0, r->>1, max((r->>2)::timestamptz), sum((r->>3)::int), sum((r->>4)::int), min((r->>5)::bigint),
       max((r->>5)::bigint), (array_agg(r->>6 ORDER BY (r->>5)::bigint) FILTER (WHERE r->>6 IS NOT NULL))[1]
FROM jsonb_array_elements($1::jsonb) AS j(r)
GROUP BY r->>0, r->>1
ON CONFLICT (tenant_id, thread_id) DO UPDATE SET
    owner_user     = COALESCE(t.owner_user, EXCLUDED.owner_user),
    last_active_at = GREATEST(t.last_active_at, EXCLUDED.last_active_at),
    message_count  = t.message_count + EXCLUDED.message_count,
    sessions_ended = t.sessions_ended + EXCLUDED.sessions_ended,
    last_seq       = GREATEST(t.last_seq, EXCLUDED.last_seq)
"""
_LABEL = """
INSERT INTO thread_activity AS t (tenant_id, thread_id, label, last_active_at, first_seq, last_seq)
VALUES ($1, $2, $3, $4, $5, $5)
ON CONFLICT (tenant_id, thread_id) DO UPDATE SET
    label          = EXCLUDED.label,
    last_active_at = GREATEST(t.last_active_at, EXCLUDED.last_active_at),
    last_seq       = GREATEST(t.last_seq, EXCLUDED.last_seq)
"""
_DELETE = "DELETE FROM thread_activity WHERE tenant_id = $1 AND thread_id = $2"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """A turn bumps ``message_count`` and ``last_active_at``; the first that names a user makes it the owner."""
    return [SqlOp(TABLE, _TOUCH, (e.tenant_id, e.thread_id, e.occurred_at, 1, 0, pos.seq, e.user_id), _TOUCH_BULK,
                  True)]


def on_session_ended(e: SessionEnded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _TOUCH, (e.tenant_id, e.thread_id, e.occurred_at, 0, 1, pos.seq, None), _TOUCH_BULK, True)]


def on_thread_labelled(e: ThreadLabelled, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _LABEL, (e.tenant_id, e.thread_id, e.label, e.occurred_at, pos.seq))]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Seed 000 §1.3: deleting a thread clears it from every table."""
    return [SqlOp(TABLE, _DELETE, (e.tenant_id, e.thread_id))]


PROJECTION = Projection(
    name="thread_activity",
    version=2,  # 2: owner_user (schema 0040, issue #26 item 4)
    tables=(TABLE,),
    handlers={
        TurnRecorded: on_turn_recorded,
        SessionEnded: on_session_ended,
        ThreadLabelled: on_thread_labelled,
        ThreadDeleted: on_thread_deleted,
    },
)
