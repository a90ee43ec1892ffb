"""The recall-row fold as it was before issue #13 items 5-6 (main at d63f57d, projections/vectors.py): two statements
per turn, the insert with its sub-queries and the re-derivation of the newest three windows of the session.

Kept only as the reference the bulk fold must reproduce byte for byte (tests/integration/recall/test_vectors_bulk.py);
nothing in the engine uses it. Since schema 0034 the full-text columns are folded, not generated: this reference
computes them as the bulk fold does (one parse per piece, concatenation for the turn and the window), per turn, and
since projection version 4 parses the piece from ``lexical_text(body)`` as the bulk fold does (CJK words cut, issue
#28).
"""

from __future__ import annotations

import msgspec

from memengine.events.model import ThreadDeleted, ToolUseBlock, TurnRecorded
from memengine.projections.ops import FoldConfig, Position, SqlOp
from memengine.projections.segment import lexical_text, mostly_cjk
from memengine.projections.vectors import date_label, provenance, speaker_label, split_text

TABLE = "memory_vectors"

_INSERT = """
WITH n AS (SELECT CASE WHEN $13::text = 'tool' THEN
             (SELECT p.tool_calls ->> $14::text FROM memory_vectors p
               WHERE p.tenant_id = $1 AND p.thread_id = $2 AND p.seq < $3 AND p.tool_calls ? $14::text
               ORDER BY p.seq DESC LIMIT 1) END AS tool),
l AS (SELECT n.tool, CASE WHEN n.tool IS NULL THEN $8::text ELSE 'tool ' || n.tool END AS speaker FROM n)
INSERT INTO memory_vectors (tenant_id, thread_id, seq, event_id, user_id, session_id, session_key, speaker,
                            occurred_at, date_label, piece, turn_text, changed_seq, prev_seq, role, tool, tool_calls,
                            piece_tsv, turn_tsv, cjk)
SELECT $1, $2, $3, $4, $5, $6, $7, l.speaker, $9, $10, l.speaker || ': ' || $11::text,
       '[' || $10::text || '] ' || l.speaker || ': ' || $11::text || $12::text, $3,
       (SELECT max(p.seq) FROM memory_vectors p
         WHERE p.tenant_id = $1 AND p.thread_id = $2 AND p.session_key = $7 AND p.seq < $3),
       $13, l.tool, $15::jsonb, l.ptsv,
       to_tsvector('english', '[' || $10::text || '] ') || l.ptsv || to_tsvector('english', $12::text), $17::boolean
  FROM (SELECT l.*, to_tsvector('english', l.speaker || ': ' || $16::text) AS ptsv FROM l) l
ON CONFLICT DO NOTHING
"""

_WINDOWS = """
WITH s AS (SELECT seq, piece, date_label, piece_tsv FROM memory_vectors
            WHERE tenant_id = $1 AND thread_id = $2 AND session_key = $3 AND seq <= $4
            ORDER BY seq DESC LIMIT 5),
w AS (SELECT seq, date_label, piece, lag(piece, 2) OVER o AS p2, lag(piece, 1) OVER o AS p1,
             lead(piece, 1) OVER o AS n1, lead(piece, 2) OVER o AS n2, lead(seq, 1) OVER o AS nseq,
             piece_tsv, lag(piece_tsv, 1) OVER o AS pt1, lead(piece_tsv, 1) OVER o AS nt1,
             row_number() OVER (ORDER BY seq DESC) AS rn
        FROM s WINDOW o AS (ORDER BY seq)),
x AS (SELECT seq, nseq, '[' || date_label || '] ' || concat_ws(' ', p1, piece, n1) AS win,
             to_tsvector('english', '[' || date_label || '] ') || coalesce(pt1, ''::tsvector) || piece_tsv
               || coalesce(nt1, ''::tsvector) AS win_tsv,
             '[' || date_label || '] ' || concat_ws(' ', p2, p1, piece, n1, n2) AS emb
        FROM w WHERE rn <= 3)
UPDATE memory_vectors m
   SET win_text = x.win, win_tsv = x.win_tsv, emb_text = x.emb, emb_sha = sha256(convert_to(x.emb, 'UTF8')),
       next_seq = x.nseq,
       changed_seq = CASE WHEN m.emb_text = x.emb THEN m.changed_seq ELSE $4 END
  FROM x
 WHERE m.tenant_id = $1 AND m.thread_id = $2 AND m.seq = x.seq
   AND (m.win_text, m.emb_text, m.next_seq) IS DISTINCT FROM (x.win, x.emb, x.nseq)
"""

_DELETE_THREAD = "DELETE FROM memory_vectors WHERE tenant_id = $1 AND thread_id = $2"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    role, tool_use_id = provenance(e)
    body, image = split_text(e)
    calls = {b.id: b.name for b in e.content if isinstance(b, ToolUseBlock)}
    session_key = e.session_id or ""
    return [
        SqlOp(TABLE, _INSERT, (e.tenant_id, e.thread_id, pos.seq, e.event_id, e.user_id, e.session_id, session_key,
                               speaker_label(e), e.occurred_at, date_label(e), body, image, role, tool_use_id,
                               msgspec.json.encode(calls).decode() if calls else None, lexical_text(body),
                               mostly_cjk(body))),
        SqlOp(TABLE, _WINDOWS, (e.tenant_id, e.thread_id, session_key, pos.seq)),
    ]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id))]


HANDLERS = {TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted}
