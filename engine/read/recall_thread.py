"""Recall scoped to one thread (the agent case) in fewer look-ups (issue #13 item 4: recall p95 <= 25 ms at 1M chunks,
query embedding included, ranking identical).

The ranking is exactly ``recall.recall_sql(thread=True)`` (design: docs/contributors/recall-research.md; seed 000 §4.4
``recall_memory``, seed 003 "记忆检索实现"): BM25 over ``turn_text`` and ``win_text``, cosine over the +-2 window,
RRF (k = 10), neighbour propagation, speaker boost, re-scoring. What differs is the plan:

- **The thread's rows are read once** (CTE ``th``: seq, neighbours, speaker, time, and the two tsvectors already
  reduced to the question's lexemes). Both BM25 lists, the scope of the dense list, the entity check, neighbour
  propagation and the speaker boost work on that set; the general statement looked every candidate up again in
  ``memory_vectors`` (up to ~1,000 index probes for ``prop`` and ``sc``). The wide columns (text, ids) are fetched
  for the ``k`` hits only.
- Measured and not kept (docs/contributors/performance.md, "Tried and dropped"): running the full-text half while
  the query is embedded (two statements in one snapshot) was not faster on 2 shared cores; testing ``@@`` before
  reducing each tsvector was slower; a forced generic plan changes nothing, PostgreSQL already switches the
  prepared statement to its generic plan after five executions (so no planning per request).

Equal by construction: ``th`` is exactly the rows of ``scope_filter``, every candidate of the three lists is one of
them, and the scores and the final order (score DESC, seq) come from the same expressions
(tests/integration/recall/test_recall.py::test_thread_statement_ranks_exactly_as_the_general_one).
"""

from __future__ import annotations

from memengine.engine.read import recall_fragments
from memengine.engine.read.recall_fragments import (
    ASK_LIT,
    CJK_ROW_SQL,
    ENTITY_LIT,
    LEXEMES_SQL,
    SPEAKER_BOOST_SQL,
    WHOLE,
    DenseList,
    dense_cte,
    fused_sql,
    only_query,
    prop_sql,
    scope_filter,
)


def _th(user: bool, since: bool, until: bool, cjk_out: bool = False) -> str:
    """CTE ``th``: the thread's rows in scope with the two tsvectors reduced to the question's lexemes (needs
    CTE ``qq``) and whether each asks (``recall_fragments.prop_sql``); ``cjk_out``: and whether each is mostly CJK
    (``cjk``, ``recall_fragments.CJK_ROW_SQL``)."""
    cjk = f", {CJK_ROW_SQL} AS cjk" if cjk_out else ""
    return f"""th AS MATERIALIZED (SELECT d.seq, d.prev_seq, d.next_seq, d.user_id, d.occurred_at,
                  {only_query('d.turn_tsv')} AS tt, {only_query('d.win_tsv')} AS tw, d.turn_text ~ {ASK_LIT} AS ask{cjk}
           FROM qq, memory_vectors d WHERE {scope_filter(True, user, since, until)})"""


def _lexical() -> str:
    """The scope's size (BM25 N), the named entities that are not a participant of the scope, and the two BM25
    lists ``bt`` (turn) and ``bw`` (window) of up to 200 turns each, ranked. Needs ``th`` with tsvectors. Built when
    called: ``recall_fragments.ENTITY_WEIGHT`` is read then (research scripts set it)."""
    entity_weight = recall_fragments.ENTITY_WEIGHT  # read when built: research scripts set it
    return f"""st AS MATERIALIZED (SELECT count(*)::float8 AS n FROM th),
ent AS MATERIALIZED (SELECT DISTINCT l FROM regexp_matches($6, {ENTITY_LIT}, 'g') w,
              LATERAL unnest(tsvector_to_array(to_tsvector('english', w[1]))) l
             WHERE NOT EXISTS (SELECT 1 FROM th WHERE th.user_id IN (w[1], lower(w[1])))),
""" + ",\n".join(f"""m_{name} AS MATERIALIZED (SELECT th.seq, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM th CROSS JOIN LATERAL unnest(th.{col}) u),
df_{name} AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM m_{name} GROUP BY lexeme),
{name} AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r FROM (
        SELECT m.seq, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * 2.2 / (m.tf + 1.2)
                          * CASE WHEN m.lexeme IN (SELECT l FROM ent) THEN {entity_weight} ELSE 1.0 END) AS s
          FROM m_{name} m JOIN df_{name} df USING (lexeme) CROSS JOIN st
         GROUP BY m.seq ORDER BY s DESC, m.seq LIMIT 200) x)""" for name, col in (("bt", "tt"), ("bw", "tw")))

_QQ = f"qq AS MATERIALIZED (SELECT array_agg(l) AS ls FROM ({LEXEMES_SQL}) ql)"


def _fuse(emb_table: str | None, dense: tuple[DenseList, ...] = WHOLE, cjk_out: bool = False) -> str:
    """From lists ``bt``, ``bw`` and ``th`` (and ``qv``): the dense lists (``dense``: one per span of the vector,
    ``recall_fragments.dense_cte``; ``cjk_out``: over the rows of ``th`` that are not mostly CJK,
    ``recall_fragments.CJK_PAIRS_OUT``), RRF, propagation, speaker boost, re-scoring, the top ``$8`` and their
    columns."""
    rows = "SELECT seq FROM th WHERE NOT th.cjk" if cjk_out else "SELECT seq FROM th"
    scope = f"e.tenant_id = $1 AND e.thread_id = $2 AND e.seq IN ({rows})"
    return f"""{dense_cte(emb_table, dense, scope)},
{fused_sql(emb_table, dense, True)},
{prop_sql("th t ON t.seq = f.seq", "t.ask")},
sc AS MATERIALIZED (SELECT d.seq, d.user_id, d.occurred_at, p.s FROM prop p JOIN th d ON d.seq = p.seq),
{SPEAKER_BOOST_SQL},
top AS MATERIALIZED (SELECT f.seq, f.relevance, f.recency,
       ($10::float8[])[1] * f.relevance + ($10::float8[])[2] * f.recency + ($10::float8[])[3] * $12::float8 AS score
  FROM final f ORDER BY score DESC, f.seq LIMIT $8)"""


#: The hits of ``thread_sql``: the ``top`` turns, best first, with the columns a ``RecallHit`` shows
_HITS = """
SELECT t.seq, d.event_id::text AS event_id, d.thread_id, d.user_id, d.session_id, d.occurred_at, d.turn_text,
       d.role, d.tool, t.relevance, t.recency, $12::float8 AS importance, t.score, (SELECT count(*) FROM dv) AS ndense
  FROM top t JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = t.seq
 ORDER BY t.score DESC, t.seq
"""


def thread_sql(emb_table: str | None, user: bool = False, since: bool = False, until: bool = False,
               dense: tuple[DenseList, ...] = WHOLE, cjk_out: bool = False) -> str:
    """One statement, the parameters and rows of ``recall_sql(emb_table, thread=True, ...)``: $1 tenant, $2 thread,
    $3 user, $4 since, $5 until, $6 question, $7 query vector (text form) or NULL, $8 k, $9 as_of, $10 weights
    float8[3], $11 decay days, $12 turn importance. ``cjk_out``: the dense list leaves out the mostly-CJK rows
    (``recall_fragments.cjk_pairs_out`` of the question)."""
    return thread_ranked(emb_table, user, since, until, dense, cjk_out) + _HITS


def thread_ranked(emb_table: str | None, user: bool = False, since: bool = False, until: bool = False,
                  dense: tuple[DenseList, ...] = WHOLE, cjk_out: bool = False) -> str:
    """``thread_sql`` without its final ``SELECT``: the ``WITH`` list up to CTE ``top``, the ``$8`` best turns of
    the thread (``seq``, ``relevance``, ``recency``, ``score``; best first is ``score DESC, seq``), same parameters.
    A caller appends CTEs of its own (``, name AS (...)``) and a ``SELECT`` that reads ``top``: the context's query
    part fetches the rows of its hits in the same statement (``engine.read.context_query``, issue #27 item 5)."""
    return f"""
WITH qv AS MATERIALIZED (SELECT $7::text::vector AS v),
{_QQ},
{_th(user, since, until, cjk_out)},
{_lexical()},
{_fuse(emb_table, dense, cjk_out)}"""
