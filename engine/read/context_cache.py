"""A cache of the Tier-1 parts of context read from the derived read models (issue #13 item 3: no per-request Tier-1
round trip when nothing changed).

What it holds: the thread's own Tier-1 content (``MemoryQueries.tier1_parts``: summary, topics, the thread's memories
matching the query) and the user-memory part's candidates (``engine.read.user_memory``), each keyed by everything
its statement reads from the request (tenant, thread, user, the ranking text, the validity clock).

When an entry is stale: every read model these parts come from (``conversation_summaries``, ``memory_topics``,
``memory_items``, ``memory_vectors``, ``messages``) is written only by projectors, and a projector advances its row of
``projection_checkpoints`` in the same transaction as its writes (docs/contributors/architecture.md). The context's
window statement returns a ``generation`` of that table (count and sum of the checkpoints) with its rows, in the same
round trip, so an entry made under another generation is never served: a commit of any projector, a rebuild's swap or
a time-travel schema all change what the read models hold only together with the generation. No notification has to
arrive (a lost LISTEN connection cannot leave a stale entry behind).

What time changes: validity is judged at the request's clock (issue #15: ``expires_at`` / ``invalid_at``), so an
entry also lapses ``TTL_S`` seconds after it was made; an item's expiry reaches the context at most that late.
A pinned clock (``MemoryQueries.clock``, time travel) is part of the key instead.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

#: Seconds an entry is served at most (validity is judged at the wall clock; see the module docstring).
TTL_S = 1.0
#: Entries kept (least recently used dropped first): a few per active thread.
MAX_ENTRIES = 4096


class Tier1Cache:
    """``get(key, generation)`` -> the value or ``None``; ``put(key, generation, value)``. Not thread-safe (one
    event loop). ``hits`` / ``misses`` count lookups (bench, tests)."""

    def __init__(self, *, ttl: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, tuple[str, float, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, generation: str | None) -> Any:
        """The value stored under ``key`` for this ``generation`` while younger than ``ttl``; ``None`` otherwise
        (and always when ``generation`` is ``None``: unknown state is never served from the cache)."""
        entry = self._items.get(key)
        if generation is None or entry is None or entry[0] != generation or time.monotonic() - entry[1] >= self.ttl:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return entry[2]

    def put(self, key: Hashable, generation: str | None, value: Any) -> None:
        """Keep ``value`` for ``key`` under ``generation`` (nothing when ``generation`` is ``None``)."""
        if generation is None:
            return
        self._items[key] = (generation, time.monotonic(), value)
        self._items.move_to_end(key)
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
