"""Recall research on LoCoMo dev (26.json, 30.json): index variants x ranking variants, recall@5/10/20.

Run (research venv, see common.py; ~10 min the first time on 2 cores, embeddings cached in /tmp/rcache):
    cd /work/main/bench/recall_research && HF_HUB_OFFLINE=1 /tmp/rvenv/bin/python experiments.py [--stage A|B|all]
Writes markdown tables to stdout and to /tmp/rcache/results_<stage>.md.
Ranked lists all come from PostgreSQL (pgvector cosine, full-text); fusion / re-ranking arithmetic in Python.
"""
from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import defaultdict

import numpy as np

from common import (CACHE_DIR, KS, TABLE_HEAD, embed, fmt_row, load, pg_connect, recall_at, summarize)
from indexes import VARIANTS, Doc
import pgsearch as P

CONVS, QUESTIONS = load()

# ----------------------------------------------------------------------------- query rewriting (no model)
QWORDS = r"^(what|when|where|who|whom|whose|which|why|how( many| much| long| often)?|would|could|should|did|does|do|is|are|was|were|has|have|had|can|will)\b"
STOP = set("""a an the of to in on at for with by from and or but is are was were be been being do does did has have
had what when where who whom whose which why how would could should will can may might that this these those it its
as about into than then there their them they he she her his him i you your we our us some any kind type types""".split())


def q_strip_wh(q: str) -> str:
    return re.sub(QWORDS, "", q.strip(), flags=re.I).strip(" ?") or q


def q_keywords(q: str) -> str:
    toks = re.findall(r"[A-Za-z0-9'+-]+", q)
    kept = [t for t in toks if t.lower() not in STOP]
    return " ".join(kept) or q


QTRANS = {"raw": lambda q: q, "strip_wh": q_strip_wh, "keywords": q_keywords}


# ----------------------------------------------------------------------------- runner with caches
class Runner:
    def __init__(self, conn):
        self.conn = conn
        self.docs: dict[str, dict[tuple[str, int], Doc]] = {}
        self.embs: dict[str, dict[tuple[str, int], np.ndarray]] = {}
        self.cache: dict = {}
        self.names: dict[str, list[str]] = {}
        self.qvec_cache: dict[str, np.ndarray] = {}

    async def prepare(self, variant: str):
        if variant in self.docs:
            return
        docs = [d for c in CONVS.values() for d in VARIANTS[variant](c)]
        embs = embed([d.emb_text for d in docs])
        await P.load_variant(self.conn, variant, docs, embs)
        self.docs[variant] = {(d.conv, d.doc_id): d for d in docs}
        self.embs[variant] = {(d.conv, d.doc_id): embs[i] for i, d in enumerate(docs)}
        for cid, c in CONVS.items():
            self.names[cid] = await P.stem_names(self.conn, list(c.speakers))

    def qvec(self, text: str) -> np.ndarray:
        if text not in self.qvec_cache:
            self.qvec_cache[text] = embed([text])[0]
        return self.qvec_cache[text]

    async def dense(self, variant, q, qt="raw"):
        key = ("dense", variant, q.conv, q.qid, qt)
        if key not in self.cache:
            self.cache[key] = await P.vec_search(self.conn, variant, q.conv, self.qvec(QTRANS[qt](q.question)))
        return self.cache[key]

    async def dense_vec(self, variant, q, vec, tag):
        key = ("dvec", variant, q.conv, q.qid, tag)
        if key not in self.cache:
            self.cache[key] = await P.vec_search(self.conn, variant, q.conv, vec.astype(np.float32))
        return self.cache[key]

    async def fts(self, variant, q, tsq="or", rank="rank_cd", qt="raw"):
        key = ("fts", variant, q.conv, q.qid, tsq, rank, qt)
        if key not in self.cache:
            self.cache[key] = await P.fts_search(self.conn, variant, q.conv, QTRANS[qt](q.question), tsq, rank,
                                                 self.names[q.conv])
        return self.cache[key]

    def srcs(self, variant, conv, ranked_ids):
        D = self.docs[variant]
        return [D[(conv, i)].src for i in ranked_ids]


def rrf(lists: list[list[tuple[int, float]]], k: float = 60, weights=None) -> dict[int, float]:
    weights = weights or [1.0] * len(lists)
    s: dict[int, float] = defaultdict(float)
    for w, lst in zip(weights, lists):
        for r, (d, _) in enumerate(lst, start=1):
            s[d] += w / (k + r)
    return s


def order(scores: dict[int, float]) -> list[int]:
    return [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]


async def evaluate(runner: Runner, variant: str, rank_fn) -> dict:
    """rank_fn(runner, variant, q) -> ranked doc ids (async)."""
    per_q = []
    for q in QUESTIONS:
        ids = await rank_fn(runner, variant, q)
        srcs = runner.srcs(variant, q.conv, ids)
        per_q.append((q.category, {k: recall_at(srcs, q.evidence, k) for k in KS}))
    return summarize(per_q)


# ----------------------------------------------------------------------------- ranking functions
def R_dense(qt="raw"):
    async def f(r, v, q):
        return [d for d, _ in await r.dense(v, q, qt)]
    return f


def R_fts(tsq="or", rank="rank_cd", qt="raw"):
    async def f(r, v, q):
        return [d for d, _ in await r.fts(v, q, tsq, rank, qt)]
    return f


def R_rrf(tsq="or", rank="rank_cd", k=60, w_fts=1.0, w_dense=1.0, qt_d="raw", qt_f="raw"):
    async def f(r, v, q):
        return order(rrf([await r.fts(v, q, tsq, rank, qt_f), await r.dense(v, q, qt_d)], k, [w_fts, w_dense]))
    return f


# ----------------------------------------------------------------------------- stages
async def stage_a(runner: Runner, out: list[str]):
    out.append("\n### Stage A: index variants (dense = pgvector cosine; fts = OR-of-lexemes + ts_rank_cd; "
               "bm25 = BM25 computed in SQL from tsvector + df table; rrf = RRF k=60 of fts(bm25) + dense)\n")
    out.append(TABLE_HEAD)
    for v in VARIANTS:
        await runner.prepare(v)
        for name, fn in [("dense", R_dense()), ("fts or/rank_cd", R_fts()), ("bm25-sql", R_fts("or", "bm25")),
                         ("rrf(bm25,dense)", R_rrf("or", "bm25")), ("rrf(fts rank_cd,dense)", R_rrf())]:
            s = await evaluate(runner, v, fn)
            out.append(fmt_row(f"{v} / {name}", s))
            print(out[-1], flush=True)


async def stage_fts(runner: Runner, out: list[str], v="turn_spk_date_cap"):
    out.append(f"\n### Stage F: full-text query construction and rank function (index {v})\n")
    out.append(TABLE_HEAD)
    await runner.prepare(v)
    for tsq in ["plain", "web", "or", "or_nn"]:
        for rank in ["rank", "rank_n1", "rank_cd", "rank_cd_n1", "bm25"]:
            if tsq in ("plain", "web") and rank == "bm25":
                continue
            s = await evaluate(runner, v, R_fts(tsq, rank))
            out.append(fmt_row(f"fts {tsq} / {rank}", s))
            print(out[-1], flush=True)
    for qt in ["strip_wh", "keywords"]:
        s = await evaluate(runner, v, R_dense(qt))
        out.append(fmt_row(f"dense query={qt}", s))
        print(out[-1], flush=True)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default="all")
    a = ap.parse_args()
    conn = await pg_connect()
    runner = Runner(conn)
    out: list[str] = [f"questions: {len(QUESTIONS)}"]
    if a.stage in ("A", "all"):
        await stage_a(runner, out)
    if a.stage in ("F", "all"):
        await stage_fts(runner, out)
    (CACHE_DIR / f"results_{a.stage}.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    asyncio.run(main())
