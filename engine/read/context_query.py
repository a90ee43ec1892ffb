"""The query-aware part of context assembly (issue #14 item 2): which older turns of the thread the request's query
makes relevant, and their rows.

``relevant_rows`` asks the thread's own hybrid recall (``engine.read.recall.Recaller.thread_ranked``: the ranking of
``rpc.recall``'s thread statement, no second retriever) for the ``CONTEXT_RECALL_K`` turns best matching the query
and, in the same statement (issue #27 item 5: one round trip, not three), those turns, the turn just before and just
after each in the thread (immediate neighbours), and the tool partners of all of them (the answers of a call, the
call of an answer) so that ``engine.read.context.units`` can keep each call with its answers.
``engine.read.context.relevance_order`` turns that into Tier 2's priority.

Pruned turns (issue #27 item 0): the seed-000 pruner removes old turns from ``messages``, never from recall's rows
(``memory_vectors`` keeps every turn's text), so a hit recall ranks may be a pruned turn. The same statement brings
such hits and their session neighbours back from the recall rows (``pruned_row``: the condensed text form), so Tier 2
places an old turn wherever it lives; long-term memory exists for exactly those turns."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import Any

import asyncpg
import msgspec

from memengine.engine.read.context import Row, relevance_order
from memengine.engine.read.recall import Recaller
from memengine.engine.wire.requests import ContextRequest
from memengine.projections.tokens import MESSAGE_OVERHEAD, count_tokens

#: Turns recalled for Tier 2: the RPC's maximum. Since Tier 2 takes what Tiers 3 and 1 leave (issue #27 item 1) it
#: holds ~80 LoCoMo turns at 4K and ~170 at 8K, and a hit of lower rank is worth more than a neighbour of a higher
#: one (``relevance_order``): 100 hits before their neighbours. The statement's cost hardly depends on k (its ranked
#: lists hold 200 each). Dev (LoCoMo 26+30), evidence at 4K with the question: k=50 0.946, k=100 in RESULTS.md.
CONTEXT_RECALL_K = 100

#: Appended to thread-scoped recall's ranking (``Recaller.thread_ranked``, CTE ``top``: the hits), one statement
#: (issue #27 item 5: the hits' rows came in two more statements after the recall, ~12 ms in series at 1M stored):
#:
#: - ``part`` -1, first, one row: ``hits``, the hits' seqs best first (``score DESC, seq``, recall's order), and
#:   which hit each row of part 0 (``nb_hit`` / ``nb_seq``) and of part 1 (``pnb_hit`` / ``pnb_seq``) is a neighbour
#:   of (not itself), as parallel arrays: a join of the rows with those pairs was planned as a nested loop over
#:   the pairs (the CTEs' row estimates are guesses), 11 ms on a pruned LoCoMo thread at 1M stored.
#: - ``part`` 0: from ``messages``, the hits, their neighbours (``nb``: the turn just before and just after each in
#:   the thread, with the hit they belong to) and the tool partners of those rows (the answers of a call, the call
#:   of an answer), as ``engine.read.context.Row`` columns, oldest first.
#: - ``part`` 1: hits no longer in ``messages`` (pruned, issue #27 item 0) and their neighbours in the same session
#:   (``prev_seq`` / ``next_seq``) as recall keeps them (``pruned_row`` builds their rows from ``piece`` and
#:   ``speaker``), pruned ones only (at or below the thread's prune mark: a turn missing from the transcript above it
#:   was withdrawn, never brought back), a tool's output left out (its call is not placed with it: an answer is never
#:   shown alone), none already in part 0, oldest first.
_RELEVANT_TAIL = """,
h AS MATERIALIZED (SELECT seq FROM top),
nb AS MATERIALIZED (
    SELECT h.seq AS hit, h.seq AS seq FROM h
    UNION ALL
    SELECT h.seq, p.seq FROM h CROSS JOIN LATERAL (
        SELECT seq FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq < h.seq ORDER BY seq DESC LIMIT 1) p
    UNION ALL
    SELECT h.seq, n.seq FROM h CROSS JOIN LATERAL (
        SELECT seq FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq > h.seq ORDER BY seq LIMIT 1) n),
base AS MATERIALIZED (
    SELECT m.* FROM messages m WHERE m.tenant_id = $1 AND m.thread_id = $2
       AND m.seq IN (SELECT seq FROM nb)),
tc AS MATERIALIZED (
    SELECT coalesce(array_agg(DISTINCT u) FILTER (WHERE u IS NOT NULL), '{}') AS calls,
           coalesce(array_agg(DISTINCT a) FILTER (WHERE a IS NOT NULL), '{}') AS answers
      FROM base LEFT JOIN LATERAL unnest(base.tool_use_ids) u ON true LEFT JOIN LATERAL unnest(base.tool_result_ids) a
        ON true),
partner AS (
    -- one pass over the thread with the base rows' tool ids (a join per base row cost 24 ms on a 419-turn thread),
    -- and none at all when no base row holds a tool call or answer (the one-time filter on tc)
    SELECT m.* FROM messages m, tc WHERE m.tenant_id = $1 AND m.thread_id = $2
       AND (cardinality(tc.calls) > 0 OR cardinality(tc.answers) > 0)
       AND (m.tool_result_ids && tc.calls OR m.tool_use_ids && tc.answers)
       AND m.seq NOT IN (SELECT seq FROM nb)),
rel AS MATERIALIZED (SELECT * FROM base UNION ALL SELECT * FROM partner),
hv AS MATERIALIZED (
    SELECT v.seq, v.prev_seq, v.next_seq FROM memory_vectors v
     WHERE v.tenant_id = $1 AND v.thread_id = $2
       AND v.seq IN (SELECT seq FROM h WHERE seq NOT IN (SELECT seq FROM base))),
pnb AS MATERIALIZED (
    SELECT seq AS hit, seq FROM hv
    UNION ALL SELECT seq, prev_seq FROM hv WHERE prev_seq IS NOT NULL
    UNION ALL SELECT seq, next_seq FROM hv WHERE next_seq IS NOT NULL),
pruned AS (
    SELECT v.seq, v.event_id, coalesce(v.role, 'user') AS role, v.user_id, v.session_id, v.occurred_at, v.piece,
           v.speaker
      FROM memory_vectors v
     WHERE v.tenant_id = $1 AND v.thread_id = $2 AND v.seq IN (SELECT seq FROM pnb)
       AND v.seq <= (SELECT through_seq FROM message_prune_marks WHERE tenant_id = $1 AND thread_id = $2)
       AND coalesce(v.role, 'user') <> 'tool'
       AND v.seq NOT IN (SELECT seq FROM rel))
SELECT -1 AS part, (SELECT coalesce(array_agg(seq ORDER BY score DESC, seq), '{}') FROM top) AS hits,
       (SELECT array_agg(hit ORDER BY seq, hit) FROM nb WHERE hit <> seq) AS nb_hit,
       (SELECT array_agg(seq ORDER BY seq, hit) FROM nb WHERE hit <> seq) AS nb_seq,
       (SELECT array_agg(hit ORDER BY seq, hit) FROM pnb WHERE hit <> seq) AS pnb_hit,
       (SELECT array_agg(seq ORDER BY seq, hit) FROM pnb WHERE hit <> seq) AS pnb_seq,
       NULL::bigint AS seq, NULL::text AS event_id, NULL::text AS role, NULL::text AS user_id,
       NULL::text AS session_id, NULL::timestamptz AS occurred_at, NULL::text AS content,
       NULL::text AS content_condensed, NULL::int AS tokens_full, NULL::int AS tokens_condensed,
       NULL::text[] AS tool_use_ids, NULL::text[] AS tool_result_ids, NULL::text AS piece, NULL::text AS speaker
UNION ALL
SELECT 0, NULL, NULL, NULL, NULL, NULL, x.seq, x.event_id::text, x.role, x.user_id, x.session_id, x.occurred_at,
       x.content::text, x.content_condensed::text, x.tokens_full, x.tokens_condensed, x.tool_use_ids,
       x.tool_result_ids, NULL, NULL
  FROM rel x
UNION ALL
SELECT 1, NULL, NULL, NULL, NULL, NULL, p.seq, p.event_id::text, p.role, p.user_id, p.session_id, p.occurred_at,
       NULL, NULL, NULL, NULL, NULL, NULL, p.piece, p.speaker
  FROM pruned p
 ORDER BY part, seq
"""


#: $1 tenant, $2 thread: the text of the thread's latest user turn that is not a tool's output (Anthropic's format
#: records tool results in user messages), cut to the longest query a request may send (``ContextRequest.query``)
_LIVE_SQL = """
SELECT left(text, 8192) FROM messages
 WHERE tenant_id = $1 AND thread_id = $2 AND role = 'user' AND cardinality(tool_result_ids) = 0 AND text <> ''
 ORDER BY seq DESC LIMIT 1
"""


async def live_query(pool: asyncpg.Pool, tenant: str, thread: str) -> str | None:
    """The live question of a thread (issue #27 item 2): its latest user turn's text (``_LIVE_SQL``), ``None`` when
    it has none. What an agent asks context for right after recording the user's message."""
    text: str | None = await pool.fetchval(_LIVE_SQL, tenant, thread)
    return text


async def relevant_rows(recaller: Recaller, req: ContextRequest, *, live: Awaitable[str | None] | None = None
                        ) -> tuple[str | None, list[int], list[Row]]:
    """``(query, priority, rows)`` for ``req.query`` in ``req.thread`` (with ``live``, for what it gives: the
    thread's latest user turn being read by ``live_query``, a task the caller also awaits): ``query`` what was asked,
    ``priority`` the seqs Tier 2 should prefer, best first (``relevance_order``), ``rows`` oldest first (hits,
    neighbours, tool partners; pruned hits and their session neighbours as ``pruned_row``). Priority and rows are
    empty when there is no query or it finds nothing (no lexeme matches and no vectors). One statement: the
    thread's recall and the rows of its hits (``_RELEVANT_TAIL``). Database errors propagate."""
    query = await live if live is not None else req.query
    if not query or not query.strip():
        return query, [], []
    records = await recaller.thread_ranked(req.tenant, req.thread, query, CONTEXT_RECALL_K, _RELEVANT_TAIL)
    head = records[0]  # part -1
    hits: list[int] = list(head["hits"])
    if not hits:
        return query, [], []
    near: tuple[dict[int, list[int]], dict[int, list[int]]] = ({}, {})  # per part: row seq -> the hits it is near
    for part, (hit_col, seq_col) in enumerate((("nb_hit", "nb_seq"), ("pnb_hit", "pnb_seq"))):
        for hit, seq in zip(head[hit_col] or (), head[seq_col] or (), strict=True):
            near[part].setdefault(seq, []).append(hit)
    rows: list[Row] = []
    # neighbours per hit: the transcript's rows first, then the pruned ones, each part oldest first (as they came
    # when each part was a statement of its own: relevance_order reads them in this order)
    neighbours: dict[int, list[int]] = {}
    for r in records[1:]:
        part, seq = r["part"], r["seq"]
        rows.append(Row._make(tuple(r)[6:18]) if part == 0 else pruned_row(r))
        for hit in near[part].get(seq, ()):
            neighbours.setdefault(hit, []).append(seq)
    rows.sort(key=lambda r: r.seq)
    return query, relevance_order(hits, neighbours), rows


#: The suffix the recall fold adds to a turn's text for a shared photo (``projections.vectors.split_text``): search
#: reads the caption, the message never held it (LoCoMo's ``blip_caption`` is the turn's metadata, not its content)
_CAPTION = re.compile(r" \[shares [^\[\]]*\]\Z")


def pruned_row(r: Any) -> Row:
    """A pruned turn as a Tier-2 row from its recall row (issue #27 item 0): the turn's text as its message read
    (``piece`` without its ``"<speaker>: "`` label, the message says who spoke, nor the ``" [shares <caption>]"``
    the fold adds for search: the transcript's message holds neither, so a turn reads and costs the same whether the
    pruner removed it or not) as one text block, already condensed (seed 000 §4.3: no thinking, no tool output;
    recall rows hold neither), counted as the transcript fold counts a message."""
    piece: str = r["piece"]
    label = f"{r['speaker']}: "
    text = _CAPTION.sub("", piece[len(label):] if piece.startswith(label) else piece)
    content = msgspec.json.encode([{"type": "text", "text": text}]).decode()
    tokens = MESSAGE_OVERHEAD + count_tokens(text)
    return Row(r["seq"], r["event_id"], r["role"], r["user_id"], r["session_id"], r["occurred_at"], content,
               content, tokens, tokens, (), ())


#: $1 tenant, $2 thread, $3 prune mark, $4 rows: the newest pruned turns as recall keeps them (tool outputs left out,
#: as in ``_RELEVANT_TAIL``), newest first
_TAIL_SQL = """
SELECT seq, event_id::text AS event_id, coalesce(role, 'user') AS role, user_id, session_id, occurred_at, piece, speaker
  FROM memory_vectors
 WHERE tenant_id = $1 AND thread_id = $2 AND seq <= $3 AND coalesce(role, 'user') <> 'tool'
 ORDER BY seq DESC LIMIT $4
"""
#: rows fetched per token of room (a LoCoMo turn is ~25 tokens; 1/8 leaves a margin) and at most
_TAIL_PER_TOKEN = 1 / 8
_TAIL_MAX = 2000


async def pruned_tail(pool: asyncpg.Pool, tenant: str, thread: str, mark: int, room: int) -> list[Row]:
    """The newest pruned turns (seq <= ``mark``) whose condensed forms (``pruned_row``) fill ``room`` tokens, oldest
    first: Tier 2's older turns past the live transcript when it is shorter than the budget (issue #27 items 0/1).
    Empty when ``room`` <= 0. At most ``_TAIL_MAX`` rows."""
    if room <= 0:
        return []
    out: list[Row] = []
    used = 0
    for r in await pool.fetch(_TAIL_SQL, tenant, thread, mark, min(_TAIL_MAX, 16 + int(room * _TAIL_PER_TOKEN))):
        row = pruned_row(r)
        if used + row.tokens_condensed > room:
            break
        used += row.tokens_condensed
        out.append(row)
    out.reverse()
    return out
