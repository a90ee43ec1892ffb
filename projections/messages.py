"""``messages``: the live transcript of each thread, one row per ``TurnRecorded``.

Each row keeps the verbatim blocks (Tier 3), their condensed form (Tier 2, seed 000 §4.3) and both token counts,
so context assembly is one indexed read with no tokenizing on the request path.
"""

from __future__ import annotations

import msgspec

from events.model import ThreadDeleted, ToolResultBlock, ToolUseBlock, TurnRecorded
from projections.content import condense, message_tokens, plain_text
from projections.ops import FoldConfig, Position, Projection, SqlOp

TABLE = "messages"
_json = msgspec.json.Encoder()

_INSERT = """
INSERT INTO messages (tenant_id, thread_id, seq, event_id, role, user_id, session_id, occurred_at, content,
                      content_condensed, text, tokens_full, tokens_condensed, tool_use_ids, tool_result_ids, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11, $12, $13, $14, $15, $16::jsonb)
ON CONFLICT DO NOTHING
"""
_DELETE_THREAD = "DELETE FROM messages WHERE tenant_id = $1 AND thread_id = $2"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Insert the turn with its condensed form and token counts."""
    blocks = e.content
    condensed = condense(blocks, cfg.condensed_tool_max)
    same = condensed == list(blocks)
    content_json = _json.encode(blocks).decode()
    return [
        SqlOp(
            TABLE,
            _INSERT,
            (
                e.tenant_id,
                e.thread_id,
                pos.seq,
                e.event_id,
                e.role,
                e.user_id,
                e.session_id,
                e.occurred_at,
                content_json,
                None if same else _json.encode(condensed).decode(),
                plain_text(blocks),
                message_tokens(blocks),
                message_tokens(condensed) if condensed else 0,
                [b.id for b in blocks if isinstance(b, ToolUseBlock)],
                [b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock)],
                _json.encode(e.metadata).decode(),
            ),
        )
    ]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Seed 000 §1.3: deleting a thread clears its transcript."""
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id))]


PROJECTION = Projection(
    name="messages",
    version=1,
    tables=(TABLE,),
    handlers={TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted},
)
