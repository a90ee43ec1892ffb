"""Event ids: UUIDv7 for live events (time-ordered, RFC 9562 §5.7), UUIDv5 for imported ones (RFC 9562 §5.5) so
that importing the same source twice yields the same ids and the server's dedup drops the repeat."""

from __future__ import annotations

import uuid

from uuid_utils.compat import uuid7

#: Namespace of memengine's name-based ids (a fixed random UUID).
NAMESPACE = uuid.UUID("5b0f4e4e-8f0e-4c3e-9a53-6d656d656e67")


def new_event_id() -> uuid.UUID:
    """A fresh UUIDv7."""
    return uuid7()


def stable_event_id(*parts: str) -> uuid.UUID:
    """A UUIDv5 of ``parts`` joined by ``/``: the same parts always give the same id."""
    return uuid.uuid5(NAMESPACE, "/".join(parts))
