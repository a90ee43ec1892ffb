"""Connections given back to the pool after the answer (issue #13 item 3, issue #27 item 5).

``asyncpg.Pool.release`` resets a connection with a round trip of its own (``pg_advisory_unlock_all(); CLOSE ALL;
UNLISTEN *; RESET ALL``) before another caller may acquire it; a read that awaited it waited that round trip for
nothing. ``release_later`` runs the release in a task of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg


def release_later(pool: asyncpg.Pool, conn: Any, pending: set[asyncio.Task[None]]) -> None:
    """Give ``conn`` back to ``pool`` in a task kept in ``pending`` until it ends (a reference, so it is not
    collected). Only for a connection that ran plain reads (and ``SET`` s: the reset's ``RESET ALL`` undoes them
    before the connection is handed out again): the reset still runs, just after the caller went on.
    ``asyncpg.Pool.release`` is shielded, so a cancelled caller still returns it."""
    task = asyncio.create_task(pool.release(conn), name="release")
    pending.add(task)
    task.add_done_callback(pending.discard)


async def fetch_released(pool: asyncpg.Pool, pending: set[asyncio.Task[None]], sql: str, *args: Any) -> list[Any]:
    """``pool.fetch(sql, *args)`` with the connection given back by ``release_later`` (plain reads only, as there);
    on an error it is released at once and the error propagates."""
    conn = await pool.acquire()
    try:
        rows: list[Any] = await conn.fetch(sql, *args)
    except BaseException:
        await pool.release(conn)
        raise
    release_later(pool, conn, pending)
    return rows
