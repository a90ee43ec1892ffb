"""What each answer was built from: the access trail (issue #30).

Every context (requested over ``rpc.context`` or pushed on ``<root>.ctx.<tenant>.<thread>``) and every recall answer
is recorded as one event on the served stream (``<PREFIX>_SERVED``, subject
``<root>.served.<tenant>.<thread>.<Type>``; a recall not bound to a thread uses the thread token ``_``). The facts
log stays the source of truth for memory; the served stream is the source of truth for access: the access read
models (``access_count`` and ``last_accessed_at`` per memory item and per turn, seed 002 §3.1) are folded from it
(projections/access.py).

Only the engine publishes here (engine/read/trail.py), after the answer left; agents never do. The shape is the
auditor's: the request (thread, user, query, window, as-of), the reply's ``applied_seq`` and every memory item and
turn placed, with its tier and rank.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Union

import msgspec

from memengine.events.model import Event, ShortText, Token
from memengine.events.subjects import Subjects

#: Items recorded per answer at most: a 10M-token window places at most a few thousand turns; beyond this the
#: record is cut (``truncated``) so that one event stays under the stream's message size.
MAX_PLACED = 4096


class Placed(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """One memory item or turn placed in an answer: ``kind`` (``memory`` | ``turn``), ``id`` (the memory id, or the
    turn's event id), ``tier`` (1-3 in a context, seed 000 §4; 0 in a recall answer) and ``rank`` (1-based position
    in the answer: the order the model reads them in a context, the score order in a recall). Encoded as a JSON array
    ``[kind, id, tier, rank]``: ~40 bytes an item."""

    kind: Literal["memory", "turn"]
    id: ShortText
    tier: Annotated[int, msgspec.Meta(ge=0, le=3)]
    rank: Annotated[int, msgspec.Meta(ge=1)]


class ContextServed(Event, frozen=True, kw_only=True):
    """A context was answered for ``thread_id``: ``pushed`` (on ``<root>.ctx``) or requested; ``query``, ``window``
    (the budget's window in tokens), ``as_of`` (``None``: the present read models; the time-travel CLI never records),
    ``applied_seq`` (the reply's), ``mode`` (full | tiered), ``items`` placed (``truncated`` past ``MAX_PLACED``).
    ``user_id`` is the thread's user the answer was built for (``None`` when unknown). ``occurred_at`` is when the
    answer was built."""

    pushed: bool = False
    query: ShortText | None = None
    window: int = 0
    as_of: Annotated[datetime, msgspec.Meta(tz=True)] | None = None
    applied_seq: int = 0
    mode: ShortText = ""
    items: Annotated[list[Placed], msgspec.Meta(max_length=MAX_PLACED)] = []
    truncated: bool = False
    v: int = 1


class RecallServed(Event, frozen=True, kw_only=True):
    """A recall was answered: the request's ``query``, ``user`` filter (in ``user_id``), ``thread`` filter (the
    subject's thread, ``_`` for a tenant-wide recall), ``as_of`` (the decay's reference time, ``None`` = now),
    ``applied_seq`` and every hit (``items``, tier 0, in score order)."""

    query: ShortText = ""
    as_of: Annotated[datetime, msgspec.Meta(tz=True)] | None = None
    applied_seq: int = 0
    items: Annotated[list[Placed], msgspec.Meta(max_length=MAX_PLACED)] = []
    truncated: bool = False
    v: int = 1


SERVED_TYPES: tuple[type[Event], ...] = (ContextServed, RecallServed)
AnyServed = Union[ContextServed, RecallServed]
SERVED_VERSION: dict[str, int] = {
    t.__name__: next(f.default for f in msgspec.structs.fields(t) if f.name == "v") for t in SERVED_TYPES
}
_decoder: msgspec.json.Decoder[AnyServed] = msgspec.json.Decoder(AnyServed)
_encoder = msgspec.json.Encoder()

#: the thread token of a recall answer that names no thread
NO_THREAD: Token = "_"


def encode_served(event: AnyServed) -> bytes:
    """Compact JSON of a served event."""
    return _encoder.encode(event)


def decode_served_msg(subject: str, data: bytes, subjects: Subjects, *, partitioned: bool = False) -> AnyServed:
    """The decode-and-verify step of the served stream (``events.decode_fact``'s twin): decode (depth bounded by
    the codec's rule), refuse a version this engine does not understand, then check that the subject
    (``<root>.served.<tenant>.<thread>.<Type>``) is the body's. Raises ``EventDecodeError`` / ``SubjectMismatch``
    and nothing else. ``partitioned`` is ignored (the served stream is never partitioned)."""
    from memengine.events.codec import EventDecodeError, nesting_within, subject_matches

    try:
        if not isinstance(data, (bytes, bytearray, memoryview)) or not nesting_within(bytes(data)):
            raise EventDecodeError("not a JSON event within the nesting bound")
        event = _decoder.decode(data)
    except EventDecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - total by contract
        raise EventDecodeError(f"invalid served event: {type(exc).__name__}: {exc}") from None
    if event.v != SERVED_VERSION[type(event).__name__]:
        raise EventDecodeError(f"{type(event).__name__} v{event.v} is not understood by this engine")
    return subject_matches(event, subject, lambda: subjects.parse_served(subject))


def placed_ids(event: AnyServed) -> set[str]:
    """Every id an answer names (memory ids and turn event ids)."""
    return {p.id for p in event.items}


__all__ = ["MAX_PLACED", "NO_THREAD", "SERVED_TYPES", "SERVED_VERSION", "AnyServed", "ContextServed", "Placed",
           "RecallServed", "decode_served_msg", "encode_served", "placed_ids"]
