"""``MemoryClient``: what an agent uses. Needs only the base install (nats-py, msgspec).

    async with await MemoryClient.connect("nats://127.0.0.1:4222", tenant="acme") as mem:
        ack = await mem.record_turn("thread-1", "user", "I prefer aisle seats", user_id="maya")
        ctx = await mem.context("thread-1", window=32_000, after_seq=ack.seq)   # read-your-writes

Turns go to ``<root>.fact.<tenant>.<thread>.TurnRecorded`` with ``Nats-Msg-Id`` = ``events.msg_id`` (tenant, event id,
content digest: ids are unique per tenant only); requests go to ``<root>.rpc.<method>.<tenant>`` (the tenant-scoped
subject NATS permissions can restrict, ``engine.adapters.security``). Each query method returns its reply Struct
(``engine.wire.replies``) and raises ``RpcError`` with a typed ``code`` on an error reply (also of its family:
``NotFound``, ``InvalidInput``, ``Unavailable``, ...; ``engine.wire.errors``). ``connect`` uses the inbox prefix
``_INBOX.<tenant>``, so a NATS user of one tenant needs only ``_INBOX.<tenant>.>`` to receive replies
(``deploy/nats/accounts.conf``).

Scope (issue #18 item 2, the trust boundary): the application binds a client to one user,
``MemoryClient.connect(url, tenant="acme", user="maya")`` or ``client.for_user("maya")``. A bound client sends its
user as the ``bound_user`` of every request, and the query handler answers that user's threads, items and user
memory only (``engine.read.scope``, issue #26 item 4): another user's thread, memory or profile is
``RpcError("forbidden")``. It stamps the turns and memories it writes with its user and refuses (``forbidden``,
before anything is published) an event naming another user, and any event into a thread of another user (it asks
the query handler first, ``_check_thread``). An argument a model supplies can narrow the scope, never widen it
(seed 001: ``user_id`` is the multi-user isolation key). An unbound client is the operator scope (CLI,
``memengine mcp`` without ``--user``): every user of its tenant, as before.
"""

from __future__ import annotations

import copy
import enum
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
import nats
import nats.errors
from nats.aio.client import Client as NATS

from memengine.engine.client.checks import check_event
from memengine.engine.client.publishing import Owns, digest_of, settle
from memengine.engine.wire import tracing
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.replies import (
    AuditReply,
    ContextResult,
    DedupKeyReply,
    EpisodesReply,
    HistoryReply,
    MemoriesReply,
    ProfileReply,
    PublishedReply,
    PushedContext,
    RecallResult,
    Recorded,
    ScratchpadReply,
    SummaryReply,
    ThreadsReply,
    decode_reply,
)
from memengine.events import (
    Block,
    ContextWanted,
    Event,
    MemoryAsserted,
    MemoryPromoted,
    MemoryRetracted,
    SessionEnded,
    StreamNames,
    Subjects,
    TextBlock,
    ThreadLabelled,
    TurnRecorded,
    check_token,
    msg_id,
    new_event_id,
)
from memengine.events.model import Role

R = TypeVar("R", bound=msgspec.Struct)


class _Ask(enum.Enum):
    """The sentinel of ``MemoryClient(dedup_key=...)`` not given: ask the query handler (an enum, so that an
    ``isinstance`` check narrows the key's type)."""

    ASK = "ask"


_ASK = _Ask.ASK
log = logging.getLogger("memengine.client")


class MemoryClient:
    """Publishes facts to JetStream and asks the query handler over request/reply.

    Errors: ``RpcError`` (typed reply errors, and ``code="unavailable"`` when no query handler answers; each is also
    of its family, ``engine.wire.errors``), ``events.InvalidToken`` for a bad tenant/thread id before anything is
    sent. Replies are decoded leniently into their Structs: fields a newer server adds are ignored.

    ``user``: the user the application binds this client to (``None``: operator scope, the whole tenant); see the
    module docstring. ``RpcError("forbidden")`` for a call outside it; ``ValueError`` for an empty user id.

    ``owns``: how a duplicate acknowledgement is checked (``engine.client.publishing``): ``None`` (an agent's
    credentials, which cannot read the stream) asks the query handler (``rpc.published`` on the tenant's own
    subject); the engine passes a direct reader of the stream (``Engine.client``). ``dedup_key``: the tenant's
    dedup key (``dedup_key()``), given by the engine; left out, asked from the query handler on first publish.
    """

    def __init__(self, nc: NATS, *, tenant: str = "default", subject_root: str = "mem",
                 stream_prefix: str = "MEMORY", timeout: float = 10.0, owns_connection: bool = False,
                 user: str | None = None, owns: Owns | None = None, dedup_key: bytes | None | _Ask = _ASK) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.tenant = check_token("tenant", tenant)
        self.user = _check_user(user)
        self.subjects = Subjects(subject_root)
        self.streams = StreamNames.for_prefix(stream_prefix)
        self.timeout = timeout
        self._owns = owns_connection
        self._owns_msg: Owns = owns or self._asked_owns
        self._dedup_key = dedup_key

    async def dedup_key(self) -> bytes | None:
        """The tenant's dedup key (``engine.client.publishing.tenant_dedup_key``) that keys the digest of every
        fact's ``Nats-Msg-Id``: given by the engine (``Engine.client``), else asked once from the query handler
        (``rpc.dedup_key`` on the tenant's subject) and kept. ``None``: the deployment has no secret (plain digest).
        When the handler cannot answer, ``None`` for this publish (not kept): a write does not fail for it; the
        duplicate check (``settle``) still guards it."""
        if not isinstance(self._dedup_key, _Ask):
            return self._dedup_key
        try:
            reply = await self._call("dedup_key", DedupKeyReply, {})
        except RpcError as exc:
            if exc.code != "unavailable":
                raise
            log.warning("no dedup key from the query handler (%s); publishing with the plain digest", exc)
            return None
        self._dedup_key = bytes.fromhex(reply.key) if reply.key else None
        return self._dedup_key

    async def _asked_owns(self, seq: int, subject: str, data: bytes) -> bool:
        """``Owns`` through the query handler (``rpc.published``): whether the fact stored at ``seq`` is this
        tenant's ``data`` on ``subject``. The handler answers only for the tenant of the scoped subject."""
        _tenant, thread, event_type = self.subjects.parse_fact(subject)
        reply = await self._call("published", PublishedReply, {"seq": seq, "thread": thread,
                                                                "event_type": event_type, "digest": digest_of(data)})
        return reply.owned

    @classmethod
    async def connect(cls, url: str = "nats://127.0.0.1:4222", *, nats_options: dict[str, Any] | None = None,
                      **kwargs: Any) -> "MemoryClient":
        """Connect to NATS at ``url`` (reconnecting forever) and return a client that closes it on ``close()``.

        Replies come to ``_INBOX.<tenant>.*`` (a per-tenant inbox prefix: a user of another tenant cannot be allowed
        to read them). ``nats_options`` go to ``nats.connect`` (``user_credentials``, ``error_cb``, ...)."""
        tenant = check_token("tenant", kwargs.get("tenant", "default"))
        opts = {"max_reconnect_attempts": -1, "inbox_prefix": f"_INBOX.{tenant}", **(nats_options or {})}
        nc = await nats.connect(url, **opts)
        return cls(nc, owns_connection=True, **kwargs)

    def for_user(self, user: str) -> "MemoryClient":
        """A client on the same connection bound to ``user`` (the application's binding, module docstring).

        Binding narrows only: a client already bound to another user raises ``RpcError("forbidden")``. The new client
        does not own the connection (closing it leaves this one open). ``ValueError`` for an empty user id."""
        bound = _check_user(user)
        assert bound is not None
        self._scope(bound)
        clone = copy.copy(self)
        clone.user = bound
        clone._owns = False
        return clone

    def _scope(self, user: str | None) -> str | None:
        """The user a request is scoped to: ``user`` when unbound (operator scope, ``None`` = every user); the bound
        user when ``user`` is ``None`` or equal to it; ``RpcError("forbidden")`` when it names another user."""
        if self.user is None:
            return user
        if user is not None and user != self.user:
            raise RpcError("forbidden", f"this client is bound to user {self.user!r}; it cannot act for {user!r}")
        return self.user

    def _own_push(self, thread: str, ctx: ContextResult) -> None:
        """``RpcError("forbidden")`` when a bound client is pushed a context (``subscribe_context``: a NATS subject,
        not a request the query handler scopes) holding another user's turns or user memory."""
        if self.user is None:
            return
        users = {m.user_id for m in ctx.messages} | {ctx.user_memory.user if ctx.user_memory else None}
        if any(u is not None and u != self.user for u in users):
            raise RpcError("forbidden", f"thread {thread!r} holds turns of another user than {self.user!r}")

    async def _check_thread(self, event: Event) -> None:
        """A bound client writes only into its own threads: ``RpcError("forbidden")`` when the query handler says
        ``event``'s thread is another user's (``engine.read.scope``: its owner is the user of its first turn naming
        one); a thread nobody has claimed yet is free. The user-level thread ``_`` of explicit memories is no one's.
        Asked every time, not cached: a forgotten thread may be claimed again by another user."""
        if self.user is None or (event.thread_id == "_" and not isinstance(event, TurnRecorded)):
            return
        # rpc.summary: the scope check plus two index reads, never a read of the log (history of a pruned thread)
        await self._call("summary", SummaryReply, {"thread": event.thread_id})

    async def close(self) -> None:
        if self._owns and not self.nc.is_closed:
            await self.nc.drain()

    async def __aenter__(self) -> "MemoryClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- facts -------------------------------------------------------------------------------------------------

    async def publish(self, event: Event, *, expected_last_subject_seq: int | None = None) -> Recorded:
        """Publish any fact event. ``expected_last_subject_seq`` enables per-subject optimistic concurrency
        (``Nats-Expected-Last-Subject-Sequence``): the server rejects the publish if another landed first. A bound
        client refuses (``forbidden``) an event naming another user or into another user's thread (one request to
        the query handler first).

        ``duplicate`` is ``True`` only for a repeat of this tenant's own event (same id, same bytes): a duplicate
        acknowledgement naming another publisher's message (a forged ``Nats-Msg-Id``) is checked and the event
        published again (``engine.client.publishing.settle``, issue #26 item 2)."""
        self._scope(getattr(event, "user_id", None))
        subject = self.subjects.fact(event.tenant_id, event.thread_id, type(event).__name__)
        data = check_event(event)  # RpcError (payload_too_large, invalid_event) instead of a dead letter later
        await self._check_thread(event)  # issue #26 item 4: never into another user's thread
        dedup_id = msg_id(event.tenant_id, event.event_id, data, key=await self.dedup_key())
        headers = {"Nats-Msg-Id": dedup_id}
        if expected_last_subject_seq is not None:
            headers["Nats-Expected-Last-Subject-Sequence"] = str(expected_last_subject_seq)
        # traced (engine.wire.tracing): the projector's commit span links to this one through the header
        with tracing.span("publish", kind="producer", attributes={
                "messaging.system": "nats", "messaging.destination.name": subject,
                "messaging.message.id": str(event.event_id), "memengine.event_type": type(event).__name__}) as sp:
            headers = tracing.inject(headers)

            async def republish(unique: str) -> Any:
                return await self.js.publish(subject, data, timeout=self.timeout,
                                             headers={**headers, "Nats-Msg-Id": unique}, stream=self.streams.facts)

            ack = await self.js.publish(subject, data, timeout=self.timeout, headers=headers,
                                        stream=self.streams.facts)
            # a duplicate ack is believed only when it names this event (issue #26 item 2, engine.client.publishing)
            ack, reclaimed = await settle(ack, subject=subject, data=data, dedup_id=dedup_id, owns=self._owns_msg,
                                          republish=republish)
            if reclaimed:
                log.warning("message id %s was taken by another message; published under a unique id (seq %d)",
                            dedup_id, ack.seq)
            tracing.set_attributes(sp, memengine__seq=ack.seq, memengine__duplicate=bool(ack.duplicate),
                                   memengine__reclaimed=reclaimed)
        return Recorded(seq=ack.seq, event_id=str(event.event_id), duplicate=bool(ack.duplicate))

    async def record_turn(
        self,
        thread: str,
        role: Role,
        content: str | Sequence[Block],
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        event_id: uuid.UUID | None = None,
        occurred_at: datetime | None = None,
        model: str | None = None,
        want_context: ContextWanted | None = None,
    ) -> Recorded:
        """Record one turn (``content``: a string, or a list of text/thinking/tool_use/tool_result blocks).

        Returns the stream sequence from the PubAck: pass it as ``after_seq`` to read your own write. A bound client
        records every turn (assistant and tool turns included) with its user, so they are in that user's scope.
        """
        blocks: list[Block] = [TextBlock(text=content)] if isinstance(content, str) else list(content)
        event = TurnRecorded(
            event_id=event_id or new_event_id(), tenant_id=self.tenant, thread_id=thread,
            occurred_at=occurred_at or datetime.now(UTC), user_id=self._scope(user_id), session_id=session_id,
            producer="memengine-client", metadata=metadata or {}, role=role, content=blocks, model=model,
            want_context=want_context,
        )
        return await self.publish(event)

    async def label_thread(self, thread: str, label: str) -> Recorded:
        """Give a thread its display name."""
        return await self.publish(ThreadLabelled(event_id=new_event_id(), tenant_id=self.tenant, thread_id=thread,
                                                 occurred_at=datetime.now(UTC), label=label))

    async def end_session(self, thread: str, session_id: str, *, user_id: str | None = None) -> Recorded:
        """Close a session (episodes and other derivations hang off it)."""
        return await self.publish(SessionEnded(event_id=new_event_id(), tenant_id=self.tenant, thread_id=thread,
                                               occurred_at=datetime.now(UTC), session_id=session_id,
                                               user_id=self._scope(user_id)))

    # -- explicit memory (issue #4; the enricher turns these facts into derived events) -------------------------

    async def remember(self, text: str, *, user: str | None = None, memory_type: str = "FACT",
                       importance: float = 0.5, tags: Sequence[str] = (), priority: str | None = None,
                       thread: str = "_", event_id: uuid.UUID | None = None,
                       occurred_at: datetime | None = None) -> Recorded:
        """Publish ``MemoryAsserted`` ("remember this", seed 001 "写入", seed 004 §6): ``memory_type`` PROFILE |
        PREFERENCE | FACT | TASK | PATTERN | SKILL | RULE | ERROR | EPISODIC, ``importance`` 0..1, ``priority``
        TRANSIENT | SHORT_TERM | LONG_TERM | PERMANENT (default PERMANENT). ``thread`` ``_`` = user-level.
        The item id it will create (unless it duplicates an existing one) is ``asserted_memory_id(tenant, event_id)``.
        A retry with the same ``event_id`` and ``occurred_at`` is the byte-identical event: answered ``duplicate``.
        """
        return await self.publish(MemoryAsserted(
            event_id=event_id or new_event_id(), tenant_id=self.tenant, thread_id=thread, user_id=self._scope(user),
            occurred_at=occurred_at or datetime.now(UTC), producer="memengine-client", memory_type=memory_type,
            text=text,
            importance=importance, tags=list(tags), metadata={"priority": priority} if priority else {}))

    async def retract(self, memory_id: str, *, reason: str | None = None, user: str | None = None,
                      thread: str = "_") -> Recorded:
        """Publish ``MemoryRetracted``: the item becomes ``retracted`` (kept, with ``invalid_at``). A bound client
        retracts its user's items only (``forbidden`` otherwise, asked with ``audit`` first)."""
        await self._own_memory(memory_id)
        return await self.publish(MemoryRetracted(
            event_id=new_event_id(), tenant_id=self.tenant, thread_id=thread, user_id=self._scope(user),
            occurred_at=datetime.now(UTC), producer="memengine-client", memory_id=memory_id, reason=reason))

    async def promote(self, memory_id: str, *, reason: str | None = None, user: str | None = None,
                      thread: str = "_") -> Recorded:
        """Publish ``MemoryPromoted``: a ``quarantined`` item (confidence under 0.8, seed 003) becomes ``active``.
        A bound client promotes its user's items only (as ``retract``)."""
        await self._own_memory(memory_id)
        return await self.publish(MemoryPromoted(
            event_id=new_event_id(), tenant_id=self.tenant, thread_id=thread, user_id=self._scope(user),
            occurred_at=datetime.now(UTC), producer="memengine-client", memory_id=memory_id, reason=reason))

    async def _own_memory(self, memory_id: str) -> None:
        """For a bound client: ``RpcError("forbidden")`` unless ``memory_id`` is about its user (``audit``)."""
        if self.user is not None:
            await self.audit(memory_id)

    # -- queries -----------------------------------------------------------------------------------------------

    async def request(self, method: str, body: dict[str, Any], *, timeout: float | None = None) -> Any:
        """Send ``body`` to ``<root>.rpc.<method>.<tenant>`` and return the reply's ``result`` as plain JSON values
        (``RpcError`` on error): the untyped way in, for methods and fields this client does not know yet. The
        methods below return typed replies."""
        return decode_reply(await self._ask(method, body, timeout))

    async def _call(self, method: str, reply: type[R], body: dict[str, Any], *, timeout: float | None = None) -> R:
        """``request`` with the result decoded into ``reply`` (``RpcError("internal")`` if it has another shape)."""
        result: R = decode_reply(await self._ask(method, body, timeout), reply)
        return result

    async def _ask(self, method: str, body: dict[str, Any], timeout: float | None) -> bytes:
        body = {"tenant": self.tenant, **{k: v for k, v in body.items() if v is not None}}
        if self.user is not None:
            body["bound_user"] = self.user  # the server holds the request to this user's scope (engine.read.scope)
        try:
            # the caller's span (if traced) becomes the parent of the query handler's ``query <method>`` span
            msg = await self.nc.request(self.subjects.rpc_scoped(method, self.tenant), msgspec.json.encode(body),
                                        timeout=timeout or self.timeout, headers=tracing.inject({}) or None)
        except nats.errors.NoRespondersError:
            raise RpcError("unavailable", "no memengine query handler is running (start `memengine up`)") from None
        except nats.errors.TimeoutError:
            raise RpcError("unavailable", f"no reply to {method} within {timeout or self.timeout}s") from None
        data: bytes = msg.data
        return data

    async def context(self, thread: str, *, window: int | None = None, query: str | None = None,
                      system_tokens: int = 0, after_seq: int | None = None,
                      wait: float | None = None) -> ContextResult:
        """Tiered context for ``thread`` (``engine.wire.replies.ContextResult``). With ``wait`` (seconds the server
        may wait for ``after_seq``), the reply is awaited that long plus the client's timeout."""
        ctx = await self._call("context", ContextResult, {
            "thread": thread, "window": window, "query": query, "system_tokens": system_tokens or None,
            "after_seq": after_seq, "wait": wait}, timeout=self.timeout + wait if wait else None)
        return ctx

    async def history(self, thread: str, *, limit: int = 100, from_seq: int = 0,
                      after_seq: int | None = None) -> HistoryReply:
        """The transcript oldest first, ``limit`` messages after ``from_seq``."""
        hist = await self._call("history", HistoryReply, {"thread": thread, "limit": limit,
                                                          "from_seq": from_seq or None, "after_seq": after_seq})
        return hist

    async def threads(self, *, limit: int = 50, offset: int = 0) -> ThreadsReply:
        """The tenant's threads, most recently active first; a bound client's: its user's threads only."""
        return await self._call("threads", ThreadsReply, {"limit": limit, "offset": offset or None})

    async def memories(self, *, user: str | None = None, thread: str | None = None, type: str | None = None,
                       status: str = "active", limit: int = 100, as_of: datetime | None = None,
                       include_expired: bool = False) -> MemoriesReply:
        """Typed memory items with the event ids of their source turns. ``active`` items are those still valid at
        ``as_of`` (default now; expired ones are counted in ``expired_left_out`` unless ``include_expired``)."""
        return await self._call("memories", MemoriesReply, {
            "user": self._scope(user), "thread": thread, "type": type, "status": status, "limit": limit,
            "as_of": as_of.isoformat() if as_of else None, "include_expired": include_expired})

    async def audit(self, memory_id: str) -> AuditReply:
        """Provenance chain of a memory item: the item, its derived events, their source turns. A bound client gets
        ``RpcError("forbidden")`` for an item about another user (or about no user)."""
        reply = await self._call("audit", AuditReply, {"memory_id": memory_id})
        if self.user is not None and reply.memory.user_id != self.user:
            raise RpcError("forbidden", f"memory {memory_id} is not about user {self.user!r}")
        return reply

    async def profile(self, user: str | None = None, *, as_of: datetime | None = None,
                      include_expired: bool = False) -> ProfileReply:
        """MEMORY.md and USER.md of ``user`` (default: the bound user): ``files`` ``{"MEMORY.md": ..., "USER.md":
        ...}``, from the items valid at ``as_of`` (default now; see ``memories``). ``ValueError`` when neither is
        given."""
        scoped = self._scope(user)
        if scoped is None:
            raise ValueError("profile needs a user (this client is not bound to one)")
        return await self._call("profile", ProfileReply, {"user": scoped, "as_of": as_of.isoformat() if as_of else None,
                                                          "include_expired": include_expired})

    async def scratchpad(self, thread: str) -> ScratchpadReply:
        """The thread's working memory (``engine.derive.working_memory``): ``entries``, ``focus``, ``completed``,
        ``notes``. Ephemeral: 24 h TTL, at most 50 entries, not rebuilt from the log."""
        return await self._call("scratchpad", ScratchpadReply, {"thread": thread, "op": "get"})

    async def scratchpad_put(self, thread: str, kind: str, text: str) -> ScratchpadReply:
        """Add a working-memory entry: ``kind`` ``focus`` (current task) | ``done`` (completed) | ``note``."""
        return await self._call("scratchpad", ScratchpadReply,
                                {"thread": thread, "op": "put", "kind": kind, "text": text})

    async def scratchpad_clear(self, thread: str) -> ScratchpadReply:
        """Remove the thread's working memory."""
        return await self._call("scratchpad", ScratchpadReply, {"thread": thread, "op": "clear"})

    async def summary(self, thread: str) -> SummaryReply:
        """The thread's rolling summary and topics."""
        return await self._call("summary", SummaryReply, {"thread": thread})

    async def episodes(self, thread: str) -> EpisodesReply:
        """The thread's episodes (one per ended session)."""
        return await self._call("episodes", EpisodesReply, {"thread": thread})

    async def recall(self, query: str, *, thread: str | None = None, user: str | None = None, limit: int | None = None,
                     k: int | None = None,
                     since: datetime | None = None, until: datetime | None = None,
                     after_seq: int | None = None, sources: Sequence[str] | None = None,
                     types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                     status: Sequence[str] | None = None, include_expired: bool | None = None,
                     as_of: datetime | None = None) -> RecallResult:
        """The hits most relevant to ``query`` (``engine.wire.replies.RecallResult``: ``mode``, ``embedder``, ``hits``
        with ``source_event_ids``), optionally within ``thread``, by ``user``, in ``[since, until)``.
        ``sources``: ``["turns"]`` (default) and/or ``"memories"`` (typed memory items, filtered by ``types``,
        ``tags``, ``status`` (default active) and expiry at ``as_of``; ``engine.wire.requests.RecallRequest``).
        A bound client recalls its user's turns and memories only (``user`` may repeat it, not name another).
        ``limit``: how many hits (1-100, default ``MEMORY_RECALL_TOP_K``); ``k`` is its old name, still accepted."""
        return await self._call("recall", RecallResult, {
            "query": query, "thread": thread, "user": self._scope(user), "limit": limit if limit is not None else k,
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None, "after_seq": after_seq, "sources": sources,
            "types": types, "tags": tags, "status": status, "include_expired": include_expired,
            "as_of": as_of.isoformat() if as_of else None})

    async def subscribe_context(self, thread: str) -> AsyncIterator[PushedContext]:
        """Yield the context the engine pushes for ``thread`` after turns recorded with ``want_context``.

        Pushes are coalesced per thread: when several such turns are projected before the push is assembled, one
        push answers them all and its ``seq`` is the latest of them; the window is capped at
        ``MEMENGINE_PUSH_MAX_WINDOW`` (``budget.window`` says what was used).

        Subscribe before publishing the turn. Each item is a ``PushedContext``: the context reply plus ``seq`` (the
        turn's stream sequence, header ``Memengine-Seq``); an error reply raises ``RpcError``, and so does, on a bound
        client, a push holding another user's turns (``forbidden``).
        """
        sub = await self.nc.subscribe(self.subjects.context(self.tenant, thread))
        try:
            async for msg in sub.messages:
                result: ContextResult = decode_reply(msg.data, ContextResult)
                self._own_push(thread, result)
                seq = int((msg.headers or {}).get("Memengine-Seq", 0))
                yield PushedContext(**msgspec.structs.asdict(result), seq=seq)
        finally:
            await sub.unsubscribe()


def _check_user(user: str | None) -> str | None:
    """``user`` unchanged (``None``: unbound); ``ValueError`` for an empty id, a NUL or more than 1024 characters
    (the request's limits, ``engine.wire.requests``)."""
    if user is not None and (not user or len(user) > 1024 or "\x00" in user):
        raise ValueError(f"bad user id {user!r}: 1-1024 characters, no NUL")
    return user


def asserted_memory_id(tenant: str, event_id: uuid.UUID | str) -> str:
    """Id of the item a ``MemoryAsserted`` with ``event_id`` creates (when the enricher's merge decision is add,
    replace or keep_both; a duplicate is linked to the existing item instead)."""
    from memengine.events import derived_event_id

    return str(derived_event_id(tenant, str(event_id), "memory", "0"))
