"""Two ``try_start()`` calls of one follower start it once. ``run()`` restarts a stopped runner by itself, so a caller
that stops and restarts one (``test_bad_input.py``'s ``test_apply_error_isolates_one_event``) raced it: the second
call released the lock the first had just taken (``try_start`` first drops a lock left from a failed start), took it
again and bound the durable consumer a second time; the first puller, overwritten, kept the messages it had fetched
unacknowledged, and the context lacked the last turn (flaky under load)."""

from __future__ import annotations

import asyncio

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan

pytestmark = pytest.mark.integration


async def test_concurrent_try_start_starts_once(settings: Settings) -> None:
    async with lifespan(settings, run_projector=False) as engine:
        runner = engine.derived  # no run() loop here: the test drives it
        await runner.stop()
        starts = 0
        start = runner.start

        async def counted() -> None:
            nonlocal starts
            starts += 1
            await start()

        runner.start = counted  # type: ignore[method-assign]
        first = asyncio.create_task(runner.try_start())
        while not runner._lock.held:  # the first holds the lock and is binding
            await asyncio.sleep(0)
        assert not first.done()
        assert await runner.try_start()
        assert await first
        assert starts == 1
        assert runner.active and runner._lock.held
    assert not engine.stalled
