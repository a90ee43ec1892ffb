"""Helpers to compare live read models with a clean fold of the same log."""

from __future__ import annotations

import asyncpg
import msgspec

from memengine.engine.adapters import postgres as db
from memengine.engine.adapters.settings import Settings
from memengine.engine.runtime.consumer import StreamSource
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.events import StreamNames, Subjects
from memengine.projections.ops import FoldConfig
from memengine.projections.registry import DERIVED_PROJECTIONS, PROJECTIONS, RECALL_PROJECTIONS

#: What a read model must reproduce, per table: ORDER BY of its rows. Bookkeeping tables are excluded.
READ_MODELS = {
    "thread_activity": "tenant_id, thread_id",
    "messages": "tenant_id, thread_id, seq",
    "tombstones": "tenant_id, scope, scope_id, seq",
}
#: Recall rows (their own consumer, ``RECALL_PROJECTIONS``): windows of neighbouring turns, so per-thread order shows.
RECALL_READ_MODELS = {"memory_vectors": "tenant_id, thread_id, seq"}
#: Read models folded from MEMORY_DERIVED.
DERIVED_READ_MODELS = {
    "conversation_summaries": "tenant_id, thread_id",
    "memory_topics": "tenant_id, thread_id, topic",
    "memory_items": "tenant_id, memory_id",
    "memory_item_sources": "tenant_id, memory_id, derived_event_id, source_event_id",
    "memory_relations": "tenant_id, from_id, to_id, relation",
    "episodes": "tenant_id, episode_id",
    "derived_events": "tenant_id, event_id",
    "message_prune_marks": "tenant_id, thread_id",
}


async def snapshot(dsn: str, tables: dict[str, str] = READ_MODELS) -> dict[str, list[tuple]]:
    """Every row of every read model in ``tables``, in a stable order."""
    conn = await asyncpg.connect(dsn)
    try:
        return {t: [tuple(r) for r in await conn.fetch(f"SELECT * FROM {t} ORDER BY {order}")]
                for t, order in tables.items()}
    finally:
        await conn.close()


async def clean_fold(js, settings: Settings, dsn: str, name: str = "cleanfold", derived: bool = False,  # type: ignore[no-untyped-def]
                     projections: tuple | None = None) -> int:
    """Fold the whole facts stream (or the derived stream) into the (fresh) database ``dsn`` with a new durable
    consumer, in one process and unpartitioned; ``projections`` default to the core (or derived) ones."""
    pool = await db.create_pool(dsn)
    streams, subjects = StreamNames.for_prefix(settings.stream_prefix), Subjects(settings.subject_root)
    source = StreamSource.derived(streams, subjects) if derived else StreamSource.facts(streams, subjects)
    try:
        projections = projections or (DERIVED_PROJECTIONS if derived else PROJECTIONS)
        runner = ProjectorRunner(name=name, projections=projections,
                                 nc=js._nc, js=js, pool=pool, streams=streams, subjects=subjects,
                                 fold_config=FoldConfig(condensed_tool_max=settings.condensed_tool_max),
                                 batch_size=settings.batch_size, source=source)
        assert await runner.try_start()
        last = await runner.catch_up(timeout=120)
        await runner.stop()
        await js.delete_consumer(source.stream, name)
        return last
    finally:
        await pool.close()


async def live_and_clean(js, settings: Settings, clean_dsn: str) -> tuple[dict[str, list[tuple]], ...]:  # type: ignore[no-untyped-def]
    """``(live core, live recall, clean core, clean recall)`` snapshots: the read models of ``settings.database_url``
    and those of a clean, single-process fold of the same facts stream into the fresh database ``clean_dsn``."""
    live = await snapshot(settings.database_url or "")
    live_recall = await snapshot(settings.database_url or "", RECALL_READ_MODELS)
    await clean_fold(js, settings, clean_dsn)
    await clean_fold(js, settings, clean_dsn, name="cleanrecall", projections=RECALL_PROJECTIONS)
    return live, live_recall, await snapshot(clean_dsn), await snapshot(clean_dsn, RECALL_READ_MODELS)


def diff(a: dict[str, list[tuple]], b: dict[str, list[tuple]]) -> str:
    """Empty string when equal, else a short description of the first difference per table."""
    out = []
    for table in a:
        ra, rb = a[table], b[table]
        if ra != rb:
            first = next((i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y), min(len(ra), len(rb)))
            out.append(f"{table}: {len(ra)} vs {len(rb)} rows, first difference at row {first}: "
                       f"{msgspec.json.encode(ra[first:first+1], enc_hook=str)[:300]!r} vs "
                       f"{msgspec.json.encode(rb[first:first+1], enc_hook=str)[:300]!r}")
    return "\n".join(out)
