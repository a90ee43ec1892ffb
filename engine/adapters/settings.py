"""One typed settings object, read once from the environment.

Variables and defaults of seed 000 §5 keep their names (``MEMORY_*``, ``DATABASE_URL``, ``API_BASE_URL``,
``API_KEY``); memengine's own runtime knobs are ``MEMENGINE_*``. Secrets are wrapped in ``Secret`` so that no repr,
log line or ``--json`` output ever shows them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import msgspec

from memengine.engine.wire.errors import InvalidInput


class Secret(str):
    """A string whose repr hides its value (API keys). ``str(secret)`` still gives the value."""

    def __repr__(self) -> str:
        return "Secret('***')" if self else "Secret('')"


class SettingsError(InvalidInput, ValueError):
    """An environment variable with a value that cannot be used; the message names the variable."""


def _weights_ok(text: str) -> bool:
    try:
        w = [float(x) for x in text.split(",")]
    except ValueError:
        return False
    return len(w) == 3 and all(x >= 0 for x in w) and sum(w) > 0


#: An entry of MEMENGINE_HTTP_ALLOWED_HOSTS / _ORIGINS (engine.http.guard parses them; settings import no HTTP).
_HOST_ENTRY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/@?#]+)(:\d{1,5})?")
_ORIGIN_ENTRY = re.compile(r"(?i:https?)://" + _HOST_ENTRY.pattern)


#: The projector groups by name (engine/runtime/groups.py ``GROUPS``; a unit test keeps the two equal: settings are an
#: adapter and import nothing of the runtime).
PROJECTOR_GROUPS = frozenset({"core", "recall", "derived", "access"})
#: ``MEMENGINE_EMBEDDER`` values (engine.embedding.models.build_embedder); e5 and its composites are opt-in (issue #28)
EMBEDDER_CHOICES = ("auto", "minilm", "openai", "use", "minilm+use", "e5", "minilm+e5", "use+e5", "minilm+use+e5",
                    "none")


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything configurable. Build with ``Settings.from_env()``; override fields with ``msgspec.structs.replace``.

    Connection: ``nats_url`` / ``database_url`` (``None`` = start the embedded servers under ``home``;
    ``pg_shared_buffers`` sizes the embedded PostgreSQL's buffer cache, default a quarter of RAM).
    Naming: ``subject_root`` (``mem``), ``stream_prefix`` (``MEMORY`` -> ``MEMORY_FACTS`` ...), ``stream_replicas``
    (for new streams), ``partitions`` (facts partitions, 0 = as the stream is), ``duplicate_window`` (seconds),
    ``projectors`` (the projector groups a long-running engine runs, comma-separated: core, recall, derived, access;
    default all). Access trail (issue #30): ``access_trail`` (on/off), ``trail_queue`` / ``trail_batch`` (records
    pending in process / per publish round), ``served_max_age`` (seconds) / ``served_max_bytes`` (the served
    stream's retention, 0 = unlimited). Seed 000 §5: ``context_window`` (0 = ``default_window``), ``full_recent_count``,
    ``enable_summary``, ``summary_threshold``, ``max_summary_tokens``, ``condensed_tool_max`` (characters),
    ``max_messages_per_thread``, ``embedding_*``, ``recall_top_k``, ``embedder`` (``EMBEDDER_CHOICES``),
    ``embed_batch`` / ``embed_concurrency`` / ``embed_device`` (the embedder worker). Context: ``output_reserve_ratio``
    (16K of 128K, seed 000 §4.1), ``margin_ratio`` (10 %), ``context_user_memory`` (the user-memory part of Tier 1),
    ``context_live_query`` (no query: the latest user turn). Runner: ``batch_size`` (events per transaction),
    ``batch_bytes`` (raw event bytes a live projector pulls per batch, 0 = no bound), ``ryw_timeout`` (seconds a
    read-your-writes request waits), ``max_request_bytes`` (RPC payload limit), ``rpc_rate`` / ``rpc_burst`` (requests/s
    per tenant, 0 = unlimited), ``rpc_workers`` (concurrent queries), ``rpc_waits`` (pending ``after_seq`` waits per
    tenant), ``push_max_window`` / ``push_max_pending`` (pushed context), ``metrics_port`` (0 = no metrics endpoint) on
    ``metrics_host`` (loopback by default). Any variable can instead name a file holding its value with the ``_FILE``
    suffix (``DATABASE_URL_FILE``, ``API_KEY_FILE``).
    """

    nats_url: str | None = None
    database_url: str | None = None
    home: str = ""
    pg_shared_buffers: str = ""  # the embedded PostgreSQL's shared_buffers; "" = a quarter of RAM (embedded.py)
    subject_root: str = "mem"
    stream_prefix: str = "MEMORY"
    stream_replicas: int = 1
    partitions: int = 0  # facts partitions (issue #6); 0 = as the facts stream already is, 1 for a new one
    # The projector groups a process with the projector role runs (engine/runtime/groups.py: core, recall, derived;
    # issue #13 item 1): the recall rows' fold (with the embedder worker) can run on other cores or machines than
    # the transcript's, each group under its own lock, so two processes never fold the same group at once.
    projectors: str = "core,recall,derived,access"
    duplicate_window: float = 24 * 3600.0
    # The access trail (issue #30, engine/read/trail.py): every context and recall answer recorded on the served
    # stream, off the hot path; ``trail_queue`` records wait at most in process (more are dropped and counted), the
    # flusher publishes ``trail_batch`` at a time. The served stream keeps ``served_max_age`` seconds and at most
    # ``served_max_bytes`` (0 = unlimited); the access read models are folded and outlive its expiry.
    access_trail: bool = True
    trail_queue: int = 10_000
    trail_batch: int = 256
    served_max_age: float = 90 * 86400.0
    served_max_bytes: int = 1 << 30

    context_window: int = 0
    default_window: int = 128_000
    full_recent_count: int = 10
    enable_summary: bool = True
    summary_threshold: int = 30
    max_summary_tokens: int = 1000
    condensed_tool_max: int = 200
    max_messages_per_thread: int = 200
    embedding_model: str = "embedding-3"
    embedding_base_url: str = ""
    embedding_api_key: Secret = Secret("")
    recall_top_k: int = 5
    # Recall re-scoring (seed 002 §4.1 _calculate_relevance_score): relevance, recency, importance weights and the
    # decay time constant exp(-days / recall_decay_days); engine/read/recall.py documents how each term is computed.
    recall_weights: str = "0.6,0.2,0.2"
    # the same for transcript turns: neutral by default (decay from the last turn cost LoCoMo R@10 0.821 -> 0.813)
    recall_turn_weights: str = "1,0,0"
    recall_decay_days: float = 30.0
    # share of the items' recency counted from their last use (max(updated_at, last_accessed_at), issue #30) rather
    # than from updated_at alone; engine/read/recall.py Weights says where this differs from seed 002
    recall_access_weight: float = 1.0
    embedder: str = "auto"
    # The embedder worker (engine.embedding.worker, issue #13 item 5): texts per embedding call, calls in flight at
    # once (an OpenAI-compatible server; the local MiniLM is CPU bound and always runs one batch at a time) and the
    # local model's torch device (cpu, cuda, cuda:N).
    embed_batch: int = 64
    embed_concurrency: int = 4
    embed_device: str = "cpu"
    api_base_url: str = ""
    api_key: Secret = Secret("")
    llm_model: str = "gpt-4o-mini"
    deriver: str = "auto"  # auto | offline | openai (auto: openai when API_BASE_URL is set)
    # each LLM call's bound in seconds, and tries of a call that failed in transport (issue #29 item 3): a local
    # llama.cpp server on a small CPU needs seconds per answer, a hung one must not stall the enricher
    llm_timeout_s: float = 30.0
    llm_attempts: int = 3

    episode_idle_seconds: float = 1800.0
    consolidate_interval: float = 86400.0
    working_memory_ttl: float = 86400.0
    working_memory_max: int = 50

    output_reserve_ratio: float = 0.125
    margin_ratio: float = 0.10
    # Tier 1 of every context carries the thread's user's core and relevant memory (issue #18; seed 004 §3)
    context_user_memory: bool = True
    # a context asked for without a query is asked with the thread's latest user turn (issue #27 item 2: what an
    # agent asks context for right after recording the user's message); query="" or this off: no query
    context_live_query: bool = True

    batch_size: int = 1000
    # A core projector's batch holds ~22x its raw bytes once decoded and folded (14.3 KiB per 640-byte synthetic
    # turn; a recall item 1.8 KiB); a stall that let batches of 1,000 build up raised the process's memory
    # high-water mark for good (bench/soak.py, issue #13 item 6). 256 KiB is ~400 such turns: a commit costs ~2-4 ms,
    # small per event beside the fold. The core and derived projectors use it; the recall projector and rebuilds
    # do not (their statements cost per batch: they want the largest batches).
    batch_bytes: int = 256 * 1024
    ryw_timeout: float = 2.0
    max_request_bytes: int = 64 * 1024
    # requests/s per tenant per query handler process, 0 = unlimited (engine.read.rpc). On by default (issue #17
    # defect 5): an agent turn costs 1-3 requests, so 50/s (bursts of 100) is far above one tenant's normal use,
    # while one tenant can take at most ~25 % of a process with context requests (~5 ms each, bench/RESULTS.md).
    rpc_rate: float = 50.0
    rpc_burst: float = 100.0  # bucket size; 0 = max(1, rpc_rate)
    rpc_workers: int = 8  # requests running their queries at once per query process (the pool holds 8 connections)
    rpc_waits: int = 32  # read-your-writes waits (after_seq) pending per tenant per query process
    push_max_window: int = 128_000  # the largest window a pushed context (want_context) is assembled for
    push_max_pending: int = 10_000  # threads with a pushed context pending; more are dropped (and logged)
    metrics_port: int = 0  # Prometheus /metrics, /healthz, /readyz (engine.metrics); 0 = off
    metrics_host: str = "127.0.0.1"  # loopback unless configured (issue #17); containers set 0.0.0.0
    # the HTTP API and web console (issue #12, engine.http); None = off, 0 = any free port (engine.http_server.port)
    http_port: int | None = None
    http_host: str = "127.0.0.1"  # loopback unless configured, like the metrics endpoint
    # API keys bound to tenants, stored hashed (engine.http.auth); "" = none: loopback requests as tenant `default`
    http_keys_file: str = ""
    # where requests may come from (issue #26, engine.http.guard), comma-separated: Host names (`name` or
    # `name:port`) the server answers for beside its loopback names and bound host, and browser origins
    # (`scheme://host[:port]`) allowed to post beside its own; needed to use the console or the API from a browser
    # through any other name (a bind to 0.0.0.0, a reverse proxy)
    http_allowed_hosts: str = ""
    http_allowed_origins: str = ""
    # OpenTelemetry traces (issue #12 item 3, engine.adapters.tracing): "off" (default) or "otlp" (OTLP/HTTP to
    # ``otlp_endpoint``). Read from MEMENGINE_TRACING, else the standard OTEL_TRACES_EXPORTER, else "otlp" when an
    # OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set.
    tracing: str = "off"
    otlp_endpoint: str = "http://localhost:4318/v1/traces"  # the collector's OTLP/HTTP traces URL
    otel_service_name: str = "memengine"
    log_level: str = "warning"
    # generation-0 threshold of a long-running process (`memengine up`), which also freezes what start-up allocated;
    # 0 = the interpreter's defaults (engine.runtime.gc_tuning: full collections paused the projectors' event loop)
    gc_gen0_threshold: int = 20_000
    # the C allocator of a long-running process (engine.runtime.malloc_tuning): seconds between two malloc_trim(0)
    # calls (0 = none) and the glibc arena cap (0 = glibc's own, 8 x cores)
    malloc_trim_s: float = 10.0
    malloc_arena_max: int = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> "Settings":
        """Read the settings from ``env`` (default ``os.environ``); ``overrides`` win over the environment.

        Raises ``SettingsError`` naming the variable for a value of the wrong type.
        """
        env = os.environ if env is None else env
        raw: dict[str, object] = {}

        def put(field: str, var: str, kind: type = str) -> None:
            value = env.get(var)
            if (value is None or value == "") and env.get(var + "_FILE"):
                # Docker / Kubernetes secrets: the value lives in a mounted file (``API_KEY_FILE=/run/secrets/x``).
                try:
                    value = Path(env[var + "_FILE"]).read_text().strip()
                except OSError as exc:
                    raise SettingsError(f"{var}_FILE={env[var + '_FILE']!r} cannot be read: {exc.strerror}") from None
            if value is None or value == "":
                return
            try:
                if kind is bool:
                    low = value.strip().lower()
                    if low not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                        raise ValueError(value)
                    raw[field] = low in {"1", "true", "yes", "on"}
                elif kind is Secret:
                    raw[field] = Secret(value)
                else:
                    raw[field] = kind(value)
            except ValueError:
                raise SettingsError(f"{var}={value!r} is not a valid {kind.__name__}") from None

        put("nats_url", "NATS_URL")
        put("database_url", "DATABASE_URL")
        put("home", "MEMENGINE_HOME")
        put("pg_shared_buffers", "MEMENGINE_PG_SHARED_BUFFERS")
        put("subject_root", "MEMENGINE_SUBJECT_ROOT")
        put("stream_prefix", "MEMENGINE_STREAM_PREFIX")
        put("stream_replicas", "MEMENGINE_STREAM_REPLICAS", int)
        put("partitions", "MEMENGINE_PARTITIONS", int)
        put("projectors", "MEMENGINE_PROJECTORS")
        put("duplicate_window", "MEMENGINE_DUPLICATE_WINDOW", float)
        put("access_trail", "MEMENGINE_ACCESS_TRAIL", bool)
        put("trail_queue", "MEMENGINE_TRAIL_QUEUE", int)
        put("trail_batch", "MEMENGINE_TRAIL_BATCH", int)
        put("served_max_age", "MEMENGINE_SERVED_MAX_AGE", float)
        put("served_max_bytes", "MEMENGINE_SERVED_MAX_BYTES", int)
        put("context_window", "MEMORY_CONTEXT_WINDOW", int)
        put("full_recent_count", "MEMORY_FULL_RECENT_COUNT", int)
        put("context_user_memory", "MEMORY_CONTEXT_USER_MEMORY", bool)
        put("context_live_query", "MEMORY_CONTEXT_LIVE_QUERY", bool)
        put("enable_summary", "MEMORY_ENABLE_SUMMARY", bool)
        put("summary_threshold", "MEMORY_SUMMARY_THRESHOLD", int)
        put("max_summary_tokens", "MEMORY_MAX_SUMMARY_TOKENS", int)
        put("condensed_tool_max", "MEMORY_CONDENSED_TOOL_MAX", int)
        put("max_messages_per_thread", "MEMORY_MAX_MESSAGES_PER_THREAD", int)
        put("embedding_model", "MEMORY_EMBEDDING_MODEL")
        put("embedding_base_url", "MEMORY_EMBEDDING_BASE_URL")
        put("embedding_api_key", "MEMORY_EMBEDDING_API_KEY", Secret)
        put("recall_top_k", "MEMORY_RECALL_TOP_K", int)
        put("recall_weights", "MEMORY_RECALL_WEIGHTS")
        put("recall_turn_weights", "MEMORY_RECALL_TURN_WEIGHTS")
        put("recall_decay_days", "MEMORY_RECALL_DECAY_DAYS", float)
        put("recall_access_weight", "MEMORY_RECALL_ACCESS_WEIGHT", float)
        put("embedder", "MEMENGINE_EMBEDDER")
        put("embed_batch", "MEMENGINE_EMBED_BATCH", int)
        put("embed_concurrency", "MEMENGINE_EMBED_CONCURRENCY", int)
        put("embed_device", "MEMENGINE_EMBED_DEVICE")
        put("api_base_url", "API_BASE_URL")
        put("api_key", "API_KEY", Secret)
        put("llm_model", "MEMORY_LLM_MODEL")
        put("deriver", "MEMENGINE_DERIVER")
        put("llm_timeout_s", "MEMENGINE_LLM_TIMEOUT_S", float)
        put("llm_attempts", "MEMENGINE_LLM_ATTEMPTS", int)
        put("batch_size", "MEMENGINE_BATCH_SIZE", int)
        put("batch_bytes", "MEMENGINE_BATCH_BYTES", int)
        put("ryw_timeout", "MEMENGINE_RYW_TIMEOUT", float)
        put("max_request_bytes", "MEMENGINE_MAX_REQUEST_BYTES", int)
        put("rpc_rate", "MEMENGINE_RPC_RATE", float)
        put("rpc_burst", "MEMENGINE_RPC_BURST", float)
        put("rpc_workers", "MEMENGINE_RPC_WORKERS", int)
        put("rpc_waits", "MEMENGINE_RPC_WAITS", int)
        put("push_max_window", "MEMENGINE_PUSH_MAX_WINDOW", int)
        put("push_max_pending", "MEMENGINE_PUSH_MAX_PENDING", int)
        put("metrics_port", "MEMENGINE_METRICS_PORT", int)
        put("metrics_host", "MEMENGINE_METRICS_HOST")
        put("http_port", "MEMENGINE_HTTP_PORT", int)
        put("http_host", "MEMENGINE_HTTP_HOST")
        put("http_keys_file", "MEMENGINE_HTTP_KEYS_FILE")
        put("http_allowed_hosts", "MEMENGINE_HTTP_ALLOWED_HOSTS")
        put("http_allowed_origins", "MEMENGINE_HTTP_ALLOWED_ORIGINS")
        put("log_level", "MEMENGINE_LOG_LEVEL")
        put("gc_gen0_threshold", "MEMENGINE_GC_GEN0", int)
        put("malloc_trim_s", "MEMENGINE_MALLOC_TRIM_S", float)
        put("malloc_arena_max", "MEMENGINE_MALLOC_ARENA_MAX", int)
        _put_tracing(env, raw)
        put("episode_idle_seconds", "MEMENGINE_EPISODE_IDLE_SECONDS", float)
        put("consolidate_interval", "MEMENGINE_CONSOLIDATE_INTERVAL", float)
        put("working_memory_ttl", "MEMENGINE_WORKING_MEMORY_TTL", float)
        put("working_memory_max", "MEMENGINE_WORKING_MEMORY_MAX", int)
        raw.update({k: v for k, v in overrides.items() if v is not None})
        if not raw.get("home"):
            raw["home"] = default_home()
        try:
            settings = msgspec.convert(raw, cls)
        except msgspec.ValidationError as exc:
            raise SettingsError(str(exc)) from None
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise ``SettingsError`` for values out of range."""
        checks = [
            (self.stream_replicas in (1, 3, 5), "MEMENGINE_STREAM_REPLICAS must be 1, 3 or 5"),
            (0 <= self.partitions <= 1024, "MEMENGINE_PARTITIONS must be in 0..1024"),
            (bool(self.projector_groups) and self.projector_groups <= PROJECTOR_GROUPS,
             "MEMENGINE_PROJECTORS must name one or more of core, recall, derived, access (comma-separated)"),
            (self.trail_queue > 0 and 0 < self.trail_batch <= 10_000,
             "MEMENGINE_TRAIL_QUEUE must be > 0 and MEMENGINE_TRAIL_BATCH in 1..10000"),
            (self.served_max_age >= 0 and self.served_max_bytes >= 0,
             "MEMENGINE_SERVED_MAX_AGE / _MAX_BYTES must be >= 0 (0: unlimited)"),
            (re.fullmatch(r"(\d+(kB|MB|GB|TB))?", self.pg_shared_buffers) is not None,
             "MEMENGINE_PG_SHARED_BUFFERS must be a size with its unit (e.g. 512MB, 4GB) or empty (a quarter of RAM)"),
            (self.full_recent_count >= 0, "MEMORY_FULL_RECENT_COUNT must be >= 0"),
            (self.condensed_tool_max >= 0, "MEMORY_CONDENSED_TOOL_MAX must be >= 0"),
            (self.context_window >= 0, "MEMORY_CONTEXT_WINDOW must be >= 0"),
            (0 < self.batch_size <= 10_000, "MEMENGINE_BATCH_SIZE must be in 1..10000"),
            (self.batch_bytes >= 0, "MEMENGINE_BATCH_BYTES must be >= 0 (0: no bound)"),
            (self.ryw_timeout >= 0, "MEMENGINE_RYW_TIMEOUT must be >= 0"),
            (self.gc_gen0_threshold >= 0, "MEMENGINE_GC_GEN0 must be >= 0"),
            (self.malloc_trim_s >= 0, "MEMENGINE_MALLOC_TRIM_S must be >= 0"),
            (self.malloc_arena_max >= 0, "MEMENGINE_MALLOC_ARENA_MAX must be >= 0"),
            (self.recall_top_k > 0, "MEMORY_RECALL_TOP_K must be > 0"),
            (self.episode_idle_seconds >= 0, "MEMENGINE_EPISODE_IDLE_SECONDS must be >= 0"),
            (self.consolidate_interval >= 0, "MEMENGINE_CONSOLIDATE_INTERVAL must be >= 0"),
            (self.working_memory_ttl > 0, "MEMENGINE_WORKING_MEMORY_TTL must be > 0"),
            (self.working_memory_max > 0, "MEMENGINE_WORKING_MEMORY_MAX must be > 0"),
            (_weights_ok(self.recall_weights),
             "MEMORY_RECALL_WEIGHTS must be three numbers >= 0 (relevance,recency,importance), e.g. 0.6,0.2,0.2"),
            (self.recall_decay_days > 0, "MEMORY_RECALL_DECAY_DAYS must be > 0"),
            (0 <= self.recall_access_weight <= 1, "MEMORY_RECALL_ACCESS_WEIGHT must be in [0, 1]"),
            (_weights_ok(self.recall_turn_weights), "MEMORY_RECALL_TURN_WEIGHTS must be three numbers >= 0"),
            (self.rpc_rate >= 0 and self.rpc_burst >= 0, "MEMENGINE_RPC_RATE / _BURST must be >= 0"),
            (self.rpc_workers > 0 and self.rpc_waits > 0, "MEMENGINE_RPC_WORKERS / _WAITS must be > 0"),
            (self.push_max_window > 0 and self.push_max_pending > 0,
             "MEMENGINE_PUSH_MAX_WINDOW / _PENDING must be > 0"),
            (0 <= self.metrics_port <= 65535, "MEMENGINE_METRICS_PORT must be in 0..65535"),
            (self.http_port is None or 0 <= self.http_port <= 65535, "MEMENGINE_HTTP_PORT must be in 0..65535"),
            (all(_HOST_ENTRY.fullmatch(h.strip()) for h in self.http_allowed_hosts.split(",") if h.strip()),
             "MEMENGINE_HTTP_ALLOWED_HOSTS must be comma-separated host or host:port (IPv6 in brackets)"),
            (all(_ORIGIN_ENTRY.fullmatch(o.strip()) for o in self.http_allowed_origins.split(",") if o.strip()),
             "MEMENGINE_HTTP_ALLOWED_ORIGINS must be comma-separated origins: http(s)://host[:port], no path"),
            (self.tracing in ("off", "otlp"), "MEMENGINE_TRACING must be otlp or off (or OTEL_TRACES_EXPORTER otlp"
             " or none)"),
            (self.deriver in ("auto", "offline", "openai"), "MEMENGINE_DERIVER must be auto, offline or openai"),
            (self.llm_timeout_s > 0, "MEMENGINE_LLM_TIMEOUT_S must be > 0"),
            (self.llm_attempts >= 1, "MEMENGINE_LLM_ATTEMPTS must be >= 1"),
            (self.embedder in EMBEDDER_CHOICES,
             f"MEMENGINE_EMBEDDER must be one of {', '.join(EMBEDDER_CHOICES)}"),
            (1 <= self.embed_batch <= 2048, "MEMENGINE_EMBED_BATCH must be in 1..2048 (texts per embedding call)"),
            (1 <= self.embed_concurrency <= 64,
             "MEMENGINE_EMBED_CONCURRENCY must be in 1..64 (embedding calls in flight)"),
            (re.fullmatch(r"cpu|cuda(:\d+)?|mps", self.embed_device) is not None,
             "MEMENGINE_EMBED_DEVICE must be cpu, cuda, cuda:N or mps"),
        ]
        for ok, message in checks:
            if not ok:
                raise SettingsError(message)

    @property
    def projector_groups(self) -> frozenset[str]:
        """The projector groups of ``projectors`` (``"core,recall"`` -> ``{"core", "recall"}``; blanks ignored)."""
        return frozenset(g.strip() for g in self.projectors.split(",") if g.strip())

    @property
    def window(self) -> int:
        """The context window used when a request gives none (seed 000 §5: 0 = infer; memengine infers 128K)."""
        return self.context_window or self.default_window

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()


def _put_tracing(env: Mapping[str, str], raw: dict[str, object]) -> None:
    """The tracing fields from the environment: ``MEMENGINE_TRACING`` (otlp | off) wins; else the OpenTelemetry
    SDK's own variables (opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables and
    .../protocol/exporter): ``OTEL_TRACES_EXPORTER`` (otlp | none), else "otlp" when an endpoint is set. The
    traces URL is ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as given, or ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
    ``/v1/traces`` (the spec's rule for the OTLP/HTTP base endpoint)."""
    traces_url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not traces_url and base:
        traces_url = base.rstrip("/") + "/v1/traces"
    if traces_url:
        raw["otlp_endpoint"] = traces_url
    mode = env.get("MEMENGINE_TRACING", "").strip().lower()
    if not mode:
        exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        mode = {"none": "off", "": "otlp" if traces_url else ""}.get(exporter, exporter)
    if mode:
        raw["tracing"] = mode
    if env.get("OTEL_SERVICE_NAME", "").strip():
        raw["otel_service_name"] = env["OTEL_SERVICE_NAME"].strip()


def default_home() -> str:
    """Per-user data directory for the embedded servers (``platformdirs.user_data_dir("memengine")``)."""
    import platformdirs

    return platformdirs.user_data_dir("memengine", appauthor=False)
