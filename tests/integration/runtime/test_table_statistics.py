"""Planner statistics follow the read models in the background (engine/runtime/statistics.py, issue #13 item 1): the
commit path never waits for an ANALYZE, yet a fold that returns (``catch_up``) leaves statistics of what it folded."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.runtime.statistics import TableStatistics
from memengine.events import TextBlock

pytestmark = pytest.mark.integration


async def _reltuples(pool: asyncpg.Pool, table: str) -> float:
    return float(await pool.fetchval("SELECT reltuples FROM pg_class WHERE relname = $1", table))


async def test_analyze_runs_beside_the_caller_and_follows_growth(settings: Settings) -> None:
    pool = await asyncpg.create_pool(settings.database_url, min_size=2, max_size=4)
    try:
        await pool.execute("CREATE TABLE stats_t (i int)")
        assert await _reltuples(pool, "stats_t") == -1  # never analyzed
        stats = TableStatistics(pool, ["stats_t"], target=10, name="test")
        await pool.execute("INSERT INTO stats_t SELECT generate_series(1, 999)")
        stats.grew(999)  # below the first threshold (1,000): no ANALYZE
        await stats.settled()
        assert await _reltuples(pool, "stats_t") == -1
        # the holder of a lock ANALYZE needs keeps it waiting; grew() returns at once all the same
        async with pool.acquire() as blocker, blocker.transaction():
            await blocker.execute("LOCK TABLE stats_t IN SHARE UPDATE EXCLUSIVE MODE")
            await pool.execute("INSERT INTO stats_t SELECT generate_series(1, 1001)")
            stats.grew(1001)
            await asyncio.sleep(0.2)
            assert await _reltuples(pool, "stats_t") == -1  # still waiting for the lock
        await asyncio.wait_for(stats.settled(), 10)
        assert await _reltuples(pool, "stats_t") == 2000
        # next threshold: 10 % of 2,000 is below the floor of 1,000
        await pool.execute("INSERT INTO stats_t SELECT generate_series(1, 600)")
        stats.grew(600)
        await stats.settled()
        assert await _reltuples(pool, "stats_t") == 2000
        stats.grew(400)
        await stats.settled()
        assert await _reltuples(pool, "stats_t") == 2600
    finally:
        await pool.close()


async def test_a_fold_returns_with_statistics_of_what_it_folded(settings: Settings) -> None:
    async with lifespan(settings, roles={"projector"}, run_projector=False) as engine:
        client = engine.client()
        await asyncio.gather(*(client.record_turn(f"t{i % 3}", "user", [TextBlock(text=f"turn {i}")])
                               for i in range(1200)))
        assert engine.runner.active  # a one-shot engine took the lock; catch_up() folds here
        async with engine.pool.acquire() as blocker, blocker.transaction():
            # ANALYZE waits for this lock; the fold's inserts do not
            await blocker.execute("LOCK TABLE messages IN SHARE UPDATE EXCLUSIVE MODE")
            fold = asyncio.create_task(engine.runner.catch_up(timeout=60))
            for _ in range(600):
                if await engine.pool.fetchval("SELECT count(*) FROM messages") == 1200 or fold.done():
                    break
                await asyncio.sleep(0.05)
            assert await engine.pool.fetchval("SELECT count(*) FROM messages") == 1200  # folded past the ANALYZE
            await asyncio.sleep(0.3)
            assert not fold.done()  # ... but catch_up() waits for it
        await asyncio.wait_for(fold, 30)
        # analyzed at the first step of growth (1,000 rows), and done before catch_up returned
        assert 1000 <= await _reltuples(engine.pool, "messages") <= 1200
