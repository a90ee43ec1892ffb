"""The RPC edge of the query handler: request bytes -> typed request -> reply bytes, never an exception.

``RpcHandlers`` decodes each ``<root>.rpc.<method>`` request against its type (``engine.wire.requests`` /
``engine.wire.replies``), waits for read-your-writes outside the worker slots, calls
``engine.read.service.QueryService`` and turns every failure into a typed error reply. ``guard`` and ``RateLimiter`` sit
in front of it (tenant scope and limits, below) and ``instrument`` times it; ``engine.read.serving`` subscribes the
result on NATS (FastStream).

**Why per-tenant RPC subjects** (issue #6 §4). NATS permissions act on subjects, never on payloads. With only
``<root>.rpc.<method>`` (tenant inside the JSON), any agent allowed to ask anything could ask for any tenant. So the
query handler also answers ``<root>.rpc.<method>.<tenant>``: an agent user of tenant ``acme`` is allowed to publish
on ``mem.rpc.*.acme`` only (``deploy/nats/accounts.conf``), and the handler refuses a scoped request whose payload
names another tenant (``forbidden``). The plain subject stays for trusted callers (the CLI, the engine's own
users), which the shipped accounts deny to agents. Chosen over an auth-callout service because it needs nothing
but the server's static permissions; for thousands of tenants, the same subjects work with JWT permission templates
(``mem.fact.{{tag(tenant)}}.>``), see docs/operators/deploy.md "Tenant security".

**Limits**: request size (``MEMENGINE_MAX_REQUEST_BYTES``, code ``payload_too_large``), requests per second per
tenant per handler process (token bucket, ``MEMENGINE_RPC_RATE`` / ``MEMENGINE_RPC_BURST``, code ``rate_limited``),
queries at once (``MEMENGINE_RPC_WORKERS``) and read-your-writes waits per tenant (``MEMENGINE_RPC_WAITS``).

**Metrics**: ``memengine_rpc_duration_seconds{method}`` and ``memengine_rpc_requests_total{method,code}`` live in
``REGISTRY`` here, on the read side; ``engine.ops.metrics`` serves them with the rest (ops imports the read side,
never the reverse).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec
import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from memengine.engine.adapters.postgres import is_bad_data, is_transient
from memengine.engine.adapters.settings import Settings
from memengine.engine.read import scope
from memengine.engine.read.progress import Ryw
from memengine.engine.read.service import QueryService
from memengine.engine.wire import tracing
from memengine.engine.wire.errors import RpcError, rpc_error
from memengine.engine.wire.replies import encode_error, encode_ok
from memengine.engine.wire.requests import (
    AuditRequest,
    ContextRequest,
    DedupKeyRequest,
    HistoryRequest,
    MemoriesRequest,
    ProfileRequest,
    PublishedRequest,
    RecallRequest,
    ScratchpadRequest,
    ThreadRequest,
    ThreadsRequest,
)
from memengine.events import InvalidToken, check_token

log = structlog.get_logger("memengine.query")  # the name the read side logged under before it was split

#: A handler of ``RpcHandlers.methods()``: request bytes in, reply bytes out.
Handler = Callable[[bytes], Awaitable[bytes]]


class ScopedHandler(Protocol):
    """A guarded handler: request bytes, the tenant token of the subject (``None`` for the plain subject) and the
    user the caller is bound to (``None``: the request's own ``bound_user``, if any; the HTTP gateway passes its
    key's user), reply bytes out."""

    def __call__(self, data: bytes, tenant: str | None = None, user: str | None = None, /) -> Awaitable[bytes]: ...


class _TenantHead(msgspec.Struct):
    """Only the ``tenant`` of a request (the default of every request type is ``default``)."""

    tenant: Any = "default"


_head = msgspec.json.Decoder(_TenantHead)
_object = msgspec.json.Decoder(dict[str, Any])


def bind_user(data: bytes, user: str) -> bytes:
    """The request ``data`` with ``bound_user`` set to ``user`` (the caller's binding, e.g. an HTTP key's user).
    ``RpcError("forbidden")`` when the request already names another bound user; bytes that are no JSON object are
    returned unchanged (the handler refuses them with ``invalid_request``)."""
    try:
        body = _object.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return data
    named = body.get("bound_user")
    if named is not None and named != user:
        raise RpcError("forbidden", f"this caller is bound to user {user!r}; the request names {named!r}")
    body["bound_user"] = user
    return msgspec.json.encode(body)


class RateLimiter:
    """Token buckets per key: ``rate`` tokens per second, at most ``burst`` stored. ``rate <= 0`` = unlimited.

    Per process: N query handlers in the queue group admit up to N x ``rate`` per tenant (documented; a shared
    limiter would need a shared store on the request path). Within a process there is one, ``RpcHandlers.limiter``:
    the NATS subjects and the HTTP API (``engine.http.gateway``) draw from the same bucket of a tenant, so a caller
    cannot double its rate by using both edges.
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
    """Wrap a ``RpcHandlers`` handler: size limit, bound user, tenant of a scoped subject, rate limit, then
    ``handle``.

    Replies (never raises): ``payload_too_large`` over ``max_bytes``; ``forbidden`` when the subject names tenant
    ``X`` and the payload another, or when the caller is bound to a user (``user``: the HTTP key's) and the payload
    names another ``bound_user`` (else the caller's is set: ``bind_user``); ``rate_limited`` when the tenant's bucket
    is empty. A payload whose tenant cannot be read is passed on to ``handle``, which answers ``invalid_request`` /
    ``invalid_token``.
    """

    async def guarded(data: bytes, subject_tenant: str | None = None, user: str | None = None, /) -> bytes:
        if len(data) > max_bytes:
            return encode_error("payload_too_large", f"request of {len(data)} bytes exceeds {max_bytes}")
        if user is not None:
            try:
                data = bind_user(data, user)
            except RpcError as exc:
                return encode_error(exc.code, exc.message)
        if subject_tenant is not None or (limiter is not None and limiter.rate > 0):
            try:
                tenant = _head.decode(data).tenant
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError,  # msgspec: bad UTF-8 in a str
                    RecursionError):  # nested too deeply (issue #17 defect 7)
                # not a request at all: handle() refuses it with invalid_request before reading anything
                return await handle(data)
            if subject_tenant is not None and tenant != subject_tenant:
                return encode_error("forbidden", f"this subject is scoped to tenant {subject_tenant!r}; the request"
                                    f" names {tenant!r}")
            if limiter is not None and isinstance(tenant, str) and not limiter.allow(tenant):
                return encode_error("rate_limited", f"tenant {tenant!r} is over {limiter.rate:g} requests/s; retry"
                                    " shortly")
        return await handle(data)

    return guarded


#: Process-wide RPC metrics (one query handler per process; tests with several engines see their sum).
REGISTRY = CollectorRegistry()
RPC_SECONDS = Histogram(
    "memengine_rpc_duration_seconds", "Time to answer one request, decode to reply bytes.", ["method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0), registry=REGISTRY)
RPC_REQUESTS = Counter("memengine_rpc_requests", "Replies by method and code (ok, or the error code).",
                       ["method", "code"], registry=REGISTRY)

_ERROR_PREFIX = b'{"error":{"code":"'


def reply_code(reply: bytes) -> str:
    """``ok`` or the error code of an encoded reply (``engine.wire.requests`` / ``engine.wire.replies``), without
    decoding the whole reply."""
    if reply.startswith(_ERROR_PREFIX):
        end = reply.find(b'"', len(_ERROR_PREFIX))
        return reply[len(_ERROR_PREFIX):end].decode("ascii", "replace") if end > 0 else "internal"
    return "ok"


def instrument(method: str, handle: ScopedHandler) -> ScopedHandler:
    """Time ``handle`` into ``memengine_rpc_duration_seconds`` and count its reply codes."""
    hist = RPC_SECONDS.labels(method)

    async def timed(data: bytes, tenant: str | None = None, user: str | None = None, /) -> bytes:
        t0 = time.perf_counter()
        reply = await handle(data, tenant, user)
        hist.observe(time.perf_counter() - t0)
        RPC_REQUESTS.labels(method, reply_code(reply)).inc()
        return reply

    return timed


def traced(method: str, handle: ScopedHandler) -> ScopedHandler:
    """``handle`` inside the query handler's reply span ``query <method>`` (SERVER; engine.wire.tracing) when
    tracing is on: a child of the caller's span (the request's ``traceparent``, made current by
    ``engine.read.serving``, or the HTTP request's span, ``engine.http``), with the reply's code."""

    async def in_span(data: bytes, tenant: str | None = None, user: str | None = None, /) -> bytes:
        if not tracing.enabled():
            return await handle(data, tenant, user)
        with tracing.span(f"query {method}", kind="server", attributes={"rpc.system": "nats",
                                                                         "rpc.method": method}) as sp:
            reply = await handle(data, tenant, user)
            tracing.set_attributes(sp, memengine__reply_code=reply_code(reply))
            return reply

    return in_span


class RpcHandlers:
    """Bytes in, bytes out, never an exception: one handler per method (``context``, ``history``, ``threads``).

    Concurrency (issue #17 defect 5): at most ``MEMENGINE_RPC_WORKERS`` requests run their queries at once (the
    rest queue for a slot). A read-your-writes wait (``after_seq``) happens before a slot is taken, so requests
    waiting for a far-future sequence never hold back anyone else; a tenant may have at most
    ``MEMENGINE_RPC_WAITS`` such waits pending in this process (more: ``rate_limited``).

    A request carrying ``bound_user`` is held to that user's scope before its query runs (``engine.read.scope``).
    """

    def __init__(self, service: QueryService, settings: Settings) -> None:
        self.service = service
        self.settings = settings
        self.slots = asyncio.Semaphore(settings.rpc_workers)
        #: the process's one rate limiter, shared by every edge that serves these methods (NATS, HTTP)
        self.limiter = RateLimiter(settings.rpc_rate, settings.rpc_burst or None)
        self.waits: dict[str, int] = {}  # read-your-writes waits pending, per tenant

    def methods(self) -> dict[str, Handler]:
        """Every ``<root>.rpc.<method>``: the one place that says which request type each method takes."""
        mq = self.service.memory
        return {
            "context": self._wrap(ContextRequest, self.service.context, waits=True),
            "history": self._wrap(HistoryRequest, self.service.history, waits=True),
            "threads": self._wrap(ThreadsRequest, self.service.threads),
            "memories": self._wrap(MemoriesRequest, mq.memories),
            "audit": self._wrap(AuditRequest, mq.audit),
            "summary": self._wrap(ThreadRequest, mq.summary),
            "episodes": self._wrap(ThreadRequest, mq.episodes),
            "profile": self._wrap(ProfileRequest, mq.profile),
            "recall": self._wrap(RecallRequest, self.service.recall, waits=True),
            "scratchpad": self._wrap(ScratchpadRequest, self.service.scratchpad),
            "published": self._wrap(PublishedRequest, self.service.published),
            "dedup_key": self._wrap(DedupKeyRequest, self.service.dedup_key),
        }

    async def _wait(self, req: Any) -> Ryw | None:
        """The request's read-your-writes wait, outside any worker slot and bounded per tenant."""
        if getattr(req, "after_seq", None) is None:
            return None
        tenant = req.tenant
        if self.waits.get(tenant, 0) >= self.settings.rpc_waits:
            raise RpcError("rate_limited", f"tenant {tenant!r} already has {self.settings.rpc_waits} requests waiting"
                           " for after_seq in this query handler; retry shortly")
        self.waits[tenant] = self.waits.get(tenant, 0) + 1
        try:
            return await self.service.read_your_writes(req)
        finally:
            self.waits[tenant] -= 1
            if not self.waits[tenant]:
                del self.waits[tenant]

    def _wrap(self, req_type: type, fn: Callable[..., Awaitable[Any]], *, waits: bool = False) -> Handler:
        decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(req_type)

        async def handle(data: bytes) -> bytes:
            if len(data) > self.settings.max_request_bytes:
                return encode_error("payload_too_large",
                                    f"request of {len(data)} bytes exceeds {self.settings.max_request_bytes}")
            try:
                req = decoder.decode(data)
                check_token("tenant", req.tenant)
                if getattr(req, "thread", None) is not None:
                    check_token("thread", req.thread)
            # a malformed request: bad token, JSON, type, range, UTF-8 in a string, or issue #17 defect 7's 40 KB of
            # [[[... under the size limit (RecursionError); engine.wire.errors.rpc_error says which code
            except (InvalidToken, msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                code, message = rpc_error(exc)
                return encode_error(code, message or "")
            try:
                ryw = await self._wait(req) if waits else None
                async with self.slots:
                    # the bound user's scope (issue #26 item 4), after the wait: a thread claimed by the awaited turn
                    req = await scope.admit(self.service.pool, req)
                    result = await (fn(req) if ryw is None else fn(req, ryw))
                    scope.check_result(req, result)
                return encode_ok(result)
            except Exception as exc:  # the process stays up; the caller gets a typed error
                code, message = rpc_error(exc, transient=is_transient)
                if is_bad_data(exc):  # the caller's value (as the HTTP surface answers it), never "retry shortly"
                    code, message = "invalid_request", ("a value is out of range or holds a character the database"
                                                        " cannot store")
                if message is None:
                    # issue #17 defect 9: the exception's text (driver messages, SQL, values) stays in the log
                    ref = uuid.uuid4().hex[:12]
                    log.exception("query failed", method=req_type.__name__, ref=ref)
                    message = f"internal error (ref {ref}); it was logged"
                elif code == "unavailable" and is_transient(exc):
                    log.warning("query failed: database unavailable", error=repr(exc))
                return encode_error(code, message)

        return handle
