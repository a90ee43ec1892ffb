"""Planner statistics that follow a projector's tables as they grow: ANALYZE after every 10 % of growth, in the
background of the fold. Split from engine/runtime/runner.py (issue #10: modules of at most 600 lines).

Right after a bulk ingest the planner still believes the tables are empty and picks sequential scans inside the
context query's per-row lookups: measured 1.1 s instead of 4 ms per request on 20k turns, until autovacuum's next
analyze (up to a minute later). ANALYZE samples, so it stays cheap on large tables, but not free: ~110 ms at 50k
turns, 16 times in a 50k-turn ingest; run inside the commit path, the next batch waited for each (1.8 s of a 6.4 s
run, issue #13 item 1). So it runs as a task of its own on its own pool connection (ANALYZE's SHARE UPDATE
EXCLUSIVE lock does not block the folds' inserts), one at a time per projector.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg
import structlog

log = structlog.get_logger("memengine.runner")


class TableStatistics:
    """ANALYZE of ``tables`` (sorted, so that two projectors lock shared ones in one order) each time the rows applied
    since the last one reach 10 % of what the tables held then (at least 1,000). ``target``: the
    ``default_statistics_target`` for it (``None``: the server's; scratch folds take a small one,
    engine/ops/scratch.py). ``name`` labels the task and the log lines."""

    def __init__(self, pool: asyncpg.Pool, tables: Sequence[str], *, target: int | None, name: str) -> None:
        self.pool = pool
        self.tables = sorted(set(tables))
        self.target = target
        self.name = name
        self._since = 0  # rows applied since the last ANALYZE started
        self._rows = 0  # the tables' estimated rows at the last ANALYZE
        self._task: asyncio.Task[None] | None = None

    def every(self) -> int:
        """Rows applied between two ANALYZEs: 10 % of the tables' rows at the last one, at least 1,000."""
        return max(1000, self._rows // 10)

    def grew(self, rows: int) -> None:
        """Count ``rows`` applied (after a commit); start the ANALYZE task when they reach ``every()`` and none is in
        flight. Never waits."""
        self._since += rows
        if self._since >= self.every() and (self._task is None or self._task.done()):
            self._since = 0
            self._task = asyncio.create_task(self._analyze(), name=f"analyze-{self.name}")

    async def settled(self) -> None:
        """Wait for the ANALYZE in flight, if any (failures are logged, not raised)."""
        if self._task is not None:
            await self._task

    async def _analyze(self) -> None:
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                if self.target is not None:
                    await conn.execute(f"SET LOCAL default_statistics_target = {int(self.target)}")
                await conn.execute("ANALYZE " + ", ".join(self.tables))
                rows = await conn.fetchval(
                    "SELECT coalesce(sum(reltuples), 0)::bigint FROM pg_class WHERE relname = ANY($1::text[])",
                    self.tables)
        except Exception as exc:  # noqa: BLE001 - statistics are an optimisation; the next commit tries again
            log.warning("analyze failed", projector=self.name, error=repr(exc))
            self._since = max(self._since, self.every())
            return
        self._rows = int(rows)
