"""The winning recall design as ONE PostgreSQL statement: recall@k check against experiments.py, and latency.

Run (research venv, see common.py):
    cd /work/main/bench/recall_research && HF_HUB_OFFLINE=1 /tmp/rvenv/bin/python final_sql.py
Builds table rf_turn (+ rf_df, rf_stats term statistics), an HNSW index (vector_cosine_ops) and GIN indexes,
runs every question through RECALL_SQL, prints recall@5/10/20 (overall, per category) and latency percentiles
(query embedding + SQL) for exact scan and for HNSW with iterative scan.
"""
from __future__ import annotations

import asyncio
import re
import statistics
import time

from common import KS, TABLE_HEAD, embed, fmt_row, get_model, load, pg_connect, recall_at, summarize
from indexes import ctx_docs, spk_date_cap_q

CONVS, QUESTIONS = load()

# query rewriting for the embedding (no model): drop stop/question words
STOP = set("""a an the of to in on at for with by from and or but is are was were be been being do does did has have
had what when where who whom whose which why how would could should will can may might that this these those it its
as about into than then there their them they he she her his him i you your we our us some any kind type types""".split())


def keywords(q: str) -> str:
    kept = [t for t in re.findall(r"[A-Za-z0-9'+-]+", q) if t.lower() not in STOP]
    return " ".join(kept) or q


def named_speaker(question: str, speakers) -> str | None:
    named = [n for n in speakers if re.search(rf"\b{re.escape(n)}\b", question, re.I)]
    return named[0] if len(named) == 1 else None


DDL = """
DROP TABLE IF EXISTS rf_turn, rf_df, rf_stats;
CREATE TABLE rf_turn (
    scope     text NOT NULL,          -- conversation / agent scope
    pos       int  NOT NULL,          -- turn order within the scope
    dia_id    text NOT NULL,
    session   int  NOT NULL,
    speaker   text NOT NULL,
    turn_text text NOT NULL,          -- "[8 May 2023] Caroline: text [shares a photo of ...] [image: query]"
    win_text  text NOT NULL,          -- "[8 May 2023] A: prev B: centre A: next" (same session, +-1)
    turn_tsv  tsvector GENERATED ALWAYS AS (to_tsvector('english', turn_text)) STORED,
    win_tsv   tsvector GENERATED ALWAYS AS (to_tsvector('english', win_text)) STORED,
    emb       vector(384) NOT NULL,   -- MiniLM of the +-2 window text (source is still this one turn)
    PRIMARY KEY (scope, pos));
"""

POST = """
CREATE INDEX ON rf_turn USING gin (turn_tsv);
CREATE INDEX ON rf_turn USING gin (win_tsv);
CREATE INDEX rf_turn_hnsw ON rf_turn USING hnsw (emb vector_cosine_ops);
-- term statistics per scope and field (the engine keeps these in a projection, updated per turn)
CREATE TABLE rf_df AS
  SELECT scope, 't'::"char" AS field, lexeme AS lex, count(*)::int AS df
    FROM rf_turn, unnest(turn_tsv) GROUP BY scope, lexeme
  UNION ALL
  SELECT scope, 'w'::"char", lexeme, count(*)::int FROM rf_turn, unnest(win_tsv) GROUP BY scope, lexeme;
CREATE UNIQUE INDEX ON rf_df (scope, field, lex);
CREATE TABLE rf_stats AS
  SELECT scope, count(*)::float8 AS n FROM rf_turn GROUP BY scope;
ANALYZE rf_turn; ANALYZE rf_df; ANALYZE rf_stats;
"""

# $1 scope, $2 question text, $3 query embedding (of keywords(question)), $4 the one speaker named in the
# question or NULL, $5 how many turns to return.
# BM25: k1 = 1.2, b = 0 (no length normalisation; measured equal or better than b = 0.75), idf = ln(1 + (N - df +
# .5)/(df + .5)), query = OR of the question's lexemes. Fusion: RRF k = 10 over three lists of 200; neighbour
# propagation s + 0.5*max(s(prev), s(next)) within a session; turns not spoken by the named speaker x 0.5.
RECALL_SQL = """
WITH ql AS (SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', $2))) l),
st AS (SELECT * FROM rf_stats WHERE scope = $1),
qt AS (SELECT df.field, ql.l, ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) AS idf
         FROM ql JOIN rf_df df ON df.scope = $1 AND df.lex = ql.l CROSS JOIN st),
qq AS (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM qt WHERE field = 't'),
bt AS (SELECT pos, row_number() OVER (ORDER BY s DESC, pos) AS r FROM (
         SELECT d.pos, sum(qt.idf * cardinality(u.positions) * 2.2 / (cardinality(u.positions) + 1.2)) AS s
           FROM qq, rf_turn d CROSS JOIN LATERAL unnest(d.turn_tsv) u
           JOIN qt ON qt.field = 't' AND qt.l = u.lexeme
          WHERE d.scope = $1 AND d.turn_tsv @@ qq.q
          GROUP BY d.pos ORDER BY s DESC, d.pos LIMIT 200) x),
qw AS (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM qt WHERE field = 'w'),
bw AS (SELECT pos, row_number() OVER (ORDER BY s DESC, pos) AS r FROM (
         SELECT d.pos, sum(qt.idf * cardinality(u.positions) * 2.2 / (cardinality(u.positions) + 1.2)) AS s
           FROM qw, rf_turn d CROSS JOIN LATERAL unnest(d.win_tsv) u
           JOIN qt ON qt.field = 'w' AND qt.l = u.lexeme
          WHERE d.scope = $1 AND d.win_tsv @@ qw.q
          GROUP BY d.pos ORDER BY s DESC, d.pos LIMIT 200) x),
dv AS (SELECT pos, row_number() OVER (ORDER BY dist, pos) AS r FROM (
         SELECT pos, emb <=> $3 AS dist FROM rf_turn WHERE scope = $1
          ORDER BY emb <=> $3 LIMIT 200) x),
fused AS (SELECT pos, sum(1.0 / (10 + r)) AS s
            FROM (SELECT * FROM bt UNION ALL SELECT * FROM bw UNION ALL SELECT * FROM dv) a GROUP BY pos),
cand AS (SELECT DISTINCT t.pos FROM fused f JOIN rf_turn t ON t.scope = $1 AND t.pos BETWEEN f.pos - 1 AND f.pos + 1),
scored AS (
  SELECT t.pos, t.dia_id,
         (coalesce(f0.s, 0) + 0.5 * greatest(
              CASE WHEN tp.session = t.session THEN coalesce(fp.s, 0) ELSE 0 END,
              CASE WHEN tn.session = t.session THEN coalesce(fn.s, 0) ELSE 0 END))
         * CASE WHEN $4::text IS NULL OR t.speaker = $4 THEN 1.0 ELSE 0.5 END AS score
    FROM cand c JOIN rf_turn t ON t.scope = $1 AND t.pos = c.pos
    LEFT JOIN fused f0 ON f0.pos = t.pos
    LEFT JOIN rf_turn tp ON tp.scope = $1 AND tp.pos = t.pos - 1 LEFT JOIN fused fp ON fp.pos = t.pos - 1
    LEFT JOIN rf_turn tn ON tn.scope = $1 AND tn.pos = t.pos + 1 LEFT JOIN fused fn ON fn.pos = t.pos + 1)
SELECT pos, dia_id, score FROM scored ORDER BY score DESC, pos LIMIT $5
"""


async def build(conn, embed_fn=embed):
    await conn.execute(DDL)
    recs = []
    for cid, c in CONVS.items():
        turns = c.turns
        win1 = ctx_docs(c, 1, 1, fts_ctx=True, multi=False)
        win2 = ctx_docs(c, 2, 2, fts_ctx=False, multi=False)
        embs = embed_fn([d.emb_text for d in win2])
        for i, t in enumerate(turns):
            recs.append((cid, i, t.dia_id, t.session, t.speaker, spk_date_cap_q(t), win1[i].fts_text, embs[i]))
    await conn.copy_records_to_table(
        "rf_turn", columns=["scope", "pos", "dia_id", "session", "speaker", "turn_text", "win_text", "emb"],
        records=recs)
    await conn.execute(POST)


async def run(conn, mode: str, qembed_fn=None):
    if mode == "exact":
        await conn.execute("SET enable_indexscan = on; SET enable_seqscan = on")
        await conn.execute("DROP INDEX IF EXISTS rf_turn_hnsw")
    else:
        await conn.execute("CREATE INDEX IF NOT EXISTS rf_turn_hnsw ON rf_turn USING hnsw (emb vector_cosine_ops)")
        await conn.execute("SET enable_seqscan = off; SET enable_sort = off; SET hnsw.ef_search = 200; SET hnsw.iterative_scan = relaxed_order")
    stmt = await conn.prepare(RECALL_SQL)
    model = get_model()
    model.encode(["warm up"])
    per_q, lat_emb, lat_sql = [], [], []
    plan_uses_hnsw = "rf_turn_hnsw" in "\n".join(
        r[0] for r in await conn.fetch("EXPLAIN " + RECALL_SQL, "26", "x", embed(["x"])[0], None, 20))
    for q in QUESTIONS:
        t0 = time.perf_counter()
        qv = (qembed_fn([keywords(q.question)])[0] if qembed_fn else
              model.encode([keywords(q.question)], normalize_embeddings=True, convert_to_numpy=True)[0])
        t1 = time.perf_counter()
        rows = await stmt.fetch(q.conv, q.question, qv, named_speaker(q.question, CONVS[q.conv].speakers), 20)
        t2 = time.perf_counter()
        lat_emb.append((t1 - t0) * 1000)
        lat_sql.append((t2 - t1) * 1000)
        srcs = [[r["dia_id"]] for r in rows]
        per_q.append((q.category, {k: recall_at(srcs, q.evidence, k) for k in KS}))
    s = summarize(per_q)

    def pct(xs, p):
        return sorted(xs)[min(len(xs) - 1, int(p / 100 * len(xs)))]
    tot = [a + b for a, b in zip(lat_emb, lat_sql)]
    lat = (f"{mode}: plan uses HNSW={plan_uses_hnsw}; query embedding p50 {statistics.median(lat_emb):.1f} ms; "
           f"SQL p50 {statistics.median(lat_sql):.1f} ms p95 {pct(lat_sql, 95):.1f} ms; "
           f"total p50 {statistics.median(tot):.1f} ms p95 {pct(tot, 95):.1f} ms")
    return s, lat


async def main():
    conn = await pg_connect()
    await build(conn)
    rows, lats = [], []
    for mode in ("exact", "hnsw"):
        s, lat = await run(conn, mode)
        rows.append(fmt_row(f"RECALL_SQL ({mode})", s))
        lats.append(lat)
    n = await conn.fetchval("SELECT count(*) FROM rf_turn")
    print(f"turns indexed: {n}; questions: {len(QUESTIONS)}")
    print(TABLE_HEAD)
    print("\n".join(rows))
    print("\n".join(lats))


if __name__ == "__main__":
    asyncio.run(main())
