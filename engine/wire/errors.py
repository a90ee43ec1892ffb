"""The error root of memengine, the families callers act on, and the one mapping from an exception to a wire code.

Every exception memengine raises on purpose derives from ``MemengineError``; a caller catches the family that says
what to do (issue #10 §3):

- ``InvalidInput``: the caller's request or data is wrong; fix it, do not retry.
- ``NotFound``: the thread, memory item, projection, ... named does not exist.
- ``Busy``: another operation holds what was asked for (a rebuild, a forget); retry when it is done.
  ``RateLimited`` is a ``Busy``: the tenant is over a limit; retry shortly.
- ``Unavailable``: a dependency (PostgreSQL, NATS, the query handler, an LLM) is unreachable; retry later.
- ``Forbidden``: the caller may not do this.

``RpcError`` is what a request/reply returns as ``{"ok": false, "error": {"code", "message"}}``: it carries the wire
``code`` (``ErrorCode``) and is constructed as the family's subclass, so ``RpcError("unknown_thread", ...)`` is also a
``NotFound`` and ``except NotFound`` catches it whether it was raised in this process or decoded from a reply.

``rpc_error`` is the one place an exception becomes a wire code and message (used by the query handler's
``RpcHandlers._wrap``). This module needs only msgspec and ``memengine.events``, so the client imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from memengine.events import EventDecodeError, InvalidToken

ErrorCode = Literal[
    "invalid_request",  # not JSON, wrong type, out of range, unknown field
    "invalid_token",  # tenant / thread id that cannot be a subject token
    "payload_too_large",  # request over MEMENGINE_MAX_REQUEST_BYTES
    "unknown_thread",  # no such thread for this tenant
    "unknown_user",  # no such user in this tenant: no turn by them, no memory about them (the CLI says so today)
    "unknown_memory",  # no such memory item for this tenant
    "not_found",  # another NotFound (none is answered over RPC today; the family's default code)
    "forbidden",  # a request on <root>.rpc.<method>.<tenant> naming another tenant (engine.adapters.security)
    "rate_limited",  # the tenant is over MEMENGINE_RPC_RATE requests/s on this handler (engine.adapters.security)
    "busy",  # another operation holds the resource (the Busy family's default code)
    "invalid_event",  # client side: an event the projector would dead-letter (engine.client.check_event)
    "unavailable",  # PostgreSQL unreachable; try again
    "internal",  # a bug: logged with the request id
]


class MemengineError(Exception):
    """Root of every exception memengine raises on purpose. ``code``: the wire code an RPC reply carries for it
    (``ErrorCode``); ``internal`` unless a family says otherwise."""

    code: str = "internal"


class InvalidInput(MemengineError):
    """The caller's input is wrong (a bad request, setting, file, event): fix it, do not retry."""

    code = "invalid_request"


class NotFound(MemengineError):
    """What was named does not exist (thread, memory item, projection, thread data to forget)."""

    code = "not_found"


class Busy(MemengineError):
    """Another operation holds what was asked for (a rebuild, a forget, a projector's lock): retry when it ends."""

    code = "busy"


class RateLimited(Busy):
    """The tenant is over a rate or concurrency limit (``MEMENGINE_RPC_RATE``, ``MEMENGINE_RPC_WAITS``): retry
    shortly."""

    code = "rate_limited"


class Unavailable(MemengineError):
    """A dependency (PostgreSQL, NATS, the query handler, an LLM endpoint) is unreachable: retry later."""

    code = "unavailable"


class Forbidden(MemengineError):
    """The caller may not do this (a request naming another tenant than its subject's)."""

    code = "forbidden"


#: The family of each wire code (codes not listed, ``internal`` included, are a plain ``RpcError``).
FAMILIES: dict[str, type[MemengineError]] = {
    "invalid_request": InvalidInput, "invalid_token": InvalidInput, "payload_too_large": InvalidInput,
    "invalid_event": InvalidInput, "unknown_thread": NotFound, "unknown_user": NotFound,
    "unknown_memory": NotFound, "not_found": NotFound,
    "forbidden": Forbidden, "rate_limited": RateLimited, "busy": Busy, "unavailable": Unavailable,
}


class RpcError(MemengineError):
    """A typed request/reply error: ``code`` (see ``ErrorCode``) and a human ``message``. Raised by the client for
    error replies (and ``unavailable`` when no query handler answers), and by handlers to produce one.

    ``RpcError(code, message)`` returns an instance of the subclass of ``RpcError`` and of the code's family
    (``FAMILIES``): ``isinstance(RpcError("unknown_thread", "x"), NotFound)`` is true."""

    def __new__(cls, code: str, message: str = "") -> RpcError:
        family = FAMILIES.get(code)
        sub = _RPC_BY_FAMILY.get(family, cls) if cls is RpcError and family is not None else cls
        return super().__new__(sub)

    def __init__(self, code: str, message: str = "") -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


def _rpc_class(family: type[MemengineError]) -> type[RpcError]:
    doc = f"An ``RpcError`` of the ``{family.__name__}`` family."
    return type(f"Rpc{family.__name__}", (RpcError, family), {"__module__": __name__, "__doc__": doc})


_RPC_BY_FAMILY: dict[type[MemengineError], type[RpcError]] = {
    f: _rpc_class(f) for f in (InvalidInput, NotFound, Busy, RateLimited, Unavailable, Forbidden)}

#: Exceptions decoding a request raises for a malformed body: bad JSON, wrong types or ranges, bad UTF-8 inside a
#: string, or nesting deeper than the decoder's stack (issue #17 defect 7: 40 KB of ``[[[...``).
_MALFORMED = (msgspec.DecodeError, UnicodeDecodeError)


def rpc_error(exc: BaseException, *,
              transient: Callable[[BaseException], bool] | None = None) -> tuple[str, str | None]:
    """``(code, message)`` of the error reply for ``exc``; ``message`` is ``None`` for ``internal`` (a bug: the
    caller logs ``exc`` and answers with a reference, never the exception's text; issue #17 defect 9).

    - ``MemengineError`` (``RpcError`` included): its ``code``, its message;
    - ``events.InvalidToken``: ``invalid_token``; ``events.EventDecodeError``: ``invalid_event``;
    - a malformed request (``msgspec.DecodeError`` / ``ValidationError``, ``UnicodeDecodeError``): ``invalid_request``;
      ``RecursionError`` (msgspec's answer to a too deeply nested body): ``invalid_request``;
    - ``transient(exc)`` true (the server passes ``engine.adapters.postgres.is_transient``): ``unavailable``;
    - anything else: ``internal``.
    """
    if isinstance(exc, RpcError):
        return exc.code, exc.message
    if isinstance(exc, MemengineError):
        return exc.code, str(exc)
    if isinstance(exc, InvalidToken):
        return "invalid_token", str(exc)
    if isinstance(exc, EventDecodeError):
        return "invalid_event", str(exc)
    if isinstance(exc, _MALFORMED):
        return "invalid_request", str(exc)
    if isinstance(exc, RecursionError):
        return "invalid_request", "request nested too deeply"
    if transient is not None and transient(exc):
        return "unavailable", "the read models are unreachable; retry shortly"
    return "internal", None
