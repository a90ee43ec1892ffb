"""``memory_items`` with provenance (``memory_item_sources``) and ``memory_relations``, folded from
``MemoriesExtracted`` (seed 001 table, seed 002 §4.1 merge decisions, seed 004 types/priorities).

Nothing is destroyed: ``replace`` closes the old belief (``invalid_at``, ``superseded_by``, status ``superseded``)
and opens a new one; ``merge`` rewrites the target's text and keeps every source; ``ignore`` adds the new evidence
to the existing item's sources. So the history of every belief stays queryable (bi-temporal validity).
"""

from __future__ import annotations

import msgspec

from events.derived import ExtractedMemory, MemoriesExtracted
from projections.ops import FoldConfig, Position, Projection, SqlOp

_json = msgspec.json.Encoder()

_INSERT = """
INSERT INTO memory_items (tenant_id, memory_id, user_id, thread_id, type, text, data, importance, confidence, tags,
                          priority, expires_at, source_session_id, dedupe_hash, status, valid_at, created_at,
                          updated_at, last_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $16, $17)
ON CONFLICT (tenant_id, memory_id) DO NOTHING
"""
_MERGE = """
UPDATE memory_items SET text = $3, tags = ARRAY(SELECT DISTINCT unnest(tags || $4::text[]) ORDER BY 1),
       importance = GREATEST(importance, $5), confidence = GREATEST(confidence, $6), updated_at = $7,
       last_event_id = $8
WHERE tenant_id = $1 AND memory_id = $2
"""
_SUPERSEDE = """
UPDATE memory_items SET status = 'superseded', invalid_at = $3, superseded_by = $4, updated_at = $3,
       last_event_id = $5
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
_SOURCE = """
INSERT INTO memory_item_sources (tenant_id, memory_id, derived_event_id, source_event_id, action)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING
"""
_RELATION = """
INSERT INTO memory_relations (tenant_id, from_id, to_id, relation, derived_event_id)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING
"""


def _memory_ops(e: MemoriesExtracted, m: ExtractedMemory) -> list[SqlOp]:
    t = e.tenant_id
    sources = m.source_event_ids or e.source_event_ids
    action = m.decision.action
    ops: list[SqlOp] = []
    if action in ("add", "keep_both", "replace"):
        ops.append(SqlOp("memory_items", _INSERT, (
            t, m.memory_id, m.user_id, e.thread_id, m.memory_type, m.text, _json.encode(m.data).decode(),
            m.importance, m.confidence, list(m.tags), m.priority, m.expires_at, e.session_id, m.dedupe_hash,
            m.status, e.occurred_at, e.event_id)))
    if action == "merge":
        ops.append(SqlOp("memory_items", _MERGE, (t, m.memory_id, m.text, list(m.tags), m.importance,
                                                   m.confidence, e.occurred_at, e.event_id)))
    if action == "replace":
        for target in m.decision.target_ids:
            ops.append(SqlOp("memory_items", _SUPERSEDE, (t, target, e.occurred_at, m.memory_id, e.event_id)))
            ops.append(SqlOp("memory_relations", _RELATION, (t, m.memory_id, target, "supersedes", e.event_id)))
    if action == "keep_both":
        for target in m.decision.target_ids:
            ops.append(SqlOp("memory_relations", _RELATION, (t, m.memory_id, target, "related", e.event_id)))
    owners = m.decision.target_ids if action == "ignore" else [m.memory_id]
    for owner in owners:  # an ignored duplicate still counts as evidence for the item it repeats
        ops.extend(SqlOp("memory_item_sources", _SOURCE, (t, owner, e.event_id, s, action)) for s in sources)
    return ops


def on_memories_extracted(e: MemoriesExtracted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [op for m in e.memories for op in _memory_ops(e, m)]


PROJECTION = Projection(
    name="memory_items",
    version=1,
    tables=("memory_items", "memory_item_sources", "memory_relations"),
    handlers={MemoriesExtracted: on_memories_extracted},
)
