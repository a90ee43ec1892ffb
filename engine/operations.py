"""The engine's audit trail: one ``operations`` row (and one structlog JSON line) per operator action.

Issue #5 §7: every rebuild, verify, forget, consolidation and dead-letter action is recorded with who, when and
what. Usage::

    async with operation(pool, "rebuild", scope={"projections": ["messages"]}) as op:
        ...
        op.detail["events"] = n          # figures land in the row when the block ends

The row is written ``started`` before the work and closed ``ok`` or ``failed`` (with the error) after it, so a
process killed mid-operation leaves a visible ``started`` row. Scope and detail must never hold content (texts,
embeddings): a forget operation records ids only, which is what the tombstone rule of issue #5 §4 asks.
"""

from __future__ import annotations

import getpass
import json
import os
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
    except Exception:  # no passwd entry (containers running as an arbitrary uid)
        return "unknown"


@dataclass
class Operation:
    """An operation in progress: ``id`` of its row, and ``detail`` to fill with figures (JSON-serialisable)."""

    id: int
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def operation(pool: asyncpg.Pool, kind: str, *, scope: dict[str, Any] | None = None,
                    who: str | None = None) -> AsyncIterator[Operation]:
    """Record one operator action around the ``async with`` block.

    Shapes: ``kind`` a short name (``rebuild``, ``forget-thread`` ...); ``scope`` ids only. Errors raised inside
    the block are recorded (``status='failed'``, ``detail.error``) and re-raised unchanged.
    """
    who = who or actor()
    scope = scope or {}
    row_id = await pool.fetchval(
        "INSERT INTO operations (kind, actor, scope) VALUES ($1, $2, $3::jsonb) RETURNING id",
        kind, who, json.dumps(scope, default=str))
    op = Operation(id=row_id, kind=kind)
    log.info("operation started", op_id=row_id, kind=kind, actor=who, scope=scope)
    try:
        yield op
    except BaseException as exc:
        op.detail.setdefault("error", f"{type(exc).__name__}: {exc}")
        await _close(pool, op, "failed")
        log.warning("operation failed", op_id=row_id, kind=kind, actor=who, detail=op.detail)
        raise
    await _close(pool, op, "ok")
    log.info("operation finished", op_id=row_id, kind=kind, actor=who, detail=op.detail)


async def _close(pool: asyncpg.Pool, op: Operation, status: str) -> None:
    try:
        await pool.execute("UPDATE operations SET status = $2, detail = $3::jsonb, finished_at = now() WHERE id = $1",
                           op.id, status, json.dumps(op.detail, default=str))
    except Exception as exc:  # the database may be what failed: the log line above still records the outcome
        log.warning("operation row not closed", op_id=op.id, error=str(exc))


async def recent(pool: asyncpg.Pool, limit: int = 50, kind: str | None = None) -> list[dict[str, Any]]:
    """The latest operations, newest first: ``[{id, kind, actor, scope, status, detail, started_at, finished_at}]``."""
    rows = await pool.fetch(
        "SELECT id, kind, actor, scope::text AS scope, status, detail::text AS detail, started_at, finished_at "
        "FROM operations WHERE ($2::text IS NULL OR kind = $2) ORDER BY id DESC LIMIT $1", limit, kind)
    return [{**dict(r), "scope": json.loads(r["scope"]), "detail": json.loads(r["detail"]),
             "started_at": r["started_at"].isoformat(),
             "finished_at": r["finished_at"].isoformat() if r["finished_at"] else None} for r in rows]
