"""The SQL fragments shared by the turns statements of recall: the general one (``recall.recall_sql``,
``recall.memory_sql``) and the thread-scoped one (``recall_thread.thread_sql``).

Both modules import this one, and it imports neither, so the arrows go one way (issue #31 item 4: ``recall``
imported ``recall_thread`` inside a method because ``recall_thread`` imported these fragments from ``recall``; the
architecture test now counts lazy imports). The fragments are unchanged; their design is in ``recall``'s docstring
and docs/contributors/recall-research.md.

``ENTITY_WEIGHT`` is read when a statement is built (``recall._bm25``, ``recall_thread._lexical``), so a research
script that sets ``recall_fragments.ENTITY_WEIGHT`` changes both statements.
"""

from __future__ import annotations

from typing import NamedTuple

from memengine.projections.segment import CJK_RANGES, mostly_cjk


def scope_filter(thread: bool, user: bool, since: bool, until: bool) -> str:
    """The scope predicate over ``memory_vectors d``: $1 tenant, $2 thread, $3 user, $4 since, $5 until. Absent
    filters become ``$n IS NULL`` (always true) so the planner can use the thread / user indexes of present ones."""
    parts = ["d.tenant_id = $1",
             "d.thread_id = $2" if thread else "$2::text IS NULL",
             "d.user_id = $3" if user else "$3::text IS NULL",
             "d.occurred_at >= $4" if since else "$4::timestamptz IS NULL",
             "d.occurred_at < $5" if until else "$5::timestamptz IS NULL"]
    return " AND ".join(parts)


def only_query(tsv: str, qq: str = "qq") -> str:
    """``tsv`` reduced to the question's lexemes (``qq.ls``) before it is unnested for tf: ``setweight`` marks them
    A (``to_tsvector`` gives every lexeme D), ``ts_filter`` keeps the A ones. Same tf as unnesting everything and
    filtering, 4x faster (unnest builds a row with position arrays per lexeme: 15 ms -> 4 ms for a thread's 788
    windows)."""
    return f"ts_filter(setweight({tsv}, 'A', {qq}.ls), '{{a}}')"


#: A named entity of the question: a capitalised word of 2+ characters that does not open the question or a sentence
#: ("What did Caroline buy in Sweden?" -> Sweden, and Caroline unless she is a participant of the scope).
#: PostgreSQL ARE syntax (``\m`` = start of a word).
ENTITY_RE = r"(?<![.?!] )(?<!^)\m([A-Z][A-Za-z0-9'-]+)"
#: Factor on a named entity's BM25 term, in both full-text lists (issue #14 item 3;
#: docs/contributors/recall-research.md: 1.5 / 2 / 3 / 4 measured; 2 picked on conversation 26 and on the mean,
#: conversation 30 unchanged by every factor).
ENTITY_WEIGHT = 2.0
ENTITY_LIT = "'" + ENTITY_RE.replace("'", "''") + "'"  # as an SQL literal (standard_conforming_strings)

#: The question's distinct lexemes (english config), the same analysis as the indexed text.
#: memengine_tsv (schema 0042): a question as long as a turn (the user-memory part passes the latest turn) stays
#: within the 1 MB tsvector limit
LEXEMES_SQL = "SELECT DISTINCT l FROM unnest(tsvector_to_array(memengine_tsv($6::text))) l"

#: Final re-scoring shared by turns and items: ``$9`` as_of, ``$10`` weights (relevance, recency, importance),
#: ``$11`` decay days. Input rows need ``raw`` (fused score), ``t`` (recency time) and ``imp``. The exponent is capped
#: at 700: PostgreSQL's exp() raises "value out of range: underflow" below ~exp(-708) instead of returning 0 (an
#: ``as_of`` 175 years after a turn, or a short decay; issue #17 defect 9), and exp(-700) is 0 for every score.
def decay_sql(t: str) -> str:
    """``exp(-max(0, $9 - t) / $11 days)`` as SQL, the exponent capped at 700 (below)."""
    return f"""exp(-least(700.0, greatest(0.0, extract(epoch FROM ($9::timestamptz - {t}))::float8) / 86400.0
                  / $11::float8))"""


RESCORE_SQL = f"""coalesce(rel, 0.0)::float8 AS relevance,
       {decay_sql("t")} AS recency"""

#: The speaker boost and the re-scoring of the turns statements (general and thread-scoped, ``recall_thread``):
#: input CTE ``sc`` (seq, user_id, occurred_at, s = fused score after propagation); x0.5 for other speakers when the
#: question names exactly one participant of the candidates (docs/contributors/recall-research.md), then
#: ``RESCORE_SQL``; output CTE ``final`` with ``relevance`` and ``recency``.
SPEAKER_BOOST_SQL = f"""named AS MATERIALIZED (SELECT CASE WHEN count(*) = 1 THEN min(u) END AS who
           FROM (SELECT DISTINCT user_id AS u FROM sc WHERE user_id IS NOT NULL) n
          WHERE $6 ~* ('\\m' || regexp_replace(u, '([^[:alnum:] ])', '\\\\\\1', 'g') || '\\M')),
boosted AS (SELECT r.*, r.occurred_at AS t,
       r.s * CASE WHEN named.who IS NULL OR r.user_id IS NOT DISTINCT FROM named.who THEN 1.0 ELSE 0.5 END AS raw
  FROM sc r CROSS JOIN named),
scored AS (SELECT b.*, b.raw / nullif(max(b.raw) OVER (), 0) AS rel FROM boosted b),
final AS (SELECT x.*, {RESCORE_SQL} FROM scored x)"""


class DenseList(NamedTuple):
    """One dense list of the RRF fusion: the cosine of the dimensions ``start`` .. ``start + dim - 1`` (1-based, as
    pgvector's ``subvector``) of the stored and the query vectors, or of the whole vectors when ``dim`` is 0; its
    RRF term is ``weight / (10 + rank)`` (the full-text lists weigh 1). A composite embedder's part
    (``engine.embedding.composite``) is such a span: ranking each part on its own is a rank fusion of the parts,
    where the composite's one cosine is a score fusion (issue #28)."""

    start: int
    dim: int
    weight: float
    #: (start, dim) of another span: the list keeps only the rows of the other script than the question, where that
    #: span (the composite's partial part, MiniLM) reads one side only (USE's list across scripts); None: every row
    bare: tuple[int, int] | None = None
    #: (start, dim) of another span whose cosine ranks the rows of the other script than the question in this list
    #: (``dense_cte``: the composite's one cosine of a pair across scripts is its multilingual part's); None: none
    across: tuple[int, int] | None = None


#: RRF (k = 10) of the full-text lists ``bt`` and ``bw`` (weight 1 each) and the dense lists of ``dv`` (their own
#: weights, ``dense_cte``): CTE ``fused`` (seq, s). In numeric, as the unweighted sum was: the same scores to the last
#: digit for weight 1.
FUSED_SQL = """fused AS MATERIALIZED (SELECT seq, sum(w * 1.0 / (10 + r)) AS s
            FROM (SELECT seq, r, 1::numeric AS w FROM bt UNION ALL SELECT seq, r, 1::numeric FROM bw
                  UNION ALL SELECT seq, r, w FROM dv) a GROUP BY seq)"""

#: The one dense list of a single model: the whole vector, weight 1 (the fusion before issue #28's part lists).
WHOLE = (DenseList(1, 0, 1.0),)

#: RRF weight of the two full-text lists for a row on the other side of a composite's partial part than the question
#: (the ``bare`` span of ``dense_lists``: MiniLM read one and not the other, i.e. a Chinese turn and an English
#: question or the reverse; issue #28, session 16). Such a row meets the question's words only through the
#: dictionary bridge's translations (``crosslingual``), which match loosely ("live" -> 住 put 过来住一个月 first for
#: "Which city does she live in?"), while USE's cosine compares the two languages directly; classic dictionary CLIR
#: weighs translations below the question's own words for the same reason. Same-script rows and every English
#: question over English turns keep weight 1 (LoCoMo unchanged). Measured with ``minilm+use`` (R@3 cross-lingual /
#: same language; bench/recall_research/xling_variants.py): Chinese recall set dev 1: 0.870 / 0.934, 0.75: 0.913 /
#: 0.934, 0.6 and **0.5**: 0.935 / 0.934, 0.4: 0.957 / 0.918; blind held-out dev half 1: 0.565 / 0.824, 0.75: 0.565 /
#: 0.824, 0.4-0.6: 0.609 / 0.824; LoCoMo dev R@10 0.8345 at every weight. 0.5 is the middle of the plateau. Read when a
#: statement is built (research scripts set it). Lexeme-level weighting instead (a row matched by none of the
#: question's own words weighs 0.5) gained the same on the recall set's dev split but lost the held-out set's
#: (0.565 -> 0.435): a mixed turn matched by one shared Latin word kept full weight there.
CROSS_SCRIPT_LEXICAL_WEIGHT = 0.5


def fused_sql(emb_table: str | None, lists: tuple[DenseList, ...], thread_scoped: bool, wide: bool = False) -> str:
    """``FUSED_SQL``, or, when a list of ``lists`` has a ``bare`` span (a composite embedder) and
    ``CROSS_SCRIPT_LEXICAL_WEIGHT`` is not 1, the same fusion with CTE ``xs`` first: the rows whose own words are of
    the other script than the question (``CJK_ROW_SQL`` against the question's empty ``bare`` span, ``dense_cte``'s
    test), whose full-text terms then weigh
    ``CROSS_SCRIPT_LEXICAL_WEIGHT``. A row without a vector yet, or a question without one (``$7`` NULL: full text
    only), is in no ``xs``: weight 1, as before. The scoped statements read the flag from ``dense_cte``'s ``ev``,
    which has every row of the scope (each vector unpacked once: reading them again cost ~8 % of the thread
    statement); the ``wide`` one, whose ``ev`` has only the HNSW candidates, reads the full-text rows' ``cjk``
    (those with a vector: ``thread_scoped``, the key's thread is ``$2``, else each row's is read from
    ``memory_vectors``)."""
    weight = CROSS_SCRIPT_LEXICAL_WEIGHT  # read when built: research scripts set it
    part = next((i for i, lst in enumerate(lists) if lst.bare is not None), None)
    if emb_table is None or part is None or weight == 1.0:
        return FUSED_SQL
    w = f"CASE WHEN seq IN (SELECT seq FROM xs) THEN {float(weight)!r} ELSE 1 END::numeric"
    fused = FUSED_SQL.replace("1::numeric AS w FROM bt", f"{w} AS w FROM bt")
    fused = fused.replace("1::numeric FROM bw", f"{w} FROM bw")
    if not wide:
        return f"xs AS MATERIALIZED (SELECT seq FROM ev WHERE b{part}),\n{fused}"
    a, d = lists[part].bare or (1, 0)
    thread = "$2" if thread_scoped else \
        "(SELECT t.thread_id FROM memory_vectors t WHERE t.tenant_id = $1 AND t.seq = c.seq)"
    return f"""xs AS MATERIALIZED (SELECT c.seq FROM (SELECT seq FROM bt UNION SELECT seq FROM bw) c
          JOIN {emb_table} e ON e.tenant_id = $1 AND e.thread_id = {thread} AND e.seq = c.seq
          JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = c.seq CROSS JOIN qv
         WHERE $7::text IS NOT NULL AND {CJK_ROW_SQL} <> (vector_norm(subvector(qv.v, {a}, {d})) = 0)),
{fused}"""


#: A turn that asks (its text ends with a question mark, ASCII or full-width), as an SQL literal for ``~``.
ASK_LIT = "'[?？][[:space:]]*$'"
#: Share of a question turn's fused score the next turn of its session takes as its own (``prop_sql``; issue #28,
#: session 16): "有意思，你用的是什么布局？" carries the topic's words, the answer after it ("Dvorak") often none,
#: and neighbour propagation gave it half, so the question outranked its answer. 0: propagation as before. Read
#: when a statement is built (research scripts set it).
ANSWER_WEIGHT = 1.0


def prop_sql(rows: str, ask: str) -> str:
    """CTE ``prop`` (seq, s): each fused row's score plus half its best neighbour's in the session
    (``s + 0.5 * max(prev, next)``), and the turn after an asking one (``ask``: SQL of the row ``t`` of ``rows``,
    true when it asks) keeps at least ``ANSWER_WEIGHT`` times the asking turn's score as its own. ``rows``: the
    join giving ``t`` (seq, prev_seq, next_seq) for ``fused f``."""
    weight = ANSWER_WEIGHT  # read when built: research scripts set it
    answer = f"CASE WHEN {ask} THEN {float(weight)!r} * f.s ELSE 0.0 END" if weight else "0.0"
    return f"""prop AS MATERIALIZED (SELECT v.tgt AS seq, max(v.own) + 0.5 * max(v.nb) AS s
           FROM fused f JOIN {rows}
           CROSS JOIN LATERAL (VALUES (t.seq, f.s, 0.0), (t.next_seq, {answer}, f.s), (t.prev_seq, 0.0, f.s))
                 v(tgt, own, nb)
          WHERE v.tgt IS NOT NULL GROUP BY v.tgt)"""


def mostly_cjk_sql(text: str) -> str:
    """SQL of ``projections.segment.mostly_cjk`` over the text expression ``text``: three times its CJK characters
    exceed its Latin letters (the same ranges, ``segment.CJK_RANGES``)."""
    return (f"(3 * length(regexp_replace({text}, '[^{CJK_RANGES}]', '', 'g'))"
            f" > length(regexp_replace({text}, '[^A-Za-z]', '', 'g')))")


#: Whether the recall row ``d`` (``memory_vectors``) is mostly CJK, by its own words: the folded ``cjk`` (schema 0046,
#: ``segment.mostly_cjk`` of the body), or for a row folded before it the same rule over the piece less its speaker
#: label (``piece`` = speaker || ': ' || body, ``projections.vectors``), so a Latin label ("assistant") does not make
#: a short Chinese reply Latin. The rule in SQL costs ~80 us a row (bench/recall_cjk_ab.py), hence the column. Read
#: for a mostly-CJK question under an English-only embedder only (``CJK_PAIRS_OUT``).
CJK_ROW_SQL = f"coalesce(d.cjk, {mostly_cjk_sql('substr(d.piece, length(d.speaker) + 3)')})"

#: A mostly-CJK question (``segment.mostly_cjk``) under an embedder marked ``english_only`` (all-MiniLM-L6-v2, the
#: default) leaves the mostly-CJK rows out of the dense list (``CJK_ROW_SQL``; issue #28, session 18): such a model
#: reads every CJK text as the same noise (hubness: unrelated Chinese turns at cosine 0.5-0.75, session 13), so for a
#: Chinese question the Chinese rows filled the top of its list in an order that says nothing and pushed every
#: English or mixed row below them; with them out, the list ranks the rows it can read (a mixed turn's Latin words,
#: an English turn) and the full-text lists rank the Chinese ones. The composite embedders already do the same by
#: giving such a text no MiniLM half (``composite.mostly_latin``). Measured on the dev halves (R@3 cross-lingual /
#: same language; bench/recall_research/doc_xl.py, variant ``dqzhx``): Chinese recall set dev 0.804 / 0.918 ->
#: 0.804 / 0.934, the blind held-out set's dev half 0.478 / 0.706 -> 0.609 / 0.765; keeping those rows at weight 0
#: (ranks kept) 0.804 / 0.934 and 0.522 / 0.824; leaving out every row for a Chinese question 0.783 / 0.934 and
#: 0.522 / 0.824; leaving out Chinese rows for an English question too (the composite's rule) 0.717 / 0.951 and
#: 0.478 / 0.824: an English question's cosine with a Chinese row that has Latin words still carries signal. An
#: English question is untouched (its statement is the one before: LoCoMo unchanged). Read when a statement is
#: built (research scripts set it); False: the list as before.
CJK_PAIRS_OUT = True


def cjk_pairs_out(embedder: object, question: str) -> bool:
    """Whether recall's dense list leaves the mostly-CJK rows out for ``question`` (``CJK_PAIRS_OUT``): the embedder
    says it reads English only (``english_only``) and the question is mostly CJK (``segment.mostly_cjk``)."""
    return CJK_PAIRS_OUT and bool(getattr(embedder, "english_only", False)) and mostly_cjk(question)


def dense_cte(emb_table: str | None, lists: tuple[DenseList, ...], scope: str, limit: int = 200,
              candidates: str | None = None) -> str:
    """``dv AS MATERIALIZED (...)``: rows (seq, r, w) of every list in ``lists`` over ``emb_table e`` (with CTE
    ``qv``) where ``scope`` holds, each list's ``limit`` nearest rows ranked ``r`` = 1.. and weighted ``w``. With
    several lists it follows ``ev AS MATERIALIZED (...)``: every scope row's distances ``d<i>`` and ``bare`` flags
    ``b<i>`` (true for a list without ``bare``), which ``fused_sql`` reads too.

    A part whose stored or query half is empty (a composite leaves MiniLM's half of a Chinese text empty) has no
    cosine (pgvector gives NaN): those rows are not in that list, and a query with an empty half has no such list
    at all. A list with ``bare`` ranks every row, then keeps the rows of the other script than the question: the
    row's own words are mostly CJK (``CJK_ROW_SQL``) and the question's ``bare`` half is not empty, or the reverse;
    a row keeps its rank among all rows, so the one Chinese turn of an English thread is not first of its list for
    being alone there. A list with ``across`` ranks those rows by the cosine of that span instead of its own.
    ``candidates``: SQL giving ``(seq, emb)`` rows to rank instead of
    scanning ``scope`` (the wide path's HNSW scan). ``emb_table`` None: an empty ``dv`` (no embedder)."""
    if emb_table is None or not lists:
        return ("dv AS MATERIALIZED (SELECT NULL::bigint AS seq, NULL::bigint AS r, NULL::numeric AS w"
                " FROM qv WHERE false)")
    src = f"({candidates})" if candidates else f"(SELECT e.seq, e.emb FROM {emb_table} e WHERE {scope})"
    if lists == WHOLE:  # a single model: the statement as before issue #28's part lists
        return f"""dv AS MATERIALIZED (SELECT seq, row_number() OVER (ORDER BY dist, seq) AS r, 1::numeric AS w FROM (
        SELECT c.seq, c.emb <=> qv.v AS dist FROM qv, {src} c WHERE $7::text IS NOT NULL
         ORDER BY dist, c.seq LIMIT {limit}) x)"""
    # A row's script is its own words (``CJK_ROW_SQL``), not its embedded +-2 window's (session 20): a turn said in
    # the other language among its neighbours' (code-switching) has a window of their script, and was taken for one
    # of theirs. The question's script is its vector's: the query half is the question's own words.
    bare = next((lst.bare for lst in lists if lst.bare is not None), None)
    if bare is not None:
        src = f"""(SELECT c.seq, c.emb, {CJK_ROW_SQL} AS cjk FROM {src} c
          JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = c.seq)"""
    # Several lists: every distance of a row from one copy of its vector. A composite's vector is over PostgreSQL's
    # 2 kB TOAST threshold, and each function reading the stored value unpacks it again (three times per row for a
    # part list and its check: +40 % on a 419-turn thread); ``subvector`` of the whole span unpacks it once.
    # the end of the last span named (parts and their ``bare`` spans: a composite's spans cover its whole vector)
    ends = [a + d - 1 for lst in lists for a, d in ((lst.start, lst.dim), lst.bare or (1, 0), lst.across or (1, 0))
            if d]
    total = max(ends, default=0)
    one = f"subvector(c.emb, 1, {total})" if total else "c.emb"
    cols, qcols = [], []
    if bare is not None:
        # the question's script: whether the partial part read it (an empty half is exact zeros)
        qcols.append(f"vector_norm(subvector(qv.v, {bare[0]}, {bare[1]})) = 0 AS qx")
    cross = "c.cjk <> q.qx"  # the row's own words and the question are of different scripts
    for i, lst in enumerate(lists):
        qcols.append(f"{'qv.v' if lst.dim == 0 else f'subvector(qv.v, {lst.start}, {lst.dim})'} AS u{i}")
        span = "c.emb" if lst.dim == 0 else f"subvector(c.emb, {lst.start}, {lst.dim})"
        if lst.across is not None and bare is not None:
            # a pair across scripts has no half of the partial part to compare: the whole cosine would be the
            # multilingual part's scaled by sqrt(its weight), below every same-script row for no reason of meaning
            a, d = lst.across
            qcols.append(f"subvector(qv.v, {a}, {d}) AS ua{i}")
            cols.append(f"CASE WHEN {cross} THEN subvector(c.emb, {a}, {d}) <=> q.ua{i} ELSE {span} <=> q.u{i} END"
                        f" AS d{i}")
        else:
            cols.append(f"{span} <=> q.u{i} AS d{i}")
        cols.append(f"{cross} AS b{i}" if lst.bare is not None else f"true AS b{i}")
    cjk = ", c.cjk" if bare is not None else ""
    ev = f"""ev AS MATERIALIZED (SELECT c.seq, {", ".join(cols)}
          FROM (SELECT {", ".join(qcols)} FROM qv WHERE $7::text IS NOT NULL) q,
               (SELECT c.seq, {one} AS emb{cjk} FROM {src} c OFFSET 0) c)"""
    # a part's NaN (empty half) is not in its list; a list with ``bare`` keeps its rows' ranks among all rows
    parts = [f"""(SELECT seq, r, w FROM (
        SELECT seq, b, row_number() OVER (ORDER BY d, seq) AS r, {float(lst.weight)!r}::numeric AS w FROM (
        SELECT seq, d{i} AS d, b{i} AS b FROM ev WHERE d{i} <> 'NaN'::float8 ORDER BY d{i}, seq LIMIT {limit}) x) z
         WHERE z.b)""" for i, lst in enumerate(lists)]
    # ``ev`` is a CTE of the statement, not of ``dv``: ``fused_sql`` reads its cross-script flags
    return f"{ev},\ndv AS MATERIALIZED (" + "\n UNION ALL ".join(parts) + ")"
