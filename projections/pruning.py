"""``message_prune_marks``: physical pruning of the live transcript (seed 000 §3.1 ``_prune_thread_messages``,
``MEMORY_MAX_MESSAGES_PER_THREAD``), folded from ``MessagesPruned``.

The enricher publishes ``MessagesPruned(through_seq)`` once the turns up to ``through_seq`` are covered by a
published summary (and their topics); this fold records the mark and deletes those turns from ``messages``. The
messages fold (``projections.messages``) inserts no turn a mark covers, so the result is the same whichever of the
two projectors runs first on replay:

- derived first: the mark exists, the facts replay skips the covered turns;
- facts first: the turns are inserted, then the prune deletes them.

Both runners may also commit *concurrently* (a full rebuild). The mark's statement snapshot would then miss a turn
inserted by a facts transaction still in flight, so both sides serialise per thread on a transaction-level advisory
lock (``GUARD_CLASS``, ``hashtext(tenant/thread)``): shared for the facts inserts, exclusive for the prune. The lock
statement runs before the insert or delete statement, so each of them takes its snapshot after the other side
committed. The guard ops use the pseudo-table ``lock:message_prune`` so the runner keeps them ahead of the
statements they protect (the runner runs the ops of ``lock:`` pseudo-tables of a batch before all others,
``projections.ops.SqlOp``).

Exception to "a fold only reads and writes its own tables": this projection deletes from ``messages`` and the
messages fold reads ``message_prune_marks``; it is the one cross-stream dependency, and the lock above makes it exact.
"""

from __future__ import annotations

from memengine.events.derived import MessagesPruned
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

#: advisory-lock class id of the prune guard ("mpru"); the two-int4 key space never meets the runner's bigint keys.
GUARD_CLASS = 0x6D707275
GUARD_TABLE = "lock:message_prune"

GUARD_SHARED = f"SELECT pg_advisory_xact_lock_shared({GUARD_CLASS}, hashtext($1 || '/' || $2))"
#: keys in a fixed order, so two batches never wait on each other in a cycle; over one JSON document of rows
#: ``[tenant, thread]`` (``SqlOp.rows``)
GUARD_SHARED_BULK = f"""
SELECT pg_advisory_xact_lock_shared({GUARD_CLASS}, k)
FROM (SELECT DISTINCT hashtext((r->>0) || '/' || (r->>1)) AS k FROM jsonb_array_elements($1::jsonb) AS j(r)
      ORDER BY 1) s
"""
_GUARD_EXCLUSIVE = f"SELECT pg_advisory_xact_lock({GUARD_CLASS}, hashtext($1 || '/' || $2))"
_GUARD_EXCLUSIVE_BULK = f"""
SELECT pg_advisory_xact_lock({GUARD_CLASS}, k)
FROM (SELECT DISTINCT hashtext(t || '/' || th) AS k FROM unnest($1::text[], $2::text[]) AS u(t, th) ORDER BY 1) s
"""

_MARK = """
INSERT INTO message_prune_marks AS m (tenant_id, thread_id, through_seq, pruned, event_id, pruned_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, thread_id) DO UPDATE SET
    through_seq = EXCLUDED.through_seq, pruned = m.pruned + EXCLUDED.pruned, event_id = EXCLUDED.event_id,
    pruned_at = EXCLUDED.pruned_at
WHERE m.through_seq < EXCLUDED.through_seq
"""
_DELETE = "DELETE FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq <= $3"


def on_messages_pruned(e: MessagesPruned, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Guard (exclusive), mark, delete the covered turns from ``messages``."""
    return [
        SqlOp(GUARD_TABLE, _GUARD_EXCLUSIVE, (e.tenant_id, e.thread_id), _GUARD_EXCLUSIVE_BULK),
        SqlOp("message_prune_marks", _MARK, (e.tenant_id, e.thread_id, e.through_seq, e.pruned, e.event_id,
                                             e.occurred_at)),
        SqlOp("messages", _DELETE, (e.tenant_id, e.thread_id, e.through_seq)),
    ]


PROJECTION = Projection(
    name="prune_marks",
    version=1,
    tables=("message_prune_marks",),
    handlers={MessagesPruned: on_messages_pruned},
)
