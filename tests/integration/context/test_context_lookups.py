"""Context in a few index lookups (issue #13 item 3), on the real servers.

- The window statement sums tokens over the thread's newest rows only and widens the scan when every scanned row
  could still fit: a thread of thinking-only turns (condensed cost 0: every row stays a Tier-2 candidate) longer
  than the first scan is still fetched whole, as the unbounded window sums fetched it.
- A thread seen before is scanned as far as what qualified in it last time (plus a margin): when it has grown by
  cheap rows since, that short scan is widened until it is exact, so the whole thread still comes back.
- The Tier-1 parts are served from a cache only while no projector has committed: a memory item derived after a
  context was answered reaches the next context even though the cache's time bound has not passed.
- The window statement returns content only for the rows likely placed and the rest after assembly: every message
  carries its stored content in its tier's form, and placement equals assembling the rows that can still fit, read
  whole (tool calls and answers, orphaned answers, thinking-only turns, long tool output; tiered and full; with and
  without a query).
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


async def test_content_fetched_after_placement_matches_the_full_rows(settings: Settings) -> None:
    """The window statement returns no content; the content of the rows placed comes after assembly. The reply must
    be what assembling the full rows gives (the rows main's statement fetched: those that can still fit or are among
    the most recent), with each message's stored content in the form its tier shows: through tool calls with
    their answers, an answer whose call is not in the thread (dropped as an orphan), thinking-only turns (condensed
    away) and long tool output (condensed), in tiered and full mode, with and without a query."""
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:  # nothing pruned
        for thread, turns, orphans in (("mix", 60, True), ("clean", 12, False)):
            await _mixed_thread(engine, thread, turns, orphans)
            modes = await _same_as_full_rows(engine, thread)
            assert modes == ({"tiered"} if orphans else {"full", "tiered"})  # an orphan is dropped: never full


async def _mixed_thread(engine: Engine, thread: str, turns: int, orphans: bool) -> None:
    from memengine.events import ToolResultBlock, ToolUseBlock

    c = engine.client()
    ack = None
    for i in range(turns):
        await c.record_turn(thread, "user", [TextBlock(text=f"question {i} about the harbour crane {i % 7}")],
                            user_id="ada")
        if i % 5 == 0:
            await c.record_turn(thread, "assistant", [ThinkingBlock(thinking="hmm " * 30)])
        if i % 3 == 0:
            await c.record_turn(thread, "assistant", [TextBlock(text="checking"),
                                                      ToolUseBlock(id=f"call-{i}", name="look", input={"i": i})])
            await c.record_turn(thread, "tool", [ToolResultBlock(tool_use_id=f"call-{i}",
                                                                 content=f"crane {i} log " * 120)])
        if orphans and i % 11 == 4:
            await c.record_turn(thread, "tool", [ToolResultBlock(tool_use_id=f"gone-{i}", content="late answer")])
        ack = await c.record_turn(thread, "assistant", [ThinkingBlock(thinking="so"),
                                                        TextBlock(text=f"answer {i} " * 15)])
    assert ack is not None
    await c.context(thread, window=8000, after_seq=ack.seq)


async def _same_as_full_rows(engine: Engine, thread: str) -> set[str]:
    from memengine.engine.read.context import Row, assemble

    c = engine.client()
    async with engine.pool.acquire() as conn:
        stored = [Row._make(tuple(r)) for r in await conn.fetch(
            "SELECT seq, event_id::text, role, user_id, session_id, occurred_at, content::text,"
            " content_condensed::text, tokens_full, tokens_condensed, tool_use_ids, tool_result_ids"
            " FROM messages WHERE tenant_id = 'default' AND thread_id = $1 ORDER BY seq", thread)]
    by_seq = {r.seq: r for r in stored}
    recent = engine.settings.full_recent_count + 1
    modes = set()
    for window in (1500, 3000, 8000, 16000, 128_000):
        for query in ("", "harbour crane 3"):  # "": no query (None would ask the live question, issue #27)
            ctx = await c.context(thread, window=window, query=query)
            modes.add(ctx.mode)
            shown = [m for m in ctx.messages if m.tier != 1]
            for m in shown:  # every message carries its own stored content, in its tier's form
                row = by_seq[m.seq]
                want = row.content_condensed if m.tier == 2 and row.content_condensed is not None else row.content
                assert _blocks(m.content) == msgspec.json.decode(want), (window, m.seq)
            if query:
                continue
            # main's rows: newest first, those that can still fit the budget or are among the most recent
            total, cf, cc, sel = ctx.budget.total, 0, 0, []
            for rn, r in enumerate(reversed(stored), 1):
                cf += r.tokens_full
                cc += r.tokens_condensed
                if cf - r.tokens_full < total or cc - r.tokens_condensed < total or rn <= recent:
                    sel.append(r)
            sel.reverse()
            ref = assemble(sel, ctx.budget, full_recent_count=engine.settings.full_recent_count,
                           complete=len(sel) == len(stored))
            if ref.mode == "tiered" and ctx.tokens["tier1"] < ctx.budget.tier1 and ref.dropped:
                # Tier 1 took less than its share: placed again with what it took (issue #27 item 1)
                ref = assemble(sel, ctx.budget, full_recent_count=engine.settings.full_recent_count,
                               complete=len(sel) == len(stored), tier1_claim=ctx.tokens["tier1"])
            assert ctx.mode == ref.mode and ctx.dropped == ref.dropped, window
            assert [(m.seq, m.tier, m.chosen_by) for m in shown] == [
                (p.row.seq, p.tier, p.chosen_by) for p in ref.placed], window
            assert [_blocks(m.content) for m in shown] == [msgspec.json.decode(p.content) for p in ref.placed]
    return modes


def _blocks(content: object) -> object:
    """A reply message's content as plain JSON values (the client decodes it into blocks)."""
    return msgspec.json.decode(msgspec.json.encode(content))


async def test_a_row_deleted_between_the_two_statements_is_assembled_again(settings: Settings) -> None:
    """The latest user turn is inside the window but too old to be placed, so its text (which ranks the user's
    memory) comes from the second statement; a prune or withdrawal committing between the two statements deletes it.
    The service must assemble again on a fresh read, never answer with a row it could not read."""
    async with lifespan(msgspec.structs.replace(settings, enable_summary=False)) as engine:
        c = engine.client()
        user = await c.record_turn("gone", "user", [TextBlock(text="please keep my notes short")], user_id="ana")
        ack = None
        # long thinking (Tier 2 shows none of it): the whole thread does not fit, but 70 condensed turns do, so the
        # user turn is inside the window (it could still fit) and older than what Tier 2 places
        for i in range(70):
            ack = await c.record_turn("gone", "assistant", [ThinkingBlock(thinking="hmm " * 300),
                                                            TextBlock(text=f"note {i} " + "word " * 40)])
        assert ack is not None
        await c.context("gone", window=8000, after_seq=ack.seq)
        service = engine.service
        real = service._window
        reads = 0

        async def window_then_delete(req, budget, whole=False):  # type: ignore[no-untyped-def]
            nonlocal reads
            reads += 1
            records = await real(req, budget, whole)
            if reads == 1:
                got = {r["seq"]: r for r in records}
                assert user.seq in got and got[user.seq]["content"] is None  # in the window, read after assembly
                await engine.pool.execute("DELETE FROM messages WHERE thread_id = 'gone' AND seq = $1", user.seq)
            return records

        service._window = window_then_delete  # type: ignore[method-assign]
        try:
            # no query: with one (the live question included) the window is read whole, beside the recall
            ctx = await c.context("gone", window=8000, query="")
        finally:
            service._window = real  # type: ignore[method-assign]
        assert reads == 2
        assert ctx.mode == "tiered" and user.seq not in {m.seq for m in ctx.messages}
        assert ctx.messages[-1].seq == ack.seq
