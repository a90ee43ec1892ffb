"""Forgetting covers the access trail (issue #30 item 4): the served records that name what is forgotten go from the
served stream, and the access read models are rebuilt from what is left (engine/ops/forget.py calls this in its
``purged`` step and adds the ``access`` projection to the ones it rebuilds).

A served record is removed whole (JetStream erases the payload), not redacted: an answer that held a forgotten turn
or memory item would still say, by its other items, query and user, what the agent knew about the forgotten scope.
Removed are, for a thread: every record of the thread (its subject purged), and every record of another thread of the
tenant that placed one of the thread's turns or a memory item derived from them (its recall hits, a user-memory part);
for a user: every record built for the user (``user_id``), and every record that placed one of the user's turns or a
memory item about them or derived from their words.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import structlog

from memengine.engine.adapters.pull import replay
from memengine.events.codec import EventDecodeError
from memengine.events.served import decode_served_msg, placed_ids

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine

log = structlog.get_logger("memengine.forget")


async def forgotten_memory_ids(engine: "Engine", tenant: str, scope: str, scope_id: str,
                               event_ids: list[str]) -> set[str]:
    """Memory items of the forgotten scope, read before the rebuild drops them: items of the thread (or about the
    user), and items any forgotten fact or derived event is a source of."""
    rows = await engine.pool.fetch(
        "SELECT memory_id FROM memory_items WHERE tenant_id = $1 AND"
        + (" thread_id = $2" if scope == "thread" else " user_id = $2")
        + " UNION SELECT memory_id FROM memory_item_sources WHERE tenant_id = $1"
          " AND (source_event_id::text = ANY($3::text[]) OR derived_event_id::text = ANY($3::text[]))",
        tenant, scope_id, event_ids)
    return {r["memory_id"] for r in rows}


async def purge_served(engine: "Engine", tenant: str, scope: str, scope_id: str, event_ids: list[str]) -> int:
    """Remove the served records of the forgotten scope (module docstring); returns how many went. Answers still
    queued in this process are published first, so none lands after the purge."""
    if engine.trail is not None:
        await engine.trail.settled()
    stream = engine.streams.served
    try:
        await engine.js.stream_info(stream)
    except Exception:  # noqa: BLE001 - no served stream (an engine from before issue #30): nothing to remove
        return 0
    ids = set(event_ids) | await forgotten_memory_ids(engine, tenant, scope, scope_id, event_ids)
    removed = 0
    if scope == "thread":
        before = (await engine.js.stream_info(stream)).state.messages
        await engine.js.purge_stream(stream, subject=engine.subjects.thread_served(tenant, scope_id))
        removed += before - (await engine.js.stream_info(stream)).state.messages
    doomed: list[int] = []
    async for m in replay(engine.js, stream, f"{engine.subjects.root}.served.{tenant}.*.*"):
        try:
            ev = decode_served_msg(m.subject, m.data, engine.subjects)
        except EventDecodeError:
            continue  # not ours to judge; a record that does not decode names nothing the folds could show
        if (scope == "user" and ev.user_id == scope_id) or not ids.isdisjoint(placed_ids(ev)):
            doomed.append(m.metadata.sequence.stream)
    for seq in doomed:
        with contextlib.suppress(Exception):  # already gone (an earlier attempt, a concurrent purge)
            await engine.js.delete_msg(stream, seq)
            removed += 1
    log.info("served records forgotten", tenant=tenant, scope=scope, removed=removed)
    return removed
