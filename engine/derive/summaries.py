"""When the enricher summarises a thread (seed 000 §3.1): every ``MEMORY_SUMMARY_THRESHOLD`` new messages, a
``SummaryUpdated`` (the rolling summary, recursively compressed at ``MEMORY_MAX_SUMMARY_TOKENS``) and its
``TopicsExtracted``, both from the thread's ``Deriver`` (``engine.derive.llm``).
"""

from __future__ import annotations

from typing import Any

import asyncpg
import structlog

from memengine.engine.adapters.settings import Settings
from memengine.engine.derive.llm import DerivationUnavailable, Deriver
from memengine.engine.derive.turns import load_turns
from memengine.events import SummaryUpdated, TopicMention, TopicsExtracted, derived_event_id

log = structlog.get_logger("memengine.enricher")  # the enricher's logger: the same log lines as before the move


async def rolling_summaries(pool: asyncpg.Pool, deriver: Deriver, settings: Settings, tenant: str, thread: str,
                            upto: int, *, reset: str | None = None) -> list[Any]:
    """Summarise the thread's messages after the last summary once there are ``summary_threshold`` of them.

    ``reset`` (the id of a ``TurnsWithdrawn`` fact whose ``SourcesWithdrawn`` dropped the summary, issue #26 item 6):
    start again from the thread's first live message, ignoring the summary row (its drop is not folded yet), with
    event ids salted by the fact's id (a summary ending at the same turn as a dropped one is a new event, not a
    duplicate for the server's dedup). Messages pruned from ``messages`` are not re-read from the log: the new summary
    covers the live transcript (their turns stay reachable in history)."""
    prev = None if reset else await pool.fetchrow(
        "SELECT summary, message_count, covers_until_seq FROM conversation_summaries"
        " WHERE tenant_id = $1 AND thread_id = $2", tenant, thread)
    after = prev["covers_until_seq"] if prev else 0
    out: list[Any] = []
    while True:
        turns = await load_turns(pool, tenant, thread, "seq > $3 AND seq <= $4 AND role IN ('user', 'assistant')",
                                 after, upto)
        n = settings.summary_threshold
        if len(turns) < n:
            return out
        chunk = turns[:n]
        previous = prev["summary"] if prev else None
        try:
            text = await deriver.summarize(chunk, settings.max_summary_tokens, previous)
        except DerivationUnavailable as exc:
            # seed 000 §6: warn, keep the old summary; the messages stay pending for the next batch
            log.warning("summary skipped: model unavailable; old summary kept", thread=thread, error=str(exc))
            return out
        last = chunk[-1]
        count = (prev["message_count"] if prev else 0) + len(chunk)
        ids = [t.event_id for t in chunk]
        common: dict[str, Any] = dict(tenant_id=tenant, thread_id=thread, occurred_at=last.occurred_at,
                      producer="memengine-enricher", source_event_ids=ids,
                      source_seq_range=[chunk[0].seq, last.seq], model=deriver.model,
                      prompt_version=deriver.prompt_version)
        salt = (reset,) if reset else ()
        out.append(SummaryUpdated(event_id=derived_event_id(tenant, thread, "summary", str(last.seq), *salt),
                                  summary=text, message_count=count, **common))
        topics = await deriver.topics(chunk)
        if topics:
            out.append(TopicsExtracted(event_id=derived_event_id(tenant, thread, "topics", str(last.seq), *salt),
                                       topics=[TopicMention(topic=t, mentions=1) for t in topics], **common))
        prev = {"summary": text, "message_count": count, "covers_until_seq": last.seq}
        after = last.seq
