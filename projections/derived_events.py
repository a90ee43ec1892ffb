"""``derived_events``: an index of every derived event (type, model, prompt version, sequence, source range), the
middle link of the audit chain memory item -> derived event -> source turns."""

from __future__ import annotations

from memengine.events.derived import DERIVED_TYPES, Derived
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

_INSERT = """
INSERT INTO derived_events (tenant_id, event_id, seq, type, thread_id, model, prompt_version, source_first_seq,
                            source_last_seq, occurred_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT DO NOTHING
"""


def on_derived(e: Derived, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp("derived_events", _INSERT, (
        e.tenant_id, e.event_id, pos.seq, type(e).__name__, e.thread_id, e.model, e.prompt_version,
        e.source_seq_range[0], e.source_seq_range[1], e.occurred_at))]


PROJECTION = Projection(name="derived_events", version=1, tables=("derived_events",),
                        handlers={t: on_derived for t in DERIVED_TYPES})
