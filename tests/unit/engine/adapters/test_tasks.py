"""``engine.adapters.tasks``: a teardown step that never finishes is abandoned after its deadline, named, and
forced; one that finishes is awaited as before (its errors propagate)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from memengine.engine.adapters.tasks import Teardown, cancel_and_wait, task_stacks


async def test_a_stalled_step_is_abandoned_named_and_forced() -> None:
    teardown = Teardown(step_s=0.05)
    forced: list[str] = []

    released = asyncio.Event()

    async def stuck() -> None:  # swallows its cancellation and keeps waiting, as a broken close() might
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)
        await released.wait()

    async def fine() -> None:
        await asyncio.sleep(0)

    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(teardown.step("fine", fine))
        stack.push_async_callback(teardown.step("pool", stuck, force=lambda: forced.append("pool")))
    assert teardown.stalled == ["pool"] and forced == ["pool"]
    released.set()  # the abandoned step ends now (it is not awaited by anyone)


async def test_a_steps_own_error_propagates() -> None:
    async def broken() -> None:
        raise RuntimeError("close failed")

    with pytest.raises(RuntimeError, match="close failed"):
        await Teardown(step_s=1.0).step("x", broken)()


async def test_tasks_that_ignore_cancel_are_named() -> None:
    teardown = Teardown(step_s=0.05)

    released = asyncio.Event()

    async def stubborn() -> None:  # ignores every cancellation until released
        while not released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await released.wait()

    polite = asyncio.create_task(asyncio.sleep(3600), name="polite")
    bad = asyncio.create_task(stubborn(), name="stubborn")
    await asyncio.sleep(0)
    assert any(line.startswith("stubborn: ") and "stubborn" in line.split(": ", 1)[1] for line in task_stacks())
    await teardown.cancel([polite, bad])
    assert polite.cancelled() and teardown.stalled == ["tasks stubborn"]
    released.set()
    await bad


async def test_a_lost_cancellation_is_repeated() -> None:
    # the Python 3.11 race (gh-86296): a task's first cancel() is swallowed, and it then waits forever
    forever = asyncio.Event()
    swallowed = []

    async def watch() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            swallowed.append(True)
        await forever.wait()

    task = asyncio.create_task(watch())
    await asyncio.sleep(0)
    assert await cancel_and_wait(task, every=0.01) is True
    assert swallowed == [True] and task.cancelled()
