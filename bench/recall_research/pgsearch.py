"""PostgreSQL side of the research: load an index variant into a table, run the retrieval primitives.

Library module for experiments.py (not runnable by itself). Every ranked list used in the experiments comes
from PostgreSQL (pgvector cosine distance, to_tsvector/tsquery full-text); only the fusion of lists
(RRF, score propagation) is done in Python; the engine's recall statement does the same arithmetic in SQL.
"""
from __future__ import annotations

import numpy as np
from indexes import Doc


def tname(variant: str) -> str:
    return "rr_" + variant


async def load_variant(conn, variant: str, docs: list[Doc], embs: np.ndarray, hnsw: bool = False):
    t = tname(variant)
    await conn.execute(f"DROP TABLE IF EXISTS {t}, {t}_df, {t}_stats")
    await conn.execute(f"""
        CREATE TABLE {t} (
            conv text NOT NULL, doc_id int NOT NULL, fts_text text NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', fts_text)) STORED,
            dl int, emb vector(384) NOT NULL, src text[] NOT NULL, session int, speaker text, pos int,
            PRIMARY KEY (conv, doc_id))""")
    await conn.copy_records_to_table(
        t, columns=["conv", "doc_id", "fts_text", "emb", "src", "session", "speaker", "pos"],
        records=[(d.conv, d.doc_id, d.fts_text, embs[i], d.src, d.session, d.speaker, d.pos)
                 for i, d in enumerate(docs)])
    await conn.execute(f"UPDATE {t} SET dl = coalesce((SELECT sum(array_length(u.positions,1)) FROM unnest(tsv) u), 0)")
    await conn.execute(f"CREATE INDEX ON {t} USING gin (tsv)")
    if hnsw:
        await conn.execute(f"CREATE INDEX ON {t} USING hnsw (emb vector_cosine_ops)")
    # term statistics for the BM25-in-SQL ranking (the engine would maintain these in a projection)
    await conn.execute(f"""
        CREATE TABLE {t}_df AS
        SELECT d.conv, u.lexeme AS lex, count(*)::int AS df
        FROM {t} d CROSS JOIN LATERAL unnest(d.tsv) u GROUP BY d.conv, u.lexeme""")
    await conn.execute(f"CREATE UNIQUE INDEX ON {t}_df (conv, lex)")
    await conn.execute(f"""
        CREATE TABLE {t}_stats AS
        SELECT conv, count(*)::float8 AS n, avg(dl)::float8 AS avgdl FROM {t} GROUP BY conv""")
    await conn.execute(f"ANALYZE {t}")


async def vec_search(conn, variant: str, conv: str, qvec: np.ndarray, n: int = 200) -> list[tuple[int, float]]:
    rows = await conn.fetch(
        f"SELECT doc_id, 1 - (emb <=> $2) AS sim FROM {tname(variant)} WHERE conv = $1 "
        f"ORDER BY emb <=> $2, doc_id LIMIT $3", conv, qvec, n)
    return [(r["doc_id"], r["sim"]) for r in rows]


# --- tsquery construction -------------------------------------------------------------------------
# 'web'   : websearch_to_tsquery('english', q)          (AND of all words)
# 'plain' : plainto_tsquery('english', q)               (AND of all words)
# 'or'    : OR of the question's lexemes                (to_tsvector('english', q) -> 'a' | 'b' | ...)
# 'or_nn' : OR of the lexemes minus the conversation's speaker names
TSQ = {
    "web": "websearch_to_tsquery('english', $2)",
    "plain": "plainto_tsquery('english', $2)",
    "or": "(SELECT string_agg(quote_literal(l), ' | ')::tsquery "
          "FROM unnest(tsvector_to_array(to_tsvector('english', $2))) l)",
    "or_nn": "(SELECT string_agg(quote_literal(l), ' | ')::tsquery "
             "FROM unnest(tsvector_to_array(to_tsvector('english', $2))) l WHERE NOT l = ANY($4::text[]))",
}

RANK = {
    "rank": "ts_rank(tsv, q)",
    "rank_n1": "ts_rank(tsv, q, 1)",
    "rank_cd": "ts_rank_cd(tsv, q)",
    "rank_cd_n1": "ts_rank_cd(tsv, q, 1)",
    "rank_cd_n2": "ts_rank_cd(tsv, q, 2)",
}


async def fts_search(conn, variant: str, conv: str, question: str, tsq: str, rank: str,
                     names: list[str], n: int = 200) -> list[tuple[int, float]]:
    t = tname(variant)
    if rank == "bm25":
        return await bm25_search(conn, variant, conv, question, names if tsq == "or_nn" else [], n)
    if rank.startswith("bm25@"):
        k1, b = map(float, rank[5:].split(","))
        return await bm25_search(conn, variant, conv, question, names if tsq == "or_nn" else [], n, k1, b)
    sql = (f"WITH qq AS (SELECT {TSQ[tsq]} AS q) "
           f"SELECT doc_id, {RANK[rank]} AS s FROM {t}, qq "
           f"WHERE conv = $1 AND qq.q IS NOT NULL AND tsv @@ qq.q ORDER BY s DESC, doc_id LIMIT $3")
    args = [conv, question, n] + ([names] if "$4" in sql else [])
    rows = await conn.fetch(sql, *args)
    return [(r["doc_id"], r["s"]) for r in rows]


BM25_SQL = """
WITH ql AS (
    SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', $2))) l
    WHERE NOT l = ANY($4::text[])),
st AS (SELECT n, avgdl FROM {t}_stats WHERE conv = $1),
qt AS (
    SELECT ql.l, ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) AS idf
    FROM ql JOIN {t}_df df ON df.conv = $1 AND df.lex = ql.l CROSS JOIN st),
qq AS (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM qt)
SELECT d.doc_id,
       sum(qt.idf * (cardinality(u.positions) * ($5::float8 + 1))
           / (cardinality(u.positions) + $5::float8 * (1 - $6::float8 + $6::float8 * d.dl / st.avgdl))) AS s
FROM qq, st, {t} d CROSS JOIN LATERAL unnest(d.tsv) u JOIN qt ON qt.l = u.lexeme
WHERE d.conv = $1 AND qq.q IS NOT NULL AND d.tsv @@ qq.q
GROUP BY d.doc_id ORDER BY s DESC, d.doc_id LIMIT $3
"""


# NOTE: before the ::float8 casts above, asyncpg typed $5/$6 as integers and silently truncated k1=1.2 -> 1 and
# b=0.75 -> 0; the stage A/F/B/C/D/E/G tables were measured that way (k1=1, b=0), which
# turned out to be the better setting (see stage H).
BM25_K1, BM25_B = 1.0, 0.0


async def bm25_search(conn, variant, conv, question, names, n=200, k1=None, b=None):
    k1 = BM25_K1 if k1 is None else k1
    b = BM25_B if b is None else b
    rows = await conn.fetch(BM25_SQL.format(t=tname(variant)), conv, question, n, names, k1, b)
    return [(r["doc_id"], r["s"]) for r in rows]


async def stem_names(conn, names: list[str]) -> list[str]:
    out = []
    for nm in names:
        out += await conn.fetchval("SELECT tsvector_to_array(to_tsvector('english', $1))", nm)
    return out
