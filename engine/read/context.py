"""Tiered context assembly within a token budget (seed 000 §3.2 and §4), as pure functions over transcript rows.

Budget (seed 000 §4.1): ``budget = window − 10 % margin − output reserve − system prompt``; the output reserve is
16K at a 128K window, i.e. 12.5 % of the window. Tiers: Tier 1 (10 %) summary + recallable topics; Tier 2 (35 %)
older messages condensed (thinking removed, tool output cut, §4.3), filled from the newest backwards; Tier 3 (55 %)
the last ``MEMORY_FULL_RECENT_COUNT`` messages verbatim (§4.2). When the whole transcript fits the budget it is
passed through untouched (§3.2 "总 token ≤ 预算 → 不裁剪，原样传递"), reported as mode ``full``.

Invariants (property-tested): the messages returned never exceed the budget, and in ``tiered`` mode each tier stays
within its share; a ``tool_use`` and the ``tool_result`` answering it are kept together or dropped together (an
answer whose call is not in the context is dropped, never shown alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from memengine.engine.wire.replies import Budget

TIER_SHARES = (0.10, 0.35, 0.55)  # seed 000 §4.1


def plan_budget(window: int, *, system_tokens: int = 0, margin_ratio: float = 0.10,
                reserve_ratio: float = 0.125, reserve: int | None = None) -> Budget:
    """Seed 000 §4.1 for ``window`` tokens. At 128,000: margin 12,800, reserve 16,000, total 99,200 − system.

    Raises ``ValueError`` for a negative window or system size. A total below zero is clamped to 0 (nothing fits).
    """
    if window < 0 or system_tokens < 0:
        raise ValueError("window and system_tokens must be >= 0")
    margin = int(window * margin_ratio)
    reserve = int(window * reserve_ratio) if reserve is None else reserve
    total = max(0, window - margin - reserve - system_tokens)
    t1, t2 = int(total * TIER_SHARES[0]), int(total * TIER_SHARES[1])
    return Budget(window=window, margin=margin, reserve=reserve, system=system_tokens, total=total,
                  tier1=t1, tier2=t2, tier3=total - t1 - t2)


class Row(NamedTuple):
    """One transcript message as stored in ``messages`` (content as JSON text, condensed form or ``None``)."""

    seq: int
    event_id: str
    role: str
    user_id: str | None
    session_id: str | None
    occurred_at: Any  # datetime from the database; serialised only for the rows placed
    content: str
    content_condensed: str | None
    tokens_full: int
    tokens_condensed: int
    tool_use_ids: Sequence[str]
    tool_result_ids: Sequence[str]


class Placed(NamedTuple):
    """A row placed in a tier: ``tier`` 2 (condensed) or 3 (verbatim)."""

    row: Row
    tier: int

    @property
    def tokens(self) -> int:
        return self.row.tokens_condensed if self.tier == 2 else self.row.tokens_full

    @property
    def content(self) -> str:
        if self.tier == 2 and self.row.content_condensed is not None:
            return self.row.content_condensed
        return self.row.content


class Assembly(msgspec.Struct, frozen=True, kw_only=True):
    """Result: ``mode`` (``full`` | ``tiered``), ``placed`` oldest first, tokens per tier, and ``dropped`` (rows of
    the fetched window left out: too old for the budget, or a tool answer whose call is out of the window)."""

    mode: str
    placed: list[Placed]
    tier1_tokens: int
    tier2_tokens: int
    tier3_tokens: int
    dropped: int


def units(rows_oldest_first: Sequence[Row]) -> list[list[Row]]:
    """Group rows into atomic units: a message with ``tool_use`` blocks plus the following messages that answer its
    calls. A message answering a call not in the window is returned alone and flagged by ``orphan()``."""
    out: list[list[Row]] = []
    open_calls: set[str] = set()
    for row in rows_oldest_first:
        if open_calls and row.tool_result_ids and not open_calls.isdisjoint(row.tool_result_ids):
            out[-1].append(row)
            open_calls.difference_update(row.tool_result_ids)
            open_calls.update(row.tool_use_ids)
            continue
        out.append([row])
        open_calls = set(row.tool_use_ids) if row.tool_use_ids else set()
    return out


def orphan(unit: Sequence[Row]) -> bool:
    """True when the unit answers tool calls that are not inside it (their call fell out of the window)."""
    if len(unit) == 1:
        return bool(unit[0].tool_result_ids)
    calls = {c for r in unit for c in r.tool_use_ids}
    return any(rid not in calls for r in unit for rid in r.tool_result_ids)


def assemble(rows_oldest_first: Sequence[Row], budget: Budget, *, full_recent_count: int,
             tier1_tokens: int = 0, complete: bool = True) -> Assembly:
    """Place rows into tiers. ``complete`` says the rows are the whole transcript (needed for ``full`` mode).

    ``tier1_tokens`` is the size of the Tier-1 message the caller will add (must be <= ``budget.tier1``).
    """
    groups = [u for u in units(rows_oldest_first) if not orphan(u)]
    dropped = len(rows_oldest_first) - sum(len(u) for u in groups)
    full_total = sum(r.tokens_full for u in groups for r in u)
    if complete and dropped == 0 and tier1_tokens + full_total <= budget.total:
        placed = [Placed(r, 3) for u in groups for r in u]
        return Assembly(mode="full", placed=placed, tier1_tokens=tier1_tokens, tier2_tokens=0,
                        tier3_tokens=full_total, dropped=0)

    tier3: list[list[Row]] = []
    t3 = count3 = 0
    i = len(groups) - 1
    while i >= 0:
        u = groups[i]
        cost = sum(r.tokens_full for r in u)
        if count3 + len(u) > full_recent_count or t3 + cost > budget.tier3:
            break
        tier3.append(u)
        t3 += cost
        count3 += len(u)
        i -= 1
    tier2: list[list[Row]] = []
    t2 = 0
    while i >= 0:
        u = groups[i]
        cost = sum(r.tokens_condensed for r in u)
        if t2 + cost > budget.tier2:
            break
        tier2.append(u)
        t2 += cost
        i -= 1
    dropped += sum(len(u) for u in groups[: i + 1])
    placed: list[Placed] = []
    for u in reversed(tier2):
        # a message whose condensed form is empty (thinking only) says nothing in Tier 2
        placed.extend(Placed(r, 2) for r in u if r.tokens_condensed > 0)
    for u in reversed(tier3):
        placed.extend(Placed(r, 3) for r in u)
    return Assembly(mode="tiered", placed=placed, tier1_tokens=tier1_tokens, tier2_tokens=t2, tier3_tokens=t3,
                    dropped=dropped)


def tier1_room(asm: Assembly, budget: Budget) -> int:
    """Tokens the Tier-1 message may take beside ``asm``: Tier 1's share in ``tiered`` mode; in ``full`` mode what
    the verbatim transcript leaves of the budget, at most Tier 1's share (issue #18: core and relevant memory in
    ``full`` mode too, when it fits)."""
    if asm.mode == "tiered":
        return budget.tier1
    return max(0, min(budget.tier1, budget.total - asm.tier3_tokens))
