"""The composition root: one async lifespan that owns every server, connection and task (cosmicpython's
``bootstrap()``, starlette's lifespan). Everything else receives what it needs from here.

Roles (``memengine up --role``): ``projector`` folds both logs (facts -> core read models, derived -> memory read
models), ``enricher`` derives memory from facts (``engine.derive.enricher``), ``query`` answers ``<root>.rpc.*`` in the
queue group ``memengine-query``. All three by default.

A long-running engine (``run_projector=True``: ``memengine up``, or any process embedding the engine) also runs what
the settings schedule: consolidation every ``MEMENGINE_CONSOLIDATE_INTERVAL`` seconds with the enricher role (issue
#4), and the Prometheus / health endpoint on ``MEMENGINE_METRICS_PORT`` (issue #6). One-shot CLI commands
(``run_projector=False``) start neither: they would bind the port a running ``up`` holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import nats.errors
import structlog
from faststream.nats import NatsBroker
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from memengine.engine.adapters import jetstream as bus
from memengine.engine.adapters import postgres as db
from memengine.engine.adapters.embedded import EmbeddedNats, EmbeddedPostgres, server_tuning
from memengine.engine.adapters.settings import Settings
from memengine.engine.adapters.tasks import Teardown
from memengine.engine.adapters.tracing import start_tracing
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.client.publishing import dedup_secret, stored_owner, tenant_dedup_key
from memengine.engine.derive import consolidate
from memengine.engine.derive.enricher import Enricher
from memengine.engine.derive.offline import attack_reader, change_reader, kinds, parse_en, statement_reader
from memengine.engine.embedding.models import Embedder, build_embedder
from memengine.engine.embedding.registry import EmbeddingModelMismatch, active_model, check_model
from memengine.engine.embedding.worker import EmbedderWorker
from memengine.engine.ops.metrics import MetricsServer
from memengine.engine.read import crosslingual
from memengine.engine.read.progress import ProgressWatcher
from memengine.engine.read.push import ContextPusher
from memengine.engine.read.recall import Recaller, TermStats, Weights
from memengine.engine.read.rpc import RpcHandlers
from memengine.engine.read.service import QueryService
from memengine.engine.read.serving import QUERY_GROUP, RpcDispatcher, serve_rpc
from memengine.engine.read.trail import AccessTrail
from memengine.engine.runtime.groups import ACCESS, CORE, DERIVED, GROUPS, RECALL
from memengine.engine.runtime.partitions import RunnerGroup, build_projector
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.events import StreamNames, Subjects
from memengine.projections.ops import FoldConfig

log = structlog.get_logger("memengine.bootstrap")

CORE_PROJECTOR = CORE.name
DERIVED_PROJECTOR = DERIVED.name
RECALL_PROJECTOR = RECALL.name
ROLES = frozenset({"projector", "query", "enricher"})


@dataclass
class Engine:
    """What the lifespan yields: the wiring, for the CLI, tests and benchmarks."""

    settings: Settings
    nats_url: str
    database_url: str
    nc: NATS
    js: JetStreamContext
    pool: asyncpg.Pool
    subjects: Subjects
    streams: StreamNames
    runner: ProjectorRunner | RunnerGroup
    derived: ProjectorRunner
    recall: ProjectorRunner | RunnerGroup
    enricher: Enricher
    service: QueryService
    roles: frozenset[str]
    broker: Any = None
    embedder: Embedder | None = None
    embed_worker: EmbedderWorker | None = None
    pusher: ContextPusher | None = None
    metrics: MetricsServer | None = None  # the /metrics, /healthz, /readyz endpoint, when settings.metrics_port
    http: Any = None  # engine.http.server.HttpServer: the HTTP API and console, when settings.http_port is set
    rpc: RpcHandlers | None = None  # the query handler's methods (NATS subjects and the HTTP API share them)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    #: the access trail's writer (issue #30), ``None`` with ``MEMENGINE_ACCESS_TRAIL=off``; ``access`` folds it
    trail: AccessTrail | None = None
    access: ProjectorRunner | None = None
    #: teardown steps that overran their deadline and were abandoned (``engine.adapters.tasks``); filled on exit
    stalled: list[str] = field(default_factory=list)
    #: the facts stream's dedup secret (``engine.client.publishing``, issue #26 item 2); ``None``: none (plain digest)
    dedup_secret: str | None = None

    def client(self, tenant: str = "default") -> MemoryClient:
        """A ``MemoryClient`` on the engine's own NATS connection; it checks a duplicate acknowledgement by reading
        the stream itself (``engine.client.publishing.stored_owner``: the engine's credentials may), and keys its
        message ids with the tenant's dedup key from the stream's secret."""
        return MemoryClient(self.nc, tenant=tenant, subject_root=self.subjects.root,
                            stream_prefix=self.settings.stream_prefix,
                            owns=stored_owner(self.js, self.streams.facts, self.subjects),
                            dedup_key=tenant_dedup_key(self.dedup_secret, tenant) if self.dedup_secret else None)


@dataclass
class Servers:
    """Embedded servers this process started (or re-used); stopped in reverse order on exit."""

    nats: EmbeddedNats | None = None
    postgres: EmbeddedPostgres | None = None

    def stop(self) -> None:
        if self.nats is not None:
            self.nats.stop()
        if self.postgres is not None:
            self.postgres.stop()


async def start_servers(settings: Settings) -> tuple[str, str, Servers]:
    """URLs of NATS and PostgreSQL: from the settings, else embedded ones started under ``settings.home``."""
    servers = Servers()
    nats_url, dsn = settings.nats_url, settings.database_url
    try:
        if not nats_url:
            servers.nats = EmbeddedNats(settings.home_path)
            nats_url = await asyncio.to_thread(servers.nats.start)
        if not dsn:
            servers.postgres = EmbeddedPostgres(settings.home_path, server_tuning(settings.pg_shared_buffers))
            dsn = await asyncio.to_thread(servers.postgres.start)
    except BaseException:
        servers.stop()
        raise
    return nats_url, dsn, servers


def build_broker(nats_url: str, handlers: RpcHandlers, subjects: Subjects) -> tuple[NatsBroker, RpcDispatcher]:
    """FastStream broker serving each RPC method in the queue group ``memengine-query`` (core NATS, no acks), and
    the dispatcher answering its requests concurrently (``engine.read.serving``; close it after the broker)."""
    # apply_types=False: the endpoints take the raw message, no per-request injection (engine.read.serving)
    broker = NatsBroker(bus.server_list(nats_url), logger=None, max_reconnect_attempts=-1, apply_types=False)
    # <root>.rpc.<method> and the tenant-scoped <root>.rpc.<method>.<tenant>, guarded and timed (engine.read.rpc)
    return broker, serve_rpc(broker, handlers, subjects, queue=QUERY_GROUP)


@contextlib.asynccontextmanager
async def lifespan(settings: Settings, *, roles: Collection[str] = ROLES, run_projector: bool = True,
                   projector_name: str = CORE_PROJECTOR, embedder: Embedder | None | str = "settings",
                   partitions: Collection[int] | None = None) -> AsyncIterator[Engine]:
    """Start everything ``roles`` need, yield the ``Engine``, and tear it all down in reverse order.

    ``run_projector=False`` wires the projector without starting its loop (the CLI's ``catch_up`` drives it), and
    the embedder worker likewise (``engine.embed_worker.catch_up()``). ``embedder``: the recall embedder; by default
    ``build_embedder(settings, <the store's active model>)`` (tests pass one, or ``None`` for full-text only).
    ``partitions``: the facts
    partitions whose core and recall projectors run here (default all; issue #6, ``memengine up --partitions``);
    ``ValueError`` if one is outside ``0..n-1`` for the stream's ``n`` partitions (``MEMENGINE_PARTITIONS``). With
    the projector role and ``run_projector``, ``settings.projectors`` names the projector groups run here
    (``MEMENGINE_PROJECTORS``, default core, recall and derived; the embedder worker goes with recall, pushed context
    with core). ``EmbeddingModelMismatch`` (engine.embedding.registry) when the embedder is not the store's active
    model and this process would embed or answer queries with it (the message names `memengine rebuild vectors
    --model`); a one-shot operator command then runs without the embedder.
    With ``run_projector`` the engine also consolidates on ``settings.consolidate_interval`` (enricher role; 0 =
    off) and serves metrics on ``settings.metrics_port`` (0 = off; ``engine.metrics.port`` is the bound port), and the
    HTTP API and console on ``settings.http_port`` (``None`` = off, 0 = a free port; ``engine.http.port``).
    Raises ``EmbeddedServerError`` / connection errors if a server cannot be reached, ``OSError`` if the metrics
    port cannot be bound.
    """
    roles = frozenset(roles)
    unknown = roles - ROLES
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; expected {sorted(ROLES)}")
    nats_url, dsn, servers = await start_servers(settings)
    stack = contextlib.AsyncExitStack()
    stop = asyncio.Event()
    engine: Engine | None = None
    teardown = Teardown()
    step = teardown.step
    try:
        stack.callback(servers.stop)
        stop_tracing = start_tracing(settings)  # off by default: imports nothing (engine.adapters.tracing)
        if stop_tracing is not None:
            stack.callback(stop_tracing)
        nc = await bus.connect(nats_url)
        stack.push_async_callback(step("nats", lambda: _close_nats(nc), force=lambda: _force_close(nc)))
        js = nc.jetstream()
        subjects = Subjects(settings.subject_root)
        streams = StreamNames.for_prefix(settings.stream_prefix)
        n_partitions = await bus.ensure_streams(js, streams, subjects, replicas=settings.stream_replicas,
                                                duplicate_window=settings.duplicate_window,
                                                partitions=settings.partitions,
                                                served_max_age=settings.served_max_age,
                                                served_max_bytes=settings.served_max_bytes)
        if partitions is not None and not set(partitions) <= set(range(n_partitions)):
            raise ValueError(f"partitions {sorted(partitions)} outside 0..{n_partitions - 1}"
                             f" (the facts stream has {n_partitions}; set MEMENGINE_PARTITIONS)")
        # Each projector runner (core and recall per owned partition, derived), the enricher, the LISTEN of the
        # progress watcher and the embedder worker hold one connection for good (their advisory lock / LISTEN): the
        # pool must have room for them *and* for the commits and queries, else a process owning several partitions
        # waits forever for a connection (MEMENGINE_PARTITIONS=4 in one process never answered a query).
        owned = n_partitions if partitions is None else len(set(partitions))
        pool = await db.create_pool(dsn, max_size=db.POOL_SIZE + 2 * owned + 4)
        stack.push_async_callback(step("pool", pool.close, force=pool.terminate))
        progress = ProgressWatcher(pool)
        await progress.start()
        stack.push_async_callback(step("progress", progress.stop))
        if isinstance(embedder, str):  # auto follows the store's active model (engine.embedding.models.auto_choice)
            active = await active_model(pool) if settings.embedder == "auto" else None
            emb = build_embedder(settings, active["model"] if active is not None else None)
        else:
            emb = embedder
        if emb is not None:
            try:  # the store's vectors must be of the configured model (issue #28 item 3)
                await check_model(pool, emb)
            except EmbeddingModelMismatch as exc:
                if "query" in roles or (run_projector and "projector" in roles):
                    raise  # it would embed or answer with another model: refused, the message names the command
                # a one-shot operator command (status, rebuild, verify, forget) neither embeds nor ranks: it runs
                # without the embedder
                log.warning("embedder left out: not the store's model", error=str(exc))
                emb = None
        worker = (EmbedderWorker(pool, emb, batch=settings.embed_batch, concurrency=settings.embed_concurrency)
                  if emb is not None else None)
        if worker is not None and "projector" in roles:
            await worker.ensure()  # the per-model vector(dim) table + HNSW index, before any recall
        term_stats = TermStats(pool)
        stack.push_async_callback(step("term-stats", term_stats.close))
        service = QueryService(pool, settings, progress, Recaller(pool, emb, settings.recall_top_k, Weights.parse(
            settings.recall_weights, settings.recall_decay_days, settings.recall_turn_weights,
            settings.recall_access_weight)))
        service.attach_nats(js, streams, subjects)  # pruned history from the log, working memory (issue #4)
        # the working-memory mirror's watch, before NATS closes
        stack.push_async_callback(step("service", service.close))
        # pushed context is assembled by its own task, not in the projector's commit path (issue #17 defect 6)
        pusher = ContextPusher(service, nc, subjects, max_window=settings.push_max_window,
                               max_pending=settings.push_max_pending)
        runner = build_projector(
            partitions=n_partitions, owned=partitions,
            name=projector_name, projections=CORE.projections, nc=nc, js=js, pool=pool, streams=streams,
            subjects=subjects,
            fold_config=FoldConfig(condensed_tool_max=settings.condensed_tool_max),
            batch_size=settings.batch_size, batch_bytes=settings.batch_bytes, after_commit=[pusher],
        )
        recall = build_projector(
            partitions=n_partitions, owned=partitions,
            name=RECALL.name, projections=RECALL.projections, nc=nc, js=js, pool=pool, streams=streams,
            subjects=subjects, fold_config=FoldConfig(condensed_tool_max=settings.condensed_tool_max),
            # count-only batches: a recall item holds ~1.8 KiB folded (a core item ~14), and the set-based recall
            # statement costs per batch and per touched session, so its catch-up wants the largest batches
            batch_size=settings.batch_size, after_commit=[term_stats],  # tenant-wide recall statistics
        )
        derived = ProjectorRunner(
            name=DERIVED.name, projections=DERIVED.projections, nc=nc, js=js, pool=pool, streams=streams,
            subjects=subjects, fold_config=FoldConfig(condensed_tool_max=settings.condensed_tool_max),
            batch_size=settings.batch_size, batch_bytes=settings.batch_bytes, source=DERIVED.source(streams, subjects),
        )
        # the access trail (issue #30): answers queued by the service, published by a task of this lifespan, folded
        # by the access projector group from the served stream
        trail = (AccessTrail(js, subjects, streams.served, max_pending=settings.trail_queue,
                             batch=settings.trail_batch) if settings.access_trail else None)
        service.trail = trail
        access = ProjectorRunner(
            name=ACCESS.name, projections=ACCESS.projections, nc=nc, js=js, pool=pool, streams=streams,
            subjects=subjects, fold_config=FoldConfig(condensed_tool_max=settings.condensed_tool_max),
            batch_size=settings.batch_size, batch_bytes=settings.batch_bytes, source=ACCESS.source(streams, subjects),
        )
        enricher = Enricher(nc=nc, js=js, pool=pool, streams=streams, subjects=subjects, settings=settings)
        engine = Engine(settings=settings, nats_url=nats_url, database_url=dsn, nc=nc, js=js, pool=pool,
                        subjects=subjects, streams=streams, runner=runner, derived=derived, recall=recall,
                        enricher=enricher,
                        service=service, roles=roles, embedder=emb, embed_worker=worker, pusher=pusher,
                        trail=trail, access=access, dedup_secret=await dedup_secret(js, streams.facts))
        if trail is not None:
            # drained at exit after the broker stopped taking requests and before NATS closes (stack order)
            stack.push_async_callback(step("access-trail", trail.drain))
            engine.tasks.append(asyncio.create_task(trail.run(stop), name="access-trail"))
        # settings.projectors picks the groups a long-running engine runs (issue #13 item 1): a group left out is
        # wired but never takes its lock, so it reads as "another process projects" (``active`` false) everywhere, as
        # a standby one does. A one-shot command (run_projector=False) brings every read model current, as before.
        groups = frozenset() if "projector" not in roles else (
            settings.projector_groups if run_projector else frozenset(GROUPS))
        for r, group in ((runner, CORE), (recall, RECALL), (derived, DERIVED), (access, ACCESS)):
            if group.name not in groups:
                continue
            stack.push_async_callback(step(f"projector-{r.name}", r.stop))
            if run_projector:  # run() takes the lock, or stands by while another process projects
                engine.tasks.append(asyncio.create_task(r.run(stop), name=f"projector-{r.name}"))
            else:  # the caller drives catch_up() if the lock was free; else another process projects
                await r.try_start()
        if CORE.name in groups:  # with run_projector=False too: the caller's catch_up() feeds it
            engine.tasks.append(asyncio.create_task(pusher.run(), name="context-pusher"))
        if worker is not None and RECALL.name in groups and run_projector:  # it embeds what the recall fold wrote
            engine.tasks.append(asyncio.create_task(worker.run(stop), name="embedder"))
        if "enricher" in roles:
            stack.push_async_callback(step("enricher", enricher.stop))
            if run_projector:
                # the English parser loads off the event loop, before the first derivation would load it on it; the
                # kinds model (world knowledge of values, issue #29) in the background: few derivations need it
                await asyncio.to_thread(parse_en.preload)
                # ... and the multilingual USE with the learned readers' pinned weights: loaded by the first
                # derivation on the loop, they held the core fold for seconds (a read-your-writes wait of the
                # TypeScript client's test ran out at 2 s, CI rehearsal of session 23)
                await asyncio.to_thread(lambda: (statement_reader.available(), change_reader.available(),
                                                 attack_reader.available()))
                kinds.preload_in_background()
                engine.tasks.append(asyncio.create_task(enricher.run(stop), name="enricher"))
            else:
                await enricher.try_start()
        engine.rpc = RpcHandlers(service, settings)
        if "query" in roles:
            crosslingual.preload_in_background()  # recall's dictionary bridge (issue #28), read off the event loop
            engine.broker, dispatcher = build_broker(nats_url, engine.rpc, subjects)
            # after the broker stopped taking requests
            stack.push_async_callback(step("rpc-dispatcher", dispatcher.close))
            await engine.broker.start()
            stack.push_async_callback(step("broker", engine.broker.stop))
            await _until_answering(nc, subjects)
        if run_projector:  # a long-running engine: the settings' schedule and metrics endpoint (issue #10)
            interval = settings.consolidate_interval
            if "enricher" in roles and interval > 0:  # the first run one interval after start
                engine.tasks.append(asyncio.create_task(consolidate.schedule(engine, stop, interval),
                                                        name="consolidate"))
            if settings.metrics_port:
                engine.metrics = await MetricsServer(engine, settings.metrics_port, settings.metrics_host).start()
                stack.push_async_callback(step("metrics", engine.metrics.stop))
            if settings.http_port is not None:  # issue #12; imported here: FastAPI is the `http` extra
                from memengine.engine.http.server import HttpServer

                engine.http = await HttpServer(engine, settings.http_port, settings.http_host,
                                               keys_file=settings.http_keys_file, handlers=engine.rpc).start()
                stack.push_async_callback(step("http", engine.http.stop))
        yield engine
    finally:
        stop.set()
        try:
            await teardown.cancel(engine.tasks if engine is not None else [])
            await stack.aclose()
        finally:
            if engine is not None:
                engine.stalled[:] = teardown.stalled


async def _until_answering(nc: NATS, subjects: Subjects, timeout: float = 10.0) -> None:
    """Wait until the query handler's subscriptions are live on the server (the broker flushes its SUBs
    asynchronously; a request sent right after start() could otherwise meet "no responders")."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await nc.request(subjects.rpc("threads"), b'{"limit":1}', timeout=1.0)
            return
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.01)


async def _close_nats(nc: NATS) -> None:
    with contextlib.suppress(Exception):
        await nc.drain()


def _force_close(nc: NATS) -> None:
    """Close ``nc``'s socket without the goodbye (its drain overran ``engine.adapters.tasks.STEP_S``)."""
    transport = getattr(nc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()
