"""The embedder worker: keeps the per-model embeddings table in step with ``memory_vectors`` (issue #3 §2).

Embeddings are not events (DESIGN.md): they are a cache of a deterministic function of ``emb_text``. The worker
finds turns whose current ``emb_sha`` has no vector for the model, looks each text up in ``embedding_cache`` by
``(model, sha256(text))``, embeds only the misses in batches and stores cache + embedding rows. A rebuild of the
read models therefore never embeds a text twice.

``await worker.catch_up()`` embeds everything pending and returns (CLI, tests); ``run(stop)`` does it whenever
the projector announces progress (``LISTEN memengine_progress``) until ``stop`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from memengine.engine.adapters.checkpoints import PROGRESS_CHANNEL
from memengine.engine.adapters.postgres import is_transient
from memengine.engine.embedding.models import Embedder, OpenAIEmbedder, item_table_for, table_for, vec_literal

log = structlog.get_logger("memengine.embedder")


async def ensure_embeddings_table(pool: asyncpg.Pool, model: str, dim: int) -> str:
    """Create (idempotently) the ``vector(dim)`` table of ``model`` with its HNSW index, and its memory-item table
    (``item_table_for``); returns the turn table's name.

    Raises ``RuntimeError`` if the model was registered with another dimension."""
    table = table_for(model)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", table)
        known = await conn.fetchval("SELECT dim FROM embedding_models WHERE model = $1", model)
        if known is not None and known != dim:
            raise RuntimeError(f"embedding model {model!r} is registered with dim {known}, now reports {dim}")
        await conn.execute(f"""
            CREATE TABLE IF NOT EXISTS {table} (
                tenant_id  TEXT NOT NULL,
                thread_id  TEXT NOT NULL,
                seq        BIGINT NOT NULL,
                emb_sha    BYTEA NOT NULL,
                emb        vector({int(dim)}) NOT NULL,
                PRIMARY KEY (tenant_id, thread_id, seq))""")
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (emb vector_cosine_ops)")
        # typed memory items (search_memory): one vector per item text, found again by the derived event that last
        # changed the item; recall scans them exactly (an agent's items number in the thousands)
        await conn.execute(f"""
            CREATE TABLE IF NOT EXISTS {item_table_for(table)} (
                tenant_id      TEXT NOT NULL,
                memory_id      TEXT NOT NULL,
                last_event_id  UUID NOT NULL,
                emb_sha        BYTEA NOT NULL,
                emb            vector({int(dim)}) NOT NULL,
                PRIMARY KEY (tenant_id, memory_id))""")
        await conn.execute("INSERT INTO embedding_models (model, dim, table_name) VALUES ($1, $2, $3)"
                           " ON CONFLICT (model) DO NOTHING", model, dim, table)
    return table


@dataclass
class EmbedStats:
    embedded: int = 0  # texts sent to the model
    cached: int = 0  # texts found in embedding_cache
    stored: int = 0  # embedding rows written


class EmbedderWorker:
    """Embeds pending turns for ``embedder`` into its table. ``batch``: texts per model call."""

    def __init__(self, pool: asyncpg.Pool, embedder: Embedder, *, batch: int = 64) -> None:
        self.pool = pool
        self.embedder = embedder
        self.batch = batch
        self.table: str | None = None
        self.stats = EmbedStats()
        self._watermark = 0  # highest memory_vectors.changed_seq fully handled
        self._lock = asyncio.Lock()
        self._last_gc = 0.0
        self._since_analyze = 0
        self._rows_at_analyze = 0

    async def ensure(self) -> str:
        if self.table is None:
            if isinstance(self.embedder, OpenAIEmbedder):
                await self.embedder.probe()
            self.table = await ensure_embeddings_table(self.pool, self.embedder.name, self.embedder.dim)
        return self.table

    async def catch_up(self) -> int:
        """Embed every pending turn; returns how many embedding rows were written."""
        async with self._lock:
            table = await self.ensure()
            written = 0
            while True:
                n = await self._one_round(table)
                written += n
                if n == 0:
                    break
            while n := await self._items_round(table):
                written += n
            await self._gc(table)
            return written

    async def _one_round(self, table: str) -> int:
        top = await self.pool.fetchval("SELECT coalesce(max(changed_seq), 0) FROM memory_vectors")
        rows = await self.pool.fetch(
            f"""SELECT v.tenant_id, v.thread_id, v.seq, v.emb_text, v.emb_sha
                  FROM memory_vectors v LEFT JOIN {table} e
                    ON e.tenant_id = v.tenant_id AND e.thread_id = v.thread_id AND e.seq = v.seq
                 WHERE v.changed_seq > $1 AND v.changed_seq <= $2 AND v.emb_text <> ''
                   AND (e.seq IS NULL OR e.emb_sha <> v.emb_sha)
                 ORDER BY v.changed_seq LIMIT 2000""", self._watermark, top)
        if not rows:
            self._watermark = max(self._watermark, int(top))
            return 0
        written = 0
        for i in range(0, len(rows), self.batch):
            written += await self._embed_rows(table, rows[i:i + self.batch])
        return written

    async def _embed_rows(self, table: str, rows: list[Any]) -> int:
        model = self.embedder.name
        shas = list({bytes(r["emb_sha"]) for r in rows})
        cached = {bytes(r["sha256"]): list(r["vec"]) for r in await self.pool.fetch(
            "SELECT sha256, vec FROM embedding_cache WHERE model = $1 AND sha256 = ANY($2::bytea[])", model, shas)}
        text_of = {bytes(r["emb_sha"]): r["emb_text"] for r in rows}
        misses = [s for s in shas if s not in cached]
        self.stats.cached += len(shas) - len(misses)
        if misses:
            vecs = await self.embedder.embed([text_of[s] for s in misses])
            self.stats.embedded += len(misses)
            fresh = dict(zip(misses, vecs, strict=True))
            await self.pool.executemany(
                "INSERT INTO embedding_cache (model, sha256, dim, vec) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT DO NOTHING", [(model, s, len(v), v) for s, v in fresh.items()])
            cached.update(fresh)
        await self.pool.execute(
            f"""INSERT INTO {table} (tenant_id, thread_id, seq, emb_sha, emb)
                SELECT u.t, u.th, u.s, u.h, u.v::vector
                  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[], $5::text[]) AS u(t, th, s, h, v)
                  -- the row may have been deleted meanwhile (ThreadDeleted): store only live rows
                  JOIN memory_vectors m ON m.tenant_id = u.t AND m.thread_id = u.th AND m.seq = u.s
                ON CONFLICT (tenant_id, thread_id, seq) DO UPDATE SET emb_sha = EXCLUDED.emb_sha, emb = EXCLUDED.emb""",
            [r["tenant_id"] for r in rows], [r["thread_id"] for r in rows], [r["seq"] for r in rows],
            [bytes(r["emb_sha"]) for r in rows], [vec_literal(cached[bytes(r["emb_sha"])]) for r in rows])
        self.stats.stored += len(rows)
        self._since_analyze += len(rows)
        if self._since_analyze >= max(200, self._rows_at_analyze // 10):
            # fresh statistics, else the planner believes the table is empty and recall's dense list nested-loops
            # (measured: 150 ms -> 23 ms per recall on LoCoMo after ANALYZE)
            await self.pool.execute(f"ANALYZE {table}")
            self._rows_at_analyze = int(await self.pool.fetchval(f"SELECT count(*) FROM {table}"))
            self._since_analyze = 0
        return len(rows)

    async def _items_round(self, table: str) -> int:
        """Embed up to 500 memory items whose text has no vector yet (new, or changed by a later derived event);
        returns how many item vectors were written. Texts go through ``embedding_cache`` like turns."""
        items = item_table_for(table)
        rows = await self.pool.fetch(
            f"""SELECT m.tenant_id, m.memory_id, m.last_event_id, m.text, sha256(convert_to(m.text, 'UTF8')) AS sha
                  FROM memory_items m LEFT JOIN {items} e ON e.tenant_id = m.tenant_id AND e.memory_id = m.memory_id
                 WHERE e.memory_id IS NULL OR e.last_event_id <> m.last_event_id
                 LIMIT 500""")
        if not rows:
            return 0
        vecs = await self._vectors({bytes(r["sha"]): r["text"] for r in rows})
        await self.pool.execute(
            f"""INSERT INTO {items} (tenant_id, memory_id, last_event_id, emb_sha, emb)
                SELECT u.t, u.m, u.ev, u.h, u.v::vector
                  FROM unnest($1::text[], $2::text[], $3::uuid[], $4::bytea[], $5::text[]) AS u(t, m, ev, h, v)
                ON CONFLICT (tenant_id, memory_id) DO UPDATE
                   SET last_event_id = EXCLUDED.last_event_id, emb_sha = EXCLUDED.emb_sha, emb = EXCLUDED.emb""",
            [r["tenant_id"] for r in rows], [r["memory_id"] for r in rows], [r["last_event_id"] for r in rows],
            [bytes(r["sha"]) for r in rows], [vec_literal(vecs[bytes(r["sha"])]) for r in rows])
        self.stats.stored += len(rows)
        return len(rows)

    async def _vectors(self, texts: dict[bytes, str]) -> dict[bytes, list[float]]:
        """``{sha256: text}`` -> ``{sha256: vector}``: from ``embedding_cache``, embedding (in batches) and caching
        only the misses."""
        model = self.embedder.name
        shas = list(texts)
        out = {bytes(r["sha256"]): list(r["vec"]) for r in await self.pool.fetch(
            "SELECT sha256, vec FROM embedding_cache WHERE model = $1 AND sha256 = ANY($2::bytea[])", model, shas)}
        misses = [s for s in shas if s not in out]
        self.stats.cached += len(shas) - len(misses)
        for i in range(0, len(misses), self.batch):
            part = misses[i:i + self.batch]
            vecs = await self.embedder.embed([texts[s] for s in part])
            self.stats.embedded += len(part)
            await self.pool.executemany(
                "INSERT INTO embedding_cache (model, sha256, dim, vec) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT DO NOTHING", [(model, s, len(v), v) for s, v in zip(part, vecs, strict=True)])
            out.update(zip(part, vecs, strict=True))
        return out

    async def _gc(self, table: str) -> None:
        """Drop vectors of turns and memory items that no longer exist (ThreadDeleted, forgetting a user)."""
        self._last_gc = time.monotonic()
        await self.pool.execute(
            f"""DELETE FROM {table} e WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v
                 WHERE v.tenant_id = e.tenant_id AND v.thread_id = e.thread_id AND v.seq = e.seq)""")
        await self.pool.execute(
            f"""DELETE FROM {item_table_for(table)} e WHERE NOT EXISTS (SELECT 1 FROM memory_items m
                 WHERE m.tenant_id = e.tenant_id AND m.memory_id = e.memory_id)""")

    async def run(self, stop: asyncio.Event, *, idle: float = 1.0) -> None:
        """Embed as turns arrive until ``stop``; woken by the projectors' progress notifications."""
        woken = asyncio.Event()
        conn: asyncpg.Connection | None = None

        def on_notify(*_: Any) -> None:
            woken.set()

        try:
            conn = await self.pool.acquire()
            await conn.add_listener(PROGRESS_CHANNEL, on_notify)
        except Exception as exc:  # noqa: BLE001 - polling still works
            log.warning("embedder: no LISTEN, polling", error=repr(exc))
        try:
            while not stop.is_set():
                woken.clear()
                try:
                    async with self._lock:
                        table = await self.ensure()
                        while await self._one_round(table):
                            pass
                        while await self._items_round(table):
                            pass
                        if time.monotonic() - self._last_gc > 60:
                            await self._gc(table)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - keep the worker alive; retry on the next wake-up
                    (log.warning if is_transient(exc) else log.exception)("embedder round failed", error=repr(exc))
                    await asyncio.sleep(idle)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout=idle)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.remove_listener(PROGRESS_CHANNEL, on_notify)
                await self.pool.release(conn)
