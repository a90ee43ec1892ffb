"""Secret redaction (issue #6 §4): ``redact_url`` before a URL is printed, ``secret_values`` for the log scrubber.

**Secrets**: ``redact_url`` hides the password of a URL before it is printed; ``secret_values`` lists the values
``engine.adapters.logs`` scrubs from every log line.

**Events**: event size and blocks per turn are bounded by the event schema (``events.model.MAX_BLOCKS``,
``MAX_TEXT``) and the stream's ``max_msg_size``; ``engine.client.checks.check_event`` applies them in the client
before publishing.

Tenant scoping of RPC subjects and the request limits (``guard``, ``RateLimiter``) belong to the RPC edge:
``engine.read.rpc``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_URL_PASSWORD = re.compile(r"(://[^:/@,\s]*):([^@/\s]*)@")


def redact_url(url: str | None) -> str | None:
    """``url`` with every password replaced by ``***`` (``nats://u:***@h:4222``; a comma-separated server list
    too); other parts kept for debugging."""
    if not url:
        return url
    return _URL_PASSWORD.sub(r"\1:***@", url)


#: Environment variables whose whole value is a secret, and those that are URLs with a password.
SECRET_VARS = ("API_KEY", "MEMORY_EMBEDDING_API_KEY", "PGPASSWORD", "NATS_PASSWORD", "NATS_TOKEN")
URL_VARS = ("DATABASE_URL", "NATS_URL")
_SECRETISH = re.compile(r"(PASSWORD|SECRET|TOKEN|API_KEY)$")


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The secret strings of ``env`` (default ``os.environ``), longest first: the values of ``SECRET_VARS`` and of
    any ``*_PASSWORD`` / ``*_SECRET`` / ``*_TOKEN`` / ``*_API_KEY`` variable, the passwords inside ``URL_VARS``,
    and the contents of their ``*_FILE`` variants. Values under 4 characters are ignored (they would scrub noise)."""
    env = os.environ if env is None else env
    found: set[str] = set()

    def value(var: str) -> str | None:
        v = env.get(var)
        if not v and env.get(var + "_FILE"):
            try:
                with open(env[var + "_FILE"]) as fh:
                    v = fh.read().strip()
            except OSError:
                return None
        return v or None

    names = set(SECRET_VARS) | {k for k in env if _SECRETISH.search(k)} | {
        k[: -len("_FILE")] for k in env if k.endswith("_FILE") and _SECRETISH.search(k[: -len("_FILE")])}
    for var in names:
        v = value(var)
        if v:
            found.add(v)
    for var in URL_VARS:
        v = value(var)
        if v:
            found.update(m.group(2) for m in _URL_PASSWORD.finditer(v) if m.group(2))
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)

