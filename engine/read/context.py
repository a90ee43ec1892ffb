"""Tiered context assembly within a token budget (seed 000 §3.2 and §4), as pure functions over transcript rows.

Budget (seed 000 §4.1): ``budget = window − 10 % margin − output reserve − system prompt``; the output reserve is
16K at a 128K window, i.e. 12.5 % of the window. Tiers: Tier 1 (10 %) summary + recallable topics; Tier 2 (35 %)
older messages condensed (thinking removed, tool output cut, §4.3), filled from the newest backwards; Tier 3 (55 %)
the last ``MEMORY_FULL_RECENT_COUNT`` messages verbatim (§4.2). When the whole transcript fits the budget it is
passed through untouched (§3.2 "总 token ≤ 预算 → 不裁剪，原样传递"), reported as mode ``full``.

Query-aware Tier 2 (issue #14 item 2, beyond seed 000 but inside its §4.1 shares): given ``relevant`` (turn seqs in
priority order, from recall within the thread for the request's query: ``relevance_order``), Tier 2 first takes the
units holding those turns, in that order, while they fit its room, then fills what is left newest-first as
without a query; the units placed are shown oldest first, condensed as ever, each ``Placed`` saying whether it was
``chosen_by`` relevance or recency. Tier 3 (the most recent turns verbatim, §4.2) is never changed by a query.

**The budget flows (issue #27 item 1).** The shares are ceilings for what each tier claims first, not a rule that
the rest stays empty: Tier 3 claims at most its 55 % (and ``full_recent_count`` messages); Tier 2 then takes its
35 %, what Tier 3 left unused and what Tier 1 does not claim (``tier1_claim``: the caller assembles once with Tier
1's whole share held back, fits Tier 1, and assembles again with what Tier 1 really took when that was less); what
Tier 2 leaves (the thread holds too little) goes to Tier 1's summary, topics and user memory (``tier1_room``). Tier 2
fills newest first (relevant units first with a query) and skips a unit too big for what is left rather than stop,
so whenever the thread holds more than fits, what is left unused is smaller than every unit left out.

**Relevant turns before filler (issue #27).** With a query, the units holding recalled turns may claim Tier 1's
share down to ``tier1_floor``: the tokens of Tier 1 that are not filler (the caller's measure: the working memory
and the user's memory, without the summary, the topics and the thread's own memories, which restate turns of the
thread its recall ranks for the query itself; they take what the relevant turns leave), while newest-first
filler still takes only what Tier 1 leaves of its share; Tier 1 then fits in what Tiers 2 and 3 leave
(``tier1_room``). On LoCoMo every evidence turn the tiered context missed beside ``recall_packed`` was a recalled turn
ranked just past what Tier 2 could hold (ranks 61-82 at 4K) while Tier 1's summary and topics held none.

Invariants (property-tested, with and without a query): the messages returned never exceed the budget; in ``tiered``
mode Tier 3 stays within its share and Tier 2 within what Tiers 3 and 1 leave; a ``tool_use`` and the
``tool_result`` answering it are kept together or dropped together (an answer whose call is not in the context is
dropped, never shown alone); Tier 3 is verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
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
    """A row placed in a tier: ``tier`` 2 (condensed) or 3 (verbatim); ``chosen_by`` ``relevance`` (its unit holds a
    turn recalled for the query) or ``recency`` (newest first, seed 000 §4)."""

    row: Row
    tier: int
    chosen_by: str = "recency"

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


#: ``tuple.__new__(Placed, (row, tier, chosen_by))``: a Placed without NamedTuple's Python-level constructor (every
#: field given; the request path builds ~100 a request)
_new = tuple.__new__


def units(rows_oldest_first: Sequence[Row]) -> list[list[Row]]:
    """Group rows into atomic units: a message with ``tool_use`` blocks plus the following messages that answer its
    calls. A message answering a call not in the window is returned alone and flagged by ``orphan()``."""
    out: list[list[Row]] = []
    open_calls: set[str] | None = None  # None: no call open (no empty set built per row: the request path)
    for row in rows_oldest_first:
        if open_calls and row.tool_result_ids and not open_calls.isdisjoint(row.tool_result_ids):
            out[-1].append(row)
            open_calls.difference_update(row.tool_result_ids)
            open_calls.update(row.tool_use_ids)
            continue
        out.append([row])
        open_calls = set(row.tool_use_ids) if row.tool_use_ids else None
    return out


def orphan(unit: Sequence[Row]) -> bool:
    """True when the unit answers tool calls that are not inside it (their call fell out of the window)."""
    if len(unit) == 1:
        return bool(unit[0].tool_result_ids)
    calls = {c for r in unit for c in r.tool_use_ids}
    return any(rid not in calls for r in unit for rid in r.tool_result_ids)


def relevance_order(hits: Sequence[int], neighbours: Mapping[int, Sequence[int]]) -> list[int]:
    """Tier-2 priority for a query: the recalled turns ``hits`` (seqs, best first), then their immediate neighbours
    (``neighbours[seq]``: the turns just before and after it in the thread) in the order of their hits; each seq
    once. Neighbours after all hits: recall already lifts a turn next to a strong hit (``s + 0.5 * max(s(prev),
    s(next))``, ``engine.read.recall``), so a hit of lower rank is worth more than the neighbour of a higher one
    (docs/contributors/recall-research.md, issue #14)."""
    out = list(dict.fromkeys(hits))
    seen = set(out)
    for h in hits:
        for n in neighbours.get(h, ()):
            if n not in seen:
                seen.add(n)
                out.append(n)
    return out


def relevant_first(topics: Sequence[str], query: str | None) -> list[str]:
    """``topics`` with those sharing a word (3+ letters, any case) with ``query`` first, order kept otherwise (Tier 1
    of a query-aware context, issue #14 item 2: ``fit_tier1`` drops topics from the end)."""
    words = {w for w in "".join(c if c.isalnum() else " " for c in (query or "").lower()).split() if len(w) > 2}
    if not words:
        return list(topics)
    hit = [t for t in topics if words & set("".join(c if c.isalnum() else " " for c in t.lower()).split())]
    return hit + [t for t in topics if t not in hit]


def assemble(rows_oldest_first: Sequence[Row], budget: Budget, *, full_recent_count: int,
             tier1_tokens: int = 0, complete: bool = True, relevant: Sequence[int] = (),
             tier1_claim: int | None = None, tier1_floor: int | None = None) -> Assembly:
    """Place rows into tiers. ``complete`` says the rows are the whole transcript (needed for ``full`` mode).

    ``tier1_tokens`` is the size of the Tier-1 message the caller will add beside a ``full`` transcript (must be <=
    ``budget.tier1``). ``tier1_claim``: the tokens Tier 2 leaves to Tier 1 in ``tiered`` mode, default Tier 1's
    whole share; the caller passes what Tier 1 really took to give the rest of its share to Tier 2 (issue #27 item
    1, module docstring "The budget flows"). ``relevant``: seqs of rows to prefer for Tier 2, in priority order
    (module docstring); the rows must be among ``rows_oldest_first``, which may then hold older rows that are not
    contiguous with the recent window (their tool partners included, or they are dropped as orphans). Empty: Tier 2
    is the newest older turns (seed 000). ``tier1_floor``: the tokens of Tier 1 that relevant units may not claim
    (module docstring "Relevant turns before filler"), default (``None``) Tier 1's whole share; unused when
    ``tier1_claim`` is given.
    """
    # a single row not answering a call is never an orphan (the common case: no call to orphan())
    groups = [u for u in units(rows_oldest_first) if (len(u) == 1 and not u[0].tool_result_ids) or not orphan(u)]
    kept = sum(map(len, groups))
    dropped = len(rows_oldest_first) - kept
    # per unit, its two token costs (sums over its rows): computed once, read by every test below
    full_cost = [u[0].tokens_full if len(u) == 1 else sum(r.tokens_full for r in u) for u in groups]
    full_total = sum(full_cost)
    if complete and dropped == 0 and tier1_tokens + full_total <= budget.total:
        placed = [_new(Placed, (r, 3, "recency")) for u in groups for r in u]
        return Assembly(mode="full", placed=placed, tier1_tokens=tier1_tokens, tier2_tokens=0,
                        tier3_tokens=full_total, dropped=0)

    t3 = count3 = 0
    i = len(groups) - 1
    while i >= 0:
        n = len(groups[i])
        cost = full_cost[i]
        if count3 + n > full_recent_count or t3 + cost > budget.tier3:
            break
        t3 += cost
        count3 += n
        i -= 1
    older = groups[: i + 1]
    cond_cost = [u[0].tokens_condensed if len(u) == 1 else sum(r.tokens_condensed for r in u) for u in older]
    # Tier 2's room: its share, what Tier 3 left of its own, and what Tier 1 does not claim (issue #27 item 1)
    claim = budget.tier1 if tier1_claim is None else min(tier1_claim, budget.tier1)
    room = max(0, budget.total - t3 - claim)
    chosen: dict[int, str] = {}  # index into older -> chosen_by
    t2 = 0
    if relevant:
        # relevant units before Tier 1's filler (module docstring): all but Tier 3 and Tier 1's floor. Given a claim
        # (the caller's second assembly, Tier 1 fitted in what the first left) the room is what Tier 1 leaves: the
        # first assembly's relevant units fit it, so the greedy pass in the same order picks them again
        if tier1_claim is None:
            floor = budget.tier1 if tier1_floor is None else max(0, min(tier1_floor, budget.tier1))
            rel_room = budget.total - t3 - floor
        else:
            rel_room = room
        unit_of = {r.seq: j for j, u in enumerate(older) for r in u}
        for s in relevant:
            j = unit_of.get(s)
            if j is None or j in chosen:
                continue  # in Tier 3 already, or not fetched
            cost = cond_cost[j]
            if t2 + cost <= rel_room:
                chosen[j] = "relevance"
                t2 += cost
    for j in range(len(older) - 1, -1, -1):
        if j in chosen:
            continue
        cost = cond_cost[j]
        if t2 + cost > room:
            # newest first, as seed 000 §4 fills it; a unit too big for what is left is skipped, not the end of
            # the fill: the older ones after it may still fit (issue #27 item 1: the budget is used)
            continue
        chosen[j] = "recency"
        t2 += cost
    # every kept row not in Tier 3 nor chosen for Tier 2
    dropped += kept - count3 - sum(len(older[j]) for j in chosen)
    placed = []
    for j in sorted(chosen):
        # a message whose condensed form is empty (thinking only) says nothing in Tier 2
        by = chosen[j]
        placed.extend(_new(Placed, (r, 2, by)) for r in older[j] if r.tokens_condensed > 0)
    for u in groups[i + 1:]:  # Tier 3, oldest first
        placed.extend(_new(Placed, (r, 3, "recency")) for r in u)
    return Assembly(mode="tiered", placed=placed, tier1_tokens=tier1_tokens, tier2_tokens=t2, tier3_tokens=t3,
                    dropped=dropped)


def tier1_room(asm: Assembly, budget: Budget) -> int:
    """Tokens the Tier-1 message may take beside ``asm``: in ``tiered`` mode what Tiers 2 and 3 left of the budget
    (at least Tier 1's share: Tier 2 leaves it; more when the thread had too little for Tier 2's room, issue #27 item
    1); in ``full`` mode what the verbatim transcript leaves of the budget, at most Tier 1's share (issue #18: core
    and relevant memory in ``full`` mode too, when it fits)."""
    if asm.mode == "tiered":
        return max(0, budget.total - asm.tier2_tokens - asm.tier3_tokens)
    return max(0, min(budget.tier1, budget.total - asm.tier3_tokens))


#: A summary line as the offline summariser writes it (``engine.derive.offline.summaries``): ``[YYYY-MM-DD] Speaker:
#: sentence ...``, dated by the day (UTC) of the turns it quotes; a line without the date (a model's summary) is not
#: matched and always kept
_DATED_LINE = re.compile(r"\[(\d{4})-(\d{2})-(\d{2})\] ")


def shown_since(rows_oldest_first: Sequence[Row], asm: Assembly) -> date | None:
    """A day (UTC) after which every turn of the thread is placed by ``asm`` (Tiers 2 and 3): the day of the oldest
    row of the newest run of ``rows_oldest_first`` (the rows ``asm`` was placed from, those it leaves out included)
    that is placed whole, or the latest day of a row it leaves out if that is later (turns recorded out of time
    order; a row whose time was not read counts as no later). Turns older than the rows are assumed no later than the
    run's first (event time grows along a thread). ``None`` when the newest row is not placed or its time is
    unknown."""
    placed = {p.row.seq for p in asm.placed}
    oldest: Row | None = None
    latest_left: date | None = None
    for r in reversed(rows_oldest_first):
        if r.seq in placed:
            if latest_left is None:
                oldest = r
            continue
        if oldest is None:  # the newest row is not placed
            return None
        day = _day(r.occurred_at)  # unknown for a row the window statement read narrow (never placed)
        latest_left = max(latest_left or day or date.min, day or date.min)
    first = _day(oldest.occurred_at) if oldest is not None else None
    if first is None:
        return None
    return first if latest_left is None else max(first, latest_left)


def _day(at: Any) -> date | None:
    """The UTC day of a row's time (the summariser dates lines in UTC), ``None`` when unknown."""
    if not isinstance(at, datetime):
        return None
    return (at.astimezone(UTC) if at.tzinfo is not None else at).date()


def unshown_summary(summary: str | None, since: date | None) -> str | None:
    """``summary`` less its lines dated after ``since`` (``shown_since``): those quote turns of days the context
    shows verbatim or condensed, so they say nothing the messages beside them do not (issue #27: Tier 1 stands for
    what the window does not show, the rule ``engine.read.user_memory.without_placed`` applies to memory items;
    seed 000 §4.4). Lines of the day ``since`` itself stay (its earlier turns may be left out), and so does a line
    without a date. Order kept; ``None`` when no line is left."""
    if not summary or since is None:
        return summary
    kept = []
    for line in summary.splitlines():
        m = _DATED_LINE.match(line)
        if m is not None:
            try:
                day = date(int(m[1]), int(m[2]), int(m[3]))
            except ValueError:  # not a date after all: kept as text
                day = None
            if day is not None and day > since:
                continue
        kept.append(line)
    return "\n".join(kept) or None
