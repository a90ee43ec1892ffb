"""Checkpoints: the position of record of every projection and follower (table ``projection_checkpoints``).

A row per projection (``<projection>``), or per partition of a partitioned projection (``<projection>@p<i>``, issue
#6): the last stream sequence whose effects are committed. The PostgreSQL row is the truth, never the consumer's ack
floor (docs/contributors/architecture.md). Commits announce progress on ``PROGRESS_CHANNEL`` (``pg_notify``) for
read-your-writes waiters.

``CheckpointStore`` is the one place that writes SQL against the table (the read side's ``ProgressWatcher`` keeps its
own read-only query); the predicates below are exported for queries that join it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import asyncpg

from memengine.engine.adapters.locks import lock_key

#: Channel on which committed progress is announced: payload ``{"projector": name, "seq": n}``.
PROGRESS_CHANNEL = "memengine_progress"

#: SQL: true for the checkpoint rows of projection $1 in every partition (``<projection>@p<i>``).
PARTITION_ROWS = "projection ~ ('^' || $1::text || '@p[0-9]+$')"

#: SQL: the projection a checkpoint row belongs to (its partition suffix removed).
BASE_PROJECTION = "regexp_replace(projection, '@p[0-9]+$', '')"

#: SQL: the checkpoint rows of projection $1, unpartitioned or per partition.
ROWS_OF = f"(projection = $1 OR {PARTITION_ROWS})"


def checkpoint_key(projection: str, partition: int | None = None) -> str:
    """Key of a projection's row in ``projection_checkpoints``: ``<projection>`` unpartitioned, else
    ``<projection>@p<i>`` (issue #6). The position of a partition row is a stream sequence of the facts stream: every
    event of that partition up to it is applied."""
    return projection if partition is None else f"{projection}@p{partition}"


class CheckpointStore:
    """The ``projection_checkpoints`` rows, read and written through ``db``: an ``asyncpg.Pool`` for single
    statements, or an ``asyncpg.Connection`` when the statement must join the caller's transaction (a projector's
    commit, a rebuild's swap). ``schema``: the schema holding the table (a rebuild's ``public`` or shadow schema);
    ``None`` resolves it through the connection's ``search_path`` (scratch folds put their schema first).

    Positions are stream sequences (``int``); a ``min`` over no rows is ``None``. Database errors propagate
    (``asyncpg`` exceptions; ``engine.adapters.postgres.is_transient`` tells which a retry can fix)."""

    def __init__(self, db: asyncpg.Pool | asyncpg.Connection, *, schema: str | None = None) -> None:
        self.db: Any = db
        self.table = "projection_checkpoints" if schema is None else f"{schema}.projection_checkpoints"

    # -- creation ------------------------------------------------------------------------------------------------

    async def lock_creators(self) -> None:
        """Serialise row creation for the rest of the caller's transaction (``db`` must be a connection in one):
        a switch between partitioned and unpartitioned rows reads the other kind."""
        await self.db.execute("SELECT pg_advisory_xact_lock($1)", lock_key("projection_checkpoints"))

    async def ensure(self, key: str, stream: str, *, version: int = 1) -> None:
        """Create the row ``key`` at position 0 if missing (a follower's own row, e.g. the enricher's)."""
        await self.db.execute(
            f"INSERT INTO {self.table} (projection, version, stream) VALUES ($1, $2, $3)"
            " ON CONFLICT (projection) DO NOTHING", key, version, stream)

    async def ensure_projection(self, projection: str, version: int, stream: str, *, partition: int | None = None,
                                partitions: int = 1) -> None:
        """Create the checkpoint row of ``projection`` (partition ``partition`` of ``partitions``) if missing,
        starting where the other kind of row stands. Call under ``lock_creators`` in the same transaction.

        Unpartitioned: a new ``<projection>`` row starts at the lowest partition row (every partition applied the
        log up to there; later events are re-read and skipped by ``applied_events``), and the partition rows go.
        Partition ``i`` of ``n``: a new ``<projection>@p<i>`` row starts at the ``<projection>`` row if any (else 0:
        a partition added by raising ``n`` only holds events stored since); the ``<projection>`` row goes once all
        ``n`` partition rows exist, and rows of partitions ``>= n`` go (raising or lowering ``n`` is safe once the
        projectors are drained: ``memengine status`` lag 0)."""
        t = self.table
        if partition is None:
            await self.db.execute(
                f"INSERT INTO {t} (projection, version, stream, last_seq)"
                f" SELECT $1, $2, $3, coalesce((SELECT min(last_seq) FROM {t} WHERE {PARTITION_ROWS}), 0)"
                " ON CONFLICT (projection) DO NOTHING",
                projection, version, stream,
            )
            await self.db.execute(f"DELETE FROM {t} WHERE {PARTITION_ROWS}", projection)
            return
        await self.db.execute(
            f"INSERT INTO {t} (projection, version, stream, last_seq)"
            f" SELECT $1, $2, $3, coalesce((SELECT last_seq FROM {t} WHERE projection = $4), 0)"
            " ON CONFLICT (projection) DO NOTHING",
            checkpoint_key(projection, partition), version, stream, projection,
        )
        await self.db.execute(
            f"DELETE FROM {t} WHERE {PARTITION_ROWS}"
            " AND substring(projection from '@p([0-9]+)$')::int >= $2", projection, partitions)
        await self.db.execute(
            f"DELETE FROM {t} WHERE projection = $1"
            f" AND (SELECT count(*) FROM {t} WHERE {PARTITION_ROWS}) >= $2",
            projection, partitions)

    # -- reading -------------------------------------------------------------------------------------------------

    async def position(self, key: str) -> int:
        """The position of row ``key`` (``TypeError`` if there is no such row: ``ensure`` it first)."""
        return int(await self.db.fetchval(f"SELECT last_seq FROM {self.table} WHERE projection = $1", key))

    async def positions(self, keys: Sequence[str], *, for_update: bool = False) -> dict[str, int]:
        """``{key: position}`` of the existing rows among ``keys``. ``for_update``: lock them for the caller's
        transaction (a projector's commit locks its rows first, as a rebuild's swap does: one lock order)."""
        rows = await self.db.fetch(
            f"SELECT projection, last_seq FROM {self.table} WHERE projection = ANY($1::text[])"
            + (" FOR UPDATE" if for_update else ""), list(keys))
        return {r["projection"]: r["last_seq"] for r in rows}

    async def low(self, keys: Sequence[str]) -> int | None:
        """The lowest position among the rows ``keys`` (exact keys), ``None`` when none exists."""
        low: int | None = await self.db.fetchval(
            f"SELECT min(last_seq) FROM {self.table} WHERE projection = ANY($1::text[])", list(keys))
        return low

    async def low_of(self, projections: Sequence[str]) -> int | None:
        """The lowest position of ``projections``, their partition rows included (a projection stands where its
        slowest partition is); ``None`` when none has a row."""
        low: int | None = await self.db.fetchval(
            f"SELECT min(last_seq) FROM {self.table} WHERE {BASE_PROJECTION} = ANY($1::text[])", list(projections))
        return low

    async def lows(self, projections: Sequence[str], keys: Sequence[str]) -> tuple[int | None, int | None]:
        """``(low_of(projections), low(keys))`` in one round trip (a follower polling two groups at once)."""
        row = await self.db.fetchrow(
            f"SELECT (SELECT min(last_seq) FROM {self.table}"
            f" WHERE {BASE_PROJECTION} = ANY($1::text[])) AS projections,"
            f" (SELECT min(last_seq) FROM {self.table} WHERE projection = ANY($2::text[])) AS keys",
            list(projections), list(keys))
        return row["projections"], row["keys"]

    async def lows_by_projection(self) -> dict[str, int]:
        """``{projection: lowest position over its rows}`` for every projection with a row."""
        return {r["base"]: r["last_seq"] for r in await self.db.fetch(
            f"SELECT {BASE_PROJECTION} AS base, min(last_seq) AS last_seq FROM {self.table} GROUP BY 1")}

    async def lock_rows_of(self, projections: Sequence[str]) -> dict[str, int]:
        """``{key: position}`` of every row of ``projections`` (partition rows included), locked ``FOR UPDATE``
        in key order for the caller's transaction."""
        return {r["projection"]: r["last_seq"] for r in await self.db.fetch(
            f"SELECT projection, last_seq FROM {self.table}"
            f" WHERE {BASE_PROJECTION} = ANY($1::text[]) ORDER BY projection FOR UPDATE", list(projections))}

    async def rows(self) -> list[asyncpg.Record]:
        """Every row (``projection, version, stream, last_seq, updated_at``) in key order (``memengine status``)."""
        return list(await self.db.fetch(
            f"SELECT projection, version, stream, last_seq, updated_at FROM {self.table} ORDER BY 1"))

    # -- writing -------------------------------------------------------------------------------------------------

    async def advance(self, keys: Sequence[str], seq: int) -> dict[str, int]:
        """Move the rows ``keys`` to ``seq`` where they are below it (never backwards); returns ``{key: position}``
        of the rows updated."""
        rows = await self.db.fetch(
            f"UPDATE {self.table} SET last_seq = GREATEST(last_seq, $2), updated_at = now()"
            " WHERE projection = ANY($1::text[]) RETURNING projection, last_seq", list(keys), seq)
        return {r["projection"]: r["last_seq"] for r in rows}

    async def notify(self, projector: str, seq: int) -> None:
        """Announce ``projector``'s committed ``seq`` on ``PROGRESS_CHANNEL`` (delivered at the caller's commit)."""
        await self.db.execute("SELECT pg_notify($1, $2)", PROGRESS_CHANNEL,
                              json.dumps({"projector": projector, "seq": seq}))

    async def set_rows_of(self, projection: str, seq: int) -> int:
        """Set every row of ``projection`` (partition rows included) to ``seq``, even backwards (a rebuild's swap);
        returns the number of rows set."""
        status = await self.db.execute(
            f"UPDATE {self.table} SET last_seq = $2, updated_at = now() WHERE {ROWS_OF}", projection, seq)
        return int(status.split()[-1])

    async def copy_row_from(self, schema: str, key: str) -> None:
        """Insert row ``key`` as it stands in ``<schema>.projection_checkpoints`` (a shadow fold's)."""
        await self.db.execute(
            f"INSERT INTO {self.table} (projection, version, stream, last_seq)"
            f" SELECT projection, version, stream, last_seq FROM {schema}.projection_checkpoints"
            " WHERE projection = $1", key)
