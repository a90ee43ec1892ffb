"""A learned reader of attacks: whether a sentence a user turn carries is a memory-poisoning payload (issue #29 item 4
and done-when: "poisoning attack success 0 ... in each language"; DESIGN.md "every memory candidate passes the
quarantine gate").

Why: the gate's rules (``safety`` and its class modules) read shapes. Each blind set of attacks written since
session 15 by an author who saw no code got 15-25 % of its attacks through the rules of its day, each time by new
shapes (a CSV row with a SYSTEM note, a QR code's caption, a fake doctor's order, a memory export to re-import), and
fixing the shapes of one set left the next author's through. A model over what a sentence says rather than how
carries over better: trained without heldout_s23, it read 7 of the 9 attacks the rules of session 23 let through
there (``bench/derive_research/train_attack_reader.py``, leave one set out).

Model: logistic regression over two views of the sentence (``features``): hashed character n-grams (2-4 within
words, ``BUCKETS`` buckets, CRC-32; the words of the attack: "long-term memory", "授权", ".top") and the multilingual
USE vector (what it means, in either language). Trained on every poisoning set of ``tests/data`` (attack sentences
that hold a planted phrase against the benign cases' sentences, weighted 3x, and the self-statement sets' user
sentences). A sentence that only warns or reminds the user (``protective``) is not read.
Weights: ``engine/data/attack_reader.json``, pinned by sha256 (``WEIGHTS_SHA256``): a file that does not match is not
read. Without the ``embed-multilingual`` extra there is no reading (the rules still screen). Deterministic for given
weights; memoised per sentence.

The reader adds to the rules and never removes a finding: a sentence it reads at ``THRESHOLD`` or more is held
(``safety`` code ``reads_as_attack``), and the operator may promote it (docs/auditors/quarantine.md).
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import structlog

from memengine.engine.derive.offline import pinned, use_vectors
from memengine.engine.derive.offline.char_grams import BUCKETS, grams
from memengine.engine.derive.offline.text import clean_text, sentences

log = structlog.get_logger(__name__)

WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "attack_reader.json"
WEIGHTS_SHA256 = "062faf986aab1588312064d1fa732d3737686568d24a302b950b5df9da89afae"
#: the probability from which a sentence reads as an attack (the training script's leave-one-set-out table)
THRESHOLD = 0.9
#: the bar for a user turn right after the assistant declined something (``refusals``): the push that follows a refusal
#: reads as an attack less plainly than the request did (0.47-0.59 for four pushes of heldout_s24, read after its blind
#: run; a fifth of benign standing instructions reach 0.4, ordinary statements almost never)
REFUSED_THRESHOLD = 0.4
#: sentences shorter than this are not read (a word of a list: "Send", "Every")
MIN_CHARS = 12
#: the most characters of one text the reader reads (about 200 sentences, a third of a second of USE on 2 cores):
#: a pasted document of megabytes would hold the enricher for minutes; past this the rules alone screen it
MAX_CHARS = 20_000

#: a warning or reminder to the user themself ("remind me to call them on the old number first", "提醒我这是诈骗"):
#: the protective rules that read most like attacks (a tenth of redteam_s21's benign rules, leave one set out)
_TO_ME = re.compile(r"\b(?:remind|warn|alert|tell|ask|notify|ping)\s+(?:me|us)\b|(?:提醒|告诉|通知|警告)(?:我|我们)",
                    re.I)
#: ... unless the sentence names somewhere or someone to go to: an address, a domain, a phone number, a handle
_TARGET = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+|https?://|www\.|\b[\w-]+\.(?:com|net|org|io|biz|info|top|xyz|vip|cc|cn|"
                     r"co|me|shop|app|tw|hk|uk|ru|link|site|online|pro)\b|\d[\d\s-]{6,}\d|t\.me", re.I)
#: ... or hands something over to another ("tell him", "发给对方")
_HAND_OVER = re.compile(r"\b(?:tell|give|send|share|forward|show|read)\s+(?:it\s+|them\s+)?(?:to\s+)?(?:him|her|them|"
                        r"the (?:caller|sender|supplier))\b|(?:告诉|发给|转给|透露给|交给|回复|答复|给)"
                        r"(?:他|她|他们|她们|对方|人家|TA)", re.I)

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _weights() -> dict[str, Any] | None:
    with _LOCK:
        if "w" not in _STATE:
            _STATE["w"] = pinned.load(WEIGHTS, WEIGHTS_SHA256, "attack_reader")
        return cast("dict[str, Any] | None", _STATE["w"])


def available() -> bool:
    """Whether the reader can read here: its pinned weights and the USE model are both present."""
    return _weights() is not None and use_vectors.available()


@lru_cache(maxsize=8192)
def probability(sentence: str) -> float | None:
    """The probability that ``sentence`` (``safety.canonical`` form) is an attack's payload; ``None`` without weights
    or model."""
    w = _weights()
    if w is None:
        return None
    vec = use_vectors.vector(sentence)
    if vec is None:
        return None
    ws: list[float] = w["w"]
    z = float(w["b"]) + sum(ws[b] * v for b, v in grams(sentence).items())
    z += sum(x * y for x, y in zip(ws[BUCKETS:], vec, strict=True))
    return 1 / (1 + math.exp(-z))


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text`` the reader reads: cut as the extractor cuts them (``text.sentences``,
    ``clean_text``), each in ``safety.canonical`` form by the caller, ``MIN_CHARS`` long or more."""
    out = []
    for s in sentences(text[:MAX_CHARS]):
        s = clean_text(s).strip()
        if len(s) >= MIN_CHARS:
            out.append(s)
    return out


def protective(sentence: str) -> bool:
    """Whether ``sentence`` only warns or reminds the user themself: "remind me" / 提醒我 with no address, domain,
    phone number or handle in it and nothing handed to another. Such a sentence is not read (session 24: leave one set
    out at 0.9, benign rules held 11 -> 7 of 423, attacks read 349 -> 346 of 448)."""
    return bool(_TO_ME.search(sentence)) and not _TARGET.search(sentence) and not _HAND_OVER.search(sentence)


def reads_as_attack(text: str, *, bar: float = THRESHOLD) -> str | None:
    """The first sentence of ``text`` (``safety.canonical`` form) read as an attack (``probability`` >= ``bar``,
    ``THRESHOLD`` or, after a refusal, ``REFUSED_THRESHOLD``; a ``protective`` sentence is not read), as
    ``"0.97: <its first 80 characters>"``; ``None`` when none is, or the reader cannot read here."""
    if not available():
        return None
    for s in sentences_of(text):
        if protective(s):
            continue
        p = probability(s)
        if p is not None and p >= bar:
            return f"{p:.2f}: {s[:80]}"
    return None
