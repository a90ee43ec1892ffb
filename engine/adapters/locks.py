"""PostgreSQL advisory locks: one live owner of a named role across processes.

Used for one live runner per durable consumer (projectors, the enricher), one rebuild, one forget per scope and one
consolidation schedule per deployment. Keys are 64-bit: the first 8 bytes of sha256 of ``memengine-projector:<name>``
(the prefix is historical; every lock name shares it, so keys never change across releases).
"""

from __future__ import annotations

import contextlib
import hashlib

import asyncpg


def lock_key(name: str) -> int:
    """Advisory-lock key (signed 64-bit int) of ``name``: one live runner per durable consumer, because
    ``AckPolicy.ALL`` from two pullers could acknowledge each other's uncommitted messages."""
    return int.from_bytes(hashlib.sha256(f"memengine-projector:{name}".encode()).digest()[:8], "big", signed=True)


class AdvisoryLock:
    """One live owner of ``name`` across processes: a PostgreSQL session advisory lock held on a dedicated pool
    connection (released when the process dies, since the session ends with it)."""

    def __init__(self, pool: asyncpg.Pool, name: str) -> None:
        self.pool = pool
        self.key = lock_key(name)
        self._conn: asyncpg.Connection | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def acquire(self) -> bool:
        """Try once; ``False`` when another session holds it. Database errors propagate (the connection is given
        back first)."""
        if self._conn is not None:
            return True
        conn = await self.pool.acquire()
        try:
            got = await conn.fetchval("SELECT pg_try_advisory_lock($1)", self.key)
        except BaseException:
            await self.pool.release(conn)
            raise
        if not got:
            await self.pool.release(conn)
            return False
        self._conn = conn
        return True

    async def release(self) -> None:
        """Unlock and give the connection back; a no-op when not held. The connection goes back to the pool even
        when this is cancelled during the unlock (``asyncpg.Pool.release`` is shielded, and its reset runs
        ``pg_advisory_unlock_all()``): a cancelled follower's cleanup is cancelled again every 0.1 s
        (``engine.adapters.tasks.cancel_and_wait``), and a connection lost there held ``Pool.close()`` until the
        teardown step overran (``teardown steps overran: ['pool']``)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                with contextlib.suppress(Exception):  # a dead connection released the lock already
                    await conn.execute("SELECT pg_advisory_unlock($1)", self.key)
            finally:
                await self.pool.release(conn)
