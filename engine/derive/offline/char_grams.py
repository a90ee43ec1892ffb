"""Hashed character n-grams of a text: the sparse half of the learned readers' features (``attack_reader``,
``statement_reader``; issue #29).

Why n-grams beside the USE vector: the sentence vector says what a sentence means, the n-grams keep its own words
in any script ("long-term memory", "授权", ".top", "研二", "dx'd"), which a 512-float vector blurs. Hashing (CRC-32,
the "hashing trick" of Weinberger et al., ICML 2009) keeps the model a fixed size whatever the vocabulary, with no
word list to ship or keep current. Deterministic: CRC-32 of UTF-8 bytes does not depend on the interpreter's hash
seed.
"""

from __future__ import annotations

import math
import zlib

#: hashed n-gram buckets (a reader's first ``BUCKETS`` weights; the USE vector's follow)
BUCKETS = 1 << 15


def grams(text: str) -> dict[int, float]:
    """``{bucket: weight}``: the character 2-, 3- and 4-grams of each whitespace word of ``text`` (lower case, the word
    padded with one space each side), hashed (CRC-32 of the UTF-8 bytes mod ``BUCKETS``), counted and scaled to unit
    length; ``{}`` for a text of no words."""
    counts: dict[int, float] = {}
    for word in text.lower().split():
        padded = f" {word} "
        for n in (2, 3, 4):
            for i in range(len(padded) - n + 1):
                b = zlib.crc32(padded[i:i + n].encode()) % BUCKETS
                counts[b] = counts.get(b, 0.0) + 1.0
    norm = math.sqrt(sum(v * v for v in counts.values())) or 1.0
    return {b: v / norm for b, v in counts.items()}
