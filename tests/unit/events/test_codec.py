"""``events.codec``: the decode-and-verify step is total and bounded (issue #17 defects 1, 2, 3, 10,
12), property-tested:

- nesting depth: any depth of arrays/objects anywhere in an event gives an event (depth <= ``MAX_DEPTH``) or
  ``EventDecodeError``, never ``RecursionError``; ``nesting_within`` agrees with a reference depth on any JSON;
- extreme dates: ``occurred_at`` anywhere in years 1-9999 with any offset is accepted exactly when its year is in
  1900-2200, and then the enricher's date arithmetic (TTL, idle episodes, UTC) cannot overflow;
- extreme numbers, NUL and control characters: decode stays total;
- subject/body disagreement: ``decode_fact`` accepts exactly the body's own five-token subject (plus the server's
  partition token on a partitioned stream) and raises ``SubjectMismatch`` otherwise;
- fuzzed bytes and event-shaped JSON (issue #6 §5): any bytes give a current-version event or ``EventDecodeError``,
  never another exception, and a decoded event survives a re-encode unchanged (nothing half-parsed gets through).

The relative dates of the offline deriver moved to tests/unit/engine/derive/offline/test_text.py (issue #31 item 5).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memengine.events import EventDecodeError, SubjectMismatch, Subjects, decode, decode_derived, decode_fact, encode
from memengine.events.codec import MAX_DEPTH, MAX_FREE_NODES, MAX_YEAR, MIN_YEAR, nesting_within
from memengine.events.model import CURRENT_VERSION

SUBJECTS = Subjects("mem")
TOKENS = st.sampled_from(["acme", "globex", "A", "B", "t", "_", "t-1", "x" * 128])


def _turn(**over: object) -> dict:  # type: ignore[type-arg]
    ev = {"type": "TurnRecorded", "v": 2, "event_id": str(uuid.uuid4()), "tenant_id": "acme", "thread_id": "t",
          "occurred_at": "2026-03-02T09:15:05Z", "role": "user", "content": [{"type": "text", "text": "hi"}]}
    ev.update(over)
    return ev


def _decode_total(data: bytes) -> object | None:
    """``decode(data)``: the event, or ``None`` for ``EventDecodeError``; any other exception fails the test."""
    try:
        return decode(data)
    except EventDecodeError as exc:
        assert exc.reason
        return None


# -- nesting depth ------------------------------------------------------------------------------------------------

SHAPES = st.lists(st.sampled_from("[{"), min_size=0, max_size=3 * MAX_DEPTH)


def _nest(shape: list[str], leaf: bytes = b"0") -> bytes:
    out = leaf
    for kind in reversed(shape):
        out = b"[" + out + b"]" if kind == "[" else b'{"k":' + out + b"}"
    return out


#: where a nest is placed, and the depth of that place (the envelope object is 1)
PLACES = {"metadata": 2, "tool_input": 4, "unknown_field": 1, "content": 2}


@given(shape=SHAPES, place=st.sampled_from(sorted(PLACES)))
@example(shape=["{"] * (MAX_DEPTH - 2), place="metadata")  # exactly MAX_DEPTH: accepted
@example(shape=["["] * (MAX_DEPTH - 1), place="metadata")  # one more: rejected
@example(shape=["{"] * (MAX_DEPTH - 4), place="tool_input")
@example(shape=["["] * (MAX_DEPTH - 3), place="tool_input")
@settings(max_examples=300, deadline=None)
def test_any_nesting_decodes_or_is_rejected_by_depth(shape: list[str], place: str) -> None:
    nest = _nest(shape)
    if place == "metadata":
        body = json.dumps(_turn(metadata={"x": "@"})).encode().replace(b'{"x": "@"}', b'{"x":' + nest + b"}")
    elif place == "tool_input":
        body = json.dumps(_turn(role="assistant", content=[{"type": "tool_use", "id": "1", "name": "f",
                                                            "input": {"x": "@"}}])).encode()
        body = body.replace(b'{"x": "@"}', b'{"x":' + nest + b"}")
    elif place == "unknown_field":
        body = json.dumps(_turn(extra="@")).encode().replace(b'"@"', nest)
    else:  # inside content: the block list itself nests (always invalid beyond one level, but never a crash)
        body = json.dumps(_turn(content="@")).encode().replace(b'"@"', b"[" + nest + b"]")
    depth = PLACES[place] + len(shape)
    ev = _decode_total(body)
    assert nesting_within(body) == (depth <= MAX_DEPTH)
    if depth > MAX_DEPTH:
        assert ev is None
    elif place != "content":
        assert ev is not None and decode(encode(ev)) == ev


@given(depth=st.integers(min_value=MAX_DEPTH, max_value=20_000), cut=st.booleans())
@settings(max_examples=60, deadline=None)
def test_deep_or_truncated_nests_never_raise_anything_else(depth: int, cut: bool) -> None:
    body = json.dumps(_turn(metadata={"x": "@"})).encode().replace(b'"@"', _nest(["["] * depth))
    if cut:
        body = body[: len(body) // 2]
    assert _decode_total(body) is None
    with pytest.raises(EventDecodeError):
        decode_derived(body)


def _depth(v: object) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


_TRICKY = '[]{}"\\ab,:\n\t/\x00é\u2028'  # brackets, quotes and every kind of escape json.dumps writes


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:  # type: ignore[type-arg]
    return st.lists(children, max_size=3) | st.dictionaries(st.text(alphabet=_TRICKY, max_size=4), children,
                                                            max_size=3)


JSON = st.recursive(st.none() | st.integers() | st.text(alphabet=_TRICKY, max_size=6), _containers, max_leaves=200)


@given(JSON, st.integers(min_value=0, max_value=12), st.booleans())
@example(["\n", [["x"]], "\\"], 2, True)  # an escape before a dropped letter must not eat the closing quote
@settings(max_examples=500, deadline=None)
def test_nesting_within_agrees_with_the_parsed_depth(value: object, limit: int, ascii_only: bool) -> None:
    """Brackets inside strings (escaped quotes and backslashes included) do not count."""
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert nesting_within(data, limit) == (_depth(value) <= limit)


@given(st.binary(max_size=400) | st.text(alphabet='[]{}"\\', max_size=400).map(str.encode))
@settings(max_examples=300, deadline=None)
def test_nesting_within_is_total(data: bytes) -> None:
    assert nesting_within(data, 8) in (True, False)


def test_free_form_json_is_bounded() -> None:
    many = {str(i): i for i in range(MAX_FREE_NODES)}
    assert _decode_total(json.dumps(_turn(metadata=many)).encode()) is None
    assert _decode_total(json.dumps(_turn(metadata=dict(list(many.items())[:1000]))).encode()) is not None
    assert _decode_total(json.dumps(_turn(metadata={"s": "x" * (256 * 1024 + 1)})).encode()) is None


FREE_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-9, 9) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=2), inner, max_size=40),
    max_leaves=6000)


@settings(max_examples=60, deadline=None)
@given(FREE_JSON, st.integers(min_value=0, max_value=3))
@example({str(i): 0 for i in range(MAX_FREE_NODES // 2)}, 0)  # 10,001 nodes in ~98k bytes: rejected
@example(list(range(MAX_FREE_NODES - 1)), 0)  # 10,000 nodes: accepted
@example({"k": list(range(4990))}, 1)  # at the 10,000-byte edge of the no-walk shortcut
def test_free_form_verdict_is_the_full_walks(meta: object, tools: int) -> None:
    """Issue #13 item 1: ``decode`` skips the free-form walk for texts of at most ``MAX_FREE_NODES`` bytes; its
    verdict must be the full walk's on every input (compact encoding, so that values are as dense as JSON allows)."""
    from memengine.events.codec import _check_fact, _fact_decoder, _refuse_nul

    content = [{"type": "tool_use", "id": str(i), "name": "n", "input": {"a": meta}} for i in range(tools)]
    data = json.dumps(_turn(metadata={"m": meta}, content=content or [{"type": "text", "text": "x"}]),
                      separators=(",", ":")).encode()
    try:
        _check_fact(_fact_decoder.decode(data))  # no size: always walks
        _refuse_nul(data, "TurnRecorded", EventDecodeError)  # and a NUL key or value is refused either way
        walked = True
    except EventDecodeError:
        walked = False
    assert (_decode_total(data) is not None) == walked


# -- extreme dates ------------------------------------------------------------------------------------------------

OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)), OFFSETS)
@settings(max_examples=400, deadline=None)
def test_occurred_at_is_accepted_only_in_sane_years(when: datetime, tz: timezone) -> None:
    stamp = when.replace(tzinfo=tz).isoformat()
    ev = _decode_total(json.dumps(_turn(occurred_at=stamp)).encode())
    assert (ev is not None) == (MIN_YEAR <= when.year <= MAX_YEAR), stamp
    if ev is not None:  # what the enricher and the folds do with it cannot overflow
        ev.occurred_at.astimezone(UTC)
        ev.occurred_at + timedelta(days=30) + timedelta(seconds=10**7)
        ev.occurred_at - timedelta(days=365 * 100)


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00Z", "1899-12-31T23:59:59Z",
                                   "2201-01-01T00:00:00+14:00"])
def test_issue_timestamps_are_rejected(stamp: str) -> None:
    with pytest.raises(EventDecodeError, match="outside the years 1900-2200"):
        decode(json.dumps(_turn(occurred_at=stamp)).encode())


# -- extreme numbers, NUL and control characters ------------------------------------------------------------------

NUMBERS = (st.integers(min_value=-(10**4200), max_value=10**4200) | st.floats(allow_nan=False)
           | st.sampled_from(["1e400", "-1e400", "1e-400", "-0", "0e0", "1" * 5000, "-" + "9" * 4400, "1.5e308"]))
CONTROL = st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Co", "Zl", "Zp"]) | st.just("\x00"),
                  min_size=1, max_size=20)


@given(NUMBERS, st.sampled_from(["metadata", "importance", "usage", "window", "v"]))
@settings(max_examples=300, deadline=None)
def test_extreme_numbers_decode_or_are_rejected(number: object, where: str) -> None:
    text = number if isinstance(number, str) else json.dumps(number)
    if where == "metadata":
        body = json.dumps(_turn(metadata={"n": "@"})).encode()
    elif where == "importance":
        body = json.dumps({"type": "MemoryAsserted", "v": 1, "event_id": str(uuid.uuid4()), "tenant_id": "acme",
                           "thread_id": "_", "occurred_at": "2026-01-01T00:00:00Z", "text": "x",
                           "importance": "@"}).encode()
    elif where == "usage":
        body = json.dumps(_turn(usage={"input_tokens": "@"})).encode()
    elif where == "window":
        body = json.dumps(_turn(want_context={"window": "@"})).encode()
    else:
        body = json.dumps(_turn(v="@")).encode()
    ev = _decode_total(body.replace(b'"@"', text.encode()))
    if ev is not None:
        assert decode(encode(ev)) == ev


@given(CONTROL, st.sampled_from(["text", "user_id", "metadata", "tenant_id", "key"]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_nul_and_control_characters_decode_or_are_rejected(chars: str, where: str, raw: bool) -> None:
    value = f"a{chars}b"
    over = {"text": {"content": [{"type": "text", "text": value}]}, "user_id": {"user_id": value},
            "metadata": {"metadata": {"m": value}}, "tenant_id": {"tenant_id": value},
            "key": {"metadata": {value: 1}}}[where]
    body = json.dumps(_turn(**over), ensure_ascii=not raw).encode()
    ev = _decode_total(body)
    if where == "tenant_id" or "\x00" in chars:
        assert ev is None  # never a subject token; U+0000 no projection can store (issue #26 item 3)
    else:  # every other control or format character is content, kept as it is
        assert ev is not None and decode(encode(ev)) == ev


# -- subject / body agreement -------------------------------------------------------------------------------------


@given(sub_tenant=TOKENS, body_tenant=TOKENS, sub_thread=TOKENS, body_thread=TOKENS,
       sub_type=st.sampled_from(["TurnRecorded", "MemoryAsserted", "ThreadLabelled"]),
       extra=st.sampled_from([None, "0", "7", "07", "x", "", "1.2"]), partitioned=st.booleans(),
       root=st.sampled_from(["mem", "other"]))
@settings(max_examples=400, deadline=None)
def test_decode_fact_accepts_exactly_the_bodys_own_subject(sub_tenant: str, body_tenant: str, sub_thread: str,
                                                           body_thread: str, sub_type: str, extra: str | None,
                                                           partitioned: bool, root: str) -> None:
    data = json.dumps(_turn(tenant_id=body_tenant, thread_id=body_thread)).encode()
    subject = f"{root}.fact.{sub_tenant}.{sub_thread}.{sub_type}" + ("" if extra is None else f".{extra}")
    own = (root == "mem" and (sub_tenant, sub_thread, sub_type) == (body_tenant, body_thread, "TurnRecorded")
           and (extra is None or (partitioned and extra in ("0", "7"))))
    try:
        ev = decode_fact(subject, data, SUBJECTS, partitioned=partitioned)
    except SubjectMismatch as exc:
        assert not own and exc.stage == "subject" and exc.reason and exc.event is not None
        return
    assert own and (ev.tenant_id, ev.thread_id) == (body_tenant, body_thread)


def test_decode_fact_reports_decode_errors_first() -> None:
    with pytest.raises(EventDecodeError) as info:
        decode_fact("mem.fact.B.t.TurnRecorded.7.8", b"{not json", SUBJECTS)
    assert info.value.stage == "decode" and not isinstance(info.value, SubjectMismatch)


@pytest.mark.parametrize("subject", ["mem.fact.T.t.TurnRecorded.7", "mem.fact.T.t.TurnRecorded.", "mem.fact.T.t",
                                     "mem.fact.T.t.TurnRecorded.7.8", "mem.fact.T\n.t.TurnRecorded",
                                     "mem.fact.*.t.TurnRecorded", "mem.drv.T.t.TurnRecorded"])
def test_parse_fact_refuses_shapes_outside_the_contract(subject: str) -> None:
    with pytest.raises(ValueError):
        SUBJECTS.parse_fact(subject)


def test_parse_fact_takes_the_partition_token_only_when_partitioned() -> None:
    assert SUBJECTS.parse_fact("mem.fact.T.t.TurnRecorded.7", partitioned=True) == ("T", "t", "TurnRecorded")
    assert SUBJECTS.parse_fact("mem.fact.T.t.TurnRecorded", partitioned=True) == ("T", "t", "TurnRecorded")
    for bad in ("mem.fact.T.t.TurnRecorded.07", "mem.fact.T.t.TurnRecorded.x", "mem.fact.T.t.TurnRecorded.-1"):
        with pytest.raises(ValueError):
            SUBJECTS.parse_fact(bad, partitioned=True)
    assert SUBJECTS.publish_facts == "mem.fact.*.*.*"


# -- fuzzed bytes and event-shaped JSON (issue #6 §5; was tests/unit/test_codec_fuzz.py) ---------------------------

WILD = st.sampled_from(["*", ">", "a.b", "a.*", "acme.>", "", " ", "\x00", "ünï", "a" * 129, "acme", "t",
                        "2026-01-01T00:00:00Z", "01890a5d-ac96-774b-bcce-b302099a8057"])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40) | WILD)
FUZZ_JSON = st.recursive(SCALARS,
                         lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                         max_leaves=12)
FIELDS = ["type", "v", "event_id", "tenant_id", "thread_id", "occurred_at", "role", "content", "text", "user_id",
          "session_id", "metadata", "label", "memory_id", "want_context", "usage", "model"]
TYPES = st.sampled_from([*CURRENT_VERSION, "NoSuchEvent", "", "turnrecorded"]) | st.integers() | st.none()
OBJECTS = st.fixed_dictionaries({"type": TYPES}, optional={
    f: (FUZZ_JSON if f != "v" else st.integers(min_value=-3, max_value=5) | FUZZ_JSON) for f in FIELDS if f != "type"})


def _decode_and_reencode(data: bytes) -> None:
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
    _decode_and_reencode(data)
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
    _decode_and_reencode(data)
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


def test_retry_digest_ignores_only_the_time_stamp() -> None:
    """``retry_digest``: a keyed retry re-stamped by a publisher that lost the first ``occurred_at`` is the same
    write; another content, user or id is not (engine/runtime/dedupe.py ``claim`` dead-letters those)."""
    import msgspec

    from memengine.events import TextBlock, TurnRecorded, content_digest, new_event_id, retry_digest

    at = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    first = TurnRecorded(event_id=new_event_id(), tenant_id="acme", thread_id="t", occurred_at=at, role="user",
                         user_id="maya", content=[TextBlock(text="Always book aisle seats")])
    later = msgspec.structs.replace(first, occurred_at=at + timedelta(hours=3))
    assert content_digest(first) != content_digest(later)
    assert retry_digest(first) == retry_digest(later)
    for other in (msgspec.structs.replace(first, content=[TextBlock(text="Always book window seats")]),
                  msgspec.structs.replace(first, user_id="bo"), msgspec.structs.replace(first, role="assistant"),
                  msgspec.structs.replace(first, event_id=new_event_id())):
        assert retry_digest(other) != retry_digest(first)
