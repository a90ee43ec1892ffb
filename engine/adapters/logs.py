"""structlog set-up: JSON lines on stderr (or a console renderer on a terminal), level from MEMENGINE_LOG_LEVEL."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class RedactSecrets:
    """structlog processor: replaces every secret value (``engine.adapters.security.secret_values``: API keys, passwords
    in ``DATABASE_URL`` / ``NATS_URL``, ``*_PASSWORD`` ..., and their ``*_FILE`` contents) by ``***`` in every string
    of the event, nested ones included, so an exception message quoting a DSN cannot leak it (issue #6 §4)."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for secret in self.secrets:
                if secret in value:
                    value = value.replace(secret, "***")
            return value
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._scrub(v) for v in value)
        if isinstance(value, (int, float, bool, type(None))):
            return value
        text = repr(value)  # an exception or object whose text quotes a secret is logged as scrubbed text
        return self._scrub(text) if any(secret in text for secret in self.secrets) else value

    def __call__(self, logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if not self.secrets:
            return event_dict
        return {k: self._scrub(v) for k, v in event_dict.items()}


def configure_logging(level: str = "warning", *, json_lines: bool | None = None,
                      secrets: list[str] | None = None) -> None:
    """Configure structlog once per process. ``json_lines`` defaults to "stderr is not a terminal"; ``secrets``
    (default: ``engine.adapters.security.secret_values()`` of the environment) are scrubbed from every line."""
    from memengine.engine.adapters.security import secret_values

    lvl = _LEVELS.get(level.lower(), logging.WARNING)
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer = structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            RedactSecrets(secret_values() if secrets is None else secrets),  # after format_exc_info: tracebacks too
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
