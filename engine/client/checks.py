"""Checks the client applies before it publishes, so a bad event is refused at once instead of dead-lettered later.

The limits are the engine's (issue #6 §4): the stream's ``max_msg_size`` (``events.streams``, 1 MiB) and what the
projector's decoder accepts (``events.model.MAX_BLOCKS`` blocks per turn, ``MAX_TEXT`` characters per text, valid
ids). Needs only ``memengine.events``.
"""

from __future__ import annotations

from memengine.engine.wire.errors import RpcError
from memengine.events import Event, EventDecodeError, decode, encode


def check_event(event: Event, *, max_bytes: int = 1024 * 1024) -> bytes:
    """Encode ``event`` and check it against the limits the engine enforces, before it is published.

    Returns the bytes. Raises ``RpcError("payload_too_large")`` over ``max_bytes`` (the stream's ``max_msg_size``,
    ``events.streams``) and ``RpcError("invalid_event")`` for anything the projector would dead-letter (more than
    ``MAX_BLOCKS`` blocks, a text over ``MAX_TEXT``, a bad id, a string with U+0000 or a lone surrogate that no
    projection can store: ``events.codec``), with the codec's reason. Both are
    ``InvalidInput`` (``engine.wire.errors``).
    """
    try:
        data = encode(event)  # EventEncodeError (an EventDecodeError): U+0000, a lone surrogate (issue #26 item 3)
    except EventDecodeError as exc:
        raise RpcError("invalid_event", exc.reason) from None
    if len(data) > max_bytes:
        raise RpcError("payload_too_large", f"event of {len(data)} bytes exceeds {max_bytes}")
    try:
        decode(data)
    except EventDecodeError as exc:
        raise RpcError("invalid_event", exc.reason) from None
    return data
