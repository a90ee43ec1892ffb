"""Rendering, condensing and measuring message content (pure functions over content blocks).

Condensing is seed 000 §4.3 ``condenser.py``: user and system text stays as is; thinking blocks are removed;
tool output (``tool_result``) is cut to ``tool_max`` characters followed by ``... (truncated)``; tool calls stay.
"""

from __future__ import annotations

from collections.abc import Sequence

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
