"""Which event a write tool of the MCP server publishes, so that a retry records nothing twice (issue #26 item 7).

An agent retries a tool call after a timeout, not knowing whether the first one landed. memengine de-duplicates a
write only when it is the *same event*: same event id and the same bytes (``events.msg_id``; the server answers the
repeat ``duplicate`` with the first sequence, ``engine.client.publishing``). A write gets its identity here:

- **with an ``idempotency_key``** (the caller names the write): the event id is ``events.idempotency_event_id``,
  the HTTP API's ``Idempotency-Key`` mapping (the same key names the same write on both surfaces), and the first
  call's ``occurred_at`` is reused while this server remembers it (``KEYS`` keys), so the retry is byte-identical.
  The same key with another request is ``invalid_request`` (Stripe's rule, as over HTTP). Two different keys are two
  writes, whatever their content.
- **without a key**, only an *immediate identical retry* is recognised: a call whose arguments equal those of the
  previous write of the same kind to the same thread (``record_turn``) or user (``remember``) **in the same MCP
  session**, made within ``RETRY_WINDOW`` seconds of it, is that write again (same event id and ``occurred_at``).
  Any other write there in between ends it: a user who says "yes" twice in a conversation is recorded twice,
  because the assistant's turn is recorded between the two. What the rule cannot tell apart is the same turn written
  twice in a row with nothing between within the window; a caller that means both passes two keys.

The session is the transport's: one stdio stream, or one streamable-HTTP session id (``mcp_server._session_of``);
a stateless HTTP request has none of its own, so there only keyed retries are recognised.

Limits: the memory is this server process's. A restarted server cannot reuse the first ``occurred_at``: a keyed
retry then publishes the same id and content under another time stamp, which JetStream stores as a second message
(answered ``duplicate: false``) and the projectors skip as a repeat (``events.retry_digest``): recorded once, no
dead letter, the first time stamp kept. The HTTP gateway additionally looks the first ``occurred_at`` up in the
read model, so its retries are byte-identical.
"""

from __future__ import annotations

import hashlib
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from memengine.engine.wire.errors import InvalidInput
from memengine.events import idempotency_event_id, new_event_id

#: Seconds after a write in which an identical call to the same thread in the same session is taken as its retry.
#: Longer than an MCP client's usual request timeout (60 s), short enough that a real repeat later is not swallowed.
RETRY_WINDOW = 120.0
#: Idempotency keys remembered per server (least recently used forgotten first), as the HTTP gateway's cache.
KEYS = 10_000


@dataclass(frozen=True)
class _Write:
    fingerprint: bytes
    event_id: uuid.UUID
    occurred_at: datetime
    at: float  # time.monotonic() of the call
    keyed: bool


def fingerprint(*parts: Any) -> bytes:
    """sha256 of the canonical JSON of ``parts`` (a tool's arguments that make up the event)."""
    return hashlib.sha256(msgspec.json.encode(parts, order="sorted")).digest()


class WriteMemory:
    """The identities of one MCP server's recent writes (module docstring: the rule). Not thread-safe; one event
    loop. ``tenant``: the server's tenant (keys are mapped in its scope); ``window``: ``RETRY_WINDOW``; ``clock``:
    seconds, monotonic (tests pass their own)."""

    def __init__(self, tenant: str, *, window: float = RETRY_WINDOW, keys: int = KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tenant = tenant
        self.clock = clock
        self.window = window
        self.max_keys = keys
        #: event id of a keyed write -> (fingerprint, occurred_at) of its first call
        self.keyed: OrderedDict[uuid.UUID, tuple[bytes, datetime]] = OrderedDict()
        #: MCP connection -> scope ("turn:<thread>", "memory:<user>") -> its last write; gone with the connection
        self.last: weakref.WeakKeyDictionary[Any, dict[str, _Write]] = weakref.WeakKeyDictionary()
        #: the same by transport session id (streamable HTTP), least recently used forgotten first
        self.by_id: OrderedDict[str, dict[str, _Write]] = OrderedDict()

    def _session(self, session: Any) -> dict[str, _Write]:
        if isinstance(session, str):
            writes = self.by_id.setdefault(session, {})
            self.by_id.move_to_end(session)
            while len(self.by_id) > self.max_keys:
                self.by_id.popitem(last=False)
            return writes
        try:
            return self.last.setdefault(session, {})
        except TypeError:  # no weak reference to it: by its id (None: no request context, one shared scope)
            return self._session("" if session is None else f"object:{id(session)}")

    def identity(self, session: Any, scope: str, print_: bytes, key: str | None) -> tuple[uuid.UUID, datetime]:
        """``(event id, occurred_at)`` for a write with fingerprint ``print_`` to ``scope`` in ``session`` (the MCP
        session: its transport session id, or the connection object; ``mcp_server._session_of``), named by ``key``
        or not. Raises ``InvalidInput`` (``invalid_request``)
        for an empty key or a key already used for another request."""
        writes = self._session(session)
        now = self.clock()
        if key is not None:
            if not key.strip():
                raise InvalidInput("idempotency_key must not be empty")
            event_id = idempotency_event_id(self.tenant, key)
            first = self.keyed.get(event_id)
            if first is not None and first[0] != print_:
                raise InvalidInput("this idempotency_key was used for another request")
            occurred_at = first[1] if first is not None else datetime.now(UTC)
            self.keyed[event_id] = (print_, occurred_at)
            self.keyed.move_to_end(event_id)
            while len(self.keyed) > self.max_keys:
                self.keyed.popitem(last=False)
        else:
            prev = writes.get(scope)
            if (prev is not None and not prev.keyed and prev.fingerprint == print_
                    and now - prev.at <= self.window):
                event_id, occurred_at = prev.event_id, prev.occurred_at  # an immediate identical retry
            else:
                event_id, occurred_at = new_event_id(), datetime.now(UTC)
        writes[scope] = _Write(print_, event_id, occurred_at, now, key is not None)
        return event_id, occurred_at
