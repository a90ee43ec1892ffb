"""Progress as periodic plain lines on stderr, for runs whose stderr is not a terminal (issue #15 item 5).

A rich bar on a pipe or a log file is either nothing (rich disables itself) or a screenful of control codes; a
command that folds for 34 s without a word looks hung. ``ProgressLines`` prints one line when a phase starts, then
at most one line every ``every`` seconds, then one when it ends::

    projecting: 1,200/5,000 (2,400 events/s)

The terminal keeps its rich bars (``engine.ops.publish``, ``engine.cli.ops``); ``mode(quiet)`` says which to draw.
A step without a count (deriving, embedding: the first run loads the model) is named by ``said_if_slow`` once it
has taken a second, so a quick read command stays silent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable
from typing import Literal, TextIO, TypeVar

T = TypeVar("T")

#: Seconds between two progress lines of one phase.
EVERY_S = 2.0


def mode(quiet: bool, stream: TextIO | None = None) -> Literal["bar", "lines", "off"]:
    """How to show progress on ``stream`` (default stderr): ``off`` when ``quiet`` (``--json``, tests, benchmarks),
    ``bar`` on a terminal, else ``lines``."""
    if quiet:
        return "off"
    return "bar" if (stream or sys.stderr).isatty() else "lines"


#: Seconds a step may take before ``said_if_slow`` names it.
SLOW_S = 1.0


async def said_if_slow(step: Awaitable[T], text: str, *, enabled: bool, after: float = SLOW_S,
                       stream: TextIO | None = None) -> T:
    """Await ``step``; if ``enabled`` and it is still running after ``after`` seconds, print ``text`` on stderr, and
    ``text: done in N s`` when it ends. Cancelling the caller cancels the step."""
    import asyncio  # here: the CLI imports this module at start, and `memengine --help` must not load asyncio

    if not enabled:
        return await step
    task = asyncio.ensure_future(step)
    t0 = time.monotonic()
    try:
        done, _ = await asyncio.wait({task}, timeout=after)
        if done:
            return task.result()
        lines = ProgressLines(text, stream=stream)
        lines.say(text)
        result = await task
        lines.say(f"{text}: done in {time.monotonic() - t0:.1f} s")
        return result
    except BaseException:
        task.cancel()
        raise


class ProgressLines:
    """One phase's progress as plain lines: ``update(done, total)`` prints at most every ``every`` seconds;
    ``finish(done)`` prints the last figure. ``enabled`` false: silent. ``unit``: what ``done`` counts."""

    def __init__(self, label: str, *, enabled: bool = True, unit: str = "events", every: float = EVERY_S,
                 stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.unit = unit
        self.every = every
        self.stream = stream
        self.t0 = time.monotonic()
        self.last = float("-inf")
        self.done = 0
        self.total: int | None = None

    def say(self, text: str) -> None:
        """One line on the stream (stderr), flushed: the phase is named before a long silent step starts."""
        if self.enabled:
            out = self.stream or sys.stderr
            out.write(f"{text}\n")
            out.flush()

    def update(self, done: int, total: int | None = None) -> None:
        """Record ``done`` of ``total``; print a line when ``every`` seconds passed since the last one."""
        self.done, self.total = done, total if total is not None else self.total
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self.say(self.line())

    def finish(self, done: int | None = None) -> None:
        """Print the final figure (once per phase)."""
        if done is not None:
            self.done = done
        self.say(self.line() + " done")

    def line(self) -> str:
        """``label: done/total (rate unit/s)``."""
        rate = self.done / max(time.monotonic() - self.t0, 1e-6)
        of = f"/{self.total:,}" if self.total else ""
        return f"{self.label}: {self.done:,}{of} {self.unit} ({rate:,.0f} {self.unit}/s)"
