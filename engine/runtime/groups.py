"""The projector groups: which projections fold together, from which stream, as which durable consumer.

One table for the live engine (engine/bootstrap.py runs one runner per group) and for the scratch folds of rebuild,
verify and time travel (engine/ops/rebuild.py), so the two cannot drift. ``core`` and ``recall`` fold the facts
stream (partitioned when ``MEMENGINE_PARTITIONS`` > 1, issue #6: consumers ``<name>-p<i>``, see
``consumer.partition_consumer``); ``derived`` folds the derived stream (never partitioned); ``access`` folds the served
stream (the access trail, issue #30; never partitioned). Order: registry order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memengine.engine.runtime.consumer import StreamSource
from memengine.events import StreamNames, Subjects
from memengine.projections.ops import Projection
from memengine.projections.registry import ACCESS_PROJECTIONS, DERIVED_PROJECTIONS, PROJECTIONS, RECALL_PROJECTIONS


@dataclass(frozen=True)
class ProjectorGroup:
    """One projector group: ``name`` (the live durable consumer and advisory lock name), ``stream`` (``"facts"`` or
    ``"derived"`` or ``"served"``), ``projections`` (folded together, in order)."""

    name: str
    stream: Literal["facts", "derived", "served"]
    projections: tuple[Projection, ...]

    def source(self, streams: StreamNames, subjects: Subjects) -> StreamSource:
        """The ``StreamSource`` this group folds."""
        if self.stream == "derived":
            return StreamSource.derived(streams, subjects)
        if self.stream == "served":
            return StreamSource.served(streams, subjects)
        return StreamSource.facts(streams, subjects)

    def stream_name(self, streams: StreamNames) -> str:
        """The JetStream stream this group folds (``streams.facts`` or ``streams.derived``)."""
        return {"derived": streams.derived, "served": streams.served}.get(self.stream, streams.facts)


CORE = ProjectorGroup("core", "facts", tuple(PROJECTIONS))
RECALL = ProjectorGroup("recall", "facts", tuple(RECALL_PROJECTIONS))
DERIVED = ProjectorGroup("derived", "derived", tuple(DERIVED_PROJECTIONS))
ACCESS = ProjectorGroup("access", "served", tuple(ACCESS_PROJECTIONS))

#: Every group by name, in registry order.
GROUPS: dict[str, ProjectorGroup] = {g.name: g for g in (CORE, RECALL, DERIVED, ACCESS)}
