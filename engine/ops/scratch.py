"""Scratch schemas: the shadow of a rebuild, the scratch folds of verify and time travel (engine/ops/rebuild.py), and
the bookkeeping schemas of a parallel rebuild's workers (engine/ops/rebuild_parallel.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import asyncpg
from nats.js import JetStreamContext

#: The runner's bookkeeping, given to every scratch schema so scratch folds never touch the live rows.
BOOKKEEPING = ("projection_checkpoints", "applied_events", "dead_letters")
SHADOW = "memengine_shadow"
RETIRED = "memengine_retired"
SCRATCH_PREFIX = "memengine_scratch_"
CONSUMER_PREFIX = "rebuild-"
#: The bookkeeping schema of parallel-rebuild worker ``i`` is ``f"{SHADOW}_w{i}"``.
WORKER_SCHEMA = SHADOW + "_w{}"
#: Statistics target of the ANALYZE a scratch fold runs as its tables grow (``ProjectorRunner(analyze_target=)``):
#: mid-fold plans need the row counts (an "empty" table planned as a sequential scan inside a per-row look-up is
#: the trap), not 100-bucket histograms; sampling 3,000 rows instead of 30,000 cut that ANALYZE's share of a
#: rebuild's PostgreSQL time (bench/RESULTS.md, issue #13 item 2). The rebuild's last ANALYZE uses the server's.
SCRATCH_ANALYZE_TARGET = 10


async def create_scratch(conn: asyncpg.Connection, schema: str, tables: Sequence[str]) -> None:
    """(Re-)create ``schema`` with empty copies of ``tables`` and the runner's bookkeeping.

    Columns, defaults, generated columns, constraints and indexes are copied (``LIKE ... INCLUDING ALL``). A column
    whose default draws from a sequence gets a sequence of its own: sharing the live one would leave the swapped-in
    table depending on a sequence owned by the table that the swap retires."""
    await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    await conn.execute(f'CREATE SCHEMA "{schema}"')
    for t in [*tables, *BOOKKEEPING]:
        await conn.execute(f'CREATE TABLE "{schema}"."{t}" (LIKE public."{t}" INCLUDING ALL)')
        serials = await conn.fetch(
            "SELECT a.attname FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
            " WHERE d.adrelid = $1::regclass AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'",
            f'"{schema}"."{t}"')
        for r in serials:
            seq = f'"{schema}"."{t}_{r["attname"]}_seq"'
            await conn.execute(f"CREATE SEQUENCE {seq} OWNED BY \"{schema}\".\"{t}\".\"{r['attname']}\"")
            await conn.execute(f"ALTER TABLE \"{schema}\".\"{t}\" ALTER COLUMN \"{r['attname']}\""
                               f" SET DEFAULT nextval('{seq}'::regclass)")


async def scratch_pool(dsn: str, schema: str, *, max_size: int = 4) -> asyncpg.Pool:
    """A pool whose unqualified names resolve to ``schema`` first, then ``public`` (tables not copied, e.g. the
    embedding tables and other projections' tables a fold may read)."""
    # synchronous_commit off: a scratch fold lost in a crash is simply started again, so waiting for each batch's
    # WAL flush buys nothing (the swap itself runs on the engine's pool, fully durable).
    # application_name: pg_stat_activity tells the scratch fold's sessions from the engine's (bench/_cpu.py)
    return await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                     server_settings={"jit": "off", "search_path": f'"{schema}",public',
                                                      "synchronous_commit": "off",
                                                      "application_name": f"memengine-{schema}"[:63]})


async def drop_consumer(js: JetStreamContext, stream: str, name: str) -> None:
    """Delete the durable consumer ``name`` of ``stream``; nothing if it is gone (or the server does not answer: a
    later rebuild drops leftover ``rebuild-`` consumers)."""
    with contextlib.suppress(Exception):
        await js.delete_consumer(stream, name)


async def drop_worker_schemas(conn: asyncpg.Connection) -> None:
    """Drop every parallel-rebuild worker's bookkeeping schema (``<SHADOW>_w<i>``), a killed rebuild's included."""
    for r in await conn.fetch("SELECT nspname FROM pg_namespace WHERE nspname LIKE $1", f"{SHADOW}\\_w%"):
        await conn.execute(f'DROP SCHEMA IF EXISTS "{r["nspname"]}" CASCADE')

