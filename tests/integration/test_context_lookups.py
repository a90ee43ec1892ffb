"""Context in a few index lookups (issue #13 item 3), on the real servers.

- The window statement sums tokens over the thread's newest rows only and widens the scan when every scanned row
  could still fit: a thread of thinking-only turns (condensed cost 0: every row stays a Tier-2 candidate) longer
  than the first scan is still fetched whole, as the unbounded window sums fetched it.
- A thread seen before is scanned as far as what qualified in it last time (plus a margin): when it has grown by
  cheap rows since, that short scan is widened until it is exact, so the whole thread still comes back.
- The Tier-1 parts are served from a cache only while no projector has committed: a memory item derived after a
  context was answered reaches the next context even though the cache's time bound has not passed.
"""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read import service as service_module
from memengine.events import TextBlock, ThinkingBlock
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
