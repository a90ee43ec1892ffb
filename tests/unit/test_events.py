"""The event vocabulary: codec round trip, upcasting, validation, subjects.

Tests of the ``events`` package as a whole (its public names, issue #31 item 5: a package's tests sit beside
its folder); ``events.codec``'s own are in tests/unit/events/test_codec.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
import pytest

from memengine import events
from memengine.events import (
    EventDecodeError,
    InvalidToken,
    Subjects,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    decode,
    encode,
)

T = datetime(2026, 1, 1, tzinfo=UTC)


def turn(**kw) -> TurnRecorded:  # type: ignore[no-untyped-def]
    base = dict(event_id=uuid.uuid4(), tenant_id="acme", thread_id="t-1", occurred_at=T, role="assistant",
                content=[ThinkingBlock(thinking="hmm"), TextBlock(text="hi"),
                         ToolUseBlock(id="c1", name="bash", input={"cmd": "ls"})])
    base.update(kw)
    return TurnRecorded(**base)


def test_round_trip_every_fact_type() -> None:
    common = dict(event_id=uuid.uuid4(), tenant_id="a", thread_id="b", occurred_at=T)
    samples = [
        turn(),
        events.ThreadLabelled(**common, label="x"),
        events.SessionEnded(**common, session_id="s1"),
        events.MemoryAsserted(**common, text="I like tea", tags=["drink"]),
        events.MemoryRetracted(**common, memory_id="m1"),
        events.ThreadDeleted(**common),
        events.UserForgotten(**common, user_id="u"),
    ]
    for ev in samples:
        data = encode(ev)
        assert msgspec.json.decode(data)["type"] == type(ev).__name__
        assert decode(data) == ev


def test_wire_shape_is_the_documented_contract() -> None:
    obj = msgspec.json.decode(encode(turn()))
    assert obj["type"] == "TurnRecorded" and obj["v"] == 2
    assert [b["type"] for b in obj["content"]] == ["thinking", "text", "tool_use"]
    assert obj["occurred_at"] == "2026-01-01T00:00:00Z"


def test_v1_plain_text_is_upcast() -> None:
    raw = {"type": "TurnRecorded", "v": 1, "event_id": str(uuid.uuid4()), "tenant_id": "a", "thread_id": "b",
           "occurred_at": "2026-01-01T00:00:00Z", "role": "user", "text": "plain"}
    ev = decode(msgspec.json.encode(raw))
    assert isinstance(ev, TurnRecorded) and ev.v == 2 and ev.content == [TextBlock(text="plain")]
    raw.pop("v")  # a missing version means v1
    assert decode(msgspec.json.encode(raw)).content == [TextBlock(text="plain")]


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"thread_id": "a.b"}, "thread_id"),
        ({"thread_id": "a*"}, "thread_id"),
        ({"tenant_id": ">"}, "tenant_id"),
        ({"role": "wizard"}, "role"),
        ({"content": []}, "content"),
        ({"occurred_at": "2026-01-01T00:00:00"}, "occurred_at"),  # no zone
        ({"v": 99}, "newer"),
        ({"type": "Nope"}, "unknown event type"),
        ({"content": [{"type": "video", "url": "x"}]}, "content"),
    ],
)
def test_invalid_events_are_rejected_with_a_reason(patch: dict, needle: str) -> None:
    obj = msgspec.json.decode(encode(turn()))
    obj.update(patch)
    with pytest.raises(EventDecodeError) as info:
        decode(msgspec.json.encode(obj))
    assert needle in str(info.value)


@pytest.mark.parametrize("data", [b"", b"[]", b"null", b"\xff\xfe", b'{"type": 5}', b"{" * 10])
def test_garbage_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(EventDecodeError):
        decode(data)


def test_subjects_validate_tokens() -> None:
    s = Subjects("mem")
    assert s.fact("acme", "t-1", "TurnRecorded") == "mem.fact.acme.t-1.TurnRecorded"
    assert s.parse_fact("mem.fact.acme.t-1.TurnRecorded") == ("acme", "t-1", "TurnRecorded")
    for bad in ["", "a.b", "*", ">", "a b", "x" * 129, "é"]:
        with pytest.raises(InvalidToken):
            s.fact(bad, "t", "TurnRecorded")
        with pytest.raises(InvalidToken):
            s.context("t", bad)
    with pytest.raises(InvalidToken):
        Subjects("a.b")
    with pytest.raises(ValueError):
        s.parse_fact("mem.drv.a.b.C")


def test_ids() -> None:
    a, b = events.new_event_id(), events.new_event_id()
    assert a.version == 7 and a != b and a.bytes[:6] <= b.bytes[:6]
    assert events.stable_event_id("x", "y") == events.stable_event_id("x", "y")
    assert events.stable_event_id("x", "y") != events.stable_event_id("x", "z")


def test_events_package_imports_nothing_of_ours() -> None:
    import pathlib
    import re

    root = pathlib.Path(events.__file__).parent
    for path in root.glob("*.py"):
        for line in path.read_text().splitlines():
            assert not re.match(r"\s*(from|import)\s+(engine|projections)\b", line), (path, line)


def test_tool_result_defaults() -> None:
    b = ToolResultBlock(tool_use_id="c1")
    assert b.content == "" and b.is_error is False
