"""Context in a few index lookups (issue #13 item 3), on the real servers.

- The window statement sums tokens over the thread's newest rows only and widens the scan when every scanned row
  could still fit: a thread of thinking-only turns (condensed cost 0: every row stays a Tier-2 candidate) longer
  than the first scan is still fetched whole, as the unbounded window sums fetched it.
- A thread seen before is scanned as far as what qualified in it last time (plus a margin): when it has grown by
  cheap rows since, that short scan is widened until it is exact, so the whole thread still comes back.
- The Tier-1 parts are served from a cache only while no projector has committed: a memory item derived after a
  context was answered reaches the next context even though the cache's time bound has not passed.
- The bounded window statement places what placing the whole thread read with its content places (tool calls with
  their answers, thinking turns, condensed tool output) at windows from 2K (tiered) to 128K (full).
"""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read import service as service_module
from memengine.engine.read.context import Row, assemble, plan_budget
from memengine.events import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from tests.conftest import wait_until
from tests.integration.poison import drained

pytestmark = pytest.mark.integration


async def test_scan_widens_over_a_thread_of_cheap_rows(settings: Settings) -> None:
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:  # nothing pruned
        await _cheap_thread_is_fetched_whole(engine)


async def _cheap_thread_is_fetched_whole(engine: Engine) -> None:
    c = engine.client()
    n = service_module._SCAN_MIN + 144  # more rows than the first scan reads
    for i in range(n - 1):
        await c.record_turn("cheap", "assistant", [ThinkingBlock(thinking=str(i % 10))])
    ack = await c.record_turn("cheap", "user", [TextBlock(text="ok")])
    whole = await c.context("cheap", window=128_000, after_seq=ack.seq)
    assert whole.mode == "full" and len(whole.messages) == n
    tokens = whole.tokens["tier3"]
    assert tokens * service_module._SCAN_PER_TOKEN < n - 50, "rows too costly to outrun the first scan"
    # a window whose budget just holds the whole thread: its first scan (budget / 8 rows) stops short of the
    # thread's first turn with every scanned row still fitting, so the statement must read on
    window = int((tokens + 20) / 0.775) + 1
    ctx = await c.context("cheap", window=window)
    assert ctx.budget.total >= tokens and ctx.budget.total * service_module._SCAN_PER_TOKEN < n
    assert ctx.mode == "full" and len(ctx.messages) == n and ctx.messages[0].seq == whole.messages[0].seq


async def test_remembered_scan_widens_when_the_thread_grew(settings: Settings) -> None:
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:  # nothing pruned
        c = engine.client()
        for i in range(20):
            await c.record_turn("grows", "assistant", [ThinkingBlock(thinking=str(i % 10))])
        ack = await c.record_turn("grows", "user", [TextBlock(text="ok")])
        first = await c.context("grows", window=128_000, after_seq=ack.seq)
        assert first.mode == "full" and len(first.messages) == 21
        assert 21 in engine.service._scan_hint.values()  # the next scan of this thread starts near 21 rows
        for i in range(400):  # cheap rows: each still fits, so the remembered scan cannot be exact
            await c.record_turn("grows", "assistant", [ThinkingBlock(thinking=str(i % 10))])
        ack = await c.record_turn("grows", "user", [TextBlock(text="ok")])
        ctx = await c.context("grows", window=128_000, after_seq=ack.seq)
        assert ctx.mode == "full" and len(ctx.messages) == 422
        assert ctx.messages[0].seq == first.messages[0].seq


async def test_tier1_cache_is_dropped_when_a_projector_commits(engine: Engine) -> None:
    engine.service.tier1_cache.ttl = 3600.0  # only the read models' state may end an entry here
    c = engine.client()
    ack = await c.record_turn("kai-new", "user", "How should you answer me, and in which language?", user_id="kai")
    await drained(engine)
    first = await c.context("kai-new", window=8000, after_seq=ack.seq)
    assert first.user_memory is None

    async def from_cache() -> bool:  # a request while no projector committed is answered from the cache
        hits = engine.service.tier1_cache.hits
        again = await c.context("kai-new", window=8000)
        assert again.user_memory is None
        return engine.service.tier1_cache.hits > hits

    await wait_until(from_cache, timeout=30, interval=0.05)

    await c.record_turn("kai-old", "user", "Please always answer in French.", user_id="kai")
    await drained(engine)

    async def active() -> object:
        return await engine.pool.fetchval(
            "SELECT memory_id FROM memory_items WHERE user_id = 'kai' AND status = 'active' AND text ILIKE '%French%'")

    memory_id = str(await wait_until(active, timeout=60, interval=0.05))
    ctx = await c.context("kai-new", window=8000)
    assert ctx.user_memory is not None and memory_id in ctx.user_memory.memory_ids


async def _mixed_thread(engine: Engine, thread: str, turns: int) -> int:
    """A thread of user questions, assistant thinking + tool calls, long tool answers and replies; returns the last
    seq."""
    c = engine.client()
    ack = None
    for i in range(turns):
        await c.record_turn(thread, "user", f"question {i}: what about topic {i % 7} and the weather in town {i}?",
                            user_id="ana")
        await c.record_turn(thread, "assistant", [ThinkingBlock(thinking="let me look " * 20),
                                                  ToolUseBlock(id=f"call-{i}", name="search", input={"q": str(i)})])
        await c.record_turn(thread, "tool", [ToolResultBlock(tool_use_id=f"call-{i}",
                                                             content=f"result {i} " + "data " * 300)])
        ack = await c.record_turn(thread, "assistant", f"answer {i}: it is sunny in town {i}.")
    assert ack is not None
    return ack.seq


async def test_the_bounded_window_places_what_the_whole_thread_places(settings: Settings) -> None:
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:  # nothing pruned
        last = await _mixed_thread(engine, "mixed", 60)
        c = engine.client()
        await c.context("mixed", window=8_000, after_seq=last)  # the read model holds every turn from here on
        records = await engine.pool.fetch(
            "SELECT seq, event_id::text, role, user_id, session_id, occurred_at, content::text,"
            " content_condensed::text, tokens_full, tokens_condensed, tool_use_ids, tool_result_ids FROM messages"
            " WHERE thread_id = 'mixed' ORDER BY seq")
        rows = [Row._make(tuple(r)) for r in records]
        for window in (2_000, 8_000, 32_000, 128_000):
            ctx = await c.context("mixed", window=window, after_seq=last)
            budget = plan_budget(window, margin_ratio=engine.settings.margin_ratio,
                                 reserve_ratio=engine.settings.output_reserve_ratio)
            want = assemble(rows, budget, full_recent_count=engine.settings.full_recent_count)
            got = [m for m in ctx.messages if m.tier != 1]
            assert ctx.mode == want.mode
            assert [(m.seq, m.tier, m.tokens, m.condensed) for m in got] == [
                (p.row.seq, p.tier, p.tokens, p.tier == 2 and p.row.content_condensed is not None)
                for p in want.placed]
            assert [m.content for m in got] == [msgspec.json.decode(p.content) for p in want.placed]
            assert any(m.condensed for m in got) or ctx.mode == "full"

