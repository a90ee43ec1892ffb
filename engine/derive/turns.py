"""Turns of a thread as the derivers see them (``offline.Turn``), read from the ``messages`` read model."""

from __future__ import annotations

from typing import Any

import asyncpg

from memengine.engine.derive import offline


async def load_turns(pool: asyncpg.Pool, tenant: str, thread: str, where: str, *args: Any) -> list[offline.Turn]:
    """Turns of ``thread`` from the ``messages`` read model, in ``seq`` order, that match ``where``: an SQL
    condition written by the caller (never user input) over ``messages`` whose parameters start at ``$3``
    (``$1`` tenant, ``$2`` thread) and are given in ``args``."""
    rows = await pool.fetch(
        "SELECT event_id::text AS event_id, seq, role, user_id, text, occurred_at FROM messages"
        f" WHERE tenant_id = $1 AND thread_id = $2 AND {where} ORDER BY seq", tenant, thread, *args)
    return [offline.Turn(event_id=r["event_id"], seq=r["seq"], role=r["role"], user_id=r["user_id"],
                         text=r["text"], occurred_at=r["occurred_at"]) for r in rows]
