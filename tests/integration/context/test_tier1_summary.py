"""Tier 1's rolling summary stands for what the placed turns do not show (issue #27), on the real servers with the
offline deriver (its extractive summary dates each line by its turns' day, ``[YYYY-MM-DD] Speaker: ...``).

A thread over three days is summarised by the enricher; a context without a query places the newest turns (the last
day and some of the one before) in Tiers 2 and 3. Before the fix Tier 1 kept the summary's newest lines, which quote
those very turns, and dropped the older ones first; now a line dated after the oldest day the context shows whole is
left out and the room holds older lines. The eval credits a turn whose sentence the Tier-1 text quotes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.derive.offline.structures import Turn
from memengine.engine.ops.eval_context import present_in, quotable
from memengine.engine.ops.publish import publish_all
from tests.integration.derive.test_memory_lifecycle import settle, turn

pytestmark = pytest.mark.integration

CITIES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Dakar", "Hanoi", "Lima", "Riga", "Accra", "Perth", "Cusco", "Tunis"]
PER_DAY = 40


def _text(i: int) -> tuple[str, str]:
    city = CITIES[i % len(CITIES)]
    if i % 2:
        return "user", f"I visited the museum number {i} in {city} with my sister Ann and we bought {i} postcards."
    return "assistant", f"That sounds lovely, what else did you see in {city}?"


async def test_summary_lines_quoting_placed_turns_leave_tier1(settings: Settings, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, summary_threshold=10)
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    at = [t0 + timedelta(days=i // PER_DAY, seconds=30 * (i % PER_DAY)) for i in range(3 * PER_DAY)]
    evs = [turn("trip", i, *_text(i), at[i]) for i in range(3 * PER_DAY)]
    async with lifespan(s) as engine:
        await publish_all(engine, evs, "default", quiet=True)
        await settle(engine)
        summary = await engine.pool.fetchval("SELECT summary FROM conversation_summaries WHERE thread_id = 'trip'")
        days = {ln[1:11] for ln in summary.splitlines()}
        assert {d.date().isoformat() for d in (at[0], at[-1])} <= days  # the summary spans the thread

        ctx = await engine.client().context("trip", window=2000, query="")
        assert ctx.mode == "tiered" and ctx.tokens["total"] <= ctx.budget.total
        placed = set(ctx.event_ids)
        # the latest day of a turn the context leaves out (a unit too big for what is left is skipped, the fill
        # goes on with older ones): every turn of a later day is shown
        oldest = max(at[i] for i, e in enumerate(evs) if str(e.event_id) not in placed).date().isoformat()
        text = next(m.content[0]["text"] for m in ctx.messages if m.tier == 1)
        shown = [ln for ln in text.splitlines() if re.match(r"\[\d{4}-\d{2}-\d{2}\] ", ln)]
        # no summary line of a day whose turns the context shows, all of them ...
        assert all(ln[1:11] <= oldest for ln in shown), (oldest, shown)
        assert shown  # ... while the summary still says what the context does not show

        # the eval credits the turns whose sentences the Tier-1 text quotes, and only those
        turns = [Turn(str(e.event_id), i, e.role, e.user_id, e.content[0].text, e.occurred_at)  # type: ignore[union-attr]
                 for i, e in enumerate(evs)]
        said = quotable(turns)
        quoted = {e for e, xs in said.items() if any(x in text for x in xs)}
        assert quoted and present_in(ctx, {}, {}, said) == set(ctx.event_ids) | quoted
        assert all(at[i].date().isoformat() <= oldest for i, e in enumerate(evs) if str(e.event_id) in quoted)
