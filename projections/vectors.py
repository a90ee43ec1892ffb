"""``memory_vectors``: one row per turn for recall (issue #3; design in docs/contributors/recall-research.md).

Per turn: ``turn_text`` = ``[8 May 2023] Caroline: text [shares caption] [image: query]`` (full-text list 1),
``win_text`` = ``[date]`` + the turns t-1, t, t+1 of the same session (full-text list 2) and ``emb_text`` = the
turns t-2 .. t+2 (what the embedder worker embeds). A turn changes the windows of its two predecessors, so the fold's
statement reads the session's last rows from the table itself (a fold may read its own tables; ops of one table keep
their order).

Issue #13 items 5-6 (the recall rows keep up with ingest): one op per turn whose bulk form folds a whole run of turns
in one set-based statement (``SqlOp.rows``): each row is written once with its final windows and the last two rows of
each touched session are updated once per batch, where the per-turn form issued two statements per turn and
rewrote every row three more times (each rewrite re-computing both tsvectors and new index entries). The rows are
those of the per-turn fold byte for byte (tests/integration/recall/test_vectors_bulk.py), so the version stays 2 and no
rebuild is needed. Embeddings are not folded here: they are not events (DESIGN.md); the
worker (``engine.embedding.worker``) embeds rows whose ``emb_sha`` has no vector yet.

Full text (schema 0034, version 3; issue #13 items 1, 2, 5): the english parser runs once per turn, over its piece
(``piece_tsv``); ``turn_tsv`` = date || piece || image and ``win_tsv`` = date || piece t-1 || piece t || piece t+1 are
tsvector concatenations (``||`` shifts the right operand's positions past the left's). Parsing the window text ran
over each piece three to five times (its own window, its neighbours', and again when a new turn extended the
previous window): ~55 us per window against ~4 us to concatenate (measured in PostgreSQL 18 on 10,000 synthetic
turns). Each lexeme keeps the number of positions that parsing the joined text gives it (every row of
tests/integration/recall/test_vectors_bulk.py's LoCoMo + tool-traffic log), and that count is all recall reads (BM25 tf,
the OR ``ts_rank`` of the user-memory part); only the positions differ across a piece boundary (stop words at the
end of a piece take no position in the concatenation). Two differences, both deterministic: the parser reads an
HTML-like tag across the join (``see <b foo`` + ``end> ok`` is one tag, its words dropped), which the per-piece parse
does not, so each turn keeps its own words beside such a neighbour (tested); and past PostgreSQL's limits (a
lexeme's 256 positions, a position's 16,383) the two cap differently.

Chinese and other CJK text (version 4, issue #28 item 2): the piece is parsed from ``lexical_text(body)``
(``projections.segment``: each CJK run cut into words separated by spaces; a turn without CJK sends no such
argument and is parsed exactly as before), so ``花生`` matches ``我对花生过敏``; the stored texts are the turn's own.

Script (version 6, schema 0046, issue #28 session 18): ``cjk`` is ``segment.mostly_cjk`` of the turn's body (caption
included, speaker label not), folded once per turn so that recall can leave mostly-CJK rows out of an English-only
embedder's dense list for a mostly-CJK question without running the rule over every row of the scope.

Provenance (issue #18 item 3, role-faithful): the speaker label says who produced the text, so a tool's output never
reads as the user's words: a user turn is labelled with its ``user_id`` (else ``user``), an assistant or system turn
with its role, and a tool turn (role ``tool``, or any turn carrying a ``tool_result`` block: Anthropic's format puts
tool results in user messages) with ``tool <name>``, the name of the call it answers (``tool_calls`` of the thread's
earlier rows: this fold reads its own table, so a rebuild finds the same name), else plain ``tool``. ``role`` and
``tool`` are kept as columns for recall hits (``engine.read.recall``).

Withdrawal (``TurnsWithdrawn``, issue #26 item 6): a withdrawn turn leaves recall completely, its row and its words
in the neighbours' windows (``on_turns_withdrawn``); the thread-scoped and tenant-wide recall then never return it.
A surviving tool turn keeps the tool name it took from a withdrawn call (a name, not the withdrawn text).
"""

from __future__ import annotations

import msgspec

from memengine.events.model import ThreadDeleted, ToolResultBlock, ToolUseBlock, TurnRecorded, TurnsWithdrawn
from memengine.projections.content import plain_text
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp
from memengine.projections.segment import lexical_text, mostly_cjk

TABLE = "memory_vectors"
_json = msgspec.json.Encoder()
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")

#: The columns of one turn's row document (``SqlOp.rows``): r->>i is the i-th argument of the turn's op (0-based).
_ARGS = """
SELECT r->>0 AS tenant_id, r->>1 AS thread_id, (r->>2)::bigint AS seq, (r->>3)::uuid AS event_id, r->>4 AS user_id,
       r->>5 AS session_id, r->>6 AS session_key, r->>7 AS label, (r->>8)::timestamptz AS occurred_at,
       r->>9 AS date_label, r->>10 AS body, r->>11 AS image, r->>12 AS role, r->>13 AS tool_use_id,
       (r->>14)::jsonb AS tool_calls, coalesce(r->>15, r->>10) AS lex_body, (r->>16)::boolean AS cjk
  FROM jsonb_array_elements({doc}) AS j(r)
"""

# One statement for a run of turns (set-based, the batch's rows at once), equal to applying the turns one by one in
# seq order as the fold did up to version 2 (an insert with sub-queries, then an update re-deriving the windows of
# the newest three turns of the session; tests/integration/legacy_vectors.py keeps that form as the reference):
# - d: the run's turns; n: those without a row yet (ON CONFLICT DO NOTHING: a row of the same tenant and seq stays);
# - bt: the tool name of a tool turn from the newest earlier call in the run (calls expanded, a hash join), else
#   the newest earlier row of the thread that has the call (an index scan backwards, as before);
# - old: the last four rows of each touched session before the run (the two that get new neighbours and the two
#   that are their predecessors' context); w: neighbours t-2 .. t+2 over old + new rows of the session;
# - the new rows are inserted with their final windows, the two last old rows of each session updated once: the last
#   one's win_text changes, the one before only gains a neighbour in emb_text, and an UPDATE that does not assign
#   win_text leaves its tsvector (a generated column) alone, so that row is updated without win_text (two updates
#   of disjoint rows; to_tsvector is most of what a row write costs, see bench/recall_fold_profile.py).
# changed_seq = the last event that changed emb_text: a new neighbour always lengthens it, so it is the newest of the
# row itself and its next two neighbours (the old per-turn update set it to each arriving neighbour in turn).
# lt: each new turn's piece parsed once (ptsv); an old row folded before schema 0034 has no piece_tsv and is parsed
# here. win_tsv / turn_tsv concatenate parsed pieces (module docstring), so the update of an old row's window parses
# nothing.
_BULK = """
WITH d AS MATERIALIZED ({args}),
n AS MATERIALIZED (SELECT d.* FROM d WHERE NOT EXISTS (
        SELECT 1 FROM memory_vectors m WHERE m.tenant_id = d.tenant_id AND m.seq = d.seq)),
calls AS (SELECT n.tenant_id, n.thread_id, n.seq, c.key AS id, c.value AS name
            FROM n, jsonb_each_text(n.tool_calls) AS c WHERE n.tool_calls IS NOT NULL),
bt AS (SELECT DISTINCT ON (n.seq) n.seq, c.name
         FROM n JOIN calls c ON c.tenant_id = n.tenant_id AND c.thread_id = n.thread_id AND c.id = n.tool_use_id
                            AND c.seq < n.seq
        WHERE n.role = 'tool'
        ORDER BY n.seq, c.seq DESC),
t AS (SELECT n.*, CASE WHEN n.role = 'tool' THEN coalesce(bt.name,
                 (SELECT p.tool_calls ->> n.tool_use_id FROM memory_vectors p
                   WHERE p.tenant_id = n.tenant_id AND p.thread_id = n.thread_id AND p.seq < n.seq
                     AND p.tool_calls ? n.tool_use_id
                   ORDER BY p.seq DESC LIMIT 1)) END AS tool
        FROM n LEFT JOIN bt ON bt.seq = n.seq),
l AS (SELECT t.*, CASE WHEN t.tool IS NULL THEN t.label ELSE 'tool ' || t.tool END AS speaker FROM t),
lt AS MATERIALIZED (SELECT l.*, memengine_tsv(l.speaker || ': ' || l.lex_body) AS ptsv FROM l),
ss AS (SELECT tenant_id, thread_id, session_key, min(seq) AS first FROM n GROUP BY tenant_id, thread_id, session_key),
u AS (SELECT ss.tenant_id, ss.thread_id, ss.session_key, o.seq, o.piece, o.date_label, false AS is_new, o.ptsv
        FROM ss CROSS JOIN LATERAL (
             SELECT m.seq, m.piece, m.date_label, coalesce(m.piece_tsv, memengine_tsv(m.piece)) AS ptsv
               FROM memory_vectors m
              WHERE m.tenant_id = ss.tenant_id AND m.thread_id = ss.thread_id AND m.session_key = ss.session_key
                AND m.seq < ss.first
              ORDER BY m.seq DESC LIMIT 4) AS o
      UNION ALL
      SELECT tenant_id, thread_id, session_key, seq, speaker || ': ' || body, date_label, true, ptsv FROM lt),
w AS (SELECT u.*, lag(piece, 2) OVER o AS p2, lag(piece, 1) OVER o AS p1, lead(piece, 1) OVER o AS n1,
             lead(piece, 2) OVER o AS n2, lag(seq, 1) OVER o AS pseq, lead(seq, 1) OVER o AS nseq,
             lead(seq, 2) OVER o AS n2seq, lead(is_new, 1) OVER o AS n1new, lead(is_new, 2) OVER o AS n2new,
             lag(ptsv, 1) OVER o AS pt1, lead(ptsv, 1) OVER o AS nt1
        FROM u WINDOW o AS (PARTITION BY tenant_id, thread_id, session_key ORDER BY seq)),
x AS MATERIALIZED (
      SELECT w.tenant_id, w.thread_id, w.seq, w.is_new, w.pseq, w.nseq, greatest(w.seq, w.nseq, w.n2seq) AS changed,
             '[' || w.date_label || '] ' || concat_ws(' ', w.p1, w.piece, w.n1) AS win,
             to_tsvector('english', '[' || w.date_label || '] ') || coalesce(w.pt1, ''::tsvector) || w.ptsv
               || coalesce(w.nt1, ''::tsvector) AS win_tsv,
             '[' || w.date_label || '] ' || concat_ws(' ', w.p2, w.p1, w.piece, w.n1, w.n2) AS emb
        FROM w WHERE w.is_new OR w.n1new OR w.n2new),
ins AS (
    INSERT INTO memory_vectors (tenant_id, thread_id, seq, event_id, user_id, session_id, session_key, speaker,
                                occurred_at, date_label, piece, turn_text, win_text, emb_text, emb_sha, changed_seq,
                                prev_seq, next_seq, role, tool, tool_calls, piece_tsv, turn_tsv, win_tsv, cjk)
    SELECT l.tenant_id, l.thread_id, l.seq, l.event_id, l.user_id, l.session_id, l.session_key, l.speaker,
           l.occurred_at, l.date_label, l.speaker || ': ' || l.body,
           '[' || l.date_label || '] ' || l.speaker || ': ' || l.body || l.image, x.win, x.emb,
           sha256(convert_to(x.emb, 'UTF8')), x.changed, x.pseq, x.nseq, l.role, l.tool, l.tool_calls, l.ptsv,
           to_tsvector('english', '[' || l.date_label || '] ') || l.ptsv || memengine_tsv(l.image), x.win_tsv, l.cjk
      FROM lt l JOIN x ON x.is_new AND x.tenant_id = l.tenant_id AND x.seq = l.seq
     ORDER BY l.seq
    ON CONFLICT DO NOTHING),
wu AS (
    UPDATE memory_vectors m
       SET win_text = x.win, win_tsv = x.win_tsv, emb_text = x.emb, emb_sha = sha256(convert_to(x.emb, 'UTF8')),
           next_seq = x.nseq,
           changed_seq = CASE WHEN m.emb_text = x.emb THEN m.changed_seq ELSE x.changed END
      FROM x
     WHERE NOT x.is_new AND m.tenant_id = x.tenant_id AND m.thread_id = x.thread_id AND m.seq = x.seq
       AND m.win_text IS DISTINCT FROM x.win)
UPDATE memory_vectors m
   SET emb_text = x.emb, emb_sha = sha256(convert_to(x.emb, 'UTF8')), next_seq = x.nseq,
       changed_seq = CASE WHEN m.emb_text = x.emb THEN m.changed_seq ELSE x.changed END
  FROM x
 WHERE NOT x.is_new AND m.tenant_id = x.tenant_id AND m.thread_id = x.thread_id AND m.seq = x.seq
   AND m.win_text = x.win AND (m.emb_text, m.next_seq) IS DISTINCT FROM (x.emb, x.nseq)
"""
#: The run's form: one parameter, the JSON document of the turns' rows (engine/runtime/sql.py).
_TURNS_BULK = _BULK.format(args=_ARGS.format(doc="$1::jsonb"))
#: A run of one turn (a batch of one, or the runner isolating a poison batch): the same statement over a document
#: built from the op's own parameters, so both forms are one code path.
_TURN_ONE = _BULK.format(args=_ARGS.format(doc=(
    "jsonb_build_array(jsonb_build_array($1::text, $2::text, $3::bigint, $4::uuid, $5::text, $6::text, $7::text,"
    " $8::text, $9::timestamptz, $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $16::text,"
    " $17::boolean))")))

_DELETE_THREAD = "DELETE FROM memory_vectors WHERE tenant_id = $1 AND thread_id = $2"

# A withdrawal (issue #26 item 6): the withdrawn rows go ($4: all before, $5: these ids; both only before the fact's
# own sequence $3), and every other row of the sessions they sat in gets the windows, neighbours and embedded text
# it would have had if the withdrawn turns had never been recorded (win_text quotes t-1 and t+1, emb_text t-2 ..
# t+2: deleting the rows alone left their words in the neighbours' full text and embeddings). One statement: the
# CTEs share one snapshot, so the survivors are selected by the negated predicate, not by reading after the delete.
# ``changed_seq`` becomes the fact's sequence where ``emb_text`` changed, so the embedder re-embeds those rows; a
# row whose window text is unchanged keeps its tsvector (as in ``_BULK``).
_GONE = "m.seq < $3 AND ($4::bool OR m.event_id = ANY($5::uuid[]))"
_WITHDRAW = f"""
WITH gone AS (DELETE FROM memory_vectors m WHERE m.tenant_id = $1 AND m.thread_id = $2 AND {_GONE}
              RETURNING m.session_key),
ks AS (SELECT DISTINCT session_key FROM gone),
u AS (SELECT m.seq, m.session_key, m.piece, m.date_label, coalesce(m.piece_tsv, memengine_tsv(m.piece)) AS ptsv
        FROM memory_vectors m JOIN ks ON ks.session_key = m.session_key
       WHERE m.tenant_id = $1 AND m.thread_id = $2 AND NOT ({_GONE})),
w AS (SELECT u.*, lag(piece, 2) OVER o AS p2, lag(piece, 1) OVER o AS p1, lead(piece, 1) OVER o AS n1,
             lead(piece, 2) OVER o AS n2, lag(seq, 1) OVER o AS pseq, lead(seq, 1) OVER o AS nseq,
             lag(ptsv, 1) OVER o AS pt1, lead(ptsv, 1) OVER o AS nt1
        FROM u WINDOW o AS (PARTITION BY session_key ORDER BY seq)),
x AS (SELECT w.seq, w.pseq, w.nseq,
             '[' || w.date_label || '] ' || concat_ws(' ', w.p1, w.piece, w.n1) AS win,
             to_tsvector('english', '[' || w.date_label || '] ') || coalesce(w.pt1, ''::tsvector) || w.ptsv
               || coalesce(w.nt1, ''::tsvector) AS win_tsv,
             '[' || w.date_label || '] ' || concat_ws(' ', w.p2, w.p1, w.piece, w.n1, w.n2) AS emb
        FROM w)
UPDATE memory_vectors m
   SET win_text = x.win, win_tsv = CASE WHEN m.win_text = x.win THEN m.win_tsv ELSE x.win_tsv END,
       emb_text = x.emb, emb_sha = sha256(convert_to(x.emb, 'UTF8')), prev_seq = x.pseq, next_seq = x.nseq,
       changed_seq = CASE WHEN m.emb_text = x.emb THEN m.changed_seq ELSE $3 END
  FROM x
 WHERE m.tenant_id = $1 AND m.thread_id = $2 AND m.seq = x.seq
   AND (m.win_text, m.emb_text, m.prev_seq, m.next_seq) IS DISTINCT FROM (x.win, x.emb, x.pseq, x.nseq)
"""


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


def split_text(e: TurnRecorded) -> tuple[str, str]:
    """``(body, image suffix)``: the plain text with the shared caption, and `` [image: query]`` or ``""``."""
    meta = e.metadata if isinstance(e.metadata, dict) else {}
    body = " ".join(plain_text(e.content).split())
    caption = meta.get("blip_caption")
    body += f" [shares {caption}]" if isinstance(caption, str) and caption else ""
    query = meta.get("query")
    return body, (f" [image: {query}]" if isinstance(query, str) and query else "")


def texts(e: TurnRecorded) -> tuple[str, str, str]:
    """``(speaker, piece, turn_text)`` of a turn (docs/contributors/recall-research.md, "The design") with the
    label of ``speaker_label`` (the fold's SQL names the tool of a tool turn when it finds the call)."""
    speaker = speaker_label(e)
    body, image = split_text(e)
    piece = f"{speaker}: {body}"
    return speaker, piece, f"[{date_label(e)}] {piece}{image}"


def on_turn_recorded(e: TurnRecorded, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """One op per turn: its row's parameters (label from the event alone, body, image suffix, role, the id of the
    call it answers, its own calls as ``{id: name}`` JSON); the runner sends a run of turns as one ``_TURNS_BULK``
    statement over their JSON document (``SqlOp.rows``), which names the tool, derives the windows and updates the
    predecessors' windows, set-based."""
    role, tool_use_id = provenance(e)
    body, image = split_text(e)
    calls = {b.id: b.name for b in e.content if isinstance(b, ToolUseBlock)}
    lex = lexical_text(body)  # CJK words cut (issue #28); None: the body itself is what the parser reads
    return [SqlOp(TABLE, _TURN_ONE, (e.tenant_id, e.thread_id, pos.seq, e.event_id, e.user_id, e.session_id,
                                     e.session_id or "", speaker_label(e), e.occurred_at, date_label(e), body, image,
                                     role, tool_use_id, _json.encode(calls).decode() if calls else None,
                                     None if lex is body else lex, mostly_cjk(body)),
                  _TURNS_BULK, True)]


def on_thread_deleted(e: ThreadDeleted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp(TABLE, _DELETE_THREAD, (e.tenant_id, e.thread_id))]


def on_turns_withdrawn(e: TurnsWithdrawn, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Withdrawal (``pop_item`` / ``clear_session``, issue #26 item 6): the rows of the withdrawn turns (named ids
    of this thread, or every turn of it with ``all_before``, recorded before the fact: a turn recorded after it is
    kept, as in ``messages``) leave recall, and the rows left in their sessions are re-windowed as if those turns had
    never been recorded (``_WITHDRAW``), so no full-text column or embedded text of recall quotes them. An id of
    another thread matches nothing. Pure: one statement over this table, in log order with the turns' inserts."""
    if not e.event_ids and not e.all_before:
        return []
    return [SqlOp(TABLE, _WITHDRAW, (e.tenant_id, e.thread_id, pos.seq, e.all_before, list(e.event_ids)))]


PROJECTION = Projection(
    name="vectors",
    # 2: role-faithful speaker labels, role / tool / tool_calls columns (issue #18); 3: full-text columns folded by
    # concatenation, piece_tsv (schema 0034, issue #13): rows of version 2 keep parsed positions until a rebuild;
    # 4: TurnsWithdrawn folded (issue #26 item 6): rows folded before keep withdrawn turns until a rebuild; CJK runs
    # of a turn's text cut into words before parsing (projections.segment, issue #28); 5: a piece over 16 KiB parsed
    # in chunks within the tsvector limit (memengine_tsv, schema 0042): such rows folded before keep whole-text
    # positions until a rebuild; 6: ``cjk``, whether the turn's body is mostly CJK (schema 0046, issue #28 session 18):
    # rows folded before keep NULL, which recall computes from the piece, until a rebuild
    version=6,
    tables=(TABLE,),
    handlers={TurnRecorded: on_turn_recorded, ThreadDeleted: on_thread_deleted, TurnsWithdrawn: on_turns_withdrawn},
)
