"""``memory_vectors``: one row per turn for recall (issue #3; design in bench/recall_research/FINDINGS.md).

Per turn: ``turn_text`` = ``[8 May 2023] Caroline: text [shares caption] [image: query]`` (full-text list 1),
``win_text`` = ``[date]`` + the turns t-1, t, t+1 of the same session (full-text list 2) and ``emb_text`` = the
turns t-2 .. t+2 (what the embedder worker embeds). A turn changes the windows of its two predecessors, so the fold
re-derives the windows of the newest three turns of the session from the table itself (a fold may read its own
tables; ops of one table keep their order). Embeddings are not folded here: they are not events (DESIGN.md); the
worker (``engine.embedding.worker``) embeds rows whose ``emb_sha`` has no vector yet.
"""

from __future__ import annotations

from memengine.events.model import ThreadDeleted, TurnRecorded
from memengine.projections.content import plain_text
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

TABLE = "memory_vectors"
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")

_INSERT = """
INSERT INTO memory_vectors (tenant_id, thread_id, seq, event_id, user_id, session_id, session_key, speaker,
                            occurred_at, date_label, piece, turn_text, changed_seq, prev_seq)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $3,
       (SELECT max(p.seq) FROM memory_vectors p
         WHERE p.tenant_id = $1 AND p.thread_id = $2 AND p.session_key = $7 AND p.seq < $3)
ON CONFLICT DO NOTHING
"""

# Re-derive win_text / emb_text / next_seq of the newest three turns of the session up to $4 (the new turn and its
# two predecessors), from the newest five.
_WINDOWS = """
WITH s AS (SELECT seq, piece, date_label FROM memory_vectors
            WHERE tenant_id = $1 AND thread_id = $2 AND session_key = $3 AND seq <= $4
            ORDER BY seq DESC LIMIT 5),
w AS (SELECT seq, date_label, piece, lag(piece, 2) OVER o AS p2, lag(piece, 1) OVER o AS p1,
             lead(piece, 1) OVER o AS n1, lead(piece, 2) OVER o AS n2, lead(seq, 1) OVER o AS nseq,
             row_number() OVER (ORDER BY seq DESC) AS rn
        FROM s WINDOW o AS (ORDER BY seq)),
x AS (SELECT seq, nseq, '[' || date_label || '] ' || concat_ws(' ', p1, piece, n1) AS win,
             '[' || date_label || '] ' || concat_ws(' ', p2, p1, piece, n1, n2) AS emb
        FROM w WHERE rn <= 3)
UPDATE memory_vectors m
   SET win_text = x.win, emb_text = x.emb, emb_sha = sha256(convert_to(x.emb, 'UTF8')), next_seq = x.nseq,
       changed_seq = CASE WHEN m.emb_text = x.emb THEN m.changed_seq ELSE $4 END
  FROM x
 WHERE m.tenant_id = $1 AND m.thread_id = $2 AND m.seq = x.seq
   AND (m.win_text, m.emb_text, m.next_seq) IS DISTINCT FROM (x.win, x.emb, x.nseq)
"""

_DELETE_THREAD = "DELETE FROM memory_vectors WHERE tenant_id = $1 AND thread_id = $2"


def date_label(e: TurnRecorded) -> str:
    d = e.occurred_at
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def texts(e: TurnRecorded) -> tuple[str, str, str]:
    """``(speaker, piece, turn_text)`` of a turn (FINDINGS.md "One row per turn")."""
    speaker = e.user_id or e.role
    meta = e.metadata if isinstance(e.metadata, dict) else {}
    body = " ".join(plain_text(e.content).split())
    caption = meta.get("blip_caption")
    piece = f"{speaker}: {body}" + (f" [shares {caption}]" if isinstance(caption, str) and caption else "")
    query = meta.get("query")
    turn_text = f"[{date_label(e)}] {piece}" + (f" [image: {query}]" if isinstance(query, str) and query else "")
    return speaker, piece, turn_text


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    speaker, piece, turn_text = texts(e)
    session_key = e.session_id or ""
    return [
        SqlOp(TABLE, _INSERT, (e.tenant_id, e.thread_id, pos.seq, e.event_id, e.user_id, e.session_id, session_key,
                               speaker, e.occurred_at, date_label(e), piece, turn_text)),
        SqlOp(TABLE, _WINDOWS, (e.tenant_id, e.thread_id, session_key, pos.seq)),
    ]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id))]


PROJECTION = Projection(
    name="vectors",
    version=1,
    tables=(TABLE,),
    handlers={TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted},
)
