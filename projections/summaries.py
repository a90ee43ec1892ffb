"""``conversation_summaries`` and ``memory_topics`` (seed 000 §1.2, §3.1, §4.4), folded from derived events.

The summary row is replaced by each ``SummaryUpdated`` (the event carries the whole rolling summary); topic mention
counts add up across ``TopicsExtracted`` events.

Withdrawal (``TurnsWithdrawn`` through the enricher's ``SourcesWithdrawn``, issue #26 item 6): when the summary
covered a withdrawn turn (``summary_reset``, decided by the enricher) the thread's summary and topics are dropped; the
enricher publishes the new summary of the turns left right after it (``engine.derive.summaries``).
"""

from __future__ import annotations

from memengine.events.derived import SourcesWithdrawn, SummaryUpdated, TopicsExtracted
from memengine.projections.ops import FoldConfig, Position, Projection, SqlOp

_SUMMARY = """
INSERT INTO conversation_summaries AS s (tenant_id, thread_id, summary, message_count, covers_until_seq, updated_at,
                                         event_id, model)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant_id, thread_id) DO UPDATE SET
    summary = EXCLUDED.summary, message_count = EXCLUDED.message_count, covers_until_seq = EXCLUDED.covers_until_seq,
    updated_at = EXCLUDED.updated_at, event_id = EXCLUDED.event_id, model = EXCLUDED.model
WHERE s.covers_until_seq <= EXCLUDED.covers_until_seq
"""
_TOPIC = """
INSERT INTO memory_topics AS t (tenant_id, thread_id, topic, mention_count, last_seen_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id, thread_id, topic) DO UPDATE SET
    mention_count = t.mention_count + EXCLUDED.mention_count,
    last_seen_at = GREATEST(t.last_seen_at, EXCLUDED.last_seen_at)
"""


def on_summary_updated(e: SummaryUpdated, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp("conversation_summaries", _SUMMARY,
                  (e.tenant_id, e.thread_id, e.summary, e.message_count, e.source_seq_range[1], e.occurred_at,
                   e.event_id, e.model))]


def on_topics_extracted(e: TopicsExtracted, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    return [SqlOp("memory_topics", _TOPIC, (e.tenant_id, e.thread_id, t.topic, t.mentions, e.occurred_at))
            for t in e.topics]


_DROP_SUMMARY = "DELETE FROM conversation_summaries WHERE tenant_id = $1 AND thread_id = $2"
_DROP_TOPICS = "DELETE FROM memory_topics WHERE tenant_id = $1 AND thread_id = $2"


def on_sources_withdrawn(e: SourcesWithdrawn, pos: Position, cfg: FoldConfig) -> list[SqlOp]:
    """``summary_reset``: the thread's summary and topics quoted a withdrawn turn: both go (re-summarised after)."""
    if not e.summary_reset:
        return []
    return [SqlOp("conversation_summaries", _DROP_SUMMARY, (e.tenant_id, e.thread_id)),
            SqlOp("memory_topics", _DROP_TOPICS, (e.tenant_id, e.thread_id))]


PROJECTION = Projection(
    name="summaries",
    version=2,  # 2: SourcesWithdrawn (issue #26 item 6)
    tables=("conversation_summaries", "memory_topics"),
    handlers={SummaryUpdated: on_summary_updated, TopicsExtracted: on_topics_extracted,
              SourcesWithdrawn: on_sources_withdrawn},
)
