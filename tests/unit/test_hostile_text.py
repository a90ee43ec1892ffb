"""Hostile characters in every string of every fact type (issue #26 item 3): the contract's codec refuses exactly
what no projection can store, U+0000 and lone surrogates, with the typed ``invalid_event``, and keeps every other
character of free text as it is (tab, line feed, other controls, bidi and format characters, noncharacters).
The integration twin (tests/integration/bad_input/test_unstorable_text.py) folds the accepted ones on the real servers.

Top-level in tests/unit (cross-cutting, issue #31 item 5): every fact type through the codec, the client's
checks and the wire errors."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings

from memengine.engine.client.checks import check_event
from memengine.engine.wire.errors import InvalidInput, RpcError
from memengine.events import FACT_TYPES, Event, EventDecodeError, EventEncodeError, decode, encode
from tests.hostile_text import Slot, full_event, hostile_events, slots, unstorable


def test_every_fact_type_is_covered_with_every_field_set() -> None:
    for cls in FACT_TYPES:
        ev = full_event(cls, "acme", "t")
        assert decode(check_event(ev)) == ev, cls.__name__  # the populated base is valid
        assert any(s.free for s in slots(ev)), cls.__name__


@given(hostile_events())
@hsettings(max_examples=600, deadline=None)
def test_encoder_refuses_exactly_the_unstorable(case: tuple[Event, Slot, str]) -> None:
    event, slot, new = case
    try:
        data = check_event(event)
    except RpcError as exc:  # the typed refusal: the project's error root, the invalid_event wire code
        assert isinstance(exc, InvalidInput) and exc.code == "invalid_event", exc
        assert unstorable(new) or not slot.free, (slot, ascii(new), exc)
        if unstorable(new):
            assert "U+0000" in exc.message or "surrogate" in exc.message, exc.message
        return
    except ValueError as exc:  # a subject token with such characters: events.InvalidToken is never raised here
        raise AssertionError(f"untyped refusal {exc!r}") from exc
    assert not unstorable(new), (slot, ascii(new))
    assert decode(data) == event  # kept as it is, control characters included
    assert slot.free or "\x00" not in new


@given(hostile_events())
@hsettings(max_examples=300, deadline=None)
def test_codec_verdicts_agree_both_ways(case: tuple[Event, Slot, str]) -> None:
    """``encode`` refuses what ``decode`` would dead-letter: a fact that slips past (a raw publisher) is refused
    by ``decode`` with the same reason."""
    event, _, new = case
    if not unstorable(new):
        return
    try:
        data = encode(event)
    except EventEncodeError as exc:
        assert exc.stage == "encode"
        return
    raise AssertionError(f"encoded an unstorable string {ascii(new)}: {data[:200]!r}")


def test_a_raw_nul_escape_is_refused_by_decode_and_a_literal_is_kept() -> None:
    ev = full_event(FACT_TYPES[0], "acme", "t")
    body = encode(ev)
    nul = body.replace(b'"text":"x"', b'"text":"a\\\\\\u0000"', 1)  # an escaped backslash, then a real \u0000
    literal = body.replace(b'"text":"x"', b'"text":"a\\\\u0000"', 1)  # a backslash and the letters u0000
    assert nul != body and literal != body
    try:
        decode(nul)
        raise AssertionError("decoded a NUL")
    except EventDecodeError as exc:
        assert "U+0000" in exc.reason and exc.stage == "decode"
    assert "a\\u0000" in encode(decode(literal)).decode().replace("\\\\", "\\")
