"""Tenant scoping and limits at the edge of the query handler, and secret redaction (issue #6 §4).

**Why per-tenant RPC subjects.** NATS permissions act on subjects, never on payloads. With only
``<root>.rpc.<method>`` (tenant inside the JSON), any agent allowed to ask anything could ask for any tenant. So the
query handler also answers ``<root>.rpc.<method>.<tenant>``: an agent user of tenant ``acme`` is allowed to publish
on ``mem.rpc.*.acme`` only (``deploy/nats/accounts.conf``), and the handler refuses a scoped request whose payload
names another tenant (``forbidden``). The plain subject stays for trusted callers (the CLI, the engine's own
users), which the shipped accounts deny to agents. Chosen over an auth-callout service because it needs nothing
but the server's static permissions; for thousands of tenants, the same subjects work with JWT permission templates
(``mem.fact.{{tag(tenant)}}.>``), see README "Running at scale".

**Limits**: request size (``MEMENGINE_MAX_REQUEST_BYTES``, code ``payload_too_large``), requests per second per
tenant per handler process (token bucket, ``MEMENGINE_RPC_RATE`` / ``MEMENGINE_RPC_BURST``, code ``rate_limited``).
Event size and blocks per turn are bounded by the event schema (``events.model.MAX_BLOCKS``, ``MAX_TEXT``) and the
stream's ``max_msg_size``; ``check_event`` applies them in the client before publishing (``RpcError``).

**Secrets**: ``redact_url`` hides the password of a URL before it is printed; ``secret_values`` lists the values
``engine.logs`` scrubs from every log line.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from engine.protocol import RpcError, encode_error

Handler = Callable[[bytes], Awaitable[bytes]]
#: A guarded handler: request bytes and the tenant token of the subject (``None`` for the plain subject).
ScopedHandler = Callable[[bytes, "str | None"], Awaitable[bytes]]


class _TenantHead(msgspec.Struct):
    """Only the ``tenant`` of a request (the default of every request type is ``default``)."""

    tenant: Any = "default"


_head = msgspec.json.Decoder(_TenantHead)


class RateLimiter:
    """Token buckets per key: ``rate`` tokens per second, at most ``burst`` stored. ``rate <= 0`` = unlimited.

    Per process: N query handlers in the queue group admit up to N x ``rate`` per tenant (documented; a shared
    limiter would need a shared store on the request path).
    """

    def __init__(self, rate: float, burst: float | None = None, *, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str, now: float | None = None) -> bool:
        """Take one token for ``key``; ``False`` when its bucket is empty."""
        if self.rate <= 0:
            return True
        now = time.monotonic() if now is None else now
        tokens, last = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if len(self._buckets) >= self.max_keys and key not in self._buckets:
            self._buckets.clear()  # bounded memory under a flood of made-up tenants; buckets refill anyway
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1.0, now)
        return True


def guard(handle: Handler, *, max_bytes: int, limiter: RateLimiter | None = None) -> ScopedHandler:
    """Wrap a ``RpcHandlers`` handler: size limit, tenant of a scoped subject, rate limit, then ``handle``.

    Replies (never raises): ``payload_too_large`` over ``max_bytes``; ``forbidden`` when the subject names tenant
    ``X`` and the payload another; ``rate_limited`` when the tenant's bucket is empty. A payload whose tenant cannot
    be read is passed on to ``handle``, which answers ``invalid_request`` / ``invalid_token``.
    """

    async def guarded(data: bytes, subject_tenant: str | None = None) -> bytes:
        if len(data) > max_bytes:
            return encode_error("payload_too_large", f"request of {len(data)} bytes exceeds {max_bytes}")
        if subject_tenant is not None or (limiter is not None and limiter.rate > 0):
            try:
                tenant = _head.decode(data).tenant
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):  # msgspec: bad UTF-8 in a str
                tenant = None
            if subject_tenant is not None and tenant != subject_tenant:
                return encode_error("forbidden", f"this subject is scoped to tenant {subject_tenant!r}; the request"
                                    f" names {tenant!r}")
            if limiter is not None and isinstance(tenant, str) and not limiter.allow(tenant):
                return encode_error("rate_limited", f"tenant {tenant!r} is over {limiter.rate:g} requests/s; retry"
                                    " shortly")
        return await handle(data)

    return guarded


def check_event(event: Any, *, max_bytes: int = 1024 * 1024) -> bytes:
    """Encode ``event`` and check it against the limits the engine enforces, before it is published.

    Returns the bytes. Raises ``RpcError("payload_too_large")`` over ``max_bytes`` (the stream's ``max_msg_size``,
    ``events.streams``) and ``RpcError("invalid_event")`` for anything the projector would dead-letter (more than
    ``MAX_BLOCKS`` blocks, a text over ``MAX_TEXT``, a bad id), with the decoder's reason.
    """
    from events import EventDecodeError, decode, encode

    data = encode(event)
    if len(data) > max_bytes:
        raise RpcError("payload_too_large", f"event of {len(data)} bytes exceeds {max_bytes}")
    try:
        decode(data)
    except EventDecodeError as exc:
        raise RpcError("invalid_event", exc.reason) from None
    return data


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

