"""Two embedding models as one: each text's vector is the concatenation of the parts' normalised vectors, each
scaled by the square root of its weight (issue #28 item 1: English quality from MiniLM, Chinese and cross-lingual
matches from the multilingual USE).

Why one concatenated vector and not two dense lists in the RRF: the cosine of two such vectors is exactly the
weighted sum of the parts' cosines (sum w_i cos_i; the weights sum to 1, so the vector stays unit length), i.e. a
score fusion of the two dense rankings computed by pgvector's one ``<=>``, with one vector table per store. The
store then still holds one model (``embedding_models``: the composite's name, dimension and a checksum over both
parts' weights and the fusion weights), so ``memengine rebuild vectors --model minilm+use`` switches to it and back
like any model, ``verify`` counts one table, and no query compares vectors of two models: the query vector is built
by the same composite (each part embeds its own half). Measured against the parts alone and against counting the
dense list twice in the RRF (the weight two dense lists would have there) in the session 13 report on issue #28.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memengine.engine.embedding.registry import checksum_of
from memengine.projections.segment import CJK_RUN, has_cjk, mostly_cjk

if TYPE_CHECKING:  # models builds the composite (lazily), so the composite may name its protocol for types only
    from memengine.engine.embedding.models import Embedder

#: The weight of the first part (MiniLM) in the composite's cosine; the second (USE) gets 1 - this. Chosen on the
#: Chinese recall set's dev split and LoCoMo dev (session 13): 0.5 keeps LoCoMo dev R@10 at 0.835 (MiniLM alone 0.829,
#: 0.3 gave 0.824); 0.3-0.7 rank the Chinese dev set alike (Chinese text has no MiniLM half: ``mostly_latin``). Part of
#: the checksum, so changing it is a rebuild.
MINILM_USE_WEIGHT = 0.5


def mostly_latin(text: str) -> str:
    """The view of ``text`` an English model is given: ``text`` with its CJK runs taken out when its Latin letters
    are at least three times its CJK characters (a Chinese word is ~1.7 characters, an English one ~5 letters: a
    character carries about three letters' worth), else ``""`` (no half from that model). Why: all-MiniLM-L6-v2 reads
    Chinese as noise that is alike for every Chinese text (cosine 0.5-0.75 between unrelated Chinese turns, -0.1
    with the English statement a Chinese question asks about; session 13), which outweighed USE's cross-lingual
    match in the sum."""
    if mostly_cjk(text):  # the rule lives in segment: recall's SQL applies the same one (issue #28, session 18)
        return ""
    return CJK_RUN.sub(" ", text) if has_cjk(text) else text


class CompositeEmbedder:
    """``parts`` embedders fused into one vector space (module docstring). ``name``: the parts' names joined by
    ``+``; ``dim``: the sum of the parts' dimensions; ``weights``: one
    per part, positive, summing to 1; ``views``: per part, ``None`` (the text as is) or a named function giving the
    text that part reads, ``""`` for none (its half is then zero and the vector is normalised again, so the cosine
    is the other parts' alone). Every part must return unit vectors (MiniLM and USE do). Raises ``ValueError`` for
    weights that do not fit."""

    def __init__(self, parts: list[Embedder], weights: list[float],
                 views: list[Callable[[str], str] | None] | None = None) -> None:
        if len(parts) != len(weights) or len(parts) < 2 or any(w <= 0 for w in weights) \
                or abs(sum(weights) - 1.0) > 1e-9:
            raise ValueError("a composite embedder needs >= 2 parts with positive weights summing to 1")
        self.parts = parts
        self.weights = weights
        self.views = views or [None] * len(parts)
        if len(self.views) != len(parts):
            raise ValueError("a composite embedder needs one view per part")
        self._scale = [math.sqrt(w) for w in weights]
        # the weights and views are not in the name (``memengine rebuild vectors --model`` names a composite by its
        # parts) but in the checksum: other weights are a rebuild in place, never a mix
        self.name = "+".join(p.name for p in parts)
        self.dim = sum(p.dim for p in parts)
        #: each part's dimensions in the joined vector, as (first, count), 1-based (pgvector's ``subvector``)
        self.spans = [(1 + sum(q.dim for q in parts[:i]), p.dim) for i, p in enumerate(parts)]
        #: the index of the first part whose view may leave it empty (MiniLM: ``mostly_latin``), or None; recall
        #: ranks the other parts on their own for the texts it leaves out (``engine.read.recall.dense_lists``)
        self.partial: int | None = next((i for i, v in enumerate(self.views) if v is not None), None)
        # the parts are CPU bound and run one batch at a time each: one composite call at a time
        self.max_concurrency = 1

    def checksum(self) -> str:
        """``sha256:`` over the parts' names, checksums, weights and views (registry identity: other weights,
        other views or other part weights are other vectors)."""
        h = hashlib.sha256()
        for p, w, v in zip(self.parts, self.weights, self.views, strict=True):
            h.update(f"{p.name}:{checksum_of(p)}:{w!r}:{getattr(v, '__name__', None)};".encode())
        return "sha256:" + h.hexdigest()

    async def _part(self, i: int, texts: list[str], query: bool) -> list[list[float] | None]:
        view = self.views[i]
        seen = [view(t) if view is not None else t for t in texts]
        todo = [j for j, t in enumerate(seen) if t]
        p = self.parts[i]
        one: Any = getattr(p, "embed_query", None) if query else None
        if one is not None and len(todo) == 1:
            got = [await one(seen[todo[0]])]
        else:
            got = await p.embed([seen[j] for j in todo]) if todo else []
        out: list[list[float] | None] = [None] * len(texts)
        for j, v in zip(todo, got, strict=True):
            out[j] = v
        return out

    def _join(self, halves: list[list[list[float] | None]]) -> list[list[float]]:
        rows = []
        for row in zip(*halves, strict=True):
            v = [x * s if h is not None else 0.0 for h, p, s in zip(row, self.parts, self._scale, strict=True)
                 for x in (h if h is not None else [0.0] * p.dim)]
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            rows.append([x / n for x in v] if abs(n - 1.0) > 1e-9 else v)
        return rows

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # sequential: both parts are CPU bound on the same cores
        return self._join([await self._part(i, texts, False) for i in range(len(self.parts))])

    async def embed_query(self, text: str) -> list[float]:
        """One query's vector, each part through its query path (MiniLM's ONNX session) when it has one."""
        return self._join([await self._part(i, [text], True) for i in range(len(self.parts))])[0]
