"""Bytes <-> typed events, with the upcaster chain applied before the typed decode.

``decode`` is total over bytes: it returns a current-version event or raises ``EventDecodeError`` with a reason
fit for a dead-letter record. JSON is UTF-8 (RFC 8259 §8.1); anything else is rejected.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.derived import DERIVED_VERSION, AnyDerived
from events.model import CURRENT_VERSION, AnyFact, Event
from events.upcasters import upcast

_encoder = msgspec.json.Encoder()
_fact_decoder = msgspec.json.Decoder(AnyFact)
_raw_decoder = msgspec.json.Decoder(dict[str, Any])
_derived_decoder = msgspec.json.Decoder(AnyDerived)


class _Head(msgspec.Struct):
    type: str | None = None
    v: int | None = None


_head_decoder = msgspec.json.Decoder(_Head)


class EventDecodeError(ValueError):
    """Bytes that are not a valid event of a known type and version. ``reason`` is a one-line explanation."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def encode(event: Event) -> bytes:
    """Encode an event as compact JSON (every field, ``type`` and ``v`` included)."""
    return _encoder.encode(event)


def decode(data: bytes) -> AnyFact:
    """Decode a fact event, upcasting old versions first.

    Raises ``EventDecodeError`` for invalid JSON or UTF-8, a missing or unknown ``type``, an unknown version, or a
    field that fails validation (e.g. a thread id with a wildcard).
    """
    try:  # fast path: a current-version event decodes in one pass
        event = _fact_decoder.decode(data)
        if event.v == CURRENT_VERSION[type(event).__name__]:
            return event
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        pass  # msgspec raises UnicodeDecodeError, not DecodeError, for invalid UTF-8 inside a string
    try:
        head = _head_decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"not a JSON event object: {exc}") from None
    if head.type not in CURRENT_VERSION:
        raise EventDecodeError(f"unknown event type {head.type!r}")
    try:
        if head.v == CURRENT_VERSION[head.type]:
            return _fact_decoder.decode(data)
        raw = upcast(_raw_decoder.decode(data), CURRENT_VERSION)
        return msgspec.convert(raw, AnyFact)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, LookupError) as exc:  # UnicodeDecodeError too
        raise EventDecodeError(f"invalid {head.type} v{head.v}: {exc}") from None


def decode_derived(data: bytes) -> AnyDerived:
    """Decode a derived event (``events.derived``); raises ``EventDecodeError`` like ``decode``."""
    try:
        event = _derived_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        raise EventDecodeError(f"invalid derived event: {exc}") from None
    if event.v != DERIVED_VERSION[type(event).__name__]:
        raise EventDecodeError(f"{type(event).__name__} v{event.v} is not understood by this engine")
    return event
