"""Recall: hybrid search over ``memory_vectors`` in one SQL statement (issue #3 §3).

Design measured on LoCoMo dev (bench/recall_research/FINDINGS.md, R@10 0.821): three ranked lists of up to 200
turns — BM25 (k1 1.2, b 0, idf from the document frequencies of the filtered scope, computed on the fly from the
turns that match the OR-tsquery of the question's lexemes) over ``turn_text`` and over ``win_text`` (+-1 turn), and
pgvector cosine over the embedding of the +-2 window (query = the question without stop/question words) — fused with
RRF (k = 10), then ``s + 0.5 * max(s(prev), s(next))`` within a session, then x0.5 for turns by anyone else when
exactly one participant of the candidates is named in the question. With no embedder (or no vectors yet) the dense
list is empty and the reply says ``mode: "fulltext"``.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Annotated, Any

import asyncpg
import msgspec

from engine.embed import Embedder
from engine.embedder_worker import vec_literal

STOP = frozenset("""a an the of to in on at for with by from and or but is are was were be been being do does did has
have had what when where who whom whose which why how would could should will can may might that this these those it
its as about into than then there their them they he she her his him i you your we our us some any kind type
types""".split())


def keywords(q: str) -> str:
    """The question without stop/question words: what the query embedding is computed from (dense 0.443 -> 0.507)."""
    kept = [t for t in re.findall(r"[A-Za-z0-9'+-]+", q) if t.lower() not in STOP]
    return " ".join(kept) or q


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.recall``: the ``k`` turns of ``tenant`` most relevant to ``query`` (default ``MEMORY_RECALL_TOP_K``),
    optionally within ``thread``, spoken by ``user``, and ``since`` <= occurred_at < ``until``. ``after_seq``:
    wait until the turn published at that sequence is projected (its embedding may still be pending)."""

    tenant: str = "default"
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    thread: str | None = None
    user: Annotated[str, msgspec.Meta(max_length=1024)] | None = None
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    since: datetime | None = None
    until: datetime | None = None
    after_seq: Annotated[int, msgspec.Meta(ge=0)] | None = None


class RecallHit(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    event_id: str
    thread: str
    user_id: str | None
    session_id: str | None
    occurred_at: str
    text: str
    score: float
    source_event_ids: list[str]


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    """``mode``: ``hybrid`` (full-text + vectors) or ``fulltext`` (no embedder, or no vectors in scope yet);
    ``embedder``: the model used for the query, or null; ``applied_seq``: the projections' checkpoint."""

    tenant: str
    query: str
    mode: str
    embedder: str | None
    hits: list[RecallHit]
    applied_seq: int
    took_ms: float


def _filter(thread: bool, user: bool, since: bool, until: bool) -> str:
    """The scope predicate over ``memory_vectors d``: $1 tenant, $2 thread, $3 user, $4 since, $5 until. Absent
    filters become ``$n IS NULL`` (always true) so the planner can use the thread / user indexes of present ones."""
    parts = ["d.tenant_id = $1",
             "d.thread_id = $2" if thread else "$2::text IS NULL",
             "d.user_id = $3" if user else "$3::text IS NULL",
             "d.occurred_at >= $4" if since else "$4::timestamptz IS NULL",
             "d.occurred_at < $5" if until else "$5::timestamptz IS NULL"]
    return " AND ".join(parts)


#: Thread-scoped: match through the thread's rows, not the GIN index (measured: same at 788 rows, the GIN bitmap
#: cost 15-20 ms per list at 100k because a speaker's name matches half of all turns).
_GIN_OFF = True


def _bm25(name: str, field: str, _F: str, scoped: bool) -> str:
    """CTEs ``m_<name>`` (matched turn x query lexeme, tf), ``df_<name>`` and the ranked list ``<name>``.

    ``scoped`` (a thread filter): match through the thread's index, not the GIN index, which the planner
    underestimates (a speaker's name matches half of all turns: 15-20 ms of bitmap at 100k rows for nothing)."""
    match = f"(d.{field} @@ qq.q) IS TRUE" if scoped and _GIN_OFF else f"d.{field} @@ qq.q"
    return f"""m_{name} AS MATERIALIZED (SELECT d.seq, u.lexeme, cardinality(u.positions)::float8 AS tf
          FROM qq, memory_vectors d CROSS JOIN LATERAL unnest(d.{field}) u
         WHERE {_F} AND {match} AND u.lexeme = ANY(qq.ls)),
df_{name} AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM m_{name} GROUP BY lexeme),
{name} AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r FROM (
        SELECT m.seq, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * 2.2 / (m.tf + 1.2)) AS s
          FROM m_{name} m JOIN df_{name} df USING (lexeme) CROSS JOIN st
         GROUP BY m.seq ORDER BY s DESC, m.seq LIMIT 200) x)"""


def recall_sql(emb_table: str | None, thread: bool = True, user: bool = False, since: bool = False,
               until: bool = False) -> str:
    """The statement: $1..$5 filters, $6 question, $7 query vector (text form) or NULL, $8 k."""
    _F = _filter(thread, user, since, until)
    dense = (f"""(SELECT seq, row_number() OVER (ORDER BY dist, seq) AS r FROM (
        SELECT e.seq, e.emb <=> qv.v AS dist
          FROM qv, {emb_table} e
         WHERE e.tenant_id = $1 {"AND e.thread_id = $2" if thread else ""} AND $7::text IS NOT NULL
           AND e.seq IN (SELECT d.seq FROM memory_vectors d WHERE {_F})
         ORDER BY dist, e.seq LIMIT 200) x)""" if emb_table else
             "(SELECT NULL::bigint AS seq, NULL::bigint AS r FROM qv WHERE false)")
    return f"""
WITH qv AS MATERIALIZED (SELECT $7::text::vector AS v),
qq AS MATERIALIZED (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q, array_agg(l) AS ls
              FROM (SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', $6))) l) ql),
st AS MATERIALIZED (SELECT count(*)::float8 AS n FROM memory_vectors d WHERE {_F}),
{_bm25("bt", "turn_tsv", _F, thread)},
{_bm25("bw", "win_tsv", _F, thread)},
dv AS MATERIALIZED {dense},
fused AS MATERIALIZED (SELECT seq, sum(1.0 / (10 + r)) AS s
            FROM (SELECT * FROM bt UNION ALL SELECT * FROM bw UNION ALL SELECT * FROM dv) a GROUP BY seq),
prop AS MATERIALIZED (SELECT v.tgt AS seq, max(v.own) + 0.5 * max(v.nb) AS s
           FROM fused f JOIN memory_vectors t ON t.tenant_id = $1 AND t.seq = f.seq
           CROSS JOIN LATERAL (VALUES (t.seq, f.s, 0.0), (t.next_seq, 0.0, f.s), (t.prev_seq, 0.0, f.s)) v(tgt, own, nb)
          WHERE v.tgt IS NOT NULL GROUP BY v.tgt),
sc AS MATERIALIZED (SELECT d.seq, d.event_id, d.thread_id, d.user_id, d.session_id, d.occurred_at, d.turn_text, p.s
           FROM prop p JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = p.seq
          WHERE {_F}),
named AS MATERIALIZED (SELECT CASE WHEN count(*) = 1 THEN min(u) END AS who
           FROM (SELECT DISTINCT user_id AS u FROM sc WHERE user_id IS NOT NULL) n
          WHERE $6 ~* ('\\m' || regexp_replace(u, '([^[:alnum:] ])', '\\\\\\1', 'g') || '\\M'))
SELECT r.seq, r.event_id::text AS event_id, r.thread_id, r.user_id, r.session_id, r.occurred_at, r.turn_text,
       r.s * CASE WHEN named.who IS NULL OR r.user_id IS NOT DISTINCT FROM named.who THEN 1.0 ELSE 0.5 END AS score,
       (SELECT count(*) FROM dv) AS ndense
  FROM sc r CROSS JOIN named
 ORDER BY score DESC, r.seq
 LIMIT $8
"""


class Recaller:
    """Runs recall for the query service: embeds the query (if an embedder is configured) and runs the SQL."""

    def __init__(self, pool: asyncpg.Pool, embedder: Embedder | None, default_k: int) -> None:
        self.pool = pool
        self.embedder = embedder
        self.default_k = default_k
        self._table: str | None = None
        self._sql: dict[tuple[Any, ...], str] = {}

    async def _emb_table(self) -> str | None:
        if self.embedder is None:
            return None
        if self._table is None:
            self._table = await self.pool.fetchval(
                "SELECT table_name FROM embedding_models WHERE model = $1", self.embedder.name)
        return self._table

    async def recall(self, req: RecallRequest, applied_seq: int) -> RecallResult:
        t0 = time.perf_counter()
        table = await self._emb_table()
        qvec: str | None = None
        if table is not None and self.embedder is not None:
            qvec = vec_literal((await self.embedder.embed([keywords(req.query)]))[0])
        key = (table, req.thread is not None, req.user is not None, req.since is not None, req.until is not None)
        sql = self._sql.get(key) or self._sql.setdefault(key, recall_sql(*key))
        rows = await self.pool.fetch(sql, req.tenant, req.thread, req.user, req.since, req.until, req.query, qvec,
                                     req.k or self.default_k)
        dense = bool(rows) and rows[0]["ndense"] > 0
        hits = [RecallHit(seq=r["seq"], event_id=r["event_id"], thread=r["thread_id"], user_id=r["user_id"],
                          session_id=r["session_id"], occurred_at=r["occurred_at"].isoformat(), text=r["turn_text"],
                          score=round(float(r["score"]), 6), source_event_ids=[r["event_id"]]) for r in rows]
        return RecallResult(tenant=req.tenant, query=req.query, mode="hybrid" if dense else "fulltext",
                            embedder=self.embedder.name if qvec is not None else None, hits=hits,
                            applied_seq=applied_seq, took_ms=round((time.perf_counter() - t0) * 1000, 2))


def hit_dicts(result: Any) -> list[dict[str, Any]]:  # pragma: no cover - convenience for tools
    return msgspec.to_builtins(result)["hits"]
