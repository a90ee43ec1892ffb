"""A learned reader of self-statements: whether a sentence states something lasting about its speaker, and of
what type (issue #29 item 1: "an offline deriver that generalises ... instead of a rule per phrasing"; "when the
deriver is unsure, it keeps the user's own words with their date").

Why: the rule tables and the parser's clause readings are written for the phrasings of ``tests/data``; on sets
written by people who never saw them they keep a quarter (English) to a half (Chinese) of what users say about
themselves (docs/contributors/derive-research.md). A linear model over a multilingual sentence embedding learns
"a person telling something lasting about themself" from every dev set at once, in both languages, and reads
phrasings no rule names; measured leave-one-set-out it finds most of the statements the rules miss (the table in
derive-research.md, ``bench/derive_research/train_statement_reader.py``). The character n-grams beside the vector
(session 25) keep a sentence's own words ("研二", "dx'd", "N1"), which the vector blurs: leave one set out over twelve
sets at 0.7, precision / recall en 0.871 / 0.770 -> 0.898 / 0.768, zh 0.892 / 0.747 -> 0.909 / 0.778, the type
right 0.852 -> 0.857 (en) and 0.838 -> 0.863 (zh).

Model: the sentence's hashed character n-grams (``char_grams``, 32,768 buckets) and its USE vector (``use_vectors``,
512 floats) -> logistic regression (statement or chatter) and a multinomial logistic regression over ``TYPES``.
Weights: ``engine/data/statement_reader.json``, written by the training script from the statement sets we have read
(never a test split or a set held back for a blind figure), pinned by sha256 (``WEIGHTS_SHA256``): a file that does
not match is not read (no reading, logged once), so a derivation never depends on weights nobody reviewed. Without
the ``embed-multilingual`` extra there is no reading either, and the deriver is the rules alone, as before.

The reader only decides whether to keep a sentence as said; it never writes a paraphrase, never names a slot, and
what it keeps passes the quarantine gate like every candidate. Deterministic for given weights; cached per text.
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import structlog

from memengine.engine.derive.offline import char_grams, pinned, use_vectors

log = structlog.get_logger(__name__)

#: the types the reader chooses among (seed 004 §4; a standing rule or a task is the rules' and directives' to read)
TYPES = ("PROFILE", "FACT", "PREFERENCE", "SKILL")
WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "statement_reader.json"
WEIGHTS_SHA256 = "9874eaef386d48756d2cde25c6c0e8f944c9ff8be88019dc4b340278dfe1e2c2"
#: the probability from which a sentence is kept, chosen on the leave-one-set-out table of the training script over
#: the first six dev sets: the lowest threshold with precision >= 0.88 in both languages (en 0.882 / recall 0.805, zh
#: 0.924 / 0.730; 0.6 gave 0.866 / 0.911). Real conversations hold more chatter than the cases, so precision there is
#: lower. With the two training sets of session 22 added (eight sets) 0.7 gives en 0.874 / 0.790, zh 0.910 / 0.724;
#: with n-grams and twelve sets (session 25) en 0.898 / 0.768, zh 0.909 / 0.778 (0.6: 0.850 / 0.829, 0.876 / 0.856).
THRESHOLD = 0.7
#: the probability from which a sentence under ``THRESHOLD`` is kept unsure: only as the newer words of an older item
#: of the same attribute (``generalise.learned``, ``same_slot``), never on its own. A change is often told as an event
#: in passing, which reads less like a lasting self-statement ("They gave me the senior title at my review today"
#: 0.48, "Divorce was finalized yesterday" 0.45)
BESIDE = 0.4
#: longer sentences are not read: what people say about themselves fits in a few dozen words, and a long sentence
#: is pasted or quoted content more often than not
MAX_CHARS = 240
#: a turn longer than this is not read sentence by sentence: pasted or forwarded content (an e-mail, a post, a
#: document) is someone else's first person as often as the user's
TURN_MAX_CHARS = 1_200

#: the listener in the sentence: what is said to or about the assistant ("you're treating messages signed K as
#: mine", "like we agreed, you ...") is an instruction or a claim about it, never a statement about the speaker, and
#: the model was not trained to tell those apart (the gate reads a non-RULE text as an instruction only when it has
#: an instruction's words)
_LISTENER = re.compile(r"\b(?:you|your|yours|yourself|u|ur|ya|assistant|chatgpt|gpt|bot|agent)\b|"
                       r"(?<![A-Za-z])(?:AI|ai)(?![A-Za-z])|[你您妳]|助理|助手|机器人|小助", re.I)
#: a Chinese negation of what the sentence states ("没结婚", "不是程序员", "我又不抽烟"): nothing lasting to keep,
#: except a dislike or a thing avoided (``PREFERENCE``: "不吃辣")
NEGATED_ZH = re.compile(r"不是|没有|并没|从没|从来没|还没|没[在去做买养结]|并非|不再|又不|并不|从不|"
                         r"不(?:抽|喝|会|在|养|开|住)")

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _weights() -> dict[str, Any] | None:
    with _LOCK:
        if "w" not in _STATE:
            _STATE["w"] = pinned.load(WEIGHTS, WEIGHTS_SHA256, "statement_reader")
        return cast("dict[str, Any] | None", _STATE["w"])


def available() -> bool:
    """Whether the reader can read here: its pinned weights and the USE model are both present."""
    return _weights() is not None and use_vectors.available()


@lru_cache(maxsize=4096)
def reading(sentence: str) -> tuple[float, str] | None:
    """``(probability that sentence states something lasting about its speaker, its most likely type of TYPES)``;
    ``None`` without weights or model, or for a sentence over ``MAX_CHARS``."""
    if len(sentence) > MAX_CHARS or not sentence.strip():
        return None
    w = _weights()
    v = use_vectors.vector(sentence) if w is not None else None
    if w is None or v is None:
        return None
    g = char_grams.grams(sentence)
    buckets = int(w["buckets"])

    def score(ws: list[float], bias: float) -> float:
        return bias + sum(ws[b] * x for b, x in g.items()) + sum(a * x for a, x in zip(ws[buckets:], v, strict=True))

    p = 1 / (1 + math.exp(-score(w["w"], w["b"])))
    scores = [score(row, c) for row, c in zip(w["type_w"], w["type_b"], strict=True)]
    return p, w["types"][max(range(len(scores)), key=scores.__getitem__)]


def lasting(sentence: str, *, negated: bool = False, threshold: float = THRESHOLD) -> str | None:
    """The type of a lasting self-statement ``sentence`` is read as (probability >= ``threshold``), else ``None``.

    Never for a sentence that names the listener (``_LISTENER``), nor for a negated one (``negated``: the caller's
    parse of an English sentence; Chinese negations are read here) unless it reads as a ``PREFERENCE`` (a dislike):
    the rules keep no negated clause either (``statements_en.statements``), and "I'm not married" must not become
    a memory holding "married"."""
    if _LISTENER.search(sentence):
        return None
    r = reading(sentence)
    if r is None or r[0] < threshold:
        return None
    if r[1] != "PREFERENCE" and (negated or NEGATED_ZH.search(sentence)):
        return None
    return r[1]
