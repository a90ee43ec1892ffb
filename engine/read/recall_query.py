"""What recall's query embedding reads (``recall.Recaller``; design: docs/contributors/recall-research.md).

- ``keywords``: an English question without its stop and question words (dense list R@10 0.443 -> 0.507 on LoCoMo
  dev); a question with CJK text whole (issue #28: the Latin-word filter dropped every Chinese word of a mixed one).
- ``dense_query``: under an embedder that reads English only (``english_only``: all-MiniLM-L6-v2, the default), a
  mostly-CJK question is embedded as its dictionary translation (``crosslingual.english_reading``), the query
  translation the lexical lists already read (issue #28, session 21).

Split from ``recall`` (at its 600-line cap) by role: the statements are there, the text the model reads is here.
``recall`` re-exports both names.
"""

from __future__ import annotations

import re

from memengine.engine.read import crosslingual
from memengine.engine.read.recall_fragments import cjk_pairs_out
from memengine.projections.segment import has_cjk

STOP = frozenset("""a an the of to in on at for with by from and or but is are was were be been being do does did has
have had what when where who whom whose which why how would could should will can may might that this these those it
its as about into than then there their them they he she her his him i you your we our us some any kind type
types""".split())


def keywords(q: str) -> str:
    """The question without stop/question words: what the query embedding is computed from (dense 0.443 -> 0.507).
    A question with CJK text is embedded whole (issue #28): the Latin-word filter dropped every Chinese word of a
    mixed question ("FastAPI 部署在哪里" -> "FastAPI")."""
    if has_cjk(q):
        return q
    kept = [t for t in re.findall(r"[A-Za-z0-9'+-]+", q) if t.lower() not in STOP]
    return " ".join(kept) or q


def dense_query(embedder: object, q: str) -> str:
    """The text the query embedding reads for question ``q``: ``crosslingual.english_reading`` of ``q`` when
    ``embedder`` reads English only and ``q`` is mostly CJK (``recall_fragments.cjk_pairs_out``, the test that
    already keeps the mostly-CJK rows out of that model's list) and the bridge glosses any of its words, else
    ``keywords(q)``. Why: such a model's cosine with a Chinese question ranks the English and mixed rows it can
    read in an order that says nothing; the glosses are words it knows. Measured through the engine (MiniLM, R@3
    cross-lingual on the dev halves, ``memengine eval recall-set ROOT --split dev``): heldout_s15 0.609 -> 0.652
    (same language 0.765 -> 0.824), heldout_s19 0.563 -> 0.594, heldout_s20 0.464 -> 0.500, zh_recall 0.828
    unchanged; no question lost on any of them. Multilingual embedders read ``keywords(q)`` as before."""
    return (cjk_pairs_out(embedder, q) and crosslingual.english_reading(q)) or keywords(q)
