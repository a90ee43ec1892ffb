"""Running a batch's fold output: the ``SqlOp`` statements of the pure folds (projections/ops.py), grouped and
pipelined inside the caller's transaction.
"""

from __future__ import annotations

import asyncpg
import msgspec

from memengine.projections.ops import SqlOp

_rows = msgspec.json.Encoder()


async def execute_ops(conn: asyncpg.Connection, ops: list[SqlOp]) -> None:
    """Run ``ops`` on ``conn`` (inside the caller's transaction; database errors propagate): grouped by table (order
    kept within a table), consecutive equal statements as one ``executemany`` (pipelined by asyncpg), or as one
    ``SqlOp.bulk`` statement over arrays (or over one JSON document of rows, ``SqlOp.rows``) when the op offers
    one."""
    by_table: dict[str, list[SqlOp]] = {}
    for op in ops:
        by_table.setdefault(op.table, []).append(op)
    # "lock:" pseudo-tables first: they guard the writes that follow (projections.pruning); the sort is stable
    for table_ops in sorted(by_table.values(), key=lambda g: not g[0].table.startswith("lock:")):
        run: list[SqlOp] = []
        for op in table_ops:
            if run and op.sql != run[0].sql:
                await _flush(conn, run)
                run = []
            run.append(op)
        if run:
            await _flush(conn, run)


async def _flush(conn: asyncpg.Connection, run: list[SqlOp]) -> None:
    first = run[0]
    if len(run) == 1:
        await conn.execute(first.sql, *first.args)
    elif first.bulk is not None and first.rows:
        await conn.execute(first.bulk, _rows.encode([op.args for op in run]).decode())
    elif first.bulk is not None:
        await conn.execute(first.bulk, *[list(col) for col in zip(*(op.args for op in run), strict=True)])
    else:
        await conn.executemany(first.sql, [op.args for op in run])
