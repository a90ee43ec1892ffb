"""The wire contract (``engine.wire``): every RPC method has a request and a reply type, replies decode leniently,
errors map to codes in one place and belong to their families."""

from __future__ import annotations

import typing
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from memengine.engine.adapters.embedded import EmbeddedServerError
from memengine.engine.adapters.settings import SettingsError
from memengine.engine.derive.llm import DerivationUnavailable
from memengine.engine.ops.forget import ForgetBusy, NothingToForget
from memengine.engine.ops.rebuild import RebuildBusy, UnknownProjection
from memengine.engine.read.rpc import RpcHandlers
from memengine.engine.wire.errors import (
    Busy,
    ErrorCode,
    InvalidInput,
    MemengineError,
    NotFound,
    RateLimited,
    RpcError,
    Unavailable,
    rpc_error,
)
from memengine.engine.wire.replies import (
    REPLIES,
    Budget,
    ContextResult,
    MessageOut,
    RecallHit,
    RecallResult,
    ThreadsReply,
    decode_reply,
    encode_error,
    encode_ok,
)
from memengine.engine.wire.requests import REQUESTS
from memengine.events import InvalidToken


async def _noop(*_: Any) -> None:
    return None


def _handlers() -> RpcHandlers:
    service = SimpleNamespace(context=_noop, history=_noop, threads=_noop, recall=_noop, scratchpad=_noop,
                              published=_noop, dedup_key=_noop,
                              memory=SimpleNamespace(memories=_noop, audit=_noop, summary=_noop, episodes=_noop,
                                                     profile=_noop))
    return RpcHandlers(service, SimpleNamespace(rpc_workers=1, rpc_rate=0.0, rpc_burst=0.0))  # type: ignore[arg-type]


def _request_type(handler: Any) -> Any:
    """The request type a handler built by ``RpcHandlers._wrap`` decodes with (its msgspec decoder's type)."""
    cells = dict(zip(handler.__code__.co_freevars, (c.cell_contents for c in handler.__closure__), strict=True))
    return cells["decoder"].type


def test_every_rpc_method_has_a_request_and_a_reply_type_in_wire() -> None:
    methods = _handlers().methods()
    assert set(methods) == set(REQUESTS) == set(REPLIES)
    for name, handler in methods.items():
        assert _request_type(handler) is REQUESTS[name], name
        assert issubclass(REPLIES[name], msgspec.Struct), name
        assert REQUESTS[name].__module__ == "memengine.engine.wire.requests"
        assert REPLIES[name].__module__ == "memengine.engine.wire.replies"


def _context() -> ContextResult:
    msg = MessageOut(tier=3, seq=7, event_id="e", role="user", user_id=None, session_id=None,
                     occurred_at="2026-01-01T00:00:00+00:00", tokens=5, condensed=False,
                     content=msgspec.Raw(b'[{"type":"text","text":"hi"}]'))
    return ContextResult(tenant="t", thread="th", mode="full", budget=Budget(
        window=100, margin=10, reserve=12, system=0, total=78, tier1=7, tier2=27, tier3=42),
        tokens={"tier1": 0, "tier2": 0, "tier3": 5, "total": 5}, tokenizer="x", messages=[msg], event_ids=["e"],
        dropped=0, applied_seq=7, stale=False, waited_ms=0.0)


def test_reply_round_trip_decodes_spliced_content_as_blocks() -> None:
    data = encode_ok(_context())
    ctx = decode_reply(data, ContextResult)
    assert isinstance(ctx, ContextResult) and ctx.messages[0].content == [{"type": "text", "text": "hi"}]
    # the client's re-encoding is the server's bytes (the CLI's --json output is unchanged)
    assert msgspec.json.encode(ctx) == msgspec.json.encode(msgspec.json.decode(data)["result"])
    assert decode_reply(data) == msgspec.json.decode(data)["result"]  # untyped: plain JSON values


def test_replies_ignore_unknown_fields_and_reject_other_shapes() -> None:
    body = {"tenant": "t", "threads": [{"thread": "a", "label": None, "last_active_at": "x", "message_count": 1,
                                        "sessions_ended": 0, "last_seq": 3, "added_later": True}], "new": 1}
    reply = decode_reply(encode_ok(body), ThreadsReply)
    assert reply.threads[0].last_seq == 3
    with pytest.raises(RpcError) as info:
        decode_reply(encode_ok({"tenant": "t"}), ThreadsReply)
    assert info.value.code == "internal"
    with pytest.raises(RpcError) as info:
        decode_reply(b"not json", ThreadsReply)
    assert info.value.code == "internal"
    hit = RecallHit(seq=1, event_id="e", thread="a", user_id=None, occurred_at="x", text="t", score=1.0,
                    source_event_ids=["e"])
    res = RecallResult(tenant="t", query="q", mode="fulltext", embedder=None, hits=[hit], applied_seq=1, took_ms=1.0)
    assert decode_reply(encode_ok(res), RecallResult) == res


def test_error_replies_raise_the_family_of_their_code() -> None:
    with pytest.raises(NotFound) as info:
        decode_reply(encode_error("unknown_thread", "no thread 'x'"), ContextResult)
    assert isinstance(info.value, RpcError) and info.value.code == "unknown_thread"
    assert info.value.message == "no thread 'x'"
    assert isinstance(RpcError("rate_limited", ""), RateLimited) and isinstance(RpcError("rate_limited", ""), Busy)
    assert isinstance(RpcError("unavailable", ""), Unavailable)
    assert isinstance(RpcError("invalid_event", ""), InvalidInput)
    assert type(RpcError("internal", "bug")) is RpcError
    families = {"invalid_request", "invalid_token", "payload_too_large", "unknown_thread", "unknown_user",
                "unknown_memory", "not_found", "forbidden", "rate_limited", "busy", "invalid_event", "unavailable"}
    assert set(typing.get_args(ErrorCode)) == families | {"internal"}


def test_one_mapping_from_exception_to_wire_code() -> None:
    assert rpc_error(RpcError("unknown_memory", "m")) == ("unknown_memory", "m")
    assert rpc_error(InvalidToken("tenant", "a.b")) == ("invalid_token", str(InvalidToken("tenant", "a.b")))
    assert rpc_error(msgspec.ValidationError("bad"))[0] == "invalid_request"
    assert rpc_error(RecursionError()) == ("invalid_request", "request nested too deeply")
    assert rpc_error(OSError("down"), transient=lambda e: isinstance(e, OSError))[0] == "unavailable"
    assert rpc_error(OSError("down")) == ("internal", None)  # no transient predicate: a bug, never its text
    assert rpc_error(ValueError("secret sql")) == ("internal", None)

    class Gone(NotFound):
        pass

    assert rpc_error(Gone("no such projection")) == ("not_found", "no such projection")


def test_engine_exceptions_belong_to_a_family() -> None:
    for exc, family, builtin in ((SettingsError, InvalidInput, ValueError), (RebuildBusy, Busy, RuntimeError),
                                 (ForgetBusy, Busy, RuntimeError), (NothingToForget, NotFound, LookupError),
                                 (UnknownProjection, NotFound, ValueError),
                                 (DerivationUnavailable, Unavailable, RuntimeError),
                                 (EmbeddedServerError, Unavailable, RuntimeError)):
        assert issubclass(exc, family) and issubclass(exc, MemengineError), exc
        assert issubclass(exc, builtin), exc  # existing `except ValueError` etc. still catch them


@pytest.mark.parametrize("method", sorted(REQUESTS))
def test_every_request_type_takes_the_bound_user(method: str) -> None:
    """A bound client (``MemoryClient(user=...)``, MCP ``--user``) adds ``bound_user`` to every request it sends
    (issue #26 item 4); a request type that forbids the field refuses every call of a bound client (``dedup_key`` did,
    failing every bound write)."""
    fields = {f.name for f in msgspec.structs.fields(REQUESTS[method])}
    assert "bound_user" in fields, f"{method}: a bound client's request would be refused as an unknown field"
