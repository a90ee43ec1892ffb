"""``memory_items`` with provenance (``memory_item_sources``) and ``memory_relations``, folded from
``MemoriesExtracted`` (seed 001 table, seed 002 §4.1 merge decisions, seed 004 types/priorities), ``MemoriesRevised``
(explicit retraction and quarantine promotion, seed 003) and ``MemoriesConsolidated`` (seed 004 §7 daily
consolidation, seed 002 §4.1 ``compress_old_memories``). One writer: explicit ``MemoryAsserted`` /
``MemoryRetracted`` / ``MemoryPromoted`` facts reach these tables only through the derived events the enricher turns
them into, so a rebuild of the derived stream replays every change in one order.

Nothing is destroyed: ``replace`` closes the old belief (``invalid_at``, ``superseded_by``, status ``superseded``)
and opens a new one; ``merge`` rewrites the target's text and keeps every source; ``ignore`` adds the new evidence
to the existing item's sources. So the history of every belief stays queryable (bi-temporal validity).

Withdrawal (``TurnsWithdrawn``, issue #26 item 6, through the enricher's ``SourcesWithdrawn``): a link to a withdrawn
turn stays, marked ``withdrawn_by``; an item whose every piece of evidence is withdrawn is retracted with a reason
(so it leaves context, recall, profiles); one with another live source keeps living, reworded when a merge had
taken the withdrawn turn's wording; an item a retracted one had replaced comes back. Evidence = the links of the
extraction decisions (add, merge, replace, keep_both, ignore); status links (retract, promote, consolidation) are not.
"""

from __future__ import annotations

import uuid

import msgspec

from memengine.events.derived import (
    Derived,
    ExtractedMemory,
    MemoriesConsolidated,
    MemoriesExtracted,
    MemoriesRevised,
    MemoryChange,
    SourcesWithdrawn,
)
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp
from memengine.projections.segment import lexical_text

_json = msgspec.json.Encoder()

_INSERT = """
INSERT INTO memory_items (tenant_id, memory_id, user_id, thread_id, type, text, data, importance, confidence, tags,
                          priority, expires_at, source_session_id, dedupe_hash, status, valid_at, created_at,
                          updated_at, last_event_id, lex_text)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $16, $17, $18)
ON CONFLICT (tenant_id, memory_id) DO NOTHING
"""
_MERGE = """
UPDATE memory_items SET text = $3, tags = ARRAY(SELECT DISTINCT unnest(tags || $4::text[]) ORDER BY 1),
       importance = GREATEST(importance, $5), confidence = GREATEST(confidence, $6), updated_at = $7,
       last_event_id = $8, lex_text = $9
WHERE tenant_id = $1 AND memory_id = $2
"""
_SUPERSEDE = """
UPDATE memory_items SET status = 'superseded', invalid_at = $3, superseded_by = $4, updated_at = $3,
       last_event_id = $5
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
#: ``reason``: the merge decision's or the change's (schema 0021): audit shows why each link exists
_SOURCE = """
INSERT INTO memory_item_sources (tenant_id, memory_id, derived_event_id, source_event_id, action, reason)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
"""
_RELATION = """
INSERT INTO memory_relations (tenant_id, from_id, to_id, relation, derived_event_id, reason)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
"""


def lex_text(text: str) -> str | None:
    """``memory_items.lex_text``: ``text`` with its CJK runs cut into words (``projections.segment``, schema 0044),
    ``None`` when it has no CJK character (the full-text index then parses ``text`` itself)."""
    lex = lexical_text(text)
    return None if lex is text else lex


def _memory_ops(e: Derived, m: ExtractedMemory, thread: str | None = None) -> list[SqlOp]:
    t = e.tenant_id
    sources = m.source_event_ids or e.source_event_ids
    action = m.decision.action
    ops: list[SqlOp] = []
    if action in ("add", "keep_both", "replace"):
        ops.append(SqlOp("memory_items", _INSERT, (
            t, m.memory_id, m.user_id, thread or e.thread_id, m.memory_type, m.text, _json.encode(m.data).decode(),
            m.importance, m.confidence, list(m.tags), m.priority, m.expires_at, e.session_id, m.dedupe_hash,
            m.status, e.occurred_at, e.event_id, lex_text(m.text))))
    if action == "merge":
        ops.append(SqlOp("memory_items", _MERGE, (t, m.memory_id, m.text, list(m.tags), m.importance,
                                                   m.confidence, e.occurred_at, e.event_id, lex_text(m.text))))
    if action == "replace":
        for target in m.decision.target_ids:
            ops.append(SqlOp("memory_items", _SUPERSEDE, (t, target, e.occurred_at, m.memory_id, e.event_id)))
            ops.append(SqlOp("memory_relations", _RELATION, (t, m.memory_id, target, "supersedes", e.event_id,
                                                             m.decision.reason or None)))
    if action == "keep_both":
        for target in m.decision.target_ids:
            ops.append(SqlOp("memory_relations", _RELATION, (t, m.memory_id, target, "related", e.event_id,
                                                             m.decision.reason or None)))
    owners = m.decision.target_ids if action == "ignore" else [m.memory_id]
    for owner in owners:  # an ignored duplicate still counts as evidence for the item it repeats
        ops.extend(SqlOp("memory_item_sources", _SOURCE, (t, owner, e.event_id, s, action, m.decision.reason or None))
                   for s in sources)
    return ops


def on_memories_extracted(e: MemoriesExtracted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [op for m in e.memories for op in _memory_ops(e, m)]


# -- lifecycle changes (MemoryChange); status changes keep the row and set invalid_at: nothing is destroyed ------------

_RETRACT = """
UPDATE memory_items SET status = 'retracted', invalid_at = $3, updated_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
_PROMOTE = """
UPDATE memory_items SET status = 'active', updated_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = $2 AND status = 'quarantined'
"""
#: the survivor of a dedupe merge keeps the higher importance of the two (read before the duplicate is closed)
_ABSORB = """
UPDATE memory_items s SET importance = GREATEST(s.importance, d.importance), last_event_id = $4
FROM memory_items d
WHERE s.tenant_id = $1 AND s.memory_id = $3 AND d.tenant_id = $1 AND d.memory_id = $2
"""
_CLOSE = """
UPDATE memory_items SET status = $5, invalid_at = $3, superseded_by = $6, updated_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
_EXPIRE = """
UPDATE memory_items SET status = 'expired', invalid_at = coalesce(expires_at, $3), updated_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
#: decay and demotion leave updated_at alone: decay runs from max(updated_at, decayed_at)
_DECAY = """
UPDATE memory_items SET importance = $5, decayed_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
_DEMOTE = """
UPDATE memory_items SET priority = $4, expires_at = $5, last_event_id = $3
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""
#: the survivor of a merge gains the duplicate's evidence, linked through the consolidation event
_COPY_SOURCES = """
INSERT INTO memory_item_sources (tenant_id, memory_id, derived_event_id, source_event_id, action, reason,
                                 withdrawn_by)
SELECT tenant_id, $3::text, $4::uuid, source_event_id, 'merge', $5, withdrawn_by FROM memory_item_sources
WHERE tenant_id = $1 AND memory_id = $2
ON CONFLICT DO NOTHING
"""


def _change_ops(e: Derived, c: MemoryChange, sources: list[uuid.UUID]) -> list[SqlOp]:
    """SQL for one ``MemoryChange`` of event ``e`` (``events.derived.MemoryChange`` lists the semantics).

    ``sources``: event ids recorded in ``memory_item_sources`` for a status change (the fact behind a retraction or
    promotion; the consolidation event itself otherwise), so ``memengine audit`` shows what closed an item."""
    t, at, eid, mid = e.tenant_id, e.occurred_at, e.event_id, c.memory_id
    why = c.reason or None
    ops: list[SqlOp] = []
    a = c.action
    if a == "retract":
        ops.append(SqlOp("memory_items", _RETRACT, (t, mid, at, eid)))
    elif a == "promote":
        ops.append(SqlOp("memory_items", _PROMOTE, (t, mid, at, eid)))
    elif a == "merge" and c.superseded_by:
        ops.append(SqlOp("memory_items", _ABSORB, (t, mid, c.superseded_by, eid)))
        ops.append(SqlOp("memory_items", _CLOSE, (t, mid, at, eid, "superseded", c.superseded_by)))
        ops.append(SqlOp("memory_item_sources", _COPY_SOURCES, (t, mid, c.superseded_by, eid, why)))
        ops.append(SqlOp("memory_relations", _RELATION, (t, c.superseded_by, mid, "merged", eid, why)))
    elif a == "compress" and c.superseded_by:
        ops.append(SqlOp("memory_items", _CLOSE, (t, mid, at, eid, "superseded", c.superseded_by)))
        ops.append(SqlOp("memory_relations", _RELATION, (t, c.superseded_by, mid, "compressed", eid, why)))
    elif a == "delete":
        ops.append(SqlOp("memory_items", _CLOSE, (t, mid, at, eid, "deleted", None)))
    elif a == "expire":
        ops.append(SqlOp("memory_items", _EXPIRE, (t, mid, at, eid)))
    elif a == "decay" and c.importance is not None:
        ops.append(SqlOp("memory_items", _DECAY, (t, mid, at, eid, c.importance)))
    elif a == "demote":
        ops.append(SqlOp("memory_items", _DEMOTE, (t, mid, eid, c.priority or "TRANSIENT", c.expires_at)))
    if a != "decay":
        ops.extend(SqlOp("memory_item_sources", _SOURCE, (t, mid, eid, s, a, why)) for s in sources)
    return ops


def on_memories_revised(e: MemoriesRevised, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Retraction / promotion asked for by a fact: the change, plus the fact as the item's evidence of it."""
    return [op for c in e.changes for op in _change_ops(e, c, list(e.source_event_ids))]


def on_memories_consolidated(e: MemoriesConsolidated, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """One consolidation run: the compressed items first (they are the targets of ``compress``), then every change
    in the recorded order."""
    ops: list[SqlOp] = []
    for m in e.created:
        ops.extend(_memory_ops(e, m, thread=str(m.data.get("thread_id") or e.thread_id)))
    for c in e.changes:
        ops.extend(_change_ops(e, c, [e.event_id]))
    return ops


# -- withdrawn source turns (TurnsWithdrawn -> SourcesWithdrawn, issue #26 item 6) ----------------------------------

#: every link to a withdrawn turn is kept (the audit trail) and marked; copies made by a later consolidation merge
#: carry the mark (``_COPY_SOURCES``)
_MARK_WITHDRAWN = """
UPDATE memory_item_sources SET withdrawn_by = $3
WHERE tenant_id = $1 AND source_event_id = ANY($2::uuid[]) AND withdrawn_by IS NULL
"""
_RETRACT_MANY = """
UPDATE memory_items SET status = 'retracted', invalid_at = $3, updated_at = $3, last_event_id = $4
WHERE tenant_id = $1 AND memory_id = ANY($2::text[]) AND invalid_at IS NULL
"""

#: an item replaced by one now retracted for want of evidence is active again (the overturning turn is withdrawn)
_RESTORE = """
UPDATE memory_items SET status = 'active', invalid_at = NULL, superseded_by = NULL, updated_at = $3,
       last_event_id = $4
WHERE tenant_id = $1 AND memory_id = ANY($2::text[]) AND status = 'superseded' AND superseded_by = ANY($5::text[])
"""

_REWORD = """
UPDATE memory_items SET text = $3, dedupe_hash = $4, updated_at = $5, last_event_id = $6, lex_text = $7
WHERE tenant_id = $1 AND memory_id = $2 AND invalid_at IS NULL
"""


def on_sources_withdrawn(e: SourcesWithdrawn, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """Withdrawal of source turns: every link to them is marked ``withdrawn_by`` (kept, so ``memengine audit`` still
    shows where an item came from and what withdrew it); the items the enricher found with no live evidence left
    (``retracted``) are retracted, linked to the ``TurnsWithdrawn`` fact with the reason; the items they had replaced
    that keep live evidence (``restored``) are active again, when still superseded by a retracted one. An item with
    another live source keeps living, in the wording it would have without the withdrawn merges (``reworded``).
    Each op names its ids: no op reads a table another op of this event writes, so the runner's grouping by table
    cannot change the result."""
    t, at, eid = e.tenant_id, e.occurred_at, e.event_id
    ops: list[SqlOp] = []
    if e.withdrawn_event_ids:
        ops.append(SqlOp("memory_item_sources", _MARK_WITHDRAWN, (t, list(e.withdrawn_event_ids), eid)))
    if e.retracted:
        ops.append(SqlOp("memory_items", _RETRACT_MANY, (t, list(e.retracted), at, eid)))
        why = e.reason or "source turns withdrawn"
        ops.extend(SqlOp("memory_item_sources", _SOURCE, (t, mid, eid, s, "retract", why))
                   for mid in e.retracted for s in e.source_event_ids)
    ops.extend(SqlOp("memory_items", _REWORD, (t, r.memory_id, r.text, r.dedupe_hash, at, eid,
                                                            lex_text(r.text))) for r in e.reworded)
    if e.restored:
        ops.append(SqlOp("memory_items", _RESTORE, (t, list(e.restored), at, eid, list(e.retracted))))
        ops.extend(SqlOp("memory_item_sources", _SOURCE, (t, mid, eid, s, "restore",
                                                          "the item that replaced it came from withdrawn turns"))
                   for mid in e.restored for s in e.source_event_ids)
    return ops


PROJECTION = Projection(
    name="memory_items",
    # 2: memory_item_sources.reason / memory_relations.reason (schema 0021, issue #15 item 4); 3: SourcesWithdrawn,
    # memory_item_sources.withdrawn_by (schema 0040, issue #26 item 6); 4: lex_text, the text's CJK words (schema
    # 0044, issue #28)
    version=4,
    tables=("memory_items", "memory_item_sources", "memory_relations"),
    handlers={MemoriesExtracted: on_memories_extracted, MemoriesRevised: on_memories_revised,
              MemoriesConsolidated: on_memories_consolidated, SourcesWithdrawn: on_sources_withdrawn},
)
