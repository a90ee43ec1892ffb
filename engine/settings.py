"""One typed settings object, read once from the environment.

Variables and defaults of seed 000 §5 keep their names (``MEMORY_*``, ``DATABASE_URL``, ``API_BASE_URL``,
``API_KEY``); memengine's own runtime knobs are ``MEMENGINE_*``. Secrets are wrapped in ``Secret`` so that no repr,
log line or ``--json`` output ever shows them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec


class Secret(str):
    """A string whose repr hides its value (API keys). ``str(secret)`` still gives the value."""

    def __repr__(self) -> str:
        return "Secret('***')" if self else "Secret('')"


class SettingsError(ValueError):
    """An environment variable with a value that cannot be used; the message names the variable."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything configurable. Build with ``Settings.from_env()``; override fields with ``msgspec.structs.replace``.

    Connection: ``nats_url`` / ``database_url`` (``None`` = start the embedded servers under ``home``).
    Naming: ``subject_root`` (``mem``), ``stream_prefix`` (``MEMORY`` -> ``MEMORY_FACTS`` ...), ``stream_replicas``,
    ``duplicate_window`` (seconds). Seed 000 §5: ``context_window`` (0 = ``default_window``), ``full_recent_count``,
    ``enable_summary``, ``summary_threshold``, ``max_summary_tokens``, ``condensed_tool_max`` (characters),
    ``max_messages_per_thread``, ``embedding_*``, ``recall_top_k``, ``embedder`` (auto | minilm | openai | none). Context: ``output_reserve_ratio`` (16K of 128K,
    seed 000 §4.1), ``margin_ratio`` (10 %). Runner: ``batch_size`` (events per transaction), ``ryw_timeout``
    (seconds a read-your-writes request waits), ``max_request_bytes`` (RPC payload limit).
    """

    nats_url: str | None = None
    database_url: str | None = None
    home: str = ""
    subject_root: str = "mem"
    stream_prefix: str = "MEMORY"
    stream_replicas: int = 1
    duplicate_window: float = 24 * 3600.0

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
    embedder: str = "auto"
    api_base_url: str = ""
    api_key: Secret = Secret("")
    llm_model: str = "gpt-4o-mini"
    deriver: str = "auto"  # auto | offline | openai (auto: openai when API_BASE_URL is set)

    output_reserve_ratio: float = 0.125
    margin_ratio: float = 0.10

    batch_size: int = 1000
    ryw_timeout: float = 2.0
    max_request_bytes: int = 64 * 1024
    log_level: str = "warning"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> "Settings":
        """Read the settings from ``env`` (default ``os.environ``); ``overrides`` win over the environment.

        Raises ``SettingsError`` naming the variable for a value of the wrong type.
        """
        env = os.environ if env is None else env
        raw: dict[str, object] = {}

        def put(field: str, var: str, kind: type = str) -> None:
            value = env.get(var)
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
        put("subject_root", "MEMENGINE_SUBJECT_ROOT")
        put("stream_prefix", "MEMENGINE_STREAM_PREFIX")
        put("stream_replicas", "MEMENGINE_STREAM_REPLICAS", int)
        put("duplicate_window", "MEMENGINE_DUPLICATE_WINDOW", float)
        put("context_window", "MEMORY_CONTEXT_WINDOW", int)
        put("full_recent_count", "MEMORY_FULL_RECENT_COUNT", int)
        put("enable_summary", "MEMORY_ENABLE_SUMMARY", bool)
        put("summary_threshold", "MEMORY_SUMMARY_THRESHOLD", int)
        put("max_summary_tokens", "MEMORY_MAX_SUMMARY_TOKENS", int)
        put("condensed_tool_max", "MEMORY_CONDENSED_TOOL_MAX", int)
        put("max_messages_per_thread", "MEMORY_MAX_MESSAGES_PER_THREAD", int)
        put("embedding_model", "MEMORY_EMBEDDING_MODEL")
        put("embedding_base_url", "MEMORY_EMBEDDING_BASE_URL")
        put("embedding_api_key", "MEMORY_EMBEDDING_API_KEY", Secret)
        put("recall_top_k", "MEMORY_RECALL_TOP_K", int)
        put("embedder", "MEMENGINE_EMBEDDER")
        put("api_base_url", "API_BASE_URL")
        put("api_key", "API_KEY", Secret)
        put("llm_model", "MEMORY_LLM_MODEL")
        put("deriver", "MEMENGINE_DERIVER")
        put("batch_size", "MEMENGINE_BATCH_SIZE", int)
        put("ryw_timeout", "MEMENGINE_RYW_TIMEOUT", float)
        put("max_request_bytes", "MEMENGINE_MAX_REQUEST_BYTES", int)
        put("log_level", "MEMENGINE_LOG_LEVEL")
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
            (self.full_recent_count >= 0, "MEMORY_FULL_RECENT_COUNT must be >= 0"),
            (self.condensed_tool_max >= 0, "MEMORY_CONDENSED_TOOL_MAX must be >= 0"),
            (self.context_window >= 0, "MEMORY_CONTEXT_WINDOW must be >= 0"),
            (0 < self.batch_size <= 10_000, "MEMENGINE_BATCH_SIZE must be in 1..10000"),
            (self.ryw_timeout >= 0, "MEMENGINE_RYW_TIMEOUT must be >= 0"),
            (self.recall_top_k > 0, "MEMORY_RECALL_TOP_K must be > 0"),
            (self.deriver in ("auto", "offline", "openai"), "MEMENGINE_DERIVER must be auto, offline or openai"),
            (self.embedder in ("auto", "minilm", "openai", "none"),
             "MEMENGINE_EMBEDDER must be auto, minilm, openai or none"),
        ]
        for ok, message in checks:
            if not ok:
                raise SettingsError(message)

    @property
    def window(self) -> int:
        """The context window used when a request gives none (seed 000 §5: 0 = infer; memengine infers 128K)."""
        return self.context_window or self.default_window

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()


def default_home() -> str:
    """Per-user data directory for the embedded servers (``platformdirs.user_data_dir("memengine")``)."""
    import platformdirs

    return platformdirs.user_data_dir("memengine", appauthor=False)
