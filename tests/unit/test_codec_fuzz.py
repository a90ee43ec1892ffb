"""The event decoders are total (issue #6 §5): any bytes give a current-version event or ``EventDecodeError``,
never another exception; and a decoded event survives a re-encode unchanged (nothing half-parsed gets through)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.events import EventDecodeError, decode, encode
from memengine.events.codec import decode_derived
from memengine.events.model import CURRENT_VERSION

WILD = st.sampled_from(["*", ">", "a.b", "a.*", "acme.>", "", " ", "\x00", "ünï", "a" * 129, "acme", "t",
                        "2026-01-01T00:00:00Z", "01890a5d-ac96-774b-bcce-b302099a8057"])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40) | WILD)
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=12)
FIELDS = ["type", "v", "event_id", "tenant_id", "thread_id", "occurred_at", "role", "content", "text", "user_id",
          "session_id", "metadata", "label", "memory_id", "want_context", "usage", "model"]
TYPES = st.sampled_from([*CURRENT_VERSION, "NoSuchEvent", "", "turnrecorded"]) | st.integers() | st.none()
OBJECTS = st.fixed_dictionaries({"type": TYPES}, optional={
    f: (JSON if f != "v" else st.integers(min_value=-3, max_value=5) | JSON) for f in FIELDS if f != "type"})


def _check(data: bytes) -> None:
    try:
        event = decode(data)
    except EventDecodeError as exc:
        assert exc.reason
        return
    assert event.v == CURRENT_VERSION[type(event).__name__]
    assert decode(encode(event)) == event


@given(st.binary(max_size=2048))
@settings(max_examples=300, deadline=None)
def test_decode_total_on_bytes(data: bytes) -> None:
    _check(data)
    try:
        decode_derived(data)
    except EventDecodeError:
        pass


@given(OBJECTS, st.sampled_from(["plain", "invalid-utf8-key", "invalid-utf8-value", "truncated"]))
@settings(max_examples=400, deadline=None)
def test_decode_total_on_event_shaped_json(obj: dict, how: str) -> None:  # type: ignore[type-arg]
    data = json.dumps(obj).encode()
    if how == "invalid-utf8-key":
        data = data.replace(b'"', b'"\xff', 1)
    elif how == "invalid-utf8-value":  # inside the first string value (msgspec raises UnicodeDecodeError there)
        data = data.replace(b': "', b': "\xff', 1)
    elif how == "truncated":
        data = data[: len(data) // 2]
    _check(data)
    try:
        decode_derived(data)
    except EventDecodeError:
        pass


@pytest.mark.parametrize("data", [b'{"type":"TurnRecorded","thread_id":"\xff"}', b'{"type":"\xfe","v":2}',
                                  b'{"type":"SummaryUpdated","summary":"\xc3"}'])
def test_invalid_utf8_inside_a_string_is_a_decode_error(data: bytes) -> None:
    """msgspec raises ``UnicodeDecodeError`` (not ``DecodeError``) there: found by the fuzzer, a poison pill
    for the projector until the codec caught it."""
    with pytest.raises(EventDecodeError):
        decode(data)
    with pytest.raises(EventDecodeError):
        decode_derived(data)
