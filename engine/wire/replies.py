"""Every reply of ``<root>.rpc.<method>`` as a msgspec Struct (``REPLIES`` says which), the publish acknowledgement,
and the reply envelope.

Every reply is ``{"ok": true, "result": {...}}`` or ``{"ok": false, "error": {"code", "message"}}``; a handler never
lets an exception escape (issue #2 §6, DESIGN.md "Request/reply"). The server encodes these Structs (or dicts of the
same shape, field for field: ``engine.read``), and ``MemoryClient`` decodes each reply into its Struct.

Strictness (a decision of issue #10): replies are decoded leniently. Unknown fields are ignored, so a newer server
that adds a field does not break an older client; a field added later must get a default here, so a newer client
still decodes an older server's reply. Timestamps are ISO 8601 strings, as the server sends them (UTC offsets kept).
Needs only msgspec, so the client and the server share it.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from memengine.engine.wire.errors import RpcError

#: A message's content: the stored block list (``events.Block`` as JSON objects: ``{"type": "text", "text": ...}``,
#: ``tool_use``, ``tool_result``, ``thinking``). The server splices the stored JSON verbatim (``msgspec.Raw``); a
#: client decodes it into a list of dicts.
Blocks = list[dict[str, Any]]


# -- rpc.context / rpc.history -----------------------------------------------------------------------------------


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """Token budget of one request: ``window``, ``margin`` (10 %), ``reserve`` (output), ``system`` (prompt),
    ``total`` available for memory, and the per-tier shares ``tier1`` / ``tier2`` / ``tier3`` (sum <= total)."""

    window: int
    margin: int
    reserve: int
    system: int
    total: int
    tier1: int
    tier2: int
    tier3: int


class MessageOut(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a context or history reply. ``content`` is the stored block list, spliced verbatim by the
    server (``msgspec.Raw``) and decoded into ``Blocks`` by the client. ``tier`` 1 is the synthetic system message
    (``seq`` 0, ``event_id`` ""); history messages are tier 3. ``metadata``: the turn's free ``metadata`` object,
    verbatim, in history replies (where an adapter keeps a framework's own item: engine/integrations/openai_agents.py);
    ``{}`` in context replies, which are for a model to read. ``chosen_by`` (context replies, Tier 2/3; issue #14):
    ``relevance`` when the message's turn (or its neighbour or tool partner) was recalled for the request's
    ``query`` and placed in Tier 2 for that, ``recency`` when placed newest-first as seed 000 §4 does; ``null`` in
    history replies and on the Tier-1 message, absent from older servers."""

    tier: int
    seq: int
    event_id: str
    role: str
    user_id: str | None
    session_id: str | None
    occurred_at: str
    tokens: int
    condensed: bool
    content: Blocks | msgspec.Raw
    metadata: dict[str, Any] | msgspec.Raw = {}
    chosen_by: str | None = None


class UserMemoryOut(msgspec.Struct, frozen=True, kw_only=True):
    """What the user-memory part of a context's Tier-1 message holds (issue #18; seed 004 §3 core memory, seed 001
    "读取" relevant memories): ``user`` (the thread's user it was read for), ``tokens`` (the part's size, inside
    ``tokens["tier1"]``), ``memory_ids`` (memory items placed: core first, then relevant; ``memengine audit ID``
    leads to their source turns), ``event_ids`` (the user's own past turns from other threads placed verbatim) and
    ``left_out`` (candidates dropped for the budget: ``search_memory`` / ``recall_memory`` reach them)."""

    user: str
    tokens: int
    memory_ids: list[str]
    event_ids: list[str]
    left_out: int = 0


class ContextResult(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.context``: ``mode`` (``full``: everything verbatim; ``tiered``), the ``budget``, tokens used per
    tier (``tier1``, ``tier2``, ``tier3``, ``total``), ``messages`` oldest first (Tier 1, then 2, then 3), the
    ``event_ids`` used, ``dropped`` (messages left out), ``applied_seq`` (the projections' checkpoint the answer
    reflects), ``stale`` (true when ``after_seq`` was not reached in time), ``waited_ms``, and ``user_memory``
    (what the Tier-1 message holds of the thread's user's memory; absent when it holds none, and from older
    servers)."""

    tenant: str
    thread: str
    mode: str
    budget: Budget
    tokens: dict[str, int]
    tokenizer: str
    messages: list[MessageOut]
    event_ids: list[str]
    dropped: int
    applied_seq: int
    stale: bool
    waited_ms: float
    user_memory: UserMemoryOut | None = None


class PushedContext(ContextResult, frozen=True, kw_only=True):
    """A context pushed on ``<root>.ctx.<tenant>.<thread>`` (``MemoryClient.subscribe_context``): the context reply
    plus ``seq``, the stream sequence of the turn that asked for it (header ``Memengine-Seq``; the latest of the
    turns a coalesced push answers)."""

    seq: int


class HistoryReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.history``: ``messages`` oldest first; ``next_from_seq`` (pass as ``from_seq`` for the next page,
    ``None`` on the last); ``applied_seq`` / ``stale`` as for context; ``pruned_through_seq`` (turns up to it were
    pruned from the read model) and ``from_log`` (how many of this page were read from the log instead)."""

    tenant: str
    thread: str
    messages: list[MessageOut]
    next_from_seq: int | None
    applied_seq: int
    stale: bool
    pruned_through_seq: int
    from_log: int


# -- rpc.threads -------------------------------------------------------------------------------------------------


class ThreadInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One thread of ``rpc.threads``: display ``label``, activity (``last_active_at``, ``message_count``,
    ``sessions_ended``), ``last_seq``, the stream sequence of its latest fact, and ``user``, the thread's owner (the
    user of its first turn that names one; ``None``: no turn names a user; issue #26 item 4)."""

    thread: str
    label: str | None
    last_active_at: str
    message_count: int
    sessions_ended: int
    last_seq: int
    user: str | None = None


class ThreadsReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.threads``: the tenant's threads, most recently active first."""

    tenant: str
    threads: list[ThreadInfo]


# -- rpc.memories / rpc.audit / rpc.profile ----------------------------------------------------------------------


class MemoryItem(msgspec.Struct, frozen=True, kw_only=True):
    """A typed memory item (seed 001 ``memory_items``, seed 004 priorities): ``type`` (FACT, PREFERENCE, ...),
    ``importance`` / ``confidence`` in [0, 1] (3 decimals), ``priority`` (TRANSIENT .. PERMANENT), ``status``
    (active | quarantined | superseded | retracted | deleted | expired), bi-temporal ``valid_at`` / ``invalid_at``,
    ``superseded_by`` (the item that replaced it), ``data`` (structured fields), ``sources`` (event ids of the facts
    it came from; empty in an audit reply, whose ``derived_events`` hold them)."""

    memory_id: str
    user_id: str | None
    thread: str | None
    type: str
    text: str
    importance: float
    confidence: float
    tags: list[str]
    priority: str
    expires_at: str | None
    status: str
    valid_at: str
    invalid_at: str | None
    superseded_by: str | None
    data: dict[str, Any]
    sources: list[str]


class MemoriesReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.memories``: items newest first. ``expired_left_out``: active items left out because their
    ``expires_at`` or ``invalid_at`` had passed at the request's ``as_of`` (default now; ``include_expired`` shows
    them). The clock is not echoed: the same state answers the same reply."""

    tenant: str
    memories: list[MemoryItem]
    expired_left_out: int = 0


class AuditSource(msgspec.Struct, frozen=True, kw_only=True):
    """A source fact of a derived event: the turn (or explicit memory fact) with its text; fields are ``None``
    when the fact is neither in the read model nor readable from the log."""

    event_id: str
    seq: int | None
    thread: str | None
    role: str | None
    user_id: str | None
    session_id: str | None
    occurred_at: str | None
    text: str | None
    metadata: dict[str, Any] | None


class AuditEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A derived event in an item's chain: its ``type``, the ``model`` and ``prompt_version`` that produced it, the
    merge ``action`` that linked it to the item, and its ``sources`` (empty for a consolidation change, which is its
    own evidence)."""

    event_id: str
    seq: int | None
    type: str | None
    model: str | None
    prompt_version: str | None
    action: str
    occurred_at: str | None
    sources: list[AuditSource]
    #: why: the merge decision's reason (a supersede names the slot that changed), a retraction's or promotion's
    #: ``--reason``, a consolidation change's; ``None`` for links folded before schema 0021 (rebuild fills them)
    reason: str | None = None


class AuditLink(msgspec.Struct, frozen=True, kw_only=True):
    """Another item in a supersede / merge chain of an audited item (issue #15 item 4): ``relation`` ``supersedes``
    (the new value closing an old one), ``merged`` or ``compressed`` (consolidation); ``memory_id``, ``type``,
    ``text``, ``status``, validity and the ``reason`` recorded with the link."""

    relation: str
    memory_id: str
    type: str | None
    text: str | None
    status: str | None
    valid_at: str | None
    invalid_at: str | None
    reason: str | None


class AuditReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.audit``: the item, then its derived events in stream order (item -> derived events -> source
    turns); ``supersedes``: the items it closed (their value it replaced, merged or compressed), ``superseded_by``:
    the items that closed it. Both directions of the chain, newest last (bi-temporal, seed 003 lifecycle)."""

    tenant: str
    memory: MemoryItem
    derived_events: list[AuditEvent]
    supersedes: list[AuditLink] = []
    superseded_by: list[AuditLink] = []
    #: how often and where the item was placed in an answer (the access trail, issue #30): ``None`` from an engine
    #: without it
    access: "AccessUsage | None" = None


class AccessUse(msgspec.Struct, frozen=True, kw_only=True):
    """One answer that placed an item: its ``thread``, served-stream ``seq``, ``kind`` (context | recall), time,
    ``tier`` and ``rank`` (``memengine served THREAD --seq SEQ`` shows the whole answer)."""

    thread: str
    seq: int
    kind: str
    served_at: str | None
    tier: int
    rank: int


class AccessUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 002 §3.1 ``access_count`` and ``last_accessed_at`` of an item (folded from the served stream, issue
    #30), and the latest answers that placed it (``used_in``, newest first)."""

    access_count: int = 0
    last_accessed_at: str | None = None
    used_in: list[AccessUse] = []


class ProfileReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.profile``: ``files`` ``{"MEMORY.md": ..., "USER.md": ...}`` rendered from the user's
    ``memories`` items (count; seed 004); ``expired_left_out`` as in ``MemoriesReply``."""

    tenant: str
    user: str
    memories: int
    files: dict[str, str]
    expired_left_out: int = 0


# -- rpc.summary / rpc.episodes ----------------------------------------------------------------------------------


class ThreadSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A thread's rolling summary: it covers the thread's facts up to ``covers_until_seq`` (``message_count``
    messages); ``event_id`` / ``model``: the ``SummaryUpdated`` event that wrote it."""

    summary: str
    message_count: int
    covers_until_seq: int
    updated_at: str
    event_id: str
    model: str


class Topic(msgspec.Struct, frozen=True, kw_only=True):
    """A recallable topic of a thread and how often it came up."""

    topic: str
    mentions: int
    last_seen_at: str


class SummaryReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.summary``: the summary (``None`` before the first) and up to 50 topics, most mentioned first."""

    tenant: str
    thread: str
    summary: ThreadSummary | None
    topics: list[Topic]


class Episode(msgspec.Struct, frozen=True, kw_only=True):
    """One episode (one per ended session): ``summary``, ``goal``, ``outcome``, ``entities``, ``tools_used``, its
    time span, the ``EpisodeRecorded`` ``event_id`` and the number of source ``turns``."""

    episode_id: str
    session_id: str | None
    summary: str
    goal: str | None
    outcome: str | None
    entities: list[str]
    tools_used: list[str]
    started_at: str
    ended_at: str
    event_id: str
    turns: int


class EpisodesReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.episodes``: the thread's episodes, oldest first."""

    tenant: str
    thread: str
    episodes: list[Episode]


# -- rpc.scratchpad ----------------------------------------------------------------------------------------------


class ScratchpadEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One working-memory entry: ``kind`` (focus | done | note), ``text``, ``at`` (when written, UTC)."""

    kind: str
    text: str
    at: str


class ScratchpadReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.scratchpad`` (every op): the live ``entries`` oldest first, and what context shows of them:
    ``focus`` (newest focus or ``None``), ``completed`` and ``notes`` (newest first, at most 5 each)."""

    tenant: str
    thread: str
    entries: list[ScratchpadEntry]
    focus: str | None
    completed: list[str]
    notes: list[str]


# -- rpc.recall --------------------------------------------------------------------------------------------------


class RecallHit(msgspec.Struct, frozen=True, kw_only=True):
    """One hit. ``kind``: ``turn`` (``seq``, ``event_id`` = the turn, ``session_id``, ``occurred_at``) or ``memory``
    (``memory_id``, ``type``, ``tags``, ``status``, ``expires_at``; ``event_id`` = the derived event that last changed
    it, ``occurred_at`` = its ``valid_at``). ``source_event_ids``: the turns it comes from (a turn: itself; an item:
    ``memory_item_sources``). ``score`` = w_rel * ``relevance`` + w_rec * ``recency`` + w_imp * ``importance``, each
    in [0, 1] (see ``engine.read.recall.Weights``).

    Provenance (issue #18, role-faithful): ``role`` says who produced a turn hit's text, ``user`` | ``assistant`` |
    ``system`` | ``tool`` (a turn of role tool or carrying a ``tool_result`` block), and ``tool`` names the tool when
    the thread holds the call it answers; ``text`` carries the same label (``[date] tool web_fetch: ...``).
    ``None`` for a memory hit (a note derived about ``user_id``; its ``source_event_ids`` are the turns) and for turns
    folded before the provenance columns existed (``memengine rebuild`` fills them)."""

    kind: str = "turn"
    seq: int | None
    event_id: str
    thread: str | None
    user_id: str | None
    session_id: str | None = None
    occurred_at: str
    text: str
    score: float
    relevance: float = 0.0
    recency: float = 0.0
    importance: float = 0.0
    source_event_ids: list[str]
    memory_id: str | None = None
    type: str | None = None
    tags: list[str] | None = None
    status: str | None = None
    expires_at: str | None = None
    role: str | None = None
    tool: str | None = None


class RecallResult(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.recall``. ``mode``: ``hybrid`` (full-text + vectors) or ``fulltext`` (no embedder, or no
    vectors in scope yet; seed 000 §6); ``embedder``: the model used for the query, or null; ``applied_seq``: the
    projections' checkpoint; ``took_ms``: time in the query service, query embedding included."""

    tenant: str
    query: str
    mode: str
    embedder: str | None
    hits: list[RecallHit]
    applied_seq: int
    took_ms: float


# -- publishing (JetStream, not request/reply) ----------------------------------------------------------------------


class PublishedReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.published``: ``owned`` is true only if the fact at the asked sequence is the asking tenant's
    message on the asked thread and event type with the asked bytes. Says nothing else about the message."""

    owned: bool


class DedupKeyReply(msgspec.Struct, frozen=True, kw_only=True):
    """Reply of ``rpc.dedup_key``: the asking tenant's dedup key in hex, ``None`` when the deployment has no dedup
    secret (its facts' message ids then carry the plain sha256 digest)."""

    key: str | None


class Recorded(msgspec.Struct, frozen=True):
    """Result of a publish: the stream ``seq`` (pass it as ``after_seq``), the ``event_id``, and ``duplicate``
    (the server already holds a message under this event's ``events.msg_id``, i.e. this tenant's event id with
    these exact bytes, and stored nothing). The header is written by publishers, so a publisher of another tenant
    could forge it: every publish checks that the acknowledged message is its own before it says ``duplicate``
    (``engine.client.publishing``, issue #26 item 2)."""

    seq: int
    event_id: str
    duplicate: bool


#: The reply type of every ``<root>.rpc.<method>`` (the client decodes ``result`` into it).
REPLIES: dict[str, type[msgspec.Struct]] = {
    "context": ContextResult,
    "history": HistoryReply,
    "threads": ThreadsReply,
    "memories": MemoriesReply,
    "audit": AuditReply,
    "summary": SummaryReply,
    "episodes": EpisodesReply,
    "profile": ProfileReply,
    "recall": RecallResult,
    "scratchpad": ScratchpadReply,
    "published": PublishedReply,
    "dedup_key": DedupKeyReply,
}


# -- the envelope ------------------------------------------------------------------------------------------------


class ErrorBody(msgspec.Struct, frozen=True):
    code: str
    message: str


class ErrorReply(msgspec.Struct, frozen=True):
    error: ErrorBody
    ok: bool = False


class OkReply(msgspec.Struct, frozen=True):
    result: Any
    ok: bool = True


T = TypeVar("T")


class Reply(msgspec.Struct, Generic[T], frozen=True):
    """Either envelope, decoded in one pass with ``result`` typed ``T`` (``decode_reply``)."""

    ok: bool
    result: T | None = None
    error: ErrorBody | None = None


_encoder = msgspec.json.Encoder()
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def encode_ok(result: Any) -> bytes:
    return _encoder.encode(OkReply(result=result))


def encode_error(code: str, message: str) -> bytes:
    return _encoder.encode(ErrorReply(error=ErrorBody(code=code, message=message)))


def decode_reply(data: bytes, type: Any = Any) -> Any:
    """The ``result`` of a reply decoded as ``type`` (``Any``: plain JSON values). Raises ``RpcError`` (of its family,
    ``engine.wire.errors``) for an error reply, and ``RpcError("internal")`` for a reply that is not an envelope or
    whose result does not have the shape of ``type``."""
    dec = _decoders.get(type)
    if dec is None:
        dec = _decoders[type] = msgspec.json.Decoder(Reply[type])
    try:
        reply = dec.decode(data)
    except msgspec.ValidationError as exc:
        raise RpcError("internal", f"reply is not an envelope of {getattr(type, '__name__', type)}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise RpcError("internal", f"reply is not JSON: {exc}") from None
    if reply.ok:
        return reply.result
    err = reply.error
    raise RpcError(err.code if err else "internal", err.message if err else "")
