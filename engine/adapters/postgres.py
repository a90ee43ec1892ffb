"""PostgreSQL access: the connection pool and the numbered migrations in ``schema/``.

Migrations are plain ``NNNN_name.sql`` files applied in order, each in its own transaction under an advisory lock
(so two processes starting together do not race), and recorded in ``schema_migrations``. The files ship inside the
wheel as ``engine/schema``; in a source checkout they are read from ``<repo>/schema``.
"""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import structlog

log = structlog.get_logger("memengine.db")

_MIGRATION = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x6D656D65  # "meme": advisory lock id for migrations


def schema_dir() -> Path:
    """Where the ``.sql`` migrations are: inside the installed package, else the checkout's ``schema/``."""
    root = Path(__file__).resolve().parents[2]  # memengine/ in a wheel, the repository in a checkout
    for candidate in (root / "schema",):
        if candidate.is_dir() and any(candidate.glob("*.sql")):
            return candidate
    raise FileNotFoundError("schema migrations not found (expected <memengine>/schema)")


def migrations() -> list[tuple[int, str, Path]]:
    """``[(version, name, path)]`` sorted by version; ``ValueError`` for a duplicate version."""
    found: dict[int, tuple[int, str, Path]] = {}
    for path in sorted(schema_dir().glob("*.sql")):
        m = _MIGRATION.match(path.name)
        if not m:
            continue
        version = int(m.group(1))
        if version in found:
            raise ValueError(f"duplicate migration version {version}: {path.name}")
        found[version] = (version, m.group(2), path)
    return [found[v] for v in sorted(found)]


async def migrate(conn: asyncpg.Connection) -> list[int]:
    """Apply pending migrations; returns the versions applied now (empty when up to date)."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INT PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    applied: list[int] = []
    for version, name, path in migrations():
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            done = await conn.fetchval("SELECT 1 FROM schema_migrations WHERE version = $1", version)
            if done:
                continue
            await conn.execute(path.read_text())
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name)
            applied.append(version)
            log.info("migration applied", version=version, name=name)
    return applied


#: Connections a pool keeps for commits and queries, beyond those a process holds for good (``engine.bootstrap``).
POOL_SIZE = 8


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = POOL_SIZE) -> asyncpg.Pool:
    """A pool to ``dsn`` with the ``vector`` extension present and migrations applied."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await migrate(conn)
    finally:
        await conn.close()
    # JIT compilation (on by default) can add ~1 s to a query the planner thinks is expensive: an OLTP read path
    # cannot afford that, and nothing memengine runs benefits from it.
    return await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, server_settings={"jit": "off"})


def is_bad_data(exc: BaseException) -> bool:
    """True for a value the database cannot take as a parameter: a PostgreSQL data exception (SQLSTATE class 22: a
    NUL in text, a number out of its column's range) or asyncpg's own refusal to encode one (an int beyond int64).
    Raised for a caller's value, these are the caller's error (issue #26 item 3: ``POST /v1/dlq/<10^30>/retry``)."""
    return isinstance(exc, (asyncpg.DataError, asyncpg.exceptions._base.DataError))


def is_transient(exc: BaseException) -> bool:
    """True for errors that a retry can fix (connection lost, server starting or shutting down, deadlock,
    serialization failure); False for errors in the data or the SQL, which retrying would repeat.

    asyncpg's refusal to encode a parameter (``is_bad_data``) is an ``InterfaceError`` subclass; it is checked first:
    taken for a lost connection, it made the runner retry one event's fold forever instead of dead-lettering it."""
    if is_bad_data(exc):
        return False
    if isinstance(exc, (OSError, ConnectionError, asyncpg.InterfaceError, TimeoutError)):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", "") or ""
        return state[:2] in {"08", "57", "53", "58", "40"}
    return False
