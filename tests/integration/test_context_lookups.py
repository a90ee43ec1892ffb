"""Context in a few index lookups (issue #13 item 3), on the real servers.

- The window statement sums tokens over the thread's newest rows only and widens the scan when every scanned row
  could still fit: a thread of thinking-only turns (condensed cost 0: every row stays a Tier-2 candidate) longer
  than the first scan is still fetched whole, as the unbounded window sums fetched it.
- The Tier-1 parts are served from a cache only while no projector has committed: a memory item derived after a
  context was answered reaches the next context even though the cache's time bound has not passed.
- Content is fetched only for the rows that can be placed, and the reply is the same as with every row's content
  (with tool calls, condensed Tier 2, and orphaned tool answers among the newest rows, which force a refetch).
"""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read import service as service_module
from memengine.engine.wire.requests import ContextRequest
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


async def test_tier1_cache_is_dropped_when_a_projector_commits(engine: Engine) -> None:
    engine.service.tier1_cache.ttl = 3600.0  # only the read models' state may end an entry here
    c = engine.client()
    ack = await c.record_turn("kai-new", "user", "How should you answer me, and in which language?", user_id="kai")
    await drained(engine)  # no projector commits between the two requests
    first = await c.context("kai-new", window=8000, after_seq=ack.seq)
    again = await c.context("kai-new", window=8000)
    assert first.user_memory is None and again.user_memory is None
    assert engine.service.tier1_cache.hits >= 1  # the second request was answered from the cache

    await c.record_turn("kai-old", "user", "Please always answer in French.", user_id="kai")
    await drained(engine)

    async def active() -> object:
        return await engine.pool.fetchval(
            "SELECT memory_id FROM memory_items WHERE user_id = 'kai' AND status = 'active' AND text ILIKE '%French%'")

    memory_id = str(await wait_until(active, timeout=60, interval=0.05))
    ctx = await c.context("kai-new", window=8000)
    assert ctx.user_memory is not None and memory_id in ctx.user_memory.memory_ids


async def test_content_only_for_placeable_rows_answers_as_the_whole_window(settings: Settings,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:
        c = engine.client()
        lorem = "the agent asks for context within its budget and gets the condensed middle. "
        for i in range(60):
            await c.record_turn("mixed", "user", f"question {i}: " + lorem * (1 + i % 3), user_id="ann")
            await c.record_turn("mixed", "assistant", [ThinkingBlock(thinking=lorem * 4), TextBlock(text=lorem)])
            await c.record_turn("mixed", "assistant", [ToolUseBlock(id=f"c{i}", name="run", input={"q": i})])
            await c.record_turn("mixed", "tool", [ToolResultBlock(tool_use_id=f"c{i}", content=lorem * 6)])
        ack = await c.record_turn("mixed", "assistant", "done")
        await c.context("mixed", window=8000, after_seq=ack.seq)
        # the newest rows answer calls that are not in the thread: Tier 3 reaches further back than its count
        for i in range(12):
            last = await c.record_turn("orphans", "tool", [ToolResultBlock(tool_use_id=f"gone{i}", content=lorem)])
        for i in range(40):
            last = await c.record_turn("orphans", "user", f"older question {i}: " + lorem)
        for i in range(12):
            last = await c.record_turn("orphans", "tool", [ToolResultBlock(tool_use_id=f"x{i}", content=lorem)])
        await c.context("orphans", window=2000, after_seq=last.seq)
        svc = engine.service

        async def replies() -> list[object]:
            out = []
            for thread in ("mixed", "orphans"):
                for window in (1000, 2000, 4000, 8000, 32000):
                    reply = await svc.context(ContextRequest(tenant="default", thread=thread, window=window))
                    r = msgspec.json.decode(msgspec.json.encode(reply))
                    r.pop("waited_ms")
                    out.append(r)
            return out

        tight = await replies()
        whole_window = svc._window

        async def every_row_with_content(req, budget, tier2):  # type: ignore[no-untyped-def]
            return await whole_window(req, budget, None)

        monkeypatch.setattr(svc, "_window", every_row_with_content)
        assert tight == await replies()
        assert any(m["tier"] == 2 for r in tight for m in r["messages"])  # Tier 2 was exercised
