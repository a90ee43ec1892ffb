"""Stopping tasks for sure, and bounded shutdown: every step of the lifespan's teardown gets a deadline, and a step
that overruns is logged with the stack of every task still alive, then forced where it can be (a pool terminated, a
connection closed).

Why: a CI run of the whole suite stalled for 80 minutes after a test that ends its engine with requests still
waiting (``tests/integration/context/test_rpc_concurrency.py``), and an unbounded ``await`` in a teardown
(``asyncpg.Pool.close()`` waits for every connection to be released; ``nats`` drains and flushes) gave no clue which
one. A process that is asked to stop must stop; one that cannot must say what held it (``Teardown.stalled``,
the log line).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog

log = structlog.get_logger("memengine.bootstrap")

#: Seconds one teardown step may take before it is abandoned (and forced where a force is given).
STEP_S = 20.0


async def cancel_and_wait(task: asyncio.Task[Any], *, every: float = 0.1, timeout: float | None = None) -> bool:
    """Cancel ``task`` and wait until it has ended, cancelling it again every ``every`` seconds while it runs;
    ``True`` once it ended, ``False`` if ``timeout`` seconds passed first. Its result or error is dropped.

    Why again: on Python 3.11 ``asyncio.wait_for`` (used inside nats-py and asyncpg) returns its inner result
    instead of raising when the cancellation and that result arrive in the same loop iteration (CPython gh-86296 and
    gh-107547, fixed in 3.12 by the rewrite on ``asyncio.timeout``), so one ``cancel()`` can be lost and a task
    that loops forever (a KV watch) then never ends: a single ``cancel(); await task`` was how a CI run stalled 80
    minutes."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while not task.done():
        task.cancel()
        wait = every if deadline is None else min(every, deadline - loop.time())
        if wait <= 0:
            return False
        await asyncio.wait({task}, timeout=wait)
    if not task.cancelled():
        task.exception()  # retrieved: the task reported its own failure
    return True


def task_stacks(limit: int = 10) -> list[str]:
    """One line per task alive in the running loop: ``name: file:line function <- ...`` (innermost frame last,
    at most ``limit`` frames), for the log line of a stalled step."""
    lines = []
    for task in asyncio.all_tasks():
        frames = task.get_stack(limit=limit)
        where = " <- ".join(f"{f.f_code.co_filename.rsplit('/', 2)[-1]}:{f.f_lineno} {f.f_code.co_name}"
                            for f in reversed(frames))
        lines.append(f"{task.get_name()}: {where or '(not started)'}")
    return sorted(lines)


class Teardown:
    """Runs teardown steps each under ``step_s`` seconds; ``stalled`` names the steps that overran (tests assert it
    stays empty: a stalled step is a defect, not a slow machine)."""

    def __init__(self, step_s: float = STEP_S) -> None:
        self.step_s = step_s
        self.stalled: list[str] = []

    def step(self, name: str, close: Callable[[], Awaitable[Any]],
             force: Callable[[], Any] | None = None) -> Callable[[], Awaitable[None]]:
        """An async callback for ``AsyncExitStack.push_async_callback``: awaits ``close()`` for at most
        ``step_s`` seconds; past that cancels it, logs every live task's stack, calls ``force()`` if given, and
        returns (the remaining steps still run). ``close()``'s own errors propagate as before."""

        async def run() -> None:
            task = asyncio.ensure_future(close())
            # asyncio.wait, not wait_for: a step that swallows its cancellation must not hold the teardown
            done, _ = await asyncio.wait({task}, timeout=self.step_s)
            if task in done:
                task.result()
                return
            self._stalled(name)
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # abandoned: its end is not reported
            task.cancel()
            if force is not None:
                force()

        return run

    async def cancel(self, tasks: Iterable[asyncio.Task[Any]]) -> None:
        """Cancel ``tasks`` and wait at most ``step_s`` seconds for them all to end (their errors are dropped: a
        background task reports its own)."""
        tasks = [t for t in tasks if not t.done()]
        ended = await asyncio.gather(*(cancel_and_wait(t, timeout=self.step_s) for t in tasks))
        stuck = [t.get_name() for t, done in zip(tasks, ended, strict=True) if not done]
        if stuck:
            self._stalled("tasks " + ", ".join(sorted(stuck)))

    def _stalled(self, name: str) -> None:
        self.stalled.append(name)
        log.error("teardown step did not finish in time; abandoned", step=name, seconds=self.step_s,
                  tasks=task_stacks())
