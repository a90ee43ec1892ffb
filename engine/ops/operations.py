"""The engine's audit trail: one ``operations`` row (and one structlog JSON line) per operator action.

Issue #5 §7: every rebuild, verify, forget, consolidation and dead-letter action is recorded with who, when and
what. Usage::

    async with operation(pool, "rebuild", scope={"projections": ["messages"]}) as op:
        ...
        op.detail["events"] = n          # figures land in the row when the block ends

The row is written ``started`` before the work and closed ``ok`` or ``failed`` (with the error, raised or reported
with ``Operation.fail``) after it. While
the block runs, the process holds a session advisory lock ``(LOCK_CLASS, id)`` on a connection of its own, and the
row names its host and pid: PostgreSQL releases the lock when that session ends (a SIGKILLed process included), so
``recent()`` reports a ``started`` row as ``running`` while the lock is held and ``interrupted`` once it is free
(issue #17 defect 8: killed rebuilds and forgets showed ``started`` forever). Scope and detail must never hold
content (texts, embeddings): a forget operation records ids only, which is what the tombstone rule of issue #5 §4
asks.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog

log = structlog.get_logger("memengine.operations")


def actor() -> str:
    """Who runs this process: ``MEMENGINE_ACTOR`` if set, else the OS user name, else ``unknown``."""
    explicit = os.environ.get("MEMENGINE_ACTOR", "").strip()
    if explicit:
        return explicit
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry (containers running as an arbitrary uid)
        return "unknown"


#: Advisory-lock class (first int4 key, "oprs") of the lock a running operation holds; the second key is
#: ``lock_id(row id)``. The two-int4 key space never meets the runners' bigint keys.
LOCK_CLASS = 0x6F707273


def lock_id(row_id: int) -> int:
    """The second advisory-lock key of operation ``row_id`` (an int4)."""
    return int(row_id) & 0x7FFFFFFF


#: SQL: the status a reader should see: ``started`` becomes ``running`` while the owner's lock is held, else
#: ``interrupted`` (the owner died or lost its database session).
STATUS_SQL = f"""CASE WHEN o.status <> 'started' THEN o.status
     WHEN EXISTS (SELECT 1 FROM pg_locks l
                   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                     AND l.classid = {LOCK_CLASS}::oid AND l.objid = (o.id & 2147483647)::int::oid)
     THEN 'running' ELSE 'interrupted' END"""


@dataclass
class Operation:
    """An operation in progress: ``id`` of its row, and ``detail`` to fill with figures (JSON-serialisable)."""

    id: int
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)
    #: set by ``fail``: the block ran to its end but its outcome is a failure (a verify that found differences)
    failed: bool = False

    def fail(self, reason: str) -> None:
        """Close the operation ``failed`` with ``detail.error`` = ``reason`` although no exception left the block
        (issue #15 item 4: a verify that found differing tables was recorded ``ok``)."""
        self.failed = True
        self.detail["error"] = reason


async def _owner_connection(pool: asyncpg.Pool, dsn: str | None) -> asyncpg.Connection:
    """A connection of its own (not one of ``pool``'s) to hold the operation's lock: an engine's pool already lends
    most of its connections to long-held locks (projectors, enricher, LISTEN), and one more held for a whole forget
    or rebuild starved the commits it waits for. Made from ``dsn``, else from the pool's own connect arguments."""
    if dsn is not None:
        return await asyncpg.connect(dsn)
    args, kwargs = getattr(pool, "_connect_args", None), getattr(pool, "_connect_kwargs", None)
    if args is None or kwargs is None:  # pragma: no cover - an asyncpg without them: give the DSN
        raise TypeError("operation(): pass dsn= (this asyncpg pool does not expose its connect arguments)")
    return await asyncpg.connect(*args, **kwargs)


@asynccontextmanager
async def operation(pool: asyncpg.Pool, kind: str, *, scope: dict[str, Any] | None = None,
                    who: str | None = None, dsn: str | None = None) -> AsyncIterator[Operation]:
    """Record one operator action around the ``async with`` block.

    Shapes: ``kind`` a short name (``rebuild``, ``forget-thread`` ...); ``scope`` ids only; ``dsn`` the database of
    ``pool`` (default: the pool's connect arguments) for the connection that holds the operation's lock while the
    block runs (module docstring). Errors raised inside the block are recorded (``status='failed'``,
    ``detail.error``) and re-raised unchanged.
    """
    who = who or actor()
    scope = scope or {}
    owner = await _owner_connection(pool, dsn)
    try:
        # row and lock in one transaction: no reader ever sees the row without its owner's lock
        async with owner.transaction():
            row_id = await owner.fetchval(
                "INSERT INTO operations (kind, actor, scope, owner_host, owner_pid) VALUES ($1, $2, $3::jsonb, $4, $5)"
                " RETURNING id", kind, who, json.dumps(scope, default=str), socket.gethostname(), os.getpid())
            await owner.execute("SELECT pg_advisory_lock($1, $2)", LOCK_CLASS, lock_id(row_id))
    except BaseException:
        await owner.close()
        raise
    op = Operation(id=row_id, kind=kind)
    log.info("operation started", op_id=row_id, kind=kind, actor=who, scope=scope)
    try:
        try:
            yield op
        except BaseException as exc:
            op.detail.setdefault("error", f"{type(exc).__name__}: {exc}")
            await _close(pool, op, "failed")
            log.warning("operation failed", op_id=row_id, kind=kind, actor=who, detail=op.detail)
            raise
        await _close(pool, op, "failed" if op.failed else "ok")
        log.info("operation finished", op_id=row_id, kind=kind, actor=who, status="failed" if op.failed else "ok",
                 detail=op.detail)
    finally:
        try:
            await owner.close()  # ends the session: the lock goes with it
        except Exception:  # noqa: BLE001 - a dead session released the lock already
            owner.terminate()


async def _close(pool: asyncpg.Pool, op: Operation, status: str) -> None:
    try:
        await pool.execute("UPDATE operations SET status = $2, detail = $3::jsonb, finished_at = now() WHERE id = $1",
                           op.id, status, json.dumps(op.detail, default=str))
    except Exception as exc:  # noqa: BLE001 - the database may be what failed: the log line above still records the outcome
        log.warning("operation row not closed", op_id=op.id, error=str(exc))


async def recent(pool: asyncpg.Pool, limit: int = 50, kind: str | None = None, *,
                 tenant: str | None = None) -> list[dict[str, Any]]:
    """The latest operations, newest first: ``[{id, kind, actor, scope, status, detail, started_at, finished_at,
    owner_host, owner_pid}]``. ``status``: ``ok``, ``failed``, ``running`` (its process still holds the operation's
    lock) or ``interrupted`` (started, and its process is gone: killed, or its database session ended).
    ``tenant``: only the operations whose scope names that tenant and those that name none (engine-wide: rebuild,
    verify)."""
    rows = await pool.fetch(
        f"SELECT o.id, o.kind, o.actor, o.scope::text AS scope, {STATUS_SQL} AS status, o.detail::text AS detail,"
        " o.started_at, o.finished_at, o.owner_host, o.owner_pid"
        " FROM operations o WHERE ($2::text IS NULL OR o.kind = $2)"
        " AND ($3::text IS NULL OR o.scope->>'tenant' IS NULL OR o.scope->>'tenant' = $3)"
        " ORDER BY o.id DESC LIMIT $1", limit, kind, tenant)
    return [{**dict(r), "scope": json.loads(r["scope"]), "detail": json.loads(r["detail"]),
             "started_at": r["started_at"].isoformat(),
             "finished_at": r["finished_at"].isoformat() if r["finished_at"] else None} for r in rows]
