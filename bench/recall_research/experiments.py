"""Recall research on LoCoMo dev (26.json, 30.json): index variants x ranking variants, recall@5/10/20.

Run (the project's venv; ~10 min the first time on 2 cores, embeddings cached in /tmp/rcache):
    cd bench/recall_research && HF_HUB_OFFLINE=1 ../../.venv/bin/python experiments.py --stage X
X = A (index variants), F (tsquery / rank function / dense query rewriting), B (multi-list fusion),
C (RRF k x speaker boost x propagation), D (session diversity), E (ablations of the final design),
G (3-list final and causal variant), H (BM25 k1/b), or all (= A, F, B).
Writes markdown tables to stdout and to /tmp/rcache/results_<stage>.md (docs/contributors/recall-research.md sums
them up; the full tables are in git: `git show 7a9aeb6:bench/recall_research/FINDINGS.md`).
Ranked lists all come from PostgreSQL (pgvector cosine, full-text); fusion / re-ranking arithmetic in Python.
"""
from __future__ import annotations

import argparse
import asyncio
import re
from collections import defaultdict

import numpy as np
import pgsearch as P
from common import CACHE_DIR, KS, TABLE_HEAD, embed, fmt_row, load, pg_connect, recall_at, summarize
from indexes import VARIANTS, Doc

CONVS, QUESTIONS = load()

# ----------------------------------------------------------------------------- query rewriting (no model)
QWORDS = (r"^(what|when|where|who|whom|whose|which|why|how( many| much| long| often)?|would|could|should|did|does|do"
          r"|is|are|was|were|has|have|had|can|will)\b")
STOP = set("""a an the of to in on at for with by from and or but is are was were be been being do does did has have
had what when where who whom whose which why how would could should will can may might that this these those it its
as about into than then there their them they he she her his him i you your we our us some any kind type
types""".split())


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
    for w, lst in zip(weights, lists, strict=False):
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


async def stage_fts(runner: Runner, out: list[str], v="turn_spk_date_cap_imgq"):
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


# ----------------------------------------------------------------------------- stage B: multi-list fusion
TURN = "turn_spk_date_cap_imgq"     # one doc per turn: "[8 May 2023] Caroline: text [shares ...] [image: ...]"
TURN_D = "turn_spk_date"            # dense text without caption
WIN1 = "ctx_pm1_emb_fts"            # +-1 window text, source = centre turn
CTX2 = "ctx_pm2_emb"                # +-2 window embedding, source = centre turn
B_VARIANTS = [TURN, TURN_D, WIN1, CTX2, "turn_spk", "ctx_pm1_emb", "ctx_prev1_emb", "ctx_pm2_emb_fts",
              "ctx_prev2_emb", "ctx_prev1_emb_fts"]


def named_speakers(q) -> list[str]:
    return [n for n in CONVS[q.conv].speakers if re.search(rf"\b{re.escape(n)}\b", q.question, re.I)]


async def get_list(r: Runner, q, spec: str):
    """spec: 'bm25:<variant>[:nn]' | 'fts:<variant>:<rank>' | 'dense:<variant>:<qtrans>'"""
    parts = spec.split(":")
    if parts[0] == "bm25" and "@" in spec:     # bm25:<variant>@k1,b
        v, prm = spec[5:].split("@")
        return await r.fts(v, q, "or", "bm25@" + prm)
    if parts[0] == "bm25":
        return await r.fts(parts[1], q, "or_nn" if len(parts) > 2 and parts[2] == "nn" else "or", "bm25")
    if parts[0] == "fts":
        return await r.fts(parts[1], q, "or", parts[2])
    if parts[0] == "dense":
        return await r.dense(parts[1], q, parts[2] if len(parts) > 2 else "raw")
    raise ValueError(spec)


def R_combo(specs, weights=None, k=60, spk=None, prop=0.0, prop_mode="max", prf=None, expand=0, div=None):
    """Weighted RRF of several ranked lists whose doc_id is the turn position (all single-turn sources).
    spk: multiplier for turns NOT spoken by the one speaker named in the question (None = off, 0 = filter).
    prop: neighbour score propagation s'(t) = s(t) + prop * agg(s(t-1), s(t+1)) within a session.
    prf: (alpha, m, variant) dense pseudo-relevance feedback: q' = q + alpha*mean(emb of top-m fused turns),
         searched again in `variant` and added as one more RRF list (weight 1).
    expand: after the ranking, each of the top `expand` hits is followed by its session neighbours
            (t-1, t+1) if not already ranked (spends slots)."""
    async def f(r: Runner, v, q):
        lists = [await get_list(r, q, s) for s in specs]
        w = weights or [1.0] * len(lists)
        sc = rrf(lists, k, w)
        if prf:
            alpha, m, pv = prf
            top = order(sc)[:m]
            E = r.embs[pv]
            qv = r.qvec(QTRANS["keywords"](q.question))
            nv = qv + alpha * np.mean([E[(q.conv, d)] for d in top], axis=0)
            nv /= np.linalg.norm(nv)
            lst = await r.dense_vec(pv, q, nv, ("prf", alpha, m, tuple(specs)))
            sc = rrf(lists + [lst], k, list(w) + [1.0])
        D = r.docs[TURN]
        if prop:
            base = dict(sc)
            cand = set(base)
            for d in list(base):
                for nb in (d - 1, d + 1):
                    if (q.conv, nb) in D and D[(q.conv, nb)].session == D[(q.conv, d)].session:
                        cand.add(nb)
            new = {}
            for d in cand:
                nbs = [base.get(nb, 0.0) for nb in (d - 1, d + 1)
                       if (q.conv, nb) in D and D[(q.conv, nb)].session == D[(q.conv, d)].session]
                agg = (max(nbs) if prop_mode == "max" else sum(nbs)) if nbs else 0.0
                new[d] = base.get(d, 0.0) + prop * agg
            sc = new
        if spk is not None:
            names = named_speakers(q)
            if len(names) == 1:
                sc = {d: (s if D[(q.conv, d)].speaker == names[0] else s * spk) for d, s in sc.items()}
                if spk == 0:
                    sc = {d: s for d, s in sc.items() if s > 0}
        ranked = order(sc)
        if div is not None:   # session diversity: score * div^(turns of the same session already chosen)
            left, ranked, cnt = dict(sc), [], defaultdict(int)
            while left and len(ranked) < 40:
                d = max(left, key=lambda x: (left[x] * div ** cnt[D[(q.conv, x)].session], -x))
                ranked.append(d)
                cnt[D[(q.conv, d)].session] += 1
                del left[d]
            ranked += order(left)
        if expand:
            out, seen = [], set()
            for i, d in enumerate(ranked):
                for x in ([d] + ([d - 1, d + 1] if i < expand else [])):
                    if x not in seen and (q.conv, x) in D and D[(q.conv, x)].session == D[(q.conv, d)].session:
                        seen.add(x)
                        out.append(x)
            ranked = out
        return ranked
    return f


async def stage_b(runner: Runner, out: list[str], grid: list[tuple[str, object]]):
    out.append("\n### Stage B: multi-list fusion and re-ranking (all lists attribute a document to ONE turn)\n")
    out.append(TABLE_HEAD)
    for v in B_VARIANTS:
        await runner.prepare(v)
    for name, fn in grid:
        s = await evaluate(runner, TURN, fn)
        out.append(fmt_row(name, s))
        print(out[-1], flush=True)


B_T, B_W = f"bm25:{TURN}", f"bm25:{WIN1}"
D_T, D_C = f"dense:{TURN_D}:keywords", f"dense:{CTX2}:keywords"
GRID_B = [
    ("bm25 turn", R_combo([B_T])),
    ("bm25 win+-1", R_combo([B_W])),
    ("dense turn (kw query)", R_combo([D_T])),
    ("dense ctx+-2 (kw query)", R_combo([D_C])),
    ("rrf bm25 turn + dense turn", R_combo([B_T, D_T])),
    ("rrf bm25 turn + bm25 win", R_combo([B_T, B_W])),
    ("rrf bm25 turn + bm25 win + dense turn", R_combo([B_T, B_W, D_T])),
    ("rrf bm25 turn + bm25 win + dense ctx2", R_combo([B_T, B_W, D_C])),
    ("rrf 4 lists", R_combo([B_T, B_W, D_T, D_C])),
    ("rrf 4 lists k=20", R_combo([B_T, B_W, D_T, D_C], k=20)),
    ("rrf 4 lists k=100", R_combo([B_T, B_W, D_T, D_C], k=100)),
    ("rrf 4 lists w=2,2,1,1", R_combo([B_T, B_W, D_T, D_C], [2, 2, 1, 1])),
    ("rrf 4 lists spk x0.5", R_combo([B_T, B_W, D_T, D_C], spk=0.5)),
    ("rrf 4 lists spk filter", R_combo([B_T, B_W, D_T, D_C], spk=0.0)),
    ("rrf 4 lists prop .5 max", R_combo([B_T, B_W, D_T, D_C], prop=0.5)),
    ("rrf 4 lists prop .3 sum", R_combo([B_T, B_W, D_T, D_C], prop=0.3, prop_mode="sum")),
    ("rrf 4 lists prf(.5,3)", R_combo([B_T, B_W, D_T, D_C], prf=(0.5, 3, TURN_D))),
    ("rrf 4 lists expand top3", R_combo([B_T, B_W, D_T, D_C], expand=3)),
    ("rrf 4 lists spk x0.5 prop .5", R_combo([B_T, B_W, D_T, D_C], spk=0.5, prop=0.5)),
]


L4 = [B_T, B_W, D_T, D_C]
GRID_C = []
for k in (5, 10, 20, 30):
    for spk in (None, 0.5):
        for prop in (0.0, 0.25, 0.5):
            GRID_C.append((f"4 lists k={k} spk={spk} prop={prop}", R_combo(L4, k=k, spk=spk, prop=prop)))
GRID_C += [
    ("k=20 spk prop.25 +dense prev1", R_combo(L4 + ["dense:ctx_prev1_emb:keywords"], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 +dense pm1", R_combo(L4 + ["dense:ctx_pm1_emb:keywords"], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 +bm25 win2", R_combo(L4 + ["bm25:ctx_pm2_emb_fts"], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 dense raw q",
     R_combo([B_T, B_W, f"dense:{TURN_D}:raw", f"dense:{CTX2}:raw"], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 w 1,1,1.5,1.5", R_combo(L4, [1, 1, 1.5, 1.5], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 w 1.5,1.5,1,1", R_combo(L4, [1.5, 1.5, 1, 1], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 bm25 names dropped", R_combo([B_T + ":nn", B_W + ":nn", D_T, D_C], k=20, spk=0.5, prop=0.25)),
    ("k=20 spk prop.25 prf(.5,3)", R_combo(L4, k=20, spk=0.5, prop=0.25, prf=(0.5, 3, TURN_D))),
]

GRID_D = [
    (f"k={k} spk=.5 prop={p} div={dv}", R_combo(L4, k=k, spk=0.5, prop=p, div=dv))
    for k in (5, 10) for p in (0.5,) for dv in (None, 0.9, 0.7, 0.5)
]

WIN_STRATS = {"final (k=10, spk .5, prop .5)": L4,
              "causal windows (bm25 prev1 window, dense prev2 ctx)":
                  [B_T, "bm25:ctx_prev1_emb_fts", D_T, "dense:ctx_prev2_emb:keywords"],
              "ts_rank instead of BM25 (no df table)": [f"fts:{TURN}:rank", f"fts:{WIN1}:rank", D_T, D_C],
              "ts_rank_cd instead of BM25": [f"fts:{TURN}:rank_cd", f"fts:{WIN1}:rank_cd", D_T, D_C],
              "without dense (2 bm25 lists)": [B_T, B_W],
              "without bm25 win list": [B_T, D_T, D_C],
              "without dense ctx list": [B_T, B_W, D_T],
              "without dense turn list": [B_T, B_W, D_C],
              }
GRID_E = [(n, R_combo(lists, k=10, spk=0.5, prop=0.5)) for n, lists in WIN_STRATS.items()]
GRID_E += [("final without speaker boost", R_combo(L4, k=10, prop=0.5)),
           ("final without propagation", R_combo(L4, k=10, spk=0.5)),
           ("final, RRF k=60", R_combo(L4, k=60, spk=0.5, prop=0.5)),
           ("final + expand top3 neighbours", R_combo(L4, k=10, spk=0.5, prop=0.5, expand=3))]

L3 = [B_T, B_W, D_C]
L3C = [B_T, "bm25:ctx_prev1_emb_fts", "dense:ctx_prev2_emb:keywords"]
GRID_G = [(f"3 lists (bm25 turn, bm25 win+-1, dense ctx+-2) k={k} spk=.5 prop={p}", R_combo(L3, k=k, spk=0.5, prop=p))
          for k in (5, 10, 20) for p in (0.25, 0.5)]
GRID_G += [(f"3 lists causal (bm25 turn, bm25 prev1 win, dense prev2 ctx) k={k} spk=.5 prop=.5",
            R_combo(L3C, k=k, spk=0.5, prop=0.5)) for k in (5, 10, 20)]

GRID_H = []
for k1, b in [(1.0, 0.0), (1.2, 0.0), (1.2, 0.3), (1.2, 0.75), (2.0, 0.0), (0.5, 0.0)]:
    GRID_H.append((f"bm25 turn only k1={k1} b={b}", R_combo([f"bm25:{TURN}@{k1},{b}"])))
    GRID_H.append((f"bm25 win only k1={k1} b={b}", R_combo([f"bm25:{WIN1}@{k1},{b}"])))
    GRID_H.append((f"final 3 lists, k1={k1} b={b}", R_combo([f"bm25:{TURN}@{k1},{b}", f"bm25:{WIN1}@{k1},{b}", D_C],
                                                            k=10, spk=0.5, prop=0.5)))


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
    if a.stage in ("B", "all"):
        await stage_b(runner, out, GRID_B)
    if a.stage == "D":
        await stage_b(runner, out, GRID_D)
    if a.stage == "E":
        await stage_b(runner, out, GRID_E)
    if a.stage == "G":
        await stage_b(runner, out, GRID_G)
    if a.stage == "H":
        await stage_b(runner, out, GRID_H)
    if a.stage == "C":
        await stage_b(runner, out, GRID_C)
    (CACHE_DIR / f"results_{a.stage}.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    asyncio.run(main())
