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
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from memengine.engine.adapters.checkpoints import PROGRESS_CHANNEL
from memengine.engine.adapters.postgres import is_transient
from memengine.engine.embedding.models import Embedder, OpenAIEmbedder, item_table_for, table_for, vec_literal
from memengine.engine.embedding.registry import REGISTRY_LOCK, active_model, check_against, checksum_of

log = structlog.get_logger("memengine.embedder")

#: ``store(shas, flat, dim)``: writes one embedded batch (``flat``: its vectors end to end).
Store = Callable[[list[bytes], list[float], int], Awaitable[None]]


def _row_columns(rows: list[Any]) -> tuple[list[str], list[str], list[int], list[bytes]]:
    """The key and text-hash columns of ``memory_vectors`` rows, as arrays for ``unnest``."""
    return ([r["tenant_id"] for r in rows], [r["thread_id"] for r in rows], [r["seq"] for r in rows],
            [bytes(r["emb_sha"]) for r in rows])


def _positions(part: list[bytes], rows: list[Any]) -> list[int]:
    """1-based position in ``part`` of each row's text hash (which vector of the batch is the row's)."""
    at = {s: i + 1 for i, s in enumerate(part)}
    return [at[bytes(r["emb_sha"])] for r in rows]


async def ensure_embeddings_table(pool: asyncpg.Pool, model: str, dim: int, checksum: str | None = None, *,
                                  shadow: bool = False) -> str:
    """Create (idempotently) the ``vector(dim)`` table of ``model`` with its HNSW index, and its memory-item table
    (``item_table_for``), and register the model (``engine.embedding.registry``); returns the turn table's name.

    ``shadow`` False (a worker of the configured embedder): the model becomes the active one when the store has
    none, else it must be the active one. ``shadow`` True (``memengine rebuild vectors --model``): the model is
    registered ``building`` (a retired one too) and the active one is left alone.

    Raises ``EmbeddingModelMismatch`` (not shadow) when another model is active or the weights differ from the
    active model's checksum; ``RuntimeError`` if the model was registered with another dimension."""
    table = table_for(model)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", REGISTRY_LOCK)
        known = await conn.fetchrow("SELECT dim, checksum, state FROM embedding_models WHERE model = $1", model)
        if known is not None and known["dim"] != dim:
            raise RuntimeError(f"embedding model {model!r} is registered with dim {known['dim']}, now reports {dim}")
        active = await active_model(conn)
        if not shadow:
            check_against(active, model, checksum)
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
        # no active model yet (a new store): this one becomes it, shadow or not (there is nothing to swap from)
        state = "active" if active is None or (active["model"] == model) else "building"
        if known is None:
            await conn.execute(
                "INSERT INTO embedding_models (model, dim, table_name, checksum, state, activated_at)"
                " VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 = 'active' THEN now() END)",
                model, dim, table, checksum, state)
        elif state == "active" and known["state"] != "active":
            await conn.execute("UPDATE embedding_models SET state = 'active', activated_at = now(),"
                               " checksum = coalesce($2, checksum) WHERE model = $1", model, checksum)
        elif state == "building" and known["state"] == "retired":
            await conn.execute("UPDATE embedding_models SET state = 'building' WHERE model = $1", model)
        if known is not None and known["checksum"] is None and checksum is not None:
            # registered before schema 0043, or by a rebuild that had no checksum: recorded now
            await conn.execute("UPDATE embedding_models SET checksum = $2 WHERE model = $1", model, checksum)
    return table


@dataclass
class EmbedStats:
    embedded: int = 0  # texts sent to the model
    cached: int = 0  # texts found in embedding_cache
    stored: int = 0  # embedding rows written
    calls: int = 0  # embedding calls made (one per batch)
    max_in_flight: int = 0  # the most embedding calls that overlapped


class RecentRate:
    """Texts embedded per second over the last ``span`` seconds (``add(n)`` per finished batch)."""

    def __init__(self, span: float = 30.0) -> None:
        self.span = span
        self._events: deque[tuple[float, int]] = deque()
        self._started = time.monotonic()

    def add(self, n: int) -> None:
        self._events.append((time.monotonic(), n))

    def per_s(self) -> float:
        now = time.monotonic()
        while self._events and self._events[0][0] < now - self.span:
            self._events.popleft()
        # a worker younger than the span divides by its age, not by the span
        window = min(self.span, max(now - self._started, 1e-3))
        return sum(n for _, n in self._events) / window


class EmbedderWorker:
    """Embeds pending turns for ``embedder`` into its table.

    ``batch``: texts per embedding call (``MEMENGINE_EMBED_BATCH``). ``concurrency``: calls in flight at once
    (``MEMENGINE_EMBED_CONCURRENCY``), capped by ``embedder.max_concurrency`` (1 for the CPU-bound local MiniLM).
    A round takes the oldest pending rows of every tenant and thread together, embeds each distinct text once
    (``embedding_cache`` first: a text embedded before, by any turn or a rebuild, is never sent again), and as each
    batch returns writes its cache rows and its turns' vectors in one statement, while the next batches are in
    flight (issue #13 item 5)."""

    def __init__(self, pool: asyncpg.Pool, embedder: Embedder, *, batch: int = 64, concurrency: int = 1,
                 shadow: bool = False) -> None:
        self.pool = pool
        self.shadow = shadow  # fills the table of a model being switched to (ensure_embeddings_table)
        self.embedder = embedder
        self.batch = batch
        limit = getattr(embedder, "max_concurrency", None)
        self.concurrency = max(1, min(concurrency, limit) if limit else concurrency)
        # rows per round: enough for every call in flight to have several batches queued behind it
        self.round_rows = max(2000, 4 * batch * self.concurrency)
        self.table: str | None = None
        self.stats = EmbedStats()
        self.rate = RecentRate()
        self._watermark = 0  # every memory_vectors row with changed_seq <= this had its vector when last looked
        self._lock = asyncio.Lock()
        self._last_gc = 0.0
        self._last_progress = 0.0
        self._in_flight = 0
        self._since_analyze = 0
        self._rows_at_analyze = 0

    async def ensure(self) -> str:
        if self.table is None:
            if isinstance(self.embedder, OpenAIEmbedder):
                await self.embedder.probe()
            checksum = await asyncio.to_thread(checksum_of, self.embedder)  # hashes the weights once per process
            self.table = await ensure_embeddings_table(self.pool, self.embedder.name, self.embedder.dim, checksum,
                                                       shadow=self.shadow)
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
            await self._save_progress(force=True)
            return written

    async def _one_round(self, table: str) -> int:
        """Embed up to ``round_rows`` pending rows, oldest change first; returns the rows written."""
        top = await self.pool.fetchval("SELECT coalesce(max(changed_seq), 0) FROM memory_vectors")
        rows = await self.pool.fetch(
            f"""SELECT v.tenant_id, v.thread_id, v.seq, v.emb_text, v.emb_sha, v.changed_seq
                  FROM memory_vectors v LEFT JOIN {table} e
                    ON e.tenant_id = v.tenant_id AND e.thread_id = v.thread_id AND e.seq = v.seq
                 WHERE v.changed_seq > $1 AND v.changed_seq <= $2 AND v.emb_text <> ''
                   AND (e.seq IS NULL OR e.emb_sha <> v.emb_sha)
                 ORDER BY v.changed_seq LIMIT {int(self.round_rows)}""", self._watermark, top)
        if len(rows) < self.round_rows:
            new_mark = int(top)  # every pending row up to top is in this round
        else:
            # a full round may have cut one event's rows (an event changes up to five windows): the next round
            # starts below its changed_seq, and the anti-join skips the rows done here. Advancing the mark per
            # round keeps each round's scan to the rows not yet looked at while a burst goes on.
            new_mark = int(rows[-1]["changed_seq"]) - 1
        written = await self._embed_rows(table, rows) if rows else 0
        self._watermark = max(self._watermark, new_mark)
        await self._save_progress()
        return written

    async def _embed_rows(self, table: str, rows: list[Any]) -> int:
        """Vectors for ``rows``: cached texts copied by the server in one statement, the others embedded in batches
        of ``batch`` with up to ``concurrency`` calls in flight; each batch's cache rows and turn vectors are
        written in one statement as it returns."""
        model = self.embedder.name
        by_sha: dict[bytes, list[Any]] = {}
        for r in rows:
            by_sha.setdefault(bytes(r["emb_sha"]), []).append(r)
        shas = list(by_sha)
        cached = {bytes(r["sha256"]) for r in await self.pool.fetch(
            "SELECT sha256 FROM embedding_cache WHERE model = $1 AND sha256 = ANY($2::bytea[])", model, shas)}
        self.stats.cached += len(cached)
        written = 0
        if cached:
            hit = [r for s in cached for r in by_sha[s]]
            await self.pool.execute(
                f"""INSERT INTO {table} (tenant_id, thread_id, seq, emb_sha, emb)
                    SELECT u.t, u.th, u.s, u.h, c.vec::vector
                      FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[]) AS u(t, th, s, h)
                      JOIN embedding_cache c ON c.model = $5 AND c.sha256 = u.h
                      -- the row may have been deleted meanwhile (ThreadDeleted): store only live rows
                      JOIN memory_vectors m ON m.tenant_id = u.t AND m.thread_id = u.th AND m.seq = u.s
                    ON CONFLICT (tenant_id, thread_id, seq) DO UPDATE
                       SET emb_sha = EXCLUDED.emb_sha, emb = EXCLUDED.emb""",
                *_row_columns(hit), model)
            written += len(hit)

        async def store(part: list[bytes], flat: list[float], dim: int) -> None:
            nonlocal written
            batch_rows = [r for s in part for r in by_sha[s]]
            ts, ths, ss, hs = _row_columns(batch_rows)
            await self.pool.execute(
                f"""WITH c AS (
                        INSERT INTO embedding_cache (model, sha256, dim, vec)
                        SELECT $6, x.h, $7::int, ($8::real[])[(x.k - 1) * $7::int + 1 : x.k * $7::int]
                          FROM unnest($9::bytea[]) WITH ORDINALITY AS x(h, k)
                        ON CONFLICT DO NOTHING)
                    INSERT INTO {table} (tenant_id, thread_id, seq, emb_sha, emb)
                    SELECT u.t, u.th, u.s, u.h, (($8::real[])[(u.k - 1) * $7::int + 1 : u.k * $7::int])::vector
                      FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[], $5::int[]) AS u(t, th, s, h, k)
                      JOIN memory_vectors m ON m.tenant_id = u.t AND m.thread_id = u.th AND m.seq = u.s
                    ON CONFLICT (tenant_id, thread_id, seq) DO UPDATE
                       SET emb_sha = EXCLUDED.emb_sha, emb = EXCLUDED.emb""",
                ts, ths, ss, hs, _positions(part, batch_rows), model, dim, flat, part)
            written += len(batch_rows)

        misses = [s for s in shas if s not in cached]
        await self._embed_misses({s: by_sha[s][0]["emb_text"] for s in misses}, store)
        self.stats.stored += written
        self._since_analyze += written
        if self._since_analyze >= max(200, self._rows_at_analyze // 10):
            # fresh statistics, else the planner believes the table is empty and recall's dense list nested-loops
            # (measured: 150 ms -> 23 ms per recall on LoCoMo after ANALYZE)
            await self.pool.execute(f"ANALYZE {table}")
            self._rows_at_analyze = int(await self.pool.fetchval(f"SELECT count(*) FROM {table}"))
            self._since_analyze = 0
        return written

    async def _embed_misses(self, texts: dict[bytes, str], store: Store) -> None:
        """Embed ``{sha256: text}`` in batches of ``batch``, ``concurrency`` calls in flight; ``store(shas, flat,
        dim)`` is awaited for each batch as it returns (``flat``: the batch's vectors end to end, float32 values).
        The first failure cancels the batches still running and is raised (the rows stay pending)."""
        shas = list(texts)
        if not shas:
            return
        gate = asyncio.Semaphore(self.concurrency)

        async def one(part: list[bytes]) -> None:
            async with gate:
                self._in_flight += 1
                self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
                try:
                    vecs = await self.embedder.embed([texts[s] for s in part])
                finally:
                    self._in_flight -= 1
            self.stats.calls += 1
            self.stats.embedded += len(part)
            self.rate.add(len(part))
            dims = {len(v) for v in vecs}
            if len(vecs) != len(part) or len(dims) != 1:
                raise RuntimeError(f"embedder {self.embedder.name} returned {len(vecs)} vectors of sizes"
                                   f" {sorted(dims)} for {len(part)} texts")
            # written outside the gate: the next call is already in flight while this batch is stored
            await store(part, [x for v in vecs for x in v], dims.pop())
            # the rate as batches land, not only when the round ends: a slow model's round of ``round_rows`` takes
            # minutes, and status would show 0 texts/s (stale) while the worker is busy (at most once a second)
            await self._save_progress()

        try:
            async with asyncio.TaskGroup() as tg:
                for i in range(0, len(shas), self.batch):
                    tg.create_task(one(shas[i:i + self.batch]))
        except ExceptionGroup as group:  # the caller (run's retry, is_transient) wants the error itself
            raise group.exceptions[0] from None

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
        """``{sha256: text}`` -> ``{sha256: vector}``: from ``embedding_cache``, embedding (in batches, pipelined)
        and caching only the misses."""
        model = self.embedder.name
        shas = list(texts)
        out = {bytes(r["sha256"]): list(r["vec"]) for r in await self.pool.fetch(
            "SELECT sha256, vec FROM embedding_cache WHERE model = $1 AND sha256 = ANY($2::bytea[])", model, shas)}
        misses = [s for s in shas if s not in out]
        self.stats.cached += len(shas) - len(misses)

        async def store(part: list[bytes], flat: list[float], dim: int) -> None:
            await self.pool.execute(
                """INSERT INTO embedding_cache (model, sha256, dim, vec)
                   SELECT $1, x.h, $2::int, ($3::real[])[(x.k - 1) * $2::int + 1 : x.k * $2::int]
                     FROM unnest($4::bytea[]) WITH ORDINALITY AS x(h, k)
                   ON CONFLICT DO NOTHING""", model, dim, flat, part)
            out.update((s, flat[i * dim:(i + 1) * dim]) for i, s in enumerate(part))

        await self._embed_misses({s: texts[s] for s in misses}, store)
        return out

    async def _save_progress(self, *, force: bool = False) -> None:
        """Publish the watermark and the recent rate in ``embedding_models`` (at most once a second unless
        ``force``) for ``memengine status`` and ``/metrics`` in any process (engine.embedding.backlog)."""
        now = time.monotonic()
        if not force and now - self._last_progress < 1.0:
            return
        self._last_progress = now
        await self.pool.execute(
            "UPDATE embedding_models SET done_seq = $2, texts_per_s = $3, progress_at = now() WHERE model = $1",
            self.embedder.name, self._watermark, self.rate.per_s())

    async def _gc(self, table: str) -> None:
        """Drop vectors of turns and memory items that no longer exist (ThreadDeleted, TurnsWithdrawn, forgetting a
        user). A row re-windowed by a withdrawal gets a new ``changed_seq`` (the fact's), so it is re-embedded."""
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
                try:
                    with contextlib.suppress(Exception):
                        await conn.remove_listener(PROGRESS_CHANNEL, on_notify)
                finally:  # even when cancelled again during the UNLISTEN (cancel_and_wait re-cancels every 0.1 s)
                    await self.pool.release(conn)
