"""``memory_vectors``: one row per turn for recall (issue #3; design in bench/recall_research/FINDINGS.md).

Per turn: ``turn_text`` = ``[8 May 2023] Caroline: text [shares caption] [image: query]`` (full-text list 1),
``win_text`` = ``[date]`` + the turns t-1, t, t+1 of the same session (full-text list 2) and ``emb_text`` = the
turns t-2 .. t+2 (what the embedder worker embeds). A turn changes the windows of its two predecessors, so the fold
re-derives the windows of the newest three turns of the session from the table itself (a fold may read its own
tables; ops of one table keep their order). Embeddings are not folded here: they are not events (DESIGN.md); the
worker (``engine.embedding.worker``) embeds rows whose ``emb_sha`` has no vector yet.

Provenance (issue #18 item 3, role-faithful): the speaker label says who produced the text, so a tool's output never
reads as the user's words: a user turn is labelled with its ``user_id`` (else ``user``), an assistant or system turn
with its role, and a tool turn (role ``tool``, or any turn carrying a ``tool_result`` block: Anthropic's format puts
tool results in user messages) with ``tool <name>``, the name of the call it answers (``tool_calls`` of the thread's
earlier rows: this fold reads its own table, so a rebuild finds the same name), else plain ``tool``. ``role`` and
``tool`` are kept as columns for recall hits (``engine.read.recall``).
"""

from __future__ import annotations

import msgspec

from memengine.events.model import ThreadDeleted, ToolResultBlock, ToolUseBlock, TurnRecorded
from memengine.projections.content import plain_text
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

TABLE = "memory_vectors"
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")

# $8 speaker label computed from the event alone; for a tool turn ($13 = 'tool') the tool's name is looked up by the
# tool_use id $14 among the thread's earlier rows (newest first: the call is usually the turn just before), and the
# label, piece and turn_text are composed here from the body $11 and the image suffix $12.
_INSERT = """
WITH n AS (SELECT CASE WHEN $13::text = 'tool' THEN
             (SELECT p.tool_calls ->> $14::text FROM memory_vectors p
               WHERE p.tenant_id = $1 AND p.thread_id = $2 AND p.seq < $3 AND p.tool_calls ? $14::text
               ORDER BY p.seq DESC LIMIT 1) END AS tool),
l AS (SELECT n.tool, CASE WHEN n.tool IS NULL THEN $8::text ELSE 'tool ' || n.tool END AS speaker FROM n)
INSERT INTO memory_vectors (tenant_id, thread_id, seq, event_id, user_id, session_id, session_key, speaker,
                            occurred_at, date_label, piece, turn_text, changed_seq, prev_seq, role, tool, tool_calls)
SELECT $1, $2, $3, $4, $5, $6, $7, l.speaker, $9, $10, l.speaker || ': ' || $11::text,
       '[' || $10::text || '] ' || l.speaker || ': ' || $11::text || $12::text, $3,
       (SELECT max(p.seq) FROM memory_vectors p
         WHERE p.tenant_id = $1 AND p.thread_id = $2 AND p.session_key = $7 AND p.seq < $3),
       $13, l.tool, $15::jsonb
  FROM l
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


def provenance(e: TurnRecorded) -> tuple[str, str | None]:
    """``(role, tool_use_id)``: who produced the turn's text. ``tool`` for a turn of role tool or one carrying a
    ``tool_result`` block (whatever its role: a tool's output is never the user's words), with the ``tool_use_id``
    of its first result (``None`` if it has none); else the turn's role and ``None``."""
    results = [b for b in e.content if isinstance(b, ToolResultBlock)]
    if e.role == "tool" or results:
        return "tool", results[0].tool_use_id if results else None
    return e.role, None


def speaker_label(e: TurnRecorded) -> str:
    """The label of a turn from the event alone: ``user_id`` (else ``user``) for a user turn, the role for an
    assistant or system turn, ``tool`` for a tool turn (the fold adds the tool's name when the thread has the call)."""
    role, _ = provenance(e)
    if role == "user":
        return e.user_id or "user"
    return role


def _parts(e: TurnRecorded) -> tuple[str, str]:
    """``(body, image suffix)``: the plain text with the shared caption, and `` [image: query]`` or ``""``."""
    meta = e.metadata if isinstance(e.metadata, dict) else {}
    body = " ".join(plain_text(e.content).split())
    caption = meta.get("blip_caption")
    body += f" [shares {caption}]" if isinstance(caption, str) and caption else ""
    query = meta.get("query")
    return body, (f" [image: {query}]" if isinstance(query, str) and query else "")


def texts(e: TurnRecorded) -> tuple[str, str, str]:
    """``(speaker, piece, turn_text)`` of a turn (FINDINGS.md "One row per turn") with the label of
    ``speaker_label`` (the fold's SQL names the tool of a tool turn when it finds the call)."""
    speaker = speaker_label(e)
    body, image = _parts(e)
    piece = f"{speaker}: {body}"
    return speaker, piece, f"[{date_label(e)}] {piece}{image}"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    role, tool_use_id = provenance(e)
    body, image = _parts(e)
    calls = {b.id: b.name for b in e.content if isinstance(b, ToolUseBlock)}
    session_key = e.session_id or ""
    return [
        SqlOp(TABLE, _INSERT, (e.tenant_id, e.thread_id, pos.seq, e.event_id, e.user_id, e.session_id, session_key,
                               speaker_label(e), e.occurred_at, date_label(e), body, image, role, tool_use_id,
                               msgspec.json.encode(calls).decode() if calls else None)),
        SqlOp(TABLE, _WINDOWS, (e.tenant_id, e.thread_id, session_key, pos.seq)),
    ]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id))]


PROJECTION = Projection(
    name="vectors",
    version=2,  # 2: role-faithful speaker labels, role / tool / tool_calls columns (issue #18)
    tables=(TABLE,),
    handlers={TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted},
)
