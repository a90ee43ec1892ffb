"""Issue #28 (session 22): MiniLM's dense list reads a Chinese row as its English dictionary reading (document side).

Imports memengine. One variant per run (``--variant``), in a fresh store (``MEMENGINE_HOME``: the embedding cache is
keyed by the model's name, so two readings must never share a store). The variant wraps ``MiniLMEmbedder.embed`` /
``embed_query``: every text the model reads (a row's +-2 window, a memory item, a query) goes through ``reading``
first, then recall runs as ``memengine eval recall-set`` does on each ``--set ROOT:SPLIT``; prints one JSON line:
per set R@3 / R@10 cross-lingual and same language.

Variant knobs (``key=value`` joined by ``,``): ``mode`` off | inline (each CJK run replaced by the glosses of its
words, in place) | whole (the text's Latin words, then the glosses: ``crosslingual.english_reading``'s shape);
``g`` glosses per word (1-3); ``keep`` 1: the CJK run stays before its glosses; ``scope`` mostly (only a text
that is mostly CJK, ``segment.mostly_cjk``) | all (every text with CJK); ``pairs`` 1 / 0: ``CJK_PAIRS_OUT`` (a
Chinese question still reads its translation either way).

    MEMENGINE_HOME=/tmp/h-v1 PYTHONPATH=<dir holding memengine> .venv/bin/python bench/recall_research/doc_dense.py \\
        --set tests/data/zh_recall:dev --variant mode=inline,g=2,keep=0,scope=mostly,pairs=1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path
from typing import Any

from memengine.engine.bootstrap import lifespan
from memengine.engine.cli.options import settings_from_options
from memengine.engine.embedding import models as M
from memengine.engine.ops.eval_recall_set import run_recall_set
from memengine.engine.read import crosslingual as X
from memengine.engine.read import recall_fragments as RF
from memengine.engine.read import recall_query as RQ
from memengine.projections.segment import CJK_RUN, mostly_cjk

CFG: dict[str, Any] = {"mode": "off", "g": 3, "keep": 0, "scope": "mostly", "pairs": 1}
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+-]*")


def _glosses(b: X.Bridge, run: str, seen: set[str]) -> list[str]:
    """The glosses of one CJK run's words (``CFG['g']`` a word), skipping those already in ``seen``."""
    old = X.GLOSSES_PER_WORD
    X.GLOSSES_PER_WORD = int(CFG["g"])
    try:
        out = [g for g in b.english(run) if g not in seen]
    finally:
        X.GLOSSES_PER_WORD = old
    seen.update(out)
    return out


def reading(text: str) -> str:
    """``text`` as the variant's English-only model reads it."""
    b = X.bridge()
    if CFG["mode"] == "off" or b is None or not CJK_RUN.search(text):
        return text
    if CFG["scope"] == "mostly" and not mostly_cjk(text):
        return text
    seen: set[str] = set()
    if CFG["mode"] == "whole":
        gl = _glosses(b, text, seen)
        return " ".join(([text] if CFG["keep"] else _LATIN.findall(text)) + gl) or text

    def one(m: re.Match[str]) -> str:
        gl = " ".join(_glosses(b, m.group(0), seen))
        return f" {m.group(0)} {gl} " if CFG["keep"] else f" {gl} "

    return " ".join(CJK_RUN.sub(one, text).split()) or text


def patch() -> None:
    orig_embed = M.MiniLMEmbedder.embed
    orig_query = M.MiniLMEmbedder.embed_query

    async def embed(self: Any, texts: list[str]) -> list[list[float]]:
        return await orig_embed(self, [reading(t) for t in texts])

    async def embed_query(self: Any, text: str) -> list[float]:
        return await orig_query(self, reading(text))

    M.MiniLMEmbedder.embed = embed  # type: ignore[method-assign]
    M.MiniLMEmbedder.embed_query = embed_query  # type: ignore[method-assign]
    RF.CJK_PAIRS_OUT = bool(CFG["pairs"])
    # a Chinese question reads its translation whatever CJK_PAIRS_OUT says (session 21's rule without the flag)
    RQ.dense_query = lambda emb, q: ((getattr(emb, "english_only", False) and mostly_cjk(q)  # type: ignore
                                      and X.english_reading(q)) or RQ.keywords(q))
    from memengine.engine.read import recall as R
    if hasattr(R, "dense_query"):
        R.dense_query = RQ.dense_query


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", required=True, help="ROOT:SPLIT")
    ap.add_argument("--variant", default="mode=off")
    ap.add_argument("--misses", help="write the missed questions (R@3 < 1) with their top hits to this JSON file")
    args = ap.parse_args()
    for kv in args.variant.split(","):
        k, v = kv.split("=")
        CFG[k] = v if k in ("mode", "scope") else int(v)
    X.prepare()
    patch()
    out: dict[str, Any] = {"variant": dict(CFG)}
    missed: list[dict[str, Any]] | None = [] if args.misses else None

    async def run() -> None:
        settings = settings_from_options()
        async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
            for spec in args.set:
                root, split = spec.rsplit(":", 1)
                res = (await run_recall_set(engine, Path(root), (split,), (3, 10), misses=missed))[split]
                out[f"{root}:{split}"] = {g: [res[g]["recall_at"].get("3"), res[g]["recall_at"].get("10"),
                                              res[g]["questions"]] for g in ("cross_lingual", "same_language")}

    asyncio.run(run())
    if args.misses and missed is not None:
        Path(args.misses).write_text(json.dumps(missed, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
