"""What a fold returns: SQL operations, and the types a fold is given.

A fold is a pure function ``(event, position, config) -> list[SqlOp]``: no I/O, no clock, no randomness, so that
replaying the log gives the same read model (DESIGN.md "Projector contract"; pyeventsourcing's ``policy()``
filling write operations). The runner owns the transaction, the checkpoint and the ack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec


class SqlOp(NamedTuple):
    """One statement for the runner: ``table`` it writes (for batching), ``sql`` with ``$n`` placeholders, ``args``.

    The runner may reorder ops of *different* tables (a fold never reads a table it does not own) but keeps the order
    within a table. A run of consecutive ops with the same ``sql`` is sent as one statement: ``bulk`` when the op
    has one (the same parameters as arrays, ``$n::type[]``, read with ``unnest``), else an ``executemany``. A
    ``bulk`` form must give the same result as the rows applied one by one in order (e.g. aggregate with
    ``GROUP BY`` when one statement may touch a row twice, which only commutative updates allow).
    With ``rows`` set, ``bulk`` instead takes one parameter, ``$1::jsonb``: the run's ``args`` as a JSON array of
    arrays (msgspec's encoding: str, int, UUID, aware datetime as RFC 3339, None as null), read with
    ``jsonb_array_elements`` and ``r->>i`` casts. One document costs the client ~2 us a row where asyncpg's array
    encoding of ~16 columns cost ~7 (issue #13 item 1); JSON-typed columns travel as strings and are cast from
    their text, so the stored text is the fold's, byte for byte.
    Ops whose ``table`` starts with ``lock:`` take locks, write nothing, and run before every other op of the
    batch (``projections.pruning``: the per-thread guard that serialises pruning with the messages fold).
    """

    table: str
    sql: str
    args: tuple[Any, ...]
    bulk: str | None = None
    rows: bool = False


class Position(NamedTuple):
    """Where an event sits in the log: stream ``seq`` (1-based) and its ``subject``."""

    seq: int
    subject: str


class FoldConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Parameters of the folds. Changing one changes what a rebuild produces: bump the projection version.

    ``condensed_tool_max``: Tier-2 tool output cut, in characters (seed 000 §4.3, ``MEMORY_CONDENSED_TOOL_MAX``).
    """

    condensed_tool_max: int = 200


Fold = Callable[[Any, Position, FoldConfig], list[SqlOp]]


class Projection(msgspec.Struct, frozen=True, kw_only=True):
    """A read model: ``name``, ``version`` (bumped when its fold or tables change), the ``tables`` it owns and its
    ``handlers`` (event type -> fold). Events without a handler advance the checkpoint and change nothing."""

    name: str
    version: int
    tables: tuple[str, ...]
    handlers: Mapping[type, Fold]
