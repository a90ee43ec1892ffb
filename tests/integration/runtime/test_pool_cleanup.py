"""A connection held for good (an advisory lock's, a LISTEN's) goes back to the pool even when its release is
cancelled midway, and cancelled again: ``engine.adapters.tasks.cancel_and_wait`` re-cancels a task every 0.1 s while
its cleanup runs. A connection lost there held ``asyncpg.Pool.close()`` at the engine's teardown until the step was
abandoned (``teardown steps overran: ['pool']``, a flaky ERROR of ``tests/integration/bad_input/test_bad_input.py``
under load: a projector runner cancelled while starting released its lock in ``except BaseException``, and the
re-cancel landed in the unlock statement, skipping ``Pool.release``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import pytest

from memengine.engine.adapters import postgres as db
from memengine.engine.adapters.locks import AdvisoryLock
from memengine.engine.read.progress import ProgressWatcher
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool(fresh_db: str) -> AsyncIterator[asyncpg.Pool]:
    p = await db.create_pool(fresh_db, max_size=4)
    try:
        yield p
    finally:
        p.terminate()  # never close(): on a leak it would wait forever


async def _cancel_twice_midway(release: Callable[[], Awaitable[None]]) -> None:
    """Run ``release()`` to its first round trip, cancel it there, let its cleanup start, cancel it again."""
    task = asyncio.create_task(release())
    await asyncio.sleep(0)  # the task runs up to its first statement's reply
    task.cancel()
    await asyncio.sleep(0)  # it is in its cleanup now
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _all_back(pool: asyncpg.Pool) -> None:
    async def idle() -> bool:
        return pool.get_idle_size() == pool.get_size()

    await wait_until(idle)


async def test_lock_release_cancelled_still_returns_its_connection(pool: asyncpg.Pool) -> None:
    lock = AdvisoryLock(pool, "cleanup-test")
    assert await lock.acquire()
    await _cancel_twice_midway(lock.release)
    assert not lock.held
    await _all_back(pool)
    # the session lock went with the pool's reset: another session takes it at once
    other = AdvisoryLock(pool, "cleanup-test")
    assert await other.acquire()
    await other.release()


async def test_progress_watcher_stop_cancelled_still_returns_its_connection(pool: asyncpg.Pool) -> None:
    watcher = ProgressWatcher(pool)
    await watcher.start()
    assert pool.get_idle_size() < pool.get_size()  # its LISTEN connection is out
    await _cancel_twice_midway(watcher.stop)
    await _all_back(pool)
