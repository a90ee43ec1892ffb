"""A context with a query costs one recall more than without, not one recall plus Tier 1 (issue #27 item 5).

``bench/context_query.py`` measured the context with a query at recall + ~80 ms p50 (100k stored, loaded machine):
the thread's Tier-1 parts and the user-memory statement ran only after the query's recall had returned, although
they read the query and the thread's user, never the recalled rows. Here the query's recall is held until Tier 1's
statements have started: on the code before, they never start while it is held (the test fails on its wait); now
they run beside it, for a given query and for the live question, and the answer is the same as unheld.

After them, what was left was statements in series: the recall, then the hits' transcript rows, then the pruned
hits' recall rows, then (after assembly) the content of placed window rows: each a round trip and a pool reset on
the answer's path (~12 ms + ~11 ms on the loaded 100k store). The hits' rows now come in the recall's own statement
and the window is read whole beside it, so nothing is fetched after assembly.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.read.context_sql import CONTENT_SQL
from memengine.engine.wire.requests import ContextRequest
from tests.integration.context.test_context_live import QUESTION, long_thread, placed

pytestmark = pytest.mark.integration


def _shape(ctx: Any) -> Any:
    """What a context answers, without timings."""
    return msgspec.json.decode(msgspec.json.encode(msgspec.structs.replace(ctx, waited_ms=0.0)))


async def _settled(engine: Engine) -> None:
    """Until no projector committed for 2 s (the checkpoints' count and sum unchanged), at most 60 s."""
    sql = "SELECT count(*) || ':' || coalesce(sum(last_seq), 0) FROM projection_checkpoints"
    before = await engine.pool.fetchval(sql)
    for _ in range(30):
        await asyncio.sleep(2)
        now = await engine.pool.fetchval(sql)
        if now == before:
            return
        before = now


@pytest.mark.parametrize("query", [QUESTION, None], ids=["given", "live"])
async def test_tier1_statements_run_while_the_query_is_recalled(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                                                query: str | None) -> None:
    client = engine.client("acme")
    # maya's own words in another thread that the question matches: the user-memory part has a line to show
    await client.record_turn("t0", "user", "Zelda sends me postcards from her new city every month.", user_id="maya")
    fact, last = await long_thread(client)
    svc = engine.service
    req = ContextRequest(tenant="acme", thread="t", window=1000, query=query)
    await client.context("t", window=1000, after_seq=last)  # the read models hold the thread
    # and the recall rows Tier 2's relevance reads (their own consumer, behind the context read models under load)
    assert (await client.recall("Zelda", thread="t", after_seq=last)).applied_seq >= last
    await _settled(engine)  # the enricher's items and summary are in: both answers read the same read models
    svc.tier1_cache.clear()
    unheld = await svc.context(req)

    gate = asyncio.Event()
    started: list[str] = []
    returned: dict[str, Any] = {}

    def traced(obj: Any, name: str, hold: bool = False) -> None:
        inner = getattr(obj, name)

        async def call(*a: Any, **kw: Any) -> Any:
            started.append(name)
            if hold:
                await gate.wait()
            returned[name] = await inner(*a, **kw)
            return returned[name]

        monkeypatch.setattr(obj, name, call)

    traced(svc.recaller, "thread_ranked", hold=True)
    traced(svc.memory, "tier1_parts")
    traced(svc, "_user_memory")
    svc.tier1_cache.clear()  # each part reads its statement again
    task = asyncio.create_task(svc.context(req))
    try:
        async def both_started() -> None:
            while not {"tier1_parts", "_user_memory"} <= set(started):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(both_started(), timeout=10)
        assert not task.done() and "thread_ranked" in started
    finally:
        gate.set()
    ctx = await task
    assert placed(ctx, fact) == "relevance"
    # the user-memory part found maya's turn in t0 (Tier 1 of a 1,000-token window may have no room to show it)
    assert returned["_user_memory"] is not None and returned["_user_memory"].lines
    assert _shape(ctx) == _shape(unheld)


@pytest.mark.parametrize("query", [QUESTION, None], ids=["given", "live"])
async def test_the_query_part_is_one_statement_and_nothing_is_fetched_after_assembly(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, query: str | None) -> None:
    client = engine.client("acme")
    fact, last = await long_thread(client)
    await client.context("t", window=1000, after_seq=last)  # the read models hold the thread
    # and the recall rows Tier 2's relevance reads (their own consumer, behind the context read models under load)
    assert (await client.recall("Zelda", thread="t", after_seq=last)).applied_seq >= last
    statements: list[str] = []
    real = asyncpg.connection.Connection.fetch

    async def fetch(self: Any, sql: str, *args: Any, **kw: Any) -> Any:
        statements.append(sql)
        return await real(self, sql, *args, **kw)

    monkeypatch.setattr(asyncpg.connection.Connection, "fetch", fetch)
    ctx = await engine.service.context(ContextRequest(tenant="acme", thread="t", window=1000, query=query))
    monkeypatch.undo()
    assert placed(ctx, fact) == "relevance"
    recalls = [s for s in statements if "top AS MATERIALIZED" in s]  # the thread's recall (recall_thread)
    # one statement ranks the hits and reads their rows (transcript and pruned)
    assert len(recalls) == 1 and "FROM messages m" in recalls[0] and "message_prune_marks" in recalls[0]
    assert CONTENT_SQL not in statements  # the window came whole: no round trip after assembly
