"""The request/reply protocol of ``<root>.rpc.*``: request shapes, the reply envelope and the error codes.

Every reply is ``{"ok": true, "result": {...}}`` or ``{"ok": false, "error": {"code", "message"}}``; a handler
never lets an exception escape (issue #2 §6, DESIGN.md "Request/reply"). This module needs only msgspec, so the
client and the server share it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

ErrorCode = Literal[
    "invalid_request",  # not JSON, wrong type, out of range, unknown field
    "invalid_token",  # tenant / thread id that cannot be a subject token
    "payload_too_large",  # request over MEMENGINE_MAX_REQUEST_BYTES
    "unknown_thread",  # no such thread for this tenant
    "unknown_memory",  # no such memory item for this tenant
    "forbidden",  # a request on <root>.rpc.<method>.<tenant> naming another tenant (engine.security)
    "rate_limited",  # the tenant is over MEMENGINE_RPC_RATE requests/s on this handler (engine.security)
    "invalid_event",  # client side: an event the projector would dead-letter (engine.security.check_event)
    "unavailable",  # PostgreSQL unreachable; try again
    "internal",  # a bug: logged with the request id
]

NonNeg = Annotated[int, msgspec.Meta(ge=0)]


class ContextRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.context``: assemble context for ``thread``.

    ``window`` (tokens, default ``MEMORY_CONTEXT_WINDOW`` or 128K), ``system_tokens`` (size of the agent's system
    prompt), ``query`` (current user message, for Tier-1 relevance), ``after_seq`` (read-your-writes: wait until the
    turn published at that stream sequence is projected), ``wait`` (seconds to wait for it, default 2).
    """

    tenant: str = "default"
    thread: str
    window: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)] | None = None
    system_tokens: NonNeg = 0
    query: Annotated[str, msgspec.Meta(max_length=8192)] | None = None
    after_seq: NonNeg | None = None
    wait: Annotated[float, msgspec.Meta(ge=0, le=30)] | None = None


class HistoryRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.history``: the transcript of ``thread`` oldest first, ``limit`` messages (1..1000) after
    ``from_seq`` (exclusive); ``after_seq`` / ``wait`` as for context."""

    tenant: str = "default"
    thread: str
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    from_seq: NonNeg = 0
    after_seq: NonNeg | None = None
    wait: Annotated[float, msgspec.Meta(ge=0, le=30)] | None = None


class ThreadsRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.threads``: the tenant's threads, most recently active first (seed 000 §2.3)."""

    tenant: str = "default"
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50
    offset: NonNeg = 0


class MemoriesRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.memories``: typed memory items, newest first; filters ``user``, ``thread``, ``type``, ``status``
    (``active`` | ``quarantined`` | ``superseded`` | ``retracted`` | ``deleted`` | ``expired`` | ``all``)."""

    tenant: str = "default"
    user: Annotated[str, msgspec.Meta(max_length=1024)] | None = None
    thread: str | None = None
    type: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    status: Literal["active", "quarantined", "superseded", "retracted", "deleted", "expired", "all"] = "active"
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100


class AuditRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.audit``: the provenance chain of ``memory_id``: item -> derived events -> source turns."""

    tenant: str = "default"
    memory_id: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class ThreadRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.summary`` and ``rpc.episodes``: per-thread derived memory."""

    tenant: str = "default"
    thread: str


class ProfileRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.profile``: MEMORY.md and USER.md of ``user`` (seed 004), rendered from active memory items."""

    tenant: str = "default"
    user: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class RpcError(Exception):
    """A typed error: ``code`` (see ``ErrorCode``) and a human ``message``. Raised by the client for error
    replies, and by handlers to produce one."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class ErrorBody(msgspec.Struct, frozen=True):
    code: str
    message: str


class ErrorReply(msgspec.Struct, frozen=True):
    error: ErrorBody
    ok: bool = False


class OkReply(msgspec.Struct, frozen=True):
    result: Any
    ok: bool = True


_encoder = msgspec.json.Encoder()


def encode_ok(result: Any) -> bytes:
    return _encoder.encode(OkReply(result=result))


def encode_error(code: str, message: str) -> bytes:
    return _encoder.encode(ErrorReply(error=ErrorBody(code=code, message=message)))


def decode_reply(data: bytes) -> Any:
    """The ``result`` of a reply; raises ``RpcError`` for an error reply or a reply that is not an envelope."""
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise RpcError("internal", f"reply is not JSON: {exc}") from None
    if not isinstance(obj, dict) or "ok" not in obj:
        raise RpcError("internal", "reply is not an envelope")
    if obj["ok"]:
        return obj.get("result")
    err = obj.get("error") or {}
    raise RpcError(str(err.get("code", "internal")), str(err.get("message", "")))
