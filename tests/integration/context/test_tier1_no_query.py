"""Tier 1 of a context asked with no query (``query=""``) spends its room on what the window does not show (issue
#27: without a query the context must hold at least the evidence of the plain recent turns), on the real servers
with the offline deriver (summary lines dated ``[YYYY-MM-DD] Speaker: ...``, topics from the turns).

- Topics are pointers, a summary line of an old turn is content: without a query no topic past the index's first
  ``TOPICS_KEPT_NO_QUERY`` is kept while a summary line of a day the context does not show is left out
  (``engine.read.memories.topics_kept``; seed 000 §4.4 keeps the index).
- When Tier 2 takes the share Tier 1 left and reaches further back, the summary lines of the days it now shows leave
  Tier 1 and their room is fitted again with older lines (``engine.read.user_memory.refit_tier1``): before, that
  room stayed empty.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from memengine.engine.read.memories import TOPICS_KEPT_NO_QUERY
from memengine.projections.tokens import count_tokens
from tests.integration.context.test_tier1_summary import _text
from tests.integration.derive.test_memory_lifecycle import settle, turn

pytestmark = pytest.mark.integration

PER_DAY = 24
DAYS = 6
_DATED = re.compile(r"\[(\d{4}-\d{2}-\d{2})\] ")


async def test_no_query_tier1_holds_old_summary_lines_not_topics(settings: Settings, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, summary_threshold=10)
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    at = [t0 + timedelta(days=i // PER_DAY, seconds=30 * (i % PER_DAY)) for i in range(DAYS * PER_DAY)]
    evs = [turn("trip", i, *_text(i), at[i]) for i in range(DAYS * PER_DAY)]
    async with lifespan(s) as engine:
        await publish_all(engine, evs, "default", quiet=True)
        await settle(engine)
        summary = await engine.pool.fetchval("SELECT summary FROM conversation_summaries WHERE thread_id = 'trip'")
        topics = await engine.pool.fetchval("SELECT count(*) FROM memory_topics WHERE thread_id = 'trip'")
        assert summary and topics
        lines = summary.splitlines()
        checked = 0
        for window in (1200, 1600, 2000, 2400, 3000):
            ctx = await engine.client().context("trip", window=window, query="")
            assert ctx.mode == "tiered" and ctx.tokens["total"] <= ctx.budget.total
            placed = set(ctx.event_ids)
            oldest = max(at[i] for i, e in enumerate(evs) if str(e.event_id) not in placed).date().isoformat()
            text = next((m.content[0]["text"] for m in ctx.messages if m.tier == 1), "")
            unshown = [ln for ln in lines if (m := _DATED.match(ln)) and m[1] <= oldest]
            missing = [ln for ln in unshown if ln not in text]
            if not missing:
                continue
            checked += 1
            # a summary line of a day the context does not show is left out: no topic past the index's first few
            # (seed 000 §4.4 keeps the index) took its room
            line = next((ln for ln in text.splitlines() if ln.startswith("[Recallable Topics]")), "[Topics]:")
            assert len([t for t in line.split(":", 1)[1].split(",") if t.strip()]) <= TOPICS_KEPT_NO_QUERY, text
            # ... and no room it would fit in is left empty (the newest missing line is the next one Tier 1 keeps)
            left = ctx.budget.total - ctx.tokens["total"]
            assert count_tokens(missing[-1]) + 2 > left, (window, left, missing[-1])
        assert checked  # the windows cut the summary

