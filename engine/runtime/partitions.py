"""Partitioned projectors (issue #6): the partition runners of one projector that this process owns, driven as one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from memengine.engine.adapters.checkpoints import CheckpointStore
from memengine.engine.runtime.runner import ProjectorRunner, RunnerStats
from memengine.projections.ops import Projection


class RunnerGroup:
    """The partition runners of one projector that this process owns, driven as one runner (issue #6).

    Offers what the composition root, the CLI and the operations use of a ``ProjectorRunner``: ``name``,
    ``projections``, ``active``, ``stats``, ``try_start``, ``run``, ``catch_up``, ``flush``, ``stop``. Each partition
    takes its own lock, so several processes given overlapping partitions share them: one owner per partition, the
    others stand by and take over."""

    def __init__(self, name: str, runners: Sequence[ProjectorRunner]) -> None:
        if not runners:
            raise ValueError("a runner group needs at least one partition")
        self.name = name
        self.runners = list(runners)

    @property
    def projections(self) -> tuple[Projection, ...]:
        """What every partition folds (the same projections, each over its share of the threads)."""
        return self.runners[0].projections

    @property
    def active(self) -> bool:
        """True when at least one partition of the group is held and bound here."""
        return any(r.active for r in self.runners)

    @property
    def stats(self) -> RunnerStats:
        """Counters summed over the partitions; ``last_seq`` is the lowest partition checkpoint."""
        parts = [r.stats for r in self.runners]
        return RunnerStats(events=sum(s.events for s in parts), skipped=sum(s.skipped for s in parts),
                           dead=sum(s.dead for s in parts), batches=sum(s.batches for s in parts),
                           retries=sum(s.retries for s in parts), last_seq=min(s.last_seq for s in parts),
                           started=min(s.started for s in parts))

    async def try_start(self) -> bool:
        """Start every partition whose lock is free; ``True`` if any of them runs here (see ``active``)."""
        return any([await r.try_start() for r in self.runners])

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(r.run(stop) for r in self.runners))

    async def catch_up(self, *, timeout: float | None = None,
                       progress: Callable[[int, int], None] | None = None) -> int:
        """Fold the partitions held here to the stream's current end, concurrently, then wait until the partitions
        other processes hold reach it too; returns that sequence. ``TimeoutError`` after ``timeout`` seconds."""
        held = [r for r in self.runners if r.active]
        others = [r for r in self.runners if not r.active]
        deadline = None if timeout is None else time.monotonic() + timeout

        def report(_done: int, target: int) -> None:
            if progress is not None:
                progress(min(r.stats.last_seq for r in held), target)

        target = (await self.runners[0].js.stream_info(self.runners[0].source.stream)).state.last_seq
        if held:
            target = max(await asyncio.gather(*(r.catch_up(timeout=timeout, progress=report) for r in held)))
        keys = [k for r in others for k in r.checkpoint_keys]
        store = CheckpointStore(self.runners[0].pool)
        while keys:
            low = await store.low(keys)
            if (low or 0) >= target:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"projector {self.name}: partitions held elsewhere at {low or 0} of {target}")
            await asyncio.sleep(0.05)
        return target

    async def flush(self) -> None:
        for r in self.runners:
            await r.flush()

    async def stop(self) -> None:
        for r in self.runners:
            await r.stop()


def build_projector(*, partitions: int = 1, owned: Collection[int] | None = None,
                    **kwargs: Any) -> "ProjectorRunner | RunnerGroup":
    """A ``ProjectorRunner`` (``partitions`` = 1, exactly the unpartitioned runner) or a ``RunnerGroup`` of the
    partitions ``owned`` (default all ``0..partitions-1``); ``kwargs`` go to ``ProjectorRunner``.
    ``ValueError`` for a partition outside ``0..partitions-1``."""
    if partitions <= 1:
        return ProjectorRunner(**kwargs)
    chosen = sorted(set(range(partitions) if owned is None else owned))
    return RunnerGroup(kwargs["name"], [ProjectorRunner(partition=i, partitions=partitions, **kwargs)
                                        for i in chosen])
