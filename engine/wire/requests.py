"""Every request of ``<root>.rpc.<method>``: one msgspec Struct per method (``REQUESTS`` says which), and the value
rules they share.

Requests are strict (``forbid_unknown_fields``): a misspelt field is an ``invalid_request``, not a silently ignored
filter.

``bound_user`` (every request, issue #26 item 4): the user the caller is bound to (``MemoryClient.for_user``,
``memengine mcp --user``, an HTTP key bound to a user). The query handler then answers only that user's threads,
items and user memory (``engine.read.scope``), whatever the other fields name. It is set by the surface that holds
the binding, never by a model: on NATS, a process with the tenant's credentials is the tenant's operator unless it
binds a user (README "Trust boundary"). Needs only msgspec, so the client and the server share it (issue #2 §6,
DESIGN.md "Request/reply").
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

#: The largest integer PostgreSQL's ``bigint`` holds: stream sequences and offsets are stored and compared as bigint,
#: so a larger value is a caller mistake (issue #17 defect 9: ``from_seq`` / ``offset`` of 2^63 reached asyncpg and
#: came back as ``internal`` with the driver's text).
BIGINT_MAX = 2**63 - 1
NonNeg = Annotated[int, msgspec.Meta(ge=0, le=BIGINT_MAX)]
#: No NUL anywhere: PostgreSQL ``text`` cannot hold U+0000 (issue #17 defect 9). msgspec applies ``pattern`` with
#: ``re.search``; the negated class anchored at both ends of the (non-MULTILINE) string forbids it everywhere.
NO_NUL = r"^[^\x00]*$"
#: Dates a request may name: the same sane range events are held to (issue #17 defects 3 and 9; year 9999 overflowed
#: the recency arithmetic and PostgreSQL's range).
MIN_YEAR, MAX_YEAR = 1900, 2200

#: Add to a ``str`` annotation beside its length ``Meta`` (msgspec merges them): ``Annotated[str, Meta(...), NoNul]``.
NoNul = msgspec.Meta(pattern=NO_NUL)
#: The user a request is bound to (module docstring): 1-1024 characters, no NUL (``MemoryClient``'s rule).
BoundUser = Annotated[str, msgspec.Meta(min_length=1, max_length=1024), NoNul] | None


def check_date(field: str, value: datetime | None) -> None:
    """Raise ``ValueError`` (a ``msgspec.ValidationError`` when called from ``__post_init__``, so the reply is
    ``invalid_request``) if ``value`` is outside years ``MIN_YEAR..MAX_YEAR``."""
    if value is not None and not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValueError(f"`{field}` must be within years {MIN_YEAR}..{MAX_YEAR}, got {value.isoformat()}")


class ContextRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.context``: assemble context for ``thread``.

    ``window`` (tokens, default ``MEMORY_CONTEXT_WINDOW`` or 128K), ``system_tokens`` (size of the agent's system
    prompt), ``query`` (current user message, for Tier-1 relevance), ``after_seq`` (read-your-writes: wait until the
    turn published at that stream sequence is projected), ``wait`` (seconds to wait for it, default 2).
    """

    tenant: str = "default"
    bound_user: BoundUser = None
    thread: str
    window: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)] | None = None
    system_tokens: NonNeg = 0
    query: Annotated[str, msgspec.Meta(max_length=8192), NoNul] | None = None
    after_seq: NonNeg | None = None
    wait: Annotated[float, msgspec.Meta(ge=0, le=30)] | None = None


class HistoryRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.history``: the transcript of ``thread`` oldest first, ``limit`` messages (1..1000) after
    ``from_seq`` (exclusive); ``after_seq`` / ``wait`` as for context."""

    tenant: str = "default"
    bound_user: BoundUser = None
    thread: str
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    from_seq: NonNeg = 0
    after_seq: NonNeg | None = None
    wait: Annotated[float, msgspec.Meta(ge=0, le=30)] | None = None


class ThreadsRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.threads``: the tenant's threads, most recently active first (seed 000 §2.3)."""

    tenant: str = "default"
    bound_user: BoundUser = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50
    offset: NonNeg = 0


class MemoriesRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.memories``: typed memory items, newest first; filters ``user``, ``thread``, ``type``, ``status``
    (``active`` | ``quarantined`` | ``superseded`` | ``retracted`` | ``deleted`` | ``expired`` | ``all``).

    Validity is applied when read (issue #15 item 2; seed 004 §4 ``expires_at``, §6): ``active`` means status
    active **and** valid at ``as_of`` (default now): neither ``expires_at`` nor ``invalid_at`` <= ``as_of``, whether
    or not a consolidation has recorded the expiry yet; ``expired`` also lists such lapsed active items.
    ``include_expired``: ``active`` keeps the lapsed items too (the reply's ``expired_left_out`` counts them when
    they are left out)."""

    tenant: str = "default"
    bound_user: BoundUser = None
    user: Annotated[str, msgspec.Meta(max_length=1024), NoNul] | None = None
    thread: str | None = None
    type: Annotated[str, msgspec.Meta(max_length=32), NoNul] | None = None
    status: Literal["active", "quarantined", "superseded", "retracted", "deleted", "expired", "all"] = "active"
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    as_of: datetime | None = None
    include_expired: bool = False


class AuditRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.audit``: the provenance chain of ``memory_id``: item -> derived events -> source turns."""

    tenant: str = "default"
    bound_user: BoundUser = None
    memory_id: Annotated[str, msgspec.Meta(min_length=1, max_length=1024), NoNul]


class ThreadRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.summary`` and ``rpc.episodes``: per-thread derived memory."""

    tenant: str = "default"
    bound_user: BoundUser = None
    thread: str


class ProfileRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.profile``: MEMORY.md and USER.md of ``user`` (seed 004), rendered from the items active and valid at
    ``as_of`` (default now; ``MemoriesRequest``), with the lapsed ones too when ``include_expired``."""

    tenant: str = "default"
    bound_user: BoundUser = None
    user: Annotated[str, msgspec.Meta(min_length=1, max_length=1024), NoNul]
    as_of: datetime | None = None
    include_expired: bool = False


Source = Literal["turns", "memories"]


class RecallRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.recall``: the ``limit`` hits of ``tenant`` most relevant to ``query`` (default ``MEMORY_RECALL_TOP_K``;
    ``k`` is its old name, still accepted: ``limit`` wins when both are given, issue #15 item 5: one name for the
    result count in every request, tool and command).

    ``sources``: ``turns`` (``memory_vectors``, seed 000 §4.4 recall_memory) and/or ``memories`` (typed
    ``memory_items``, seed 004 §6 search_memory); default turns only. Filters on both: ``thread``, ``user`` and
    ``since`` <= time < ``until`` (a turn's ``occurred_at``, an item's ``valid_at``). Filters on memory items only:
    ``types`` (any of, case-insensitive: FACT, PREFERENCE, ...), ``tags`` (items carrying all of them), ``status``
    (any of; default ``["active"]``, ``["all"]`` for every status) and expiry (items whose ``expires_at`` <= ``as_of``
    are left out unless ``include_expired``; seed 004 §6). ``as_of``: the reference time of time decay and expiry
    (default now). ``after_seq``: wait until the turn published at that sequence is projected (its embedding may
    still be pending)."""

    tenant: str = "default"
    bound_user: BoundUser = None
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000), NoNul]
    thread: str | None = None
    user: Annotated[str, msgspec.Meta(max_length=1024), NoNul] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    since: datetime | None = None
    until: datetime | None = None
    after_seq: NonNeg | None = None
    sources: Annotated[tuple[Source, ...], msgspec.Meta(min_length=1, max_length=2)] = ("turns",)
    types: Annotated[tuple[Annotated[str, msgspec.Meta(max_length=32), NoNul], ...],
                     msgspec.Meta(max_length=16)] | None = None
    tags: Annotated[tuple[Annotated[str, msgspec.Meta(max_length=128), NoNul], ...],
                    msgspec.Meta(max_length=16)] | None = None
    status: Annotated[tuple[Annotated[str, msgspec.Meta(max_length=32), NoNul], ...],
                      msgspec.Meta(min_length=1, max_length=8)] = ("active",)
    include_expired: bool = False
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        # issue #17 defect 9: as_of at year 9999 overflowed the recency arithmetic and came back as `internal`
        for name in ("since", "until", "as_of"):
            check_date(name, getattr(self, name))


#: Characters per working-memory entry (``engine.derive.working_memory``): 50 entries stay far below the KV's value
#: limit.
SCRATCHPAD_MAX_TEXT = 2000
#: Kinds of working-memory entries: ``focus`` (current task), ``done`` (completed), ``note``.
ScratchpadKind = Literal["focus", "done", "note"]


class ScratchpadRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.scratchpad``: ``op`` ``get`` (default), ``put`` (needs ``kind`` and ``text``) or ``clear`` on the
    working memory of ``thread``."""

    tenant: str = "default"
    bound_user: BoundUser = None
    thread: str
    op: Literal["get", "put", "clear"] = "get"
    kind: ScratchpadKind | None = None
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=SCRATCHPAD_MAX_TEXT)] | None = None


class PublishedRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.published``: is the fact stored at ``seq`` this tenant's message on ``<thread>.<event_type>`` with
    these bytes (``digest``: sha256 hex of them)? How a client without read access to the stream checks a duplicate
    acknowledgement (``engine.client.publishing``, issue #26 item 2)."""

    tenant: str = "default"
    seq: Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
    thread: str
    event_type: str
    digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
    bound_user: BoundUser = None  # a bound client asks too; the answer is about the tenant's own stream


class DedupKeyRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``rpc.dedup_key``: the tenant's dedup key, which keys the digest in its facts' ``Nats-Msg-Id``
    (``engine.client.publishing.tenant_dedup_key``, issue #26 item 2). Answered for the scoped subject's tenant."""

    tenant: str = "default"
    bound_user: BoundUser = None


#: The request type of every ``<root>.rpc.<method>`` (``RpcHandlers.methods`` decodes with these).
REQUESTS: dict[str, type[msgspec.Struct]] = {
    "context": ContextRequest,
    "history": HistoryRequest,
    "threads": ThreadsRequest,
    "memories": MemoriesRequest,
    "audit": AuditRequest,
    "summary": ThreadRequest,
    "episodes": ThreadRequest,
    "profile": ProfileRequest,
    "recall": RecallRequest,
    "scratchpad": ScratchpadRequest,
    "published": PublishedRequest,
    "dedup_key": DedupKeyRequest,
}
