"""Recall: hybrid search over ``memory_vectors`` in one SQL statement (issue #3 §3).

Design measured on LoCoMo dev (docs/contributors/recall-research.md, R@10 0.821): three ranked lists of up to 200
turns — BM25 (k1 1.2, b 0, idf from the document frequencies of the filtered scope, computed on the fly from the
turns that match the OR-tsquery of the question's lexemes) over ``turn_text`` and over ``win_text`` (+-1 turn), and
pgvector cosine over the embedding of the +-2 window (query = the question without stop/question words) — fused with
RRF (k = 10), then ``s + 0.5 * max(s(prev), s(next))`` within a session (the turn after an asking one keeping the
asking turn's score: ``recall_fragments.prop_sql``), then x0.5 for turns by anyone else when
exactly one participant of the candidates is named in the question. Named entities of the question (``ENTITY_RE``:
capitalised words not opening a sentence, except the ``user_id`` of a turn in the filtered scope) count
``ENTITY_WEIGHT`` (2) times in both BM25 lists (issue #14 item 3: R@10 0.821 -> 0.829, chosen on one dev conversation
and checked on the other, docs/contributors/recall-research.md; not in the ``wide`` path, whose lexemes are already
pruned to the rarest). With no embedder (or no vectors yet) the dense list is empty and the reply says
``mode: "fulltext"`` (seed 000 §6: 嵌入模型不可用 -> 关键词搜索).

Seeds: 000 §4.4 (``recall_memory`` over ``memory_vectors``), 002 §2.3/§4.1 (vector search, then decay and importance:
``Weights``), 003 "记忆检索实现" (embed the query, cosine in PostgreSQL, sort by relevance, capped count), 004 §6
(``search_memory`` over typed memories, expired ones excluded; ``search_conversation_traces`` for raw turns).

Provenance (issue #18 item 3): a turn hit carries ``role`` (user | assistant | system | tool) and ``tool`` of
``memory_vectors``, its ``text`` labelled the same way: a tool's output reads ``[date] tool web_fetch: ...``.

Chinese (issue #28 item 2): the question reaches the statements as ``projections.segment.lexical_text`` of it, its
CJK runs cut into words as the fold cuts the turns (``projections.vectors``), so the BM25 lists match 花生 in
我对花生过敏 and both scripts of a mixed turn; ``crosslingual`` appends the question's words in the other language
(CC-CEDICT glosses of its Chinese words, Chinese headwords of its English ones), so an English question meets a
Chinese turn and the reverse in the same BM25 lists (RRF unchanged in shape). Memory items' full text
(``memory_items_fts``) reads ``lex_text``, the item's text segmented the same way by the memory_items fold (schema
0044).

Dense lists (``dense_lists``, ``recall_fragments.dense_cte``): the whole vector's cosine for a single model (an
English-only one ranks no mostly-CJK row for a mostly-CJK question: ``recall_fragments.CJK_PAIRS_OUT``); a composite
(``minilm+use``) adds its multilingual part's own cosine (``MULTILINGUAL_LIST_WEIGHT``) for the rows of the other
script, where the full-text lists weigh ``recall_fragments.CROSS_SCRIPT_LEXICAL_WEIGHT`` (``fused_sql``; issue #28).

Typed memory items (``sources: ["memories"]``, ``memory_sql``): BM25 + cosine over ``memory_items`` with type, tag,
status and expiry filters, re-scored the same way; each hit names its source turns (``memory_item_sources``).
Tenant-wide recall over a large tenant (``wide``): the OR tsquery keeps only the rarest lexemes by the document
frequencies of ``recall_term_stats`` (``TermStats``), the dense list comes from HNSW with iterative scan.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg
import msgspec
import structlog

from memengine.engine.adapters.tasks import cancel_and_wait
from memengine.engine.embedding.models import Embedder, item_table_for, vec_literal
from memengine.engine.read import crosslingual, recall_fragments
from memengine.engine.read.recall_fragments import (
    ASK_LIT,
    CJK_ROW_SQL,
    ENTITY_LIT,
    LEXEMES_SQL,
    RESCORE_SQL,
    SPEAKER_BOOST_SQL,
    WHOLE,
    DenseList,
    cjk_pairs_out,
    decay_sql,
    dense_cte,
    fused_sql,
    only_query,
    prop_sql,
    scope_filter,
)
from memengine.engine.read.recall_query import dense_query
from memengine.engine.read.recall_query import keywords as keywords  # bench and tests import it from here
from memengine.engine.read.recall_thread import thread_ranked, thread_sql
from memengine.engine.read.releases import fetch_released
from memengine.engine.wire.replies import RecallHit, RecallResult
from memengine.engine.wire.requests import RecallRequest
from memengine.events import TurnRecorded

log = structlog.get_logger("memengine.recall")

class Weights(msgspec.Struct, frozen=True):
    """Re-scoring after fusion (seed 002 §4.1 ``_calculate_relevance_score``: 0.6 cosine + 0.2 exp(-days / 30) +
    0.2 importance), configured by ``MEMORY_RECALL_WEIGHTS`` = "relevance,recency,importance" and
    ``MEMORY_RECALL_DECAY_DAYS``.

    - relevance: the fused score (RRF k = 10, neighbour propagation, speaker boost) divided by the best candidate's,
      so the top candidate of each source has 1.0 (the seed has a cosine; RRF scores are not on that scale).
    - recency: ``exp(-max(0, as_of - t) / decay_days)`` with t = a turn's ``occurred_at``; for an item,
      ``(1 - access) * exp(-(as_of - updated_at) / d) + access * exp(-(as_of - touched) / d)`` with ``touched`` =
      ``greatest(updated_at, last_accessed_at)`` (issue #30: ``last_accessed_at`` read from ``memory_access``, the
      fold of the served stream, by a LEFT JOIN at query time; ``access`` = ``MEMORY_RECALL_ACCESS_WEIGHT``, default
      1). Where this differs from seed 002 §4.1 ``_calculate_relevance_score`` (``days_since_access`` from
      ``last_accessed_at``, 365 days when never accessed): an item never served counts from ``updated_at`` (its
      extraction or last reinforcement is its latest use; the seed's 365 days would put every new item below any
      old one served once, and an item is only served once it ranks), and an access after ``as_of`` is not known
      at ``as_of`` (only the latest access is folded, so time travel falls back to ``updated_at`` for it). Fractional
      days, not the seed's whole ``.days``. The seed's score reads no ``access_count`` (it only increments it, step
      4; §4.1 ``compress_old_memories`` and §6.2 hot memories read it), so neither does this one. Turns do not read
      ``turn_access``: their recency weight is 0 (below), and a served turn is evidence of the same age as before.
    - importance: an item's ``importance``; turns have none and get ``TURN_IMPORTANCE`` (0.5, the items' default),
      a constant that changes no order among turns.

    Transcript turns have their own weights, ``turns`` (``MEMORY_RECALL_TURN_WEIGHTS``), neutral by default
    (1, 0, 0): measured on LoCoMo dev with decay counted from the conversation's end (``memengine eval locomo
    --as-of-end``), the seed weights on turns cost R@10 0.821 -> 0.813 (R@5 0.747 -> 0.732): old turns are the
    evidence of "when did ..." questions. Both sets keep every score in [0, 1], so turns and items share a ranking.
    """

    relevance: float = 0.6
    recency: float = 0.2
    importance: float = 0.2
    decay_days: float = 30.0
    turns: tuple[float, float, float] = (1.0, 0.0, 0.0)
    access: float = 1.0

    @staticmethod
    def _three(text: str) -> tuple[float, float, float]:
        parts = [float(x) for x in text.split(",")]
        if len(parts) != 3 or min(parts) < 0 or sum(parts) <= 0:
            raise ValueError(f"bad recall weights {text!r}: three numbers >= 0, e.g. 0.6,0.2,0.2")
        return parts[0], parts[1], parts[2]

    @classmethod
    def parse(cls, text: str, decay_days: float = 30.0, turns: str = "1,0,0", access: float = 1.0) -> "Weights":
        """``"0.6,0.2,0.2"`` (memory items), decay days, ``"1,0,0"`` (turns), access weight in [0, 1] ->
        ``Weights``; ``ValueError`` for anything else."""
        if decay_days <= 0:
            raise ValueError(f"decay days must be > 0, got {decay_days}")
        if not 0.0 <= access <= 1.0:
            raise ValueError(f"access weight must be in [0, 1], got {access}")
        return cls(*cls._three(text), decay_days=decay_days, turns=cls._three(turns), access=access)

    def items(self) -> list[float]:
        """``$10`` of ``memory_sql``: relevance, recency, importance and the access weight (4th element)."""
        return [self.relevance, self.recency, self.importance, self.access]


#: Importance given to transcript turns (they carry none): the memory items' default, neutral among turns.
TURN_IMPORTANCE = 0.5

#: Tenant-wide recall (no thread) over a tenant with at least this many turns uses the lexeme statistics of
#: ``recall_term_stats`` instead of counting matches at query time (below it, the exact on-the-fly BM25 is cheap).
WIDE_MIN_DOCS = 20_000
#: Wide scope: query lexemes are taken rarest first while the sum of their document frequencies stays within this
#: budget; commoner ones are left out of the full-text lists (a speaker's name matched every second turn: 2.2 s at
#: 100k), and when even the rarest is commoner the dense list answers alone. SQL p50 / p95 at 1M synthetic turns
#: (every lexeme in >= 1,269 turns, so 1,000 leaves the dense list alone there): rarest always kept + cap 3,000:
#: 169 / 290 ms; budget 3,000: 18 / 88 ms; 2,000: 22 / 54 ms; 1,000: 15.5 / 21.8 ms. Quality through this path on
#: LoCoMo (each conversation a tenant, budget 2,000): R@10 0.824 (thread-scoped: 0.821).
WIDE_MATCH_BUDGET = 1_000
#: Wide scope: the window list (+-1 turn) matches about this many times the turns a lexeme's df counts, so it gets
#: the lexemes whose df sum stays within budget / factor.
WIDE_WIN_FACTOR = 3
#: Wide scope: at most this many matched turns per full-text list, a safety net for stale statistics (matches
#: beyond it are an arbitrary subset: on LoCoMo through this path a cap of 300 cost R@10 0.82 -> 0.76).
WIDE_MATCH_CAP = WIDE_MATCH_BUDGET
#: Wide scope: length of the dense list (HNSW, ``hnsw.iterative_scan = relaxed_order``).
WIDE_DENSE = 100
#: Seconds a remote embedder may take for the query's vector before recall answers full-text (``Recaller``).
QUERY_EMBED_TIMEOUT_S = 2.0
#: Seconds a recall waits for the cross-lingual dictionary's one load (``crosslingual``, 2.6-8.7 s on 2 shared cores,
#: started with the query service) before it answers without it: within the same 10 s request deadline as the rest.
BRIDGE_WAIT_S = 2.0


#: RRF weight of a composite embedder's multilingual part (USE) ranked on its own (issue #28, ``dense_lists``),
#: counted where the row and the question are on different sides of the English part (MiniLM reads one and not the
#: other: a Chinese turn and an English question, or the reverse), i.e. across scripts, where the full-text lists
#: have only the dictionary bridge. Measured (R@3 cross-lingual / same language; the full-text lists weigh 1):
#: Chinese recall set dev split: 0 (the composite's one list) 0.848 / 0.902, **1: 0.870 / 0.934**, 2: 0.913 / 0.934,
#: 3: 0.935 / 0.934, 4: 0.957 / 0.918; its test split, once per candidate: 0 0.755 / 0.898, **1: 0.776 / 0.915**,
#: 3: 0.776 / 0.898; the blind held-out set's dev half (tests/data/heldout_s15 on main, b01 + b03): 0 and **1**:
#: 0.565 / 0.824, 3: 0.478 / 0.765. 1 is the largest weight that lost nothing anywhere. English rows and questions
#: get no such list: LoCoMo dev R@10 0.8345 with it (``minilm+use``; 0.835 without).
MULTILINGUAL_LIST_WEIGHT = 1.0


#: RRF weight of a composite's part that is ranked on its own over every row (``separate_list``: multilingual-e5-small,
#: ``engine.embedding.e5``; issue #28, session 17) instead of in the composite's one cosine. Measured on
#: ``minilm+use+e5`` (R@3 cross-lingual / same language; bench/recall_research/xling_variants.py, dev halves): zh dev
#: 0 (``minilm+use``) 0.935 / 0.967, **0.5: 0.935 / 0.951**, 1: 0.913 / 0.951, 2: 0.913 / 0.951; held-out dev 0.652
#: / 0.882 at 0, 0.5 and 1, 0.696 / 0.882 at 2; LoCoMo dev R@10 0.8442, **0.8507**, 0.8460, 0.8323. In the one
#: cosine instead (e5's third of the vector) LoCoMo was 0.8442 and zh dev 0.913 / 0.967.
SEPARATE_LIST_WEIGHT = 0.5


def dense_lists(embedder: Embedder | None) -> tuple[DenseList, ...]:
    """The dense lists of the fusion for ``embedder``'s vectors (``recall_fragments.DenseList``): the whole vector's
    cosine (weight 1), and for a composite whose part reads only some texts (``CompositeEmbedder.partial``: MiniLM,
    empty for mostly-CJK text) each other part's own cosine, weighted ``MULTILINGUAL_LIST_WEIGHT``, for the rows
    that part reads and the question does not, or the reverse. Why: the composite's one cosine of a Chinese turn and
    an English question is the multilingual part's alone scaled by sqrt(its weight), so in a mixed thread every
    English turn (both parts) outranked it, so the part ranks across scripts on its own, and in the one cosine too
    (``DenseList.across``, session 20). A ``separate_list`` part (e5) is out of the one cosine, which spans the
    others (they lead the vector), and ranked over every row, weighted ``SEPARATE_LIST_WEIGHT``. One model: WHOLE."""
    spans = getattr(embedder, "spans", None)
    if not spans:
        return WHOLE
    partial = getattr(embedder, "partial", None)
    parts = getattr(embedder, "parts", ())
    alone = [i for i, p in enumerate(parts) if getattr(p, "separate_list", False)]
    rest = [i for i in range(len(spans)) if i not in alone]
    main = WHOLE
    if alone and rest and rest == list(range(len(rest))):  # the others are the leading span: their one cosine
        main = (DenseList(1, sum(spans[i][1] for i in rest), 1.0),)
    elif alone:  # no leading span of the others (not built by memengine): the whole vector, and the part again
        alone = [i for i in alone if len(spans) > 1]
    cross: tuple[DenseList, ...] = ()
    if partial is not None and MULTILINGUAL_LIST_WEIGHT > 0:
        cross = tuple(DenseList(spans[i][0], spans[i][1], MULTILINGUAL_LIST_WEIGHT, bare=spans[partial])
                      for i in rest if i != partial)
        main = (main[0]._replace(across=(cross[0].start, cross[0].dim)),) if cross else main
    return main + cross + tuple(DenseList(spans[i][0], spans[i][1], SEPARATE_LIST_WEIGHT) for i in alone)


def _bm25(name: str, field: str, _F: str, scoped: bool, wide: bool = False) -> str:
    """CTEs ``m_<name>`` (matched turn x query lexeme, tf), ``df_<name>`` and the ranked list ``<name>``.

    ``scoped`` (a thread filter): match through the thread's index, not the GIN index, which the planner
    underestimates (a speaker's name matches half of all turns: 15-20 ms of bitmap at 100k rows for nothing).
    ``wide`` (tenant-wide over a large tenant): match at most ``WIDE_MATCH_CAP`` turns through the GIN index with
    the pruned tsquery, and take df from ``recall_term_stats`` (CTE ``qk``) instead of counting the matches."""
    entity_weight = recall_fragments.ENTITY_WEIGHT  # read when built: research scripts set it
    if wide:
        return f"""m_{name} AS MATERIALIZED (SELECT d.seq, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM (SELECT d.seq, d.{field} AS tsv FROM qq_{name}, memory_vectors d
                 WHERE {_F} AND d.{field} @@ qq_{name}.q LIMIT {WIDE_MATCH_CAP}) d
          CROSS JOIN qq_{name} CROSS JOIN LATERAL unnest({only_query("d.tsv", "qq_" + name)}) u),
df_{name} AS (SELECT l AS lexeme, greatest(df, 1) AS df FROM qk_{name}),
{name} AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r FROM (
        SELECT m.seq, sum(ln(1 + greatest(st.n - df.df + 0.5, 0.5) / (df.df + 0.5)) * m.tf * 2.2 / (m.tf + 1.2)) AS s
          FROM m_{name} m JOIN df_{name} df USING (lexeme) CROSS JOIN st
         GROUP BY m.seq ORDER BY s DESC, m.seq LIMIT 200) x)"""
    # scoped: no @@ at all; the unnest of the reduced tsvector is empty for a turn without a query lexeme, which is
    # the same as not matching the OR tsquery (one pass over the thread's tsvectors instead of two: 19 -> ~15 ms)
    match = "true" if scoped else f"d.{field} @@ qq.q"
    return f"""m_{name} AS MATERIALIZED (SELECT d.seq, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM qq, memory_vectors d CROSS JOIN LATERAL unnest({only_query("d." + field)}) u
         WHERE {_F} AND {match}),
df_{name} AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM m_{name} GROUP BY lexeme),
{name} AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r FROM (
        SELECT m.seq, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * 2.2 / (m.tf + 1.2)
                          * CASE WHEN m.lexeme IN (SELECT l FROM ent) THEN {entity_weight} ELSE 1.0 END) AS s
          FROM m_{name} m JOIN df_{name} df USING (lexeme) CROSS JOIN st
         GROUP BY m.seq ORDER BY s DESC, m.seq LIMIT 200) x)"""


def recall_sql(emb_table: str | None, thread: bool = True, user: bool = False, since: bool = False,
               until: bool = False, wide: bool = False, lists: tuple[DenseList, ...] = WHOLE,
               cjk_out: bool = False) -> str:
    """The turns statement: $1..$5 filters, $6 question (``lexical_text``: CJK words cut), $7 query vector (text form)
    or NULL, $8 k, $9 as_of, $10 weights float8[3], $11 decay days, $12 turn importance. ``cjk_out``: the dense list
    leaves out the mostly-CJK rows (``recall_fragments.cjk_pairs_out``: a CJK question, an English-only embedder).

    ``wide`` (no thread, a large tenant with statistics): pruned OR tsquery with df from ``recall_term_stats``
    (``_bm25(wide=True)``) and the dense list from the HNSW index (run under ``hnsw.iterative_scan``, see
    ``Recaller``); user / time filters are then applied to the dense candidates after the index scan."""
    _F = scope_filter(thread, user, since, until)
    cjk = f" AND NOT {CJK_ROW_SQL}" if cjk_out else ""  # over memory_vectors d
    if wide:
        # the HNSW scan on the whole vector gives the candidates; each dense list ranks them (issue #28)
        hnsw = f"""SELECT e.seq, e.emb FROM {emb_table} e WHERE e.tenant_id = $1 AND $7::text IS NOT NULL
         ORDER BY e.emb <=> $7::text::vector LIMIT {WIDE_DENSE}"""
        dense = dense_cte(emb_table, lists, "", WIDE_DENSE, candidates=hnsw if not cjk_out else f"""SELECT c.seq, c.emb
          FROM ({hnsw}) c JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = c.seq WHERE true{cjk}""")
        head = f"""
WITH qv AS MATERIALIZED (SELECT $7::text::vector AS v),
ql AS MATERIALIZED (SELECT q.l, coalesce(s.ndoc, 0)::float8 AS df FROM ({LEXEMES_SQL}) q
              LEFT JOIN recall_term_stats s ON s.tenant_id = $1 AND s.lexeme = q.l),
qk_bt AS MATERIALIZED (SELECT l, df FROM (SELECT l, df, sum(df) OVER (ORDER BY df, l) AS cum FROM ql) x
                     WHERE cum <= {WIDE_MATCH_BUDGET}),
qk_bw AS MATERIALIZED (SELECT l, df FROM (SELECT l, df, sum(df) OVER (ORDER BY df, l) AS cum FROM ql) x
                     WHERE {WIDE_WIN_FACTOR} * cum <= {WIDE_MATCH_BUDGET}),
qq_bt AS MATERIALIZED (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q, array_agg(l) AS ls FROM qk_bt),
qq_bw AS MATERIALIZED (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q, array_agg(l) AS ls FROM qk_bw),
st AS MATERIALIZED (SELECT greatest(n_docs, 1)::float8 AS n FROM recall_tenant_stats WHERE tenant_id = $1),"""
    else:
        dense = dense_cte(emb_table, lists, f"""e.tenant_id = $1 {"AND e.thread_id = $2" if thread else ""}
           AND e.seq IN (SELECT d.seq FROM memory_vectors d WHERE {_F}{cjk})""")
        head = f"""
WITH qv AS MATERIALIZED (SELECT $7::text::vector AS v),
qq AS MATERIALIZED (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q, array_agg(l) AS ls
              FROM ({LEXEMES_SQL}) ql),
st AS MATERIALIZED (SELECT count(*)::float8 AS n FROM memory_vectors d WHERE {_F}),
ent AS MATERIALIZED (SELECT DISTINCT l FROM regexp_matches($6, {ENTITY_LIT}, 'g') w,
              LATERAL unnest(tsvector_to_array(to_tsvector('english', w[1]))) l
             WHERE NOT EXISTS (SELECT 1 FROM memory_vectors d WHERE {_F} AND d.user_id IN (w[1], lower(w[1])))),"""
    return f"""{head}
{_bm25("bt", "turn_tsv", _F, thread, wide)},
{_bm25("bw", "win_tsv", _F, thread, wide)},
{dense},
{fused_sql(emb_table, lists, thread, wide)},
{prop_sql("memory_vectors t ON t.tenant_id = $1 AND t.seq = f.seq", f"t.turn_text ~ {ASK_LIT}")},
sc AS MATERIALIZED (SELECT d.seq, d.event_id, d.thread_id, d.user_id, d.session_id, d.occurred_at, d.turn_text,
                  d.role, d.tool, p.s
           FROM prop p JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = p.seq
          WHERE {_F}),
{SPEAKER_BOOST_SQL}
SELECT f.seq, f.event_id::text AS event_id, f.thread_id, f.user_id, f.session_id, f.occurred_at, f.turn_text,
       f.role, f.tool, f.relevance, f.recency, $12::float8 AS importance,
       ($10::float8[])[1] * f.relevance + ($10::float8[])[2] * f.recency + ($10::float8[])[3] * $12::float8 AS score,
       (SELECT count(*) FROM dv) AS ndense
  FROM final f
 ORDER BY score DESC, f.seq
 LIMIT $8
"""


def memory_sql(item_table: str | None) -> str:
    """The memory-items statement (seed 004 §6 search_memory; seed 002 §4.1 re-scoring): $1 tenant, $2 thread,
    $3 user, $4 since, $5 until (on ``valid_at``), $6 question, $7 query vector or NULL, $8 k, $9 as_of,
    $10 weights (relevance, recency, importance, access: ``Weights.items``; a 3-element array reads access 0, the
    recency of ``updated_at`` alone), $11 decay days, $12 types (upper case) or NULL, $13 tags or NULL, $14 statuses or
    NULL (all), $15 include expired: else items whose ``expires_at`` <= as_of are left out, and so are active items
    whose ``invalid_at`` <= as_of (issue #15 item 2: validity applied when read, before consolidation records it).

    Two lists over the filtered items, fused with RRF (k = 10): BM25 (k1 1.2, b 0, df over the filtered items) on
    ``memengine_tsv(coalesce(lex_text, text))`` (GIN ``memory_items_fts``; CJK words cut by the fold, schema 0044), and
    exact cosine on the item embeddings (an agent's items number in the thousands; exact keeps every filter exact)."""
    _I = """m.tenant_id = $1 AND ($2::text IS NULL OR m.thread_id = $2) AND ($3::text IS NULL OR m.user_id = $3)
       AND ($4::timestamptz IS NULL OR m.valid_at >= $4) AND ($5::timestamptz IS NULL OR m.valid_at < $5)
       AND ($12::text[] IS NULL OR upper(m.type) = ANY($12)) AND ($13::text[] IS NULL OR m.tags @> $13)
       AND ($14::text[] IS NULL OR m.status = ANY($14))
       AND ($15::bool OR m.expires_at IS NULL OR m.expires_at > $9::timestamptz)
       AND ($15::bool OR m.status <> 'active' OR m.invalid_at IS NULL OR m.invalid_at > $9::timestamptz)"""
    dense = (f"""(SELECT memory_id, row_number() OVER (ORDER BY dist, memory_id) AS r FROM (
        SELECT m.memory_id, e.emb <=> qv.v AS dist
          FROM qv, memory_items m JOIN {item_table} e ON e.tenant_id = m.tenant_id AND e.memory_id = m.memory_id
         WHERE {_I} AND $7::text IS NOT NULL
         ORDER BY dist, m.memory_id LIMIT 100) x)""" if item_table else
             "(SELECT NULL::text AS memory_id, NULL::bigint AS r FROM qv WHERE false)")
    return f"""
WITH qv AS MATERIALIZED (SELECT $7::text::vector AS v),
qq AS MATERIALIZED (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q, array_agg(l) AS ls
              FROM ({LEXEMES_SQL}) ql),
mt AS MATERIALIZED (SELECT m.memory_id, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM qq, memory_items m
               CROSS JOIN LATERAL unnest({only_query("memengine_tsv(coalesce(m.lex_text, m.text))")}) u
         WHERE {_I} AND memengine_tsv(coalesce(m.lex_text, m.text)) @@ qq.q),
st AS MATERIALIZED (SELECT count(*)::float8 AS n FROM memory_items m WHERE {_I}),
df AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM mt GROUP BY lexeme),
ft AS (SELECT memory_id, row_number() OVER (ORDER BY s DESC, memory_id) AS r FROM (
        SELECT mt.memory_id, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * mt.tf * 2.2 / (mt.tf + 1.2)) AS s
          FROM mt JOIN df USING (lexeme) CROSS JOIN st
         GROUP BY mt.memory_id ORDER BY s DESC, mt.memory_id LIMIT 100) x),
dv AS MATERIALIZED {dense},
fused AS MATERIALIZED (SELECT memory_id, sum(1.0 / (10 + r)) AS raw
            FROM (SELECT * FROM ft UNION ALL SELECT * FROM dv) a GROUP BY memory_id),
scored AS (SELECT m.*, f.raw, f.raw / nullif(max(f.raw) OVER (), 0) AS rel, m.updated_at AS t,
                  greatest(m.updated_at, CASE WHEN a.last_accessed_at <= $9::timestamptz
                                              THEN a.last_accessed_at END) AS touched
             FROM fused f JOIN memory_items m ON m.tenant_id = $1 AND m.memory_id = f.memory_id
             LEFT JOIN memory_access a ON a.tenant_id = $1 AND a.memory_id = f.memory_id),
final AS (SELECT x.*, {RESCORE_SQL} FROM scored x),
final2 AS (SELECT x.*, (1 - coalesce(($10::float8[])[4], 0)) * x.recency
                       + coalesce(($10::float8[])[4], 0) * {decay_sql("x.touched")} AS recency2 FROM final x)
SELECT f.memory_id, f.last_event_id::text AS event_id, f.thread_id, f.user_id, f.source_session_id, f.valid_at,
       f.text, f.type, f.tags, f.status, f.expires_at, f.relevance, f.recency2 AS recency,
       f.importance::float8 AS importance,
       ($10::float8[])[1] * f.relevance + ($10::float8[])[2] * f.recency2 + ($10::float8[])[3] * f.importance AS score,
       ARRAY(SELECT s.source_event_id::text FROM memory_item_sources s
              WHERE s.tenant_id = $1 AND s.memory_id = f.memory_id GROUP BY 1 ORDER BY 1) AS sources,
       (SELECT count(*) FROM dv) AS ndense
  FROM final2 f
 ORDER BY score DESC, f.memory_id
 LIMIT $8
"""


class TermStats:
    """Keeps ``recall_term_stats`` / ``recall_tenant_stats`` (schema 0006) roughly current: an after-commit hook of
    the recall projector counts the turns folded per tenant and, once a tenant has grown by 10 % (at least 5,000
    turns) since its last snapshot, refreshes it in the background with ``ts_stat`` (one at a time; ~1 s per 100k
    turns). Statistics only steer tenant-wide recall over tenants of ``WIDE_MIN_DOCS`` turns or more."""

    def __init__(self, pool: asyncpg.Pool, *, min_growth: int = 5_000) -> None:
        self.pool = pool
        self.min_growth = min_growth
        self._pending: dict[str, int] = {}
        self._known: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, applied: list[tuple[int, Any]]) -> None:
        for _seq, event in applied:
            if isinstance(event, TurnRecorded):
                self._pending[event.tenant_id] = self._pending.get(event.tenant_id, 0) + 1
        if self._task is not None and not self._task.done():
            return
        for tenant, n in list(self._pending.items()):
            if tenant not in self._known:
                self._known[tenant] = int(await self.pool.fetchval(
                    "SELECT coalesce((SELECT n_docs FROM recall_tenant_stats WHERE tenant_id = $1), 0)", tenant))
            if n >= max(self.min_growth, self._known[tenant] // 10):
                self._pending.pop(tenant)
                self._task = asyncio.create_task(self._refresh(tenant), name=f"term-stats-{tenant}")
                return

    async def _refresh(self, tenant: str) -> None:
        try:
            self._known[tenant] = await refresh_term_stats(self.pool, tenant)
        except Exception as exc:  # noqa: BLE001 - statistics are an optimisation; recall still works without them
            log.warning("term statistics refresh failed", tenant=tenant, error=repr(exc))

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)  # repeated: one cancel can be lost inside asyncpg (its docstring)


async def refresh_term_stats(pool: asyncpg.Pool, tenant: str) -> int:
    """Snapshot the document frequency of every ``turn_tsv`` lexeme of ``tenant`` (``ts_stat``) and its turn count;
    returns the count. Tenants under ``WIDE_MIN_DOCS`` get the count only (their wide recall counts matches)."""
    async with pool.acquire() as conn, conn.transaction():
        n = int(await conn.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = $1", tenant))
        await conn.execute("DELETE FROM recall_term_stats WHERE tenant_id = $1", tenant)
        if n >= WIDE_MIN_DOCS:
            await conn.execute(
                "INSERT INTO recall_term_stats (tenant_id, lexeme, ndoc) SELECT $1, word, ndoc FROM ts_stat("
                "format('SELECT turn_tsv FROM memory_vectors WHERE tenant_id = %L', $1::text))", tenant)
        await conn.execute(
            "INSERT INTO recall_tenant_stats (tenant_id, n_docs, refreshed_at) VALUES ($1, $2, now())"
            " ON CONFLICT (tenant_id) DO UPDATE SET n_docs = EXCLUDED.n_docs, refreshed_at = now()", tenant, n)
    return n


class Recaller:
    """Runs recall for the query service: embeds the query once (if an embedder is configured) and runs the turn
    and/or memory-item statements, then merges their hits by score.

    Raises nothing of its own; database errors propagate to ``RpcHandlers`` (typed ``unavailable`` / ``internal``)."""

    def __init__(self, pool: asyncpg.Pool, embedder: Embedder | None, default_k: int,
                 weights: Weights | None = None) -> None:
        self.pool = pool
        self.embedder = embedder
        self.default_k = default_k
        self.weights = weights or Weights()
        self._table: str | None = None
        self._sql: dict[tuple[Any, ...], str] = {}
        self._wide: dict[str, tuple[float, bool]] = {}
        self._bridge_load: asyncio.Future[bool] | None = None
        #: connections being given back after ``thread_ranked`` (``engine.read.releases``)
        self._releasing: set[asyncio.Task[None]] = set()

    #: Thread-scoped recall through ``recall_thread.thread_sql`` (same ranking, fewer look-ups); False: the general
    #: ``recall_sql`` for every scope (research scripts that patch ``recall_sql``, bench/recall_ab.py's "before").
    thread_plan = True

    async def _emb_table(self) -> str | None:
        if self.embedder is None:
            return None
        if self._table is None:
            self._table = await self.pool.fetchval(
                "SELECT table_name FROM embedding_models WHERE model = $1", self.embedder.name)
        return self._table

    async def _is_wide(self, tenant: str) -> bool:
        """Whether ``tenant`` has term statistics (>= ``WIDE_MIN_DOCS`` turns); cached for 30 s."""
        now = time.monotonic()
        hit = self._wide.get(tenant)
        if hit is None or now - hit[0] > 30:
            n = await self.pool.fetchval("SELECT n_docs FROM recall_tenant_stats WHERE tenant_id = $1", tenant)
            hit = (now, n is not None and n >= WIDE_MIN_DOCS)
            self._wide[tenant] = hit
        return hit[1]

    async def _query_vector(self, text: str) -> list[float]:
        assert self.embedder is not None
        one = getattr(self.embedder, "embed_query", None)
        return await one(text) if one is not None else (await self.embedder.embed([text]))[0]

    async def _query_vector_or_none(self, text: str) -> str | None:
        """The query's vector literal, or ``None`` (recall answers full-text, ``mode: "fulltext"``) when the
        embedder fails or, for a remote one (``max_concurrency`` ``None``), takes over ``QUERY_EMBED_TIMEOUT_S``: a
        saturated or absent embedding server degrades recall instead of failing it (seed 000 §6: 嵌入模型不可用 ->
        关键词搜索; issue #13 item 5). The local model has no deadline: its first call loads the weights."""
        remote = getattr(self.embedder, "max_concurrency", 1) is None
        try:
            vec = await asyncio.wait_for(self._query_vector(text), QUERY_EMBED_TIMEOUT_S if remote else None)
        except Exception as exc:  # noqa: BLE001 - any embedder failure: the lexical lists still answer
            log.warning("query embedding failed, recall is full-text", error=repr(exc))
            return None
        return vec_literal(vec)

    async def _bridge_loaded(self) -> None:
        """Wait at most ``BRIDGE_WAIT_S`` for the dictionary bridge's one load (in a thread, shared by concurrent
        requests); past it the question is answered without the bridge (``crosslingual.expand`` gives ``""`` until
        the load ends), as a slow embedder degrades recall to full text instead of failing it."""
        if self._bridge_load is None:
            self._bridge_load = asyncio.ensure_future(asyncio.to_thread(crosslingual.prepare))
        try:
            await asyncio.wait_for(asyncio.shield(self._bridge_load), BRIDGE_WAIT_S)
        except TimeoutError:
            log.warning("dictionary bridge still loading: this recall answers without it", wait_s=BRIDGE_WAIT_S)

    async def thread_ranked(self, tenant: str, thread: str, query: str, k: int, tail: str) -> list[Any]:
        """The rows of one statement: thread-scoped recall's ranking of ``query`` in ``thread``
        (``recall_thread.thread_ranked``: the CTEs of ``thread_sql`` up to ``top``, its ``k`` best turns, exactly
        as ``recall`` ranks them with ``sources: ["turns"]`` and no user or time filter; the query embedded once, as
        there) followed by ``tail``, SQL that appends CTEs (``, name AS (...)``) and a ``SELECT`` reading ``top``
        with ``thread_sql``'s parameters $1..$12. The context's query part fetches its hits' rows in the same round
        trip this way (``engine.read.context_query``, issue #27 item 5). Database errors propagate."""
        await self._bridge_loaded()  # the question's lexical form is recall's, dictionary bridge included
        table = await self._emb_table()
        qvec = await self._query_vector_or_none(dense_query(self.embedder, query)) if table is not None else None
        key = ("thread_ranked", table, tail, cjk_pairs_out(self.embedder, query))
        sql = self._sql.get(key) or self._sql.setdefault(
            key, thread_ranked(table, dense=dense_lists(self.embedder), cjk_out=key[3]) + tail)
        w = self.weights
        # the context goes on without waiting for the connection's reset (engine.read.releases)
        return await fetch_released(self.pool, self._releasing, sql, tenant, thread, None, None, None,
                                    crosslingual.lexical_question(query), qvec, k, datetime.now(UTC), list(w.turns),
                                    w.decay_days, TURN_IMPORTANCE)

    async def recall(self, req: RecallRequest, applied_seq: int) -> RecallResult:
        t0 = time.perf_counter()
        if not crosslingual.loaded():  # the bridge: the question's words in the other language (issue #28)
            await self._bridge_loaded()
        table = await self._emb_table()
        qvec: str | None = None
        if table is not None and self.embedder is not None:
            qvec = await self._query_vector_or_none(dense_query(self.embedder, req.query))
        k = req.limit or req.k or self.default_k  # k: the old name of limit (RecallRequest)
        as_of = req.as_of or datetime.now(UTC)
        w = self.weights
        # $6: the question as the lexical lists read it, CJK runs cut like the fold's, and its translations
        common = (req.tenant, req.thread, req.user, req.since, req.until, crosslingual.lexical_question(req.query),
                  qvec, k, as_of)
        item_w = (w.items(), w.decay_days)
        turn_w = (list(w.turns), w.decay_days)
        hits: list[RecallHit] = []
        dense = False
        if "turns" in req.sources:
            wide = req.thread is None and await self._is_wide(req.tenant)
            key = (table, req.thread is not None, req.user is not None, req.since is not None,
                   req.until is not None, wide, cjk_pairs_out(self.embedder, req.query))
            # one thread (the agent case): recall_thread.thread_sql, same ranking in fewer look-ups (issue #13)
            sql = self._sql.get(key) or self._sql.setdefault(key, thread_sql(
                table, *key[2:5], dense=dense_lists(self.embedder), cjk_out=key[6]) if req.thread is not None
                and self.thread_plan else recall_sql(*key[:6], lists=dense_lists(self.embedder), cjk_out=key[6]))
            async with self.pool.acquire() as conn:
                if wide:
                    async with conn.transaction():
                        # relaxed order: the HNSW scan goes on past ef_search until LIMIT rows of the tenant pass
                        # (pgvector 0.8); the list is re-ranked by distance above anyway
                        await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order;"
                                           f" SET LOCAL hnsw.ef_search = {WIDE_DENSE}")
                        rows = await conn.fetch(sql, *common, *turn_w, TURN_IMPORTANCE)
                else:
                    rows = await conn.fetch(sql, *common, *turn_w, TURN_IMPORTANCE)
            dense = dense or (bool(rows) and rows[0]["ndense"] > 0)
            hits += [RecallHit(kind="turn", seq=r["seq"], event_id=r["event_id"], thread=r["thread_id"],
                               user_id=r["user_id"], session_id=r["session_id"], role=r["role"], tool=r["tool"],
                               occurred_at=r["occurred_at"].isoformat(), text=r["turn_text"],
                               score=round(float(r["score"]), 6), relevance=round(float(r["relevance"]), 6),
                               recency=round(float(r["recency"]), 6), importance=TURN_IMPORTANCE,
                               source_event_ids=[r["event_id"]]) for r in rows]
        if "memories" in req.sources:
            item_table = item_table_for(table) if table is not None else None
            mkey = ("memories", item_table)
            sql = self._sql.get(mkey) or self._sql.setdefault(mkey, memory_sql(item_table))
            statuses = None if "all" in req.status else list(req.status)
            rows = await self.pool.fetch(sql, *common, *item_w, [t.upper() for t in req.types] if req.types else None,
                                         list(req.tags) if req.tags else None, statuses, req.include_expired)
            dense = dense or (bool(rows) and rows[0]["ndense"] > 0)
            hits += [RecallHit(kind="memory", seq=None, event_id=r["event_id"], thread=r["thread_id"],
                               user_id=r["user_id"], session_id=r["source_session_id"],
                               occurred_at=r["valid_at"].isoformat(), text=r["text"],
                               score=round(float(r["score"]), 6), relevance=round(float(r["relevance"]), 6),
                               recency=round(float(r["recency"]), 6), importance=round(float(r["importance"]), 6),
                               source_event_ids=list(r["sources"]), memory_id=r["memory_id"], type=r["type"],
                               tags=list(r["tags"]), status=r["status"],
                               expires_at=r["expires_at"].isoformat() if r["expires_at"] else None) for r in rows]
            if len(req.sources) > 1:  # both sources: one ranking by the common score
                hits.sort(key=lambda h: -h.score)
                hits = hits[:k]
        # no hits at all: nothing says vectors were missing, so the mode is what was asked for
        dense = dense or (qvec is not None and not hits)
        return RecallResult(tenant=req.tenant, query=req.query, mode="hybrid" if dense else "fulltext",
                            embedder=self.embedder.name if qvec is not None and self.embedder else None,
                            hits=hits,
                            applied_seq=applied_seq, took_ms=round((time.perf_counter() - t0) * 1000, 2))
