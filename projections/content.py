"""Rendering, condensing and measuring message content (pure functions over content blocks).

Condensing is seed 000 §4.3 ``condenser.py``: user and system text stays as is; thinking blocks are removed;
tool output (``tool_result``) is cut to ``tool_max`` characters followed by ``... (truncated)``; tool calls stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from memengine.events.model import Block, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from memengine.projections.tokens import MESSAGE_OVERHEAD, count_tokens

TRUNCATION_MARK = "... (truncated)"
_json = msgspec.json.Encoder()


def block_text(block: Block) -> str:
    """The text a model reads for one block (tool calls as ``name {json}``)."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thinking
    if isinstance(block, ToolUseBlock):
        return f"{block.name} {_json.encode(block.input).decode()}"
    return block.content


def message_tokens(blocks: Sequence[Block]) -> int:
    """Tokens of a message: the sum over its blocks plus the per-message overhead."""
    return MESSAGE_OVERHEAD + sum(count_tokens(block_text(b)) for b in blocks)


def condense(blocks: Sequence[Block], tool_max: int) -> list[Block]:
    """Tier-2 form of a message (seed 000 §4.3); may be empty (a message of thinking only)."""
    out: list[Block] = []
    for b in blocks:
        if isinstance(b, ThinkingBlock):
            continue
        if isinstance(b, ToolResultBlock) and len(b.content) > tool_max:
            b = msgspec.structs.replace(b, content=b.content[:tool_max] + TRUNCATION_MARK)
        out.append(b)
    return out


def measure(blocks: Sequence[Block], tool_max: int) -> tuple[int, list[Block] | None, int]:
    """One pass over a message: ``(tokens_full, condensed blocks or None when unchanged, tokens_condensed)``.

    Each block is tokenized once; only a truncated tool output is tokenized again. ``tokens_condensed`` is 0 when
    the condensed form is empty (a message of thinking only).
    """
    full = cond = MESSAGE_OVERHEAD
    condensed: list[Block] = []
    changed = False
    for b in blocks:
        n = count_tokens(block_text(b))
        full += n
        if isinstance(b, ThinkingBlock):
            changed = True
            continue
        if isinstance(b, ToolResultBlock) and len(b.content) > tool_max:
            b = msgspec.structs.replace(b, content=b.content[:tool_max] + TRUNCATION_MARK)
            n = count_tokens(b.content)
            changed = True
        cond += n
        condensed.append(b)
    if not condensed:
        return full, [], 0
    return full, (condensed if changed else None), cond


def plain_text(blocks: Sequence[Block]) -> str:
    """Searchable text of a message: text blocks, tool calls and tool output; thinking excluded."""
    return "\n".join(block_text(b) for b in blocks if not isinstance(b, ThinkingBlock))


class Rendered(NamedTuple):
    """Everything the messages fold stores about one message's content, from one pass over its blocks.

    ``content`` and ``condensed`` are JSON texts (``condensed`` ``None`` when the Tier-2 form equals the full one,
    ``"[]"`` when it is empty); ``text`` is ``plain_text``; ``tokens_full`` / ``tokens_condensed`` are ``measure``'s
    counts; ``tool_use_ids`` / ``tool_result_ids`` are JSON arrays of strings.
    """

    content: str
    condensed: str | None
    text: str
    tokens_full: int
    tokens_condensed: int
    tool_use_ids: str
    tool_result_ids: str


def render(blocks: Sequence[Block], tool_max: int) -> Rendered:
    """``measure``, ``plain_text`` and the JSON forms of a message in one pass (issue #13 item 1: the per-event
    Python of the messages fold). Each block's text is built and counted once (``count_tokens`` memoises per
    distinct text); a message of text blocks only, the common case, needs no tool-id or condensed encoding.
    Equal, field by field, to what the separate functions give (tests/unit/test_projections.py checks it)."""
    full = cond = MESSAGE_OVERHEAD
    texts: list[str] = []
    condensed: list[Block] = []
    changed = False
    use_ids: list[str] | None = None
    result_ids: list[str] | None = None
    for b in blocks:
        cls = type(b)  # exact classes, compared by identity; mypy does not narrow ``b`` through ``cls``
        if cls is TextBlock:
            t = b.text  # type: ignore[union-attr]  # narrowed by `cls is` above
            n = count_tokens(t)
        elif cls is ThinkingBlock:
            full += count_tokens(b.thinking)  # type: ignore[union-attr]  # narrowed by `cls is` above
            changed = True
            continue
        elif cls is ToolUseBlock:
            t = f"{b.name} {_json.encode(b.input).decode()}"  # type: ignore[union-attr]  # narrowed by `cls is` above
            n = count_tokens(t)
            (use_ids := use_ids or []).append(b.id)  # type: ignore[union-attr]  # narrowed by `cls is` above
        else:
            t = b.content  # type: ignore[union-attr]  # narrowed by `cls is` above
            n = count_tokens(t)
            (result_ids := result_ids or []).append(b.tool_use_id)  # type: ignore[union-attr]  # narrowed by `cls is` above
            if len(t) > tool_max:
                full += n
                b = msgspec.structs.replace(b, content=t[:tool_max] + TRUNCATION_MARK)
                n = count_tokens(b.content)  # type: ignore[union-attr]  # narrowed by `cls is` above
                changed = True
                texts.append(t)
                cond += n
                condensed.append(b)
                continue
        full += n
        cond += n
        texts.append(t)
        condensed.append(b)
    if not condensed:
        cond_json: str | None = "[]"
        cond = 0
    else:
        cond_json = _json.encode(condensed).decode() if changed else None
    return Rendered(
        _json.encode(blocks).decode(), cond_json, "\n".join(texts), full, cond,
        "[]" if use_ids is None else _json.encode(use_ids).decode(),
        "[]" if result_ids is None else _json.encode(result_ids).decode(),
    )
