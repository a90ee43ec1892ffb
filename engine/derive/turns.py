"""Turns of a thread as the derivers see them (``offline.Turn``: text and the names of the tools called), read from
the ``messages`` read model."""

from __future__ import annotations

from typing import Any

import asyncpg

from memengine.engine.derive import offline


async def load_turns(pool: asyncpg.Pool, tenant: str, thread: str, where: str, *args: Any) -> list[offline.Turn]:
    """Turns of ``thread`` from the ``messages`` read model, in ``seq`` order, that match ``where``: an SQL
    condition written by the caller (never user input) over ``messages`` whose parameters start at ``$3``
    (``$1`` tenant, ``$2`` thread) and are given in ``args``. ``tools``: the turn's ``tool_use`` block names."""
    rows = await pool.fetch(
        "SELECT event_id::text AS event_id, seq, role, user_id, text, occurred_at,"
        # the names of the turn's tool calls, in order: an episode's tools_used (seed 004 §4 Episode; issue #15
        # item 4: episodes said tools_used [] for sessions full of tool calls)
        "  ARRAY(SELECT b.v->>'name' FROM json_array_elements(content) WITH ORDINALITY AS b(v, i)"
        "        WHERE b.v->>'type' = 'tool_use' AND b.v->>'name' IS NOT NULL ORDER BY b.i) AS tools"
        f" FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND {where} ORDER BY seq", tenant, thread, *args)
    return [offline.Turn(event_id=r["event_id"], seq=r["seq"], role=r["role"], user_id=r["user_id"],
                         text=r["text"], occurred_at=r["occurred_at"], tools=list(r["tools"])) for r in rows]
