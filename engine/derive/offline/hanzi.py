"""Traditional Chinese read as simplified by the offline deriver's Chinese rules (issue #29 item 1).

Every pattern of ``zh`` (住在, 以后, 请, 搬来 ...) is written in simplified characters, so a user in Taiwan or Hong
Kong writing 以後回答我都請用繁體字 or 搬來台北了 matched none of them. ``simplified`` maps traditional characters to
simplified ones with OpenCC (BYVoid's Open Chinese Convert, Apache-2.0, the ``opencc`` wheel of the ``server``
extra; its ``tw2s`` tables: traditional characters plus Taiwan's variants, 著 -> 着), character for character, so
an index into the converted text is an index into the original: the rules read the simplified text and the memory
keeps the user's own characters. The quarantine gate reads text the same way (``safety.canonical``), so an attack
written in traditional characters is caught as its simplified twin is.

Without OpenCC installed the text is returned unchanged (the rules then read simplified text only, as before).
Pure: OpenCC's tables are data; the converter is built once.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from memengine.engine.derive.offline.text import CJK


@lru_cache(maxsize=1)
def _converter() -> Any:
    try:
        import opencc
    except ImportError:
        return None
    return opencc.OpenCC("tw2s")


def available() -> bool:
    """Whether OpenCC is installed (traditional text is read as simplified)."""
    return _converter() is not None


def simplified(text: str) -> str:
    """``text`` with its traditional characters as simplified ones, of the same length (``len`` and every index
    kept: where OpenCC's phrase tables would change the length, the text is converted character by character).
    Text without CJK characters, or with OpenCC missing, is returned as it is."""
    conv = _converter()
    if conv is None or not CJK.search(text):
        return text
    out: str = conv.convert(text)
    if len(out) == len(text):
        return out
    chars = []
    for ch in text:
        one: str = conv.convert(ch)
        chars.append(one if len(one) == 1 else ch)
    return "".join(chars)
