"""Physical pruning of a thread's live transcript (seed 000 §3.1 "N = 总数 - 200 + 20 buffer").

When a thread holds more than ``MEMORY_MAX_MESSAGES_PER_THREAD`` turns the enricher publishes ``MessagesPruned`` for
the oldest ones, never beyond what a published summary covers; the derived projector deletes them from ``messages``
(the log keeps them).
"""

from __future__ import annotations

from typing import Any

import asyncpg

from memengine.engine.adapters.settings import Settings
from memengine.events import MessagesPruned, SummaryUpdated, derived_event_id

#: seed 000 §3.1 "N = 总数 - 200 + 20 buffer": a prune leaves max - 20 turns, so it does not run on every turn.
PRUNE_BUFFER = 20


async def prune(pool: asyncpg.Pool, settings: Settings, tenant: str, thread: str,
                out: list[Any]) -> MessagesPruned | None:
    """``MessagesPruned`` when the thread's live transcript exceeds ``max_messages_per_thread``: the oldest
    ``total - max + PRUNE_BUFFER`` turns, cut back to what the summaries published so far cover (their topics
    are published with them; their recall rows are never pruned). ``None`` when nothing may go."""
    limit = settings.max_messages_per_thread
    row = await pool.fetchrow(
        "SELECT count(*) AS n, max(occurred_at) AS latest,"
        " (SELECT through_seq FROM message_prune_marks WHERE tenant_id = $1 AND thread_id = $2) AS mark,"
        " (SELECT covers_until_seq FROM conversation_summaries WHERE tenant_id = $1 AND thread_id = $2) AS covered"
        " FROM messages WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
    total = int(row["n"])
    if total <= limit:
        return None
    covered = int(row["covered"] or 0)
    for d in out:
        if isinstance(d, SummaryUpdated) and (d.tenant_id, d.thread_id) == (tenant, thread):
            covered = max(covered, d.source_seq_range[1])
    n = total - limit + PRUNE_BUFFER
    gone = await pool.fetch(
        "SELECT seq, event_id FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq <= $3"
        " ORDER BY seq LIMIT $4", tenant, thread, covered, n)
    if not gone or gone[-1]["seq"] <= int(row["mark"] or 0):
        return None
    through = gone[-1]["seq"]
    ids = [r["event_id"] for r in gone]
    return MessagesPruned(
        event_id=derived_event_id(tenant, thread, "prune", str(through)), tenant_id=tenant, thread_id=thread,
        occurred_at=row["latest"], producer="memengine-enricher",
        # provenance: the pruned turns (bounded: a first prune of a huge imported thread names its range only)
        source_event_ids=ids if len(ids) <= 2000 else [], source_seq_range=[gone[0]["seq"], through],
        model="rule", prompt_version=f"max{limit}+{PRUNE_BUFFER}", through_seq=through, pruned=len(gone),
        remaining=total - len(gone))
