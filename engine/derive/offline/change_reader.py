"""A learned reader of changes: whether a newer statement of the user's gives a new value of what an older statement
of theirs says (issue #29 item 1: "a change is recognised from what the new statement means and the item it
contradicts, not from a list of verbs"; "same attribute with a new value -> supersede; compatible -> keep both").

Why: the learned statement reader (``statement_reader``) keeps statements no rule reads in the user's own words, and
such an item names no slot, so nothing superseded it when the user later said otherwise ("I'm like 800 on
chess.com", then "hit 1500 rapid last night"): the old value stayed current. The two rarely share a word or a
frame. Session 22 tried a bar on the multilingual USE cosine of the two (>= 0.15) and did not adopt it: a third of
unrelated statement pairs reach it. A linear model over the pair of USE vectors learns what makes two statements
one attribute with two values, from the dev sets' update cases (changes), keep cases (same topic, both current) and
statements of other cases (unrelated).

Model: ``features(a, b)`` = ``a * b`` and ``|a - b|`` (512 floats each, symmetric in the two) and the cosine ->
logistic regression. Weights: ``engine/data/change_reader.json``, written by
``bench/derive_research/train_pair_reader.py`` from the dev sets only, pinned by sha256 (``WEIGHTS_SHA256``): a file
that does not match is not read (no reading, logged once). Without the ``embed-multilingual`` extra there is no
reading either. Deterministic for given weights; cached per pair.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import structlog

from memengine.engine.derive.offline import pinned, use_vectors

log = structlog.get_logger(__name__)

WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "change_reader.json"
WEIGHTS_SHA256 = "78fb42277c0fb28db127ce5331919a229788516c7f4444a0c7c243a8cb33bc09"
#: the probability from which a pair is read as a change (training script's leave-one-set-out table)
THRESHOLD = 0.8

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def features(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """The pair's features: ``a * b``, ``|a - b|`` (elementwise; ``len(a)`` each) and ``cos(a, b)``; ``a``, ``b``:
    USE vectors of unit length. Symmetric: the order of the two statements does not matter."""
    prod = [x * y for x, y in zip(a, b, strict=True)]
    return [*prod, *(abs(x - y) for x, y in zip(a, b, strict=True)), sum(prod)]


def _weights() -> dict[str, Any] | None:
    with _LOCK:
        if "w" not in _STATE:
            _STATE["w"] = pinned.load(WEIGHTS, WEIGHTS_SHA256, "change_reader")
        return cast("dict[str, Any] | None", _STATE["w"])


def available() -> bool:
    """Whether the reader can read here: its pinned weights and the USE model are both present."""
    return _weights() is not None and use_vectors.available()


@lru_cache(maxsize=8192)
def probability(old: str, new: str) -> float | None:
    """The probability that ``new`` (a newer statement of the user's, as they said it) gives a new value of what
    ``old`` (an older one) says; ``None`` without weights or model."""
    w = _weights()
    if w is None:
        return None
    a, b = use_vectors.vector(old), use_vectors.vector(new)
    if a is None or b is None:
        return None
    z = sum(x * y for x, y in zip(w["w"], features(a, b), strict=True)) + w["b"]
    return 1 / (1 + math.exp(-z))


def changes(old: str, new: str) -> bool:
    """Whether ``new`` reads as a change of ``old`` (``probability`` >= ``THRESHOLD``)."""
    p = probability(old, new)
    return p is not None and p >= THRESHOLD
