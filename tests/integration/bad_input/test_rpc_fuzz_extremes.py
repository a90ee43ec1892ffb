"""RPC fuzzing by class (issue #17 "What to build"), on the real servers: nesting depth, extreme numbers, extreme
and malformed dates, NUL and control characters, on every method and on the plain and tenant-scoped subjects.

Each request must get a reply within seconds (defect 7: a deep request got none), the reply must be a typed
envelope whose error code is never ``internal`` (defect 9: caller mistakes came back as ``internal`` with the raw
exception text), and the handler keeps answering. ``tests/integration/bad_input/test_fuzz.py`` covers malformed shapes
(wrong types, unknown fields, bad UTF-8); this file covers the value classes.
"""

from __future__ import annotations

import json
import typing
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read.rpc import RpcHandlers
from memengine.engine.wire.errors import ErrorCode

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TYPED = set(typing.get_args(ErrorCode)) - {"internal", "unavailable"}
METHODS = ["audit", "context", "dedup_key", "episodes", "history", "memories", "profile", "published", "recall",
           "scratchpad", "summary", "threads"]

INT_FIELDS = ["from_seq", "offset", "after_seq", "limit", "window", "system_tokens", "k"]
FLOAT_FIELDS = ["wait"]
DATE_FIELDS = ["since", "until", "as_of"]
TEXT_FIELDS = ["query", "user", "memory_id", "type", "text", "kind", "op", "thread", "tenant"]
LIST_FIELDS = ["tags", "types", "status", "sources"]

EXTREME_INTS = st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1,
                                2**64, 10**30, -(10**30)]) | st.integers(min_value=-(2**70), max_value=2**70)
#: JSON number texts, including ones no float holds (decoded to inf by some parsers)
NUMBER_TEXTS = st.sampled_from(["1e400", "-1e400", "1e-400", "1.7976931348623157e308", "5e-324", "0.1e1", "-0",
                                "1" * 400, "0." + "0" * 300 + "1"])
ZONES = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
DATES = (st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES)
         .map(lambda d: d.isoformat())
         | st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59+14:00",
                            "1899-12-31T23:59:59Z", "1900-01-01T00:00:00Z", "2200-12-31T23:59:59Z",
                            "2201-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "2026-02-30T00:00:00Z",
                            "2026-01-01T24:00:00Z", "2026-01-01T00:00:00+25:00", "2026-01-01", "-0001-01-01T00:00:00Z",
                            "2026-01-01T00:00:00.9999999999Z", "2026-01-01T00:00:60Z"]))
CONTROL = st.characters(min_codepoint=0, max_codepoint=0x1F) | st.sampled_from(["\x7f", "\u2028", "\ufeff",
                                                                               "\ud800", "\udfff"])
TEXTS = (st.text(alphabet=CONTROL | st.characters(), max_size=40)
         | st.sampled_from(["\x00", "a\x00b", "A\n", "acme\n", "t\r\n", "\t", " ", "\x00" * 100, "%", "_", "\\"]))


def nested(depth: int, kind: str) -> str:
    """``depth`` levels of arrays or objects around a 1, as JSON text."""
    if kind == "[":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A request body: a valid skeleton (tenant acme, thread t) with some fields replaced by extreme values, or a
    deeply nested document at the top or inside a field (known or not)."""
    shape = draw(st.sampled_from(["fields", "fields", "fields", "nested_top", "nested_field"]))
    if shape != "fields":
        kind = draw(st.sampled_from(["[", "{"]))
        depth = draw(st.integers(min_value=1, max_value=9_000) | st.sampled_from([127, 128, 129, 255, 256, 1024]))
        doc = nested(depth, kind)
        if shape == "nested_top":
            return doc.encode()
        field = draw(st.sampled_from(INT_FIELDS + DATE_FIELDS + TEXT_FIELDS + LIST_FIELDS + ["pad"]))
        return ('{"tenant":"acme","thread":"t","query":"q","user":"u","memory_id":"m",'
                f'"{field}":{doc}}}').encode()
    parts = {"tenant": '"acme"', "thread": '"t"', "query": '"aisle seats"', "user": '"maya"', "memory_id": '"m1"'}
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        cls = draw(st.sampled_from(["int", "number", "float", "date", "text", "list"]))
        if cls == "int":
            parts[draw(st.sampled_from(INT_FIELDS))] = str(draw(EXTREME_INTS))
        elif cls == "number":
            parts[draw(st.sampled_from(INT_FIELDS + FLOAT_FIELDS))] = draw(NUMBER_TEXTS)
        elif cls == "float":
            parts[draw(st.sampled_from(FLOAT_FIELDS))] = json.dumps(draw(st.floats(allow_nan=False,
                                                                                   allow_infinity=False)))
        elif cls == "date":
            parts[draw(st.sampled_from(DATE_FIELDS))] = json.dumps(draw(DATES))
        elif cls == "text":
            parts[draw(st.sampled_from(TEXT_FIELDS))] = json.dumps(draw(TEXTS))
        else:
            parts[draw(st.sampled_from(LIST_FIELDS))] = json.dumps(draw(st.lists(TEXTS, max_size=3)))
    return ("{" + ",".join(f'"{k}":{v}' for k, v in parts.items()) + "}").encode()


@pytest.fixture
async def fuzz_engine(settings: Settings) -> AsyncIterator[Engine]:
    """The engine with a thread and a memory stored; no rate limit (the fuzzer is one tenant sending fast)."""
    async with lifespan(msgspec.structs.replace(settings, rpc_rate=0.0), roles={"projector", "query"}) as engine:
        client = engine.client("acme")
        for i in range(3):
            last = await client.record_turn("t", "user", f"I prefer aisle seats, message {i}", user_id="maya")
        await client.context("t", after_seq=last.seq)
        assert sorted(RpcHandlers(engine.service, engine.settings).methods()) == METHODS
        yield engine


@given(data=st.data())
@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow, HealthCheck.data_too_large])
async def test_extreme_values_get_typed_replies(fuzz_engine: Engine, data: st.DataObject) -> None:
    engine = fuzz_engine
    method = data.draw(st.sampled_from(METHODS), label="method")
    body = data.draw(bodies(), label="body")
    assert len(body) <= engine.settings.max_request_bytes
    scoped = data.draw(st.booleans(), label="scoped")
    subject = engine.subjects.rpc_scoped(method, "acme") if scoped else engine.subjects.rpc(method)
    reply = msgspec.json.decode((await engine.nc.request(subject, body, timeout=10)).data)
    assert isinstance(reply, dict) and isinstance(reply.get("ok"), bool), reply
    if not reply["ok"]:
        assert reply["error"]["code"] in TYPED, (method, body[:300], reply)
        assert reply["error"]["message"]
    alive = msgspec.json.decode((await engine.nc.request(engine.subjects.rpc("threads"), b'{"tenant":"acme"}',
                                                         timeout=10)).data)
    assert alive["ok"] is True and [t["thread"] for t in alive["result"]["threads"]] == ["t"]
