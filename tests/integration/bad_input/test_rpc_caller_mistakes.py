"""Issue #17 defects 7 and 9: every request gets a reply, and a caller's mistake is a typed ``invalid_request``
(real NATS and PostgreSQL).

- 7: 40 KB of ``[[[...`` (under the 64 KB limit) got no reply on any of the 10 methods and nothing was logged:
  FastStream's decoder raised ``RecursionError`` before the handler ran.
- 9: ``from_seq`` / ``offset`` of 2^63, a NUL in a recall query or profile user, recall ``as_of`` at year 9999 came
  back as ``internal`` with the raw exception text; ``check_token`` accepted ``"A\\n"``. And an ``internal`` error
  (a real bug) must not show the exception's text to the caller.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.read.rpc import RpcHandlers
from memengine.events import EventDecodeError, InvalidToken, check_token, decode, encode
from memengine.events.model import TurnRecorded

pytestmark = pytest.mark.integration


def _methods(engine: Engine) -> list[str]:
    return sorted(RpcHandlers(engine.service, engine.settings).methods())


async def _ask(engine: Engine, subject: str, body: bytes) -> dict:  # type: ignore[type-arg]
    return msgspec.json.decode((await engine.nc.request(subject, body, timeout=5)).data)


NESTED = [
    b"[" * 20_000 + b"]" * 20_000,  # the request: 40 KB, under the 64 KB limit
    b"[" * 40_000,  # unterminated
    b'{"tenant":"acme","thread":"t","query":' + b"[" * 30_000 + b"]" * 30_000 + b"}",
    b'{"tenant":' + b'{"a":' * 9_000 + b"1" + b"}" * 9_000 + b"}",
    b'{"pad":' + b"[" * 30_000 + b"]" * 30_000 + b',"tenant":"acme"}',  # an unknown field, skipped by the guard
]


async def test_deeply_nested_requests_get_invalid_request_on_every_method(engine: Engine) -> None:
    assert len(_methods(engine)) == 12  # dedup_key and published: issue #26 item 2
    for body in NESTED:
        assert len(body) <= engine.settings.max_request_bytes
        for method in _methods(engine):
            for subject in (engine.subjects.rpc(method), engine.subjects.rpc_scoped(method, "acme")):
                reply = await _ask(engine, subject, body)
                assert reply["ok"] is False and reply["error"]["code"] == "invalid_request", (subject, reply)
    # and the handler still answers
    assert (await engine.client("acme").threads()).threads == []


async def test_extreme_numbers_nul_and_dates_are_invalid_request(engine: Engine) -> None:
    client = engine.client("acme")
    ack = await client.record_turn("t", "user", "I prefer aisle seats", user_id="maya")
    await client.context("t", after_seq=ack.seq)
    big, huge = 2**63, 2**64 + 5
    cases = [
        ("history", {"thread": "t", "from_seq": big}),
        ("history", {"thread": "t", "after_seq": huge}),
        ("threads", {"offset": big}),
        ("context", {"thread": "t", "after_seq": big}),
        ("context", {"thread": "t", "system_tokens": big}),
        ("context", {"thread": "t", "query": "seats\x00"}),
        ("recall", {"query": "aisle\x00seats"}),
        ("recall", {"query": "aisle", "user": "\x00"}),
        ("recall", {"query": "aisle", "after_seq": big}),
        ("recall", {"query": "aisle", "as_of": "9999-12-31T23:59:59-14:00"}),
        ("recall", {"query": "aisle", "since": "0001-01-01T00:00:00Z"}),
        ("recall", {"query": "aisle", "until": "2201-01-01T00:00:00Z"}),
        ("recall", {"query": "aisle", "sources": ["memories"], "tags": ["a\x00"]}),
        ("profile", {"user": "maya\x00"}),
        ("memories", {"user": "maya\x00"}),
        ("memories", {"type": "\x00"}),
        ("audit", {"memory_id": "abc\x00def"}),
    ]
    for method, body in cases:
        reply = await _ask(engine, engine.subjects.rpc(method), json.dumps({"tenant": "acme", **body}).encode())
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_request", (method, body, reply)
    # the edges that are still valid are answered
    ok = [("history", {"thread": "t", "from_seq": 2**63 - 1}), ("threads", {"offset": 2**63 - 1}),
          ("recall", {"query": "aisle", "as_of": "2200-12-31T23:59:59Z"}),
          ("recall", {"query": "aisle", "since": "1900-01-01T00:00:00Z"}),
          ("context", {"thread": "t", "system_tokens": 2**63 - 1})]
    for method, body in ok:
        reply = await _ask(engine, engine.subjects.rpc(method), json.dumps({"tenant": "acme", **body}).encode())
        assert reply["ok"] is True, (method, body, reply)


async def test_tokens_with_a_final_newline_are_refused(engine: Engine) -> None:
    for value in ("A\n", "acme\n", "a" * 128 + "\n"):
        with pytest.raises(InvalidToken):
            check_token("tenant", value)
        reply = await _ask(engine, engine.subjects.rpc("threads"), json.dumps({"tenant": value}).encode())
        assert reply["error"]["code"] == "invalid_token", reply
        reply = await _ask(engine, engine.subjects.rpc("context"),
                           json.dumps({"tenant": "acme", "thread": value}).encode())
        assert reply["error"]["code"] == "invalid_token", reply
    # the event schema's Token pattern too (msgspec applies patterns with re.search)
    good = TurnRecorded(event_id="01890a5d-ac96-774b-bcce-b302099a8057", tenant_id="acme", thread_id="t",
                        occurred_at="2026-03-02T09:15:05Z", role="user", content=[{"type": "text", "text": "hi"}])
    raw = json.loads(encode(good))
    decode(json.dumps(raw).encode())
    for field in ("tenant_id", "thread_id"):
        with pytest.raises(EventDecodeError):
            decode(json.dumps({**raw, field: raw[field] + "\n"}).encode())


async def test_internal_errors_do_not_leak_the_exception_text(engine: Engine) -> None:
    # a real bug on the real servers: the read model the threads query needs is gone
    await engine.pool.execute("ALTER TABLE thread_activity RENAME TO thread_activity_gone")
    try:
        reply = await _ask(engine, engine.subjects.rpc("threads"), b'{"tenant":"acme"}')
    finally:
        await engine.pool.execute("ALTER TABLE thread_activity_gone RENAME TO thread_activity")
    assert reply["ok"] is False and reply["error"]["code"] == "internal", reply
    message = reply["error"]["message"]
    assert "thread_activity" not in message and "Error" not in message and "ref " in message, message
