"""``memengine rebuild vectors --model M``: switch the store's embedding model by a rebuild, never a mix (issue #28
item 3).

The new model's tables (``memory_embeddings_<hash of M>`` and its memory-item table) are the shadow: registered
``building`` (``engine.embedding.registry``), filled by an ``EmbedderWorker`` of M from ``memory_vectors`` and
``memory_items`` (``embedding_cache`` first: a text M embedded before is not embedded again), caught up once more,
then the registry is swapped in one transaction (the active model retired, M active). Queries go on throughout: a
process keeps embedding its queries with its configured model and comparing them with that model's table only, so
no answer ever ranks vectors of two models; processes configured with the old model keep answering from its
(retired, still maintained by their own worker) table until they are restarted with M, and a restart with the old
model is refused with the command that switches back. The old tables are kept: switching back re-embeds only the
turns that changed since.

Same name, other weights (``checksum`` differs, e.g. an upgraded package): the name's cache rows and vectors are of
the old weights, so they are deleted and the store embedded again in place; stop the processes still running the
old weights first (their queries would meet the new vectors).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import asyncpg
import structlog

from memengine.engine.embedding.models import Embedder, OpenAIEmbedder, item_table_for
from memengine.engine.embedding.registry import REGISTRY_LOCK, active_model, checksum_of
from memengine.engine.embedding.worker import EmbedderWorker

log = structlog.get_logger("memengine.embedding.switch")


@dataclass
class SwitchReport:
    """What ``switch_model`` did: ``model`` now active (``dim``, ``checksum``), ``previous`` active model (``None``
    on a store without one), texts ``embedded`` by the model and vectors taken from the ``cached`` embeddings,
    ``vectors`` written, ``seconds`` taken, ``reembedded_in_place`` (same name, other weights)."""

    model: str
    previous: str | None
    dim: int
    checksum: str | None
    embedded: int
    cached: int
    vectors: int
    seconds: float
    reembedded_in_place: bool


async def switch_model(pool: asyncpg.Pool, embedder: Embedder, *, batch: int = 64,
                       concurrency: int = 1) -> SwitchReport:
    """Embed the whole store with ``embedder`` into its own tables and make it the active model (module
    docstring). Idempotent: run again after an interruption, it embeds only what is missing (the cache keeps what
    was embedded). Raises what the embedder raises (nothing is swapped then) and ``RuntimeError`` if the model was
    registered with another dimension."""
    t0 = time.perf_counter()
    if isinstance(embedder, OpenAIEmbedder):
        await embedder.probe()
    checksum = await asyncio.to_thread(checksum_of, embedder)
    prev = await active_model(pool)
    in_place = (prev is not None and prev["model"] == embedder.name and prev["checksum"] is not None
                and checksum is not None and prev["checksum"] != checksum)
    if in_place:
        assert prev is not None
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", REGISTRY_LOCK)
            await conn.execute("DELETE FROM embedding_cache WHERE model = $1", embedder.name)
            await conn.execute(f"TRUNCATE {prev['table_name']}, {item_table_for(prev['table_name'])}")
            await conn.execute("UPDATE embedding_models SET checksum = $2, done_seq = 0 WHERE model = $1",
                               embedder.name, checksum)
    worker = EmbedderWorker(pool, embedder, batch=batch, concurrency=concurrency, shadow=True)
    table = await worker.ensure()
    written = await worker.catch_up()
    # the live fold went on meanwhile: one more round for the turns folded during the first, then the swap
    written += await worker.catch_up()
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", REGISTRY_LOCK)
        # retire first: the unique index allows one active row at every statement's end
        await conn.execute("UPDATE embedding_models SET state = 'retired' WHERE state = 'active' AND model <> $1",
                           embedder.name)
        await conn.execute("UPDATE embedding_models SET state = 'active', activated_at = now(),"
                           " checksum = coalesce($2, checksum) WHERE model = $1 AND state <> 'active'",
                           embedder.name, checksum)
    await pool.execute(f"ANALYZE {table}")
    report = SwitchReport(model=embedder.name, previous=prev["model"] if prev is not None else None,
                          dim=embedder.dim, checksum=checksum, embedded=worker.stats.embedded,
                          cached=worker.stats.cached, vectors=written, seconds=round(time.perf_counter() - t0, 3),
                          reembedded_in_place=in_place)
    log.info("embedding model switched", **report.__dict__)
    return report
