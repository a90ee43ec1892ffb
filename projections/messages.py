"""``messages``: the live transcript of each thread, one row per ``TurnRecorded``.

Each row keeps the verbatim blocks (Tier 3), their condensed form (Tier 2, seed 000 §4.3) and both token counts,
so context assembly is one indexed read with no tokenizing on the request path.

Physical pruning (seed 000 §3.1): a turn covered by a ``message_prune_marks`` row is not inserted (see
``projections.pruning`` for why, and for the advisory-lock guard emitted ahead of every write here).
"""

from __future__ import annotations

import msgspec

from memengine.events.model import ThreadDeleted, TurnRecorded, TurnsWithdrawn
from memengine.projections.content import render
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp
from memengine.projections.pruning import GUARD_SHARED, GUARD_SHARED_BULK, GUARD_TABLE

TABLE = "messages"
_json = msgspec.json.Encoder()

_COLUMNS = """tenant_id, thread_id, seq, event_id, role, user_id, session_id, occurred_at, content,
    content_condensed, text, tokens_full, tokens_condensed, tool_use_ids, tool_result_ids, metadata"""
_INSERT = f"""
INSERT INTO messages ({_COLUMNS})
SELECT $1::text, $2::text, $3::bigint, $4::uuid, $5::text, $6::text, $7::text, $8::timestamptz, $9::json, $10::json,
       $11::text, $12::int, $13::int,
       ARRAY(SELECT jsonb_array_elements_text($14::jsonb)), ARRAY(SELECT jsonb_array_elements_text($15::jsonb)),
       $16::json
WHERE NOT EXISTS (SELECT 1 FROM message_prune_marks pm
                  WHERE pm.tenant_id = $1 AND pm.thread_id = $2 AND pm.through_seq >= $3)
ON CONFLICT DO NOTHING
"""
#: Bulk form over one JSON document of rows (``SqlOp.rows``): r->>i is the i-th argument of ``_INSERT`` (0-based).
_INSERT_BULK = f"""
INSERT INTO messages ({_COLUMNS})
SELECT u.tenant_id, u.thread_id, u.seq, u.event_id, u.role, u.user_id, u.session_id, u.occurred_at, u.content,
       u.content_condensed, u.text, u.tokens_full, u.tokens_condensed,
       ARRAY(SELECT jsonb_array_elements_text(u.tool_use_ids)),
       ARRAY(SELECT jsonb_array_elements_text(u.tool_result_ids)),
       u.metadata
FROM (SELECT r->>0 AS tenant_id, r->>1 AS thread_id, (r->>2)::bigint AS seq, (r->>3)::uuid AS event_id,
             r->>4 AS role, r->>5 AS user_id, r->>6 AS session_id, (r->>7)::timestamptz AS occurred_at,
             (r->>8)::json AS content, (r->>9)::json AS content_condensed, r->>10 AS text,
             (r->>11)::int AS tokens_full, (r->>12)::int AS tokens_condensed, (r->>13)::jsonb AS tool_use_ids,
             (r->>14)::jsonb AS tool_result_ids, (r->>15)::json AS metadata
      FROM jsonb_array_elements($1::jsonb) AS j(r)) AS u
WHERE NOT EXISTS (SELECT 1 FROM message_prune_marks pm
                  WHERE pm.tenant_id = u.tenant_id AND pm.thread_id = u.thread_id AND pm.through_seq >= u.seq)
ON CONFLICT DO NOTHING
"""
_DELETE_THREAD = "DELETE FROM messages WHERE tenant_id = $1 AND thread_id = $2"
_WITHDRAW_IDS = "DELETE FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND event_id = ANY($3::uuid[])"
_WITHDRAW_BEFORE = "DELETE FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq < $3"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Insert the turn with its condensed form and token counts (``content.render``: one pass over the blocks)."""
    r = render(e.content, cfg.condensed_tool_max)
    metadata = _json.encode(e.metadata).decode() if e.metadata else "{}"
    return [
        SqlOp(
            TABLE,
            _INSERT,
            (e.tenant_id, e.thread_id, pos.seq, e.event_id, e.role, e.user_id, e.session_id, e.occurred_at,
             r.content, r.condensed, r.text, r.tokens_full, r.tokens_condensed, r.tool_use_ids, r.tool_result_ids,
             metadata),
            _INSERT_BULK,
            True,
        ),
        SqlOp(GUARD_TABLE, GUARD_SHARED, (e.tenant_id, e.thread_id), GUARD_SHARED_BULK, True),  # runs first
    ]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Seed 000 §1.3: deleting a thread clears its transcript."""
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id)),
            SqlOp(GUARD_TABLE, GUARD_SHARED, (e.tenant_id, e.thread_id), GUARD_SHARED_BULK, True)]


def on_turns_withdrawn(e: TurnsWithdrawn, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """The withdrawn turns leave the transcript: those named in ``event_ids`` (of this thread only: an id of another
    thread or tenant matches nothing) and, with ``all_before``, every turn of the thread before this fact's ``seq``.

    Replay gives the same rows: the turns precede their withdrawal in the thread's subject order, so they are
    inserted, then deleted; a withdrawn turn pruned earlier is simply absent. The version stays 1: no log written
    before this event type existed folds differently."""
    ops = []
    if e.event_ids:
        ops.append(SqlOp(TABLE, _WITHDRAW_IDS, (e.tenant_id, e.thread_id, list(e.event_ids))))
    if e.all_before:
        ops.append(SqlOp(TABLE, _WITHDRAW_BEFORE, (e.tenant_id, e.thread_id, pos.seq)))
    return ops


PROJECTION = Projection(
    name="messages",
    version=1,
    tables=(TABLE,),
    handlers={TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted, TurnsWithdrawn: on_turns_withdrawn},
)
