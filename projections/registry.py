"""Which projection handles which event: the one place to grep.

``PROJECTIONS`` lists every read model; ``handlers_for(EventType)`` answers "who handles X".
"""

from __future__ import annotations

from memengine.projections import (
    access,
    derived_events,
    episodes,
    memory_items,
    messages,
    pruning,
    summaries,
    thread_activity,
    tombstones,
    vectors,
)
from memengine.projections.ops import Fold, Projection

#: Every read model folded from MEMORY_FACTS, in the order their ops run within a batch.
PROJECTIONS: tuple[Projection, ...] = (
    thread_activity.PROJECTION,  # TurnRecorded, SessionEnded, ThreadLabelled, ThreadDeleted
    messages.PROJECTION,  # TurnRecorded, ThreadDeleted, TurnsWithdrawn
    tombstones.PROJECTION,  # ThreadDeleted, UserForgotten (no content: who, when, scope)
)

#: Recall rows, folded from MEMORY_FACTS by their own consumer: each row write computes two tsvectors (costly),
#: and context (read-your-writes) must not wait for them. Embeddings come from engine.embedder_worker.
RECALL_PROJECTIONS: tuple[Projection, ...] = (
    vectors.PROJECTION,  # TurnRecorded, ThreadDeleted, TurnsWithdrawn
)


#: Read models folded from MEMORY_DERIVED (model output with provenance).
DERIVED_PROJECTIONS: tuple[Projection, ...] = (
    summaries.PROJECTION,  # SummaryUpdated, TopicsExtracted, SourcesWithdrawn (summary_reset)
    memory_items.PROJECTION,  # MemoriesExtracted, MemoriesRevised, MemoriesConsolidated, SourcesWithdrawn
    episodes.PROJECTION,  # EpisodeRecorded, SourcesWithdrawn
    pruning.PROJECTION,  # MessagesPruned (also deletes the pruned turns from messages)
    derived_events.PROJECTION,  # every derived event (audit index)
)


#: Read models folded from the served stream (the access trail, issue #30): what each answer placed, and
#: ``access_count`` / ``last_accessed_at`` per memory item and turn.
ACCESS_PROJECTIONS: tuple[Projection, ...] = (
    access.PROJECTION,  # ContextServed, RecallServed
)


def by_name(names: list[str] | None = None) -> tuple[Projection, ...]:
    """The projections called ``names`` (all when ``None``); ``KeyError`` names an unknown one."""
    if not names:
        return PROJECTIONS
    known = {p.name: p for p in PROJECTIONS + RECALL_PROJECTIONS + DERIVED_PROJECTIONS + ACCESS_PROJECTIONS}
    missing = [n for n in names if n not in known]
    if missing:
        raise KeyError(f"unknown projection(s) {missing}; known: {sorted(known)}")
    return tuple(known[n] for n in names)


def handlers_for(event_type: type, projections: tuple[Projection, ...] = PROJECTIONS) -> list[tuple[str, Fold]]:
    """``[(projection name, fold), ...]`` for ``event_type``."""
    return [(p.name, p.handlers[event_type]) for p in projections if event_type in p.handlers]
