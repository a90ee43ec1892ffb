"""The access read models (issue #30), folded from the served stream (events/served.py): ``served_answers`` (one row
per answer: the request, ``applied_seq`` and the items placed, as recorded), and ``access_count`` /
``last_accessed_at`` per memory item (``memory_access``) and per turn (``turn_access``), seed 002 §3.1's fields.

Seed 002 §4.1 step 4 increments ``access_count`` of the top-K a retrieval returned, in place; here every answer is an
event and the counters are its fold, so they are rebuildable (``memengine rebuild access``) and verifiable. One answer
counts once per id, however many times it placed it (a memory shown in Tier 1 and recalled again). Both columns come
from the event (``occurred_at``), never from the clock: a rebuild gives the same rows.

Retention (issue #30 item 5): the served stream keeps ``MEMENGINE_SERVED_MAX_AGE`` / ``_MAX_BYTES``; the live rows
outlive its expiry (they are folded, nothing deletes them when a message ages out). A **rebuild** folds only what the
stream still holds: after an expiry it reproduces the counters of the retained window, not the lifetime ones (there is
no snapshot of the expired part); ``memengine verify access`` then reports the difference, which is what happened.
"""

from __future__ import annotations

import msgspec

from memengine.events.served import AnyServed, ContextServed, RecallServed
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

ANSWERS = "served_answers"
MEMORY = "memory_access"
TURNS = "turn_access"

_json = msgspec.json.Encoder()

_ANSWER = """
INSERT INTO served_answers (tenant_id, thread_id, seq, event_id, kind, pushed, user_id, query, window_tokens, as_of,
                            applied_seq, mode, served_at, items, truncated)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15)
ON CONFLICT (tenant_id, thread_id, seq) DO NOTHING
"""


def _touch(table: str, key: str) -> tuple[str, str]:
    one = f"""
INSERT INTO {table} AS a (tenant_id, {key}, access_count, last_accessed_at) VALUES ($1, $2, 1, $3)
ON CONFLICT (tenant_id, {key}) DO UPDATE SET
    access_count = a.access_count + 1,
    last_accessed_at = GREATEST(a.last_accessed_at, EXCLUDED.last_accessed_at)
"""
    # the same over one JSON document of rows (SqlOp.rows): rows of one id summed first (commutative: + and GREATEST)
    bulk = f"""
INSERT INTO {table} AS a (tenant_id, {key}, access_count, last_accessed_at)
SELECT r->>0, r->>1, count(*), max((r->>2)::timestamptz)
FROM jsonb_array_elements($1::jsonb) AS j(r)
GROUP BY r->>0, r->>1
ON CONFLICT (tenant_id, {key}) DO UPDATE SET
    access_count = a.access_count + EXCLUDED.access_count,
    last_accessed_at = GREATEST(a.last_accessed_at, EXCLUDED.last_accessed_at)
"""
    return one, bulk


_MEMORY, _MEMORY_BULK = _touch(MEMORY, "memory_id")
_TURN, _TURN_BULK = _touch(TURNS, "event_id")


def on_served(e: AnyServed, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """One answer: its ``served_answers`` row, and +1 / ``last_accessed_at`` for each distinct id it placed."""
    context = isinstance(e, ContextServed)
    ops = [SqlOp(ANSWERS, _ANSWER, (
        e.tenant_id, e.thread_id, pos.seq, e.event_id, "context" if context else "recall",
        e.pushed if isinstance(e, ContextServed) else False, e.user_id, e.query,
        e.window if isinstance(e, ContextServed) else 0, e.as_of, e.applied_seq,
        e.mode if isinstance(e, ContextServed) else "", e.occurred_at,
        _json.encode([[p.kind, p.id, p.tier, p.rank] for p in e.items]).decode(), e.truncated))]
    seen: set[tuple[str, str]] = set()
    for p in e.items:
        if (p.kind, p.id) in seen:
            continue
        seen.add((p.kind, p.id))
        if p.kind == "memory":
            ops.append(SqlOp(MEMORY, _MEMORY, (e.tenant_id, p.id, e.occurred_at), _MEMORY_BULK, True))
        else:
            ops.append(SqlOp(TURNS, _TURN, (e.tenant_id, p.id, e.occurred_at), _TURN_BULK, True))
    return ops


PROJECTION = Projection(
    name="access",
    version=1,
    tables=(ANSWERS, MEMORY, TURNS),
    handlers={ContextServed: on_served, RecallServed: on_served},
)
