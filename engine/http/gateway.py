"""The one place the HTTP routes and console pages reach the engine (issue #12: "no second implementation of any
query").

Queries go to the query handler's own methods (``engine.read.rpc.RpcHandlers.methods``) as request bytes, behind
the same ``guard`` as the NATS subjects (request size ``MEMENGINE_MAX_REQUEST_BYTES``, the caller's tenant, requests
per second per tenant ``MEMENGINE_RPC_RATE``), and their replies are decoded with the client's ``decode_reply``:
what an HTTP caller gets is exactly what ``<root>.rpc.<method>.<tenant>`` answers. Writes go through
``engine.client.MemoryClient`` on the engine's NATS connection (the JetStream ack's sequence, ``Nats-Msg-Id`` dedup).
Time travel (``as_of`` / ``as_of_seq``, storage time as in the CLI's ``--as-of``; issue #5 §3) folds the log into
scratch tables and asks a query handler built on them (``engine.ops.time_travel``, shared with the CLI).

``user`` (issue #26 item 4): the user the caller's key is bound to (``engine.http.auth``). Queries carry it as their
``bound_user`` (``engine.read.rpc.guard``: a body naming another is ``forbidden``), so the query handler answers that
user's scope only; writes go through a client bound to it (``MemoryClient.for_user``), which refuses another user's
thread or memory before the log. ``None``: the tenant's operator.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import msgspec

from memengine.engine.client.memory_client import asserted_memory_id
from memengine.engine.ops import dead_letters as dlq
from memengine.engine.ops import operations as ops
from memengine.engine.ops import time_travel as tt
from memengine.engine.read.rpc import RpcHandlers, ScopedHandler, guard, traced
from memengine.engine.wire.errors import Forbidden, RpcError
from memengine.engine.wire.replies import decode_reply
from memengine.events import Block, check_token, idempotency_event_id

#: Idempotency keys remembered per process (tenant, key) -> occurred_at of the first request, so a retry publishes
#: the byte-identical event and JetStream's duplicate window answers with the first sequence.
IDEMPOTENCY_CACHE = 10_000
#: Time-travel folds at once (each folds the log into scratch tables: CPU and database heavy).
AS_OF_AT_ONCE = 1
_blocks = msgspec.json.Decoder(list[Block])
_object = msgspec.json.Decoder(dict[str, Any])


class _Envelope(msgspec.Struct):
    """A reply envelope with its ``result`` left as bytes (``engine.wire.replies.OkReply`` / ``ErrorReply``)."""

    ok: bool = False
    result: msgspec.Raw = msgspec.Raw(b"null")


_envelope = msgspec.json.Decoder(_Envelope)


class Gateway:
    """Queries, publishes and operations for one engine (``engine.bootstrap.Engine``), scoped by the caller's
    tenant. Every method raises ``RpcError`` (of its family, ``engine.wire.errors``) for a caller error."""

    def __init__(self, engine: Any, handlers: RpcHandlers | None = None) -> None:
        self.engine = engine
        s = engine.settings
        self.settings = s
        self.handlers = handlers or RpcHandlers(engine.service, s)
        self.limiter = self.handlers.limiter  # one bucket per tenant with the NATS subjects (RpcHandlers.limiter)
        self.methods: dict[str, ScopedHandler] = {
            m: traced(m, guard(h, max_bytes=s.max_request_bytes, limiter=self.limiter))
            for m, h in self.handlers.methods().items()}
        self.time_travel = asyncio.Semaphore(AS_OF_AT_ONCE)
        #: (tenant, event id) -> (occurred_at, digest of the request) of turns published with an Idempotency-Key
        self.seen: OrderedDict[tuple[str, str], tuple[datetime, bytes]] = OrderedDict()

    # -- queries ------------------------------------------------------------------------------------------------

    async def ask(self, method: str, tenant: str, body: dict[str, Any], *, as_of: str | None = None,
                  as_of_seq: int | None = None, user: str | None = None) -> Any:
        """The reply ``result`` of ``<root>.rpc.<method>`` for ``body`` (``None`` values left out) in ``tenant``'s
        scope, as plain JSON values; with ``as_of`` (ISO 8601 storage time) or ``as_of_seq`` (facts sequence) as it
        would have been answered then, plus ``as_of: {facts_seq, derived_seq, at, fold_seconds}``."""
        body = {k: v for k, v in body.items() if v is not None}
        body.setdefault("tenant", tenant)
        return await self.ask_bytes(method, tenant, msgspec.json.encode(body), as_of=as_of, as_of_seq=as_of_seq,
                                    user=user)

    async def ask_json(self, method: str, tenant: str, body: dict[str, Any], *, as_of: str | None = None,
                       as_of_seq: int | None = None, user: str | None = None) -> bytes:
        """``ask``, answered as the JSON bytes of the reply's ``result``: the RPC reply passed through without
        decoding it into Python objects and encoding it again (the API's routes; a 70-turn context reply spent
        more time in that round trip than in its query)."""
        if as_of is not None or as_of_seq is not None:
            return msgspec.json.encode(await self.ask(method, tenant, body, as_of=as_of, as_of_seq=as_of_seq,
                                                      user=user))
        body = {k: v for k, v in body.items() if v is not None}
        body.setdefault("tenant", tenant)
        reply = await self.methods[method](msgspec.json.encode(body), tenant, user)
        ok = _envelope.decode(reply)
        if not ok.ok:
            decode_reply(reply)  # raises the reply's typed error
        return bytes(ok.result)

    async def ask_bytes(self, method: str, tenant: str, data: bytes, *, as_of: str | None = None,
                        as_of_seq: int | None = None, user: str | None = None) -> Any:
        """``ask`` with the request as JSON bytes (a POST body): a body naming another tenant, or another bound user
        than ``user``, is ``forbidden``."""
        if as_of is None and as_of_seq is None:
            return decode_reply(await self.methods[method](data, tenant, user))
        return (await self.ask_all(tenant, [(method, data)], as_of=as_of, as_of_seq=as_of_seq, user=user))[0]

    async def ask_all(self, tenant: str, requests: list[tuple[str, bytes | dict[str, Any]]], *,
                      as_of: str | None = None, as_of_seq: int | None = None, user: str | None = None) -> list[Any]:
        """Several ``(method, body)`` requests answered from one state: now, or one fold of the log at ``as_of`` /
        ``as_of_seq`` (a page asking three things folds once, not three times). The first error raises."""
        datas = [b if isinstance(b, bytes) else msgspec.json.encode(
            {"tenant": tenant, **{k: v for k, v in b.items() if v is not None}}) for _, b in requests]
        if as_of is None and as_of_seq is None:
            return [decode_reply(await self.methods[m](d, tenant, user))
                    for (m, _), d in zip(requests, datas, strict=True)]
        point = await tt.point_of(self.engine, as_of, as_of_seq)
        results: list[Any] = []
        async with self.time_travel, tt.service_at(self.engine, point) as svc:
            methods = RpcHandlers(svc, self.settings).methods()
            for (method, _), data in zip(requests, datas, strict=True):
                handle = guard(methods[method], max_bytes=self.settings.max_request_bytes, limiter=self.limiter)
                results.append(decode_reply(await handle(data, tenant, user)))
        stamp = tt.stamp(point)
        for result in results:
            if isinstance(result, dict):
                result["as_of"] = stamp
        return results

    async def thread_page(self, tenant: str, thread: str, *, user: str | None = None,
                          **as_of: Any) -> tuple[Any, Any]:
        """``(episodes, summary)`` replies of ``thread``, from one state; ``RpcError("unknown_thread")`` unless the
        thread has a turn then (``rpc.history``: ``rpc.episodes`` answers an empty list for any name)."""
        _, eps, summary = await self.ask_all(tenant, [
            ("history", {"thread": thread, "limit": 1}), ("episodes", {"thread": thread}),
            ("summary", {"thread": thread})], user=user, **as_of)
        return eps, summary

    async def ask_body(self, method: str, tenant: str, data: bytes, *, user: str | None = None) -> Any:
        """``ask_bytes`` for a POST body: a body that names no ``tenant`` is the key's (the request types default to
        ``default``, which would be refused for any other key). Over-size or malformed bodies go to the handler
        unchanged, which answers ``payload_too_large`` / ``invalid_request`` as on NATS."""
        if len(data) <= self.settings.max_request_bytes:
            try:
                body = _object.decode(data)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                body = None
            if body is not None and "tenant" not in body:
                data = msgspec.json.encode({"tenant": tenant, **body})
        return await self.ask_bytes(method, tenant, data, user=user)

    # -- writes (the client's publish path) ---------------------------------------------------------------------

    def _client(self, tenant: str, user: str | None) -> Any:
        """The engine's client of ``tenant``, bound to ``user`` when the caller's key is (``MemoryClient.for_user``:
        another user's thread or memory is refused before the log)."""
        client = self.engine.client(tenant)
        return client if user is None else client.for_user(user)

    def _admit(self, tenant: str) -> None:
        if not self.limiter.allow(tenant):
            raise RpcError("rate_limited", f"tenant {tenant!r} is over {self.limiter.rate:g} requests/s; retry shortly")

    async def record_turn(self, tenant: str, thread: str, turn: dict[str, Any], key: str | None, *,
                          user: str | None = None) -> dict[str, Any]:
        """Publish a ``TurnRecorded`` and return ``{seq, event_id, duplicate, thread}`` after the JetStream ack.

        ``turn``: ``role``, ``content`` (a string or a list of text / thinking / tool_use / tool_result blocks),
        optional ``user_id``, ``session_id``, ``metadata``, ``occurred_at``, ``model``. ``key`` (the
        ``Idempotency-Key`` header) is the event id: a UUID as given, any other string mapped to a stable UUIDv5. A
        repeat of the same key publishes the byte-identical event (the first ``occurred_at``, from this process's
        memory or the read model), which JetStream's duplicate window answers with the first sequence; the same key
        with another request is ``invalid_request`` (known to this process only)."""
        self._admit(tenant)
        check_token("thread", thread)
        content = turn["content"]
        try:
            blocks = content if isinstance(content, str) else _blocks.decode(msgspec.json.encode(content))
        except (msgspec.DecodeError, RecursionError) as exc:
            raise RpcError("invalid_request", f"content: {exc}") from None
        event_id: uuid.UUID | None = None
        occurred_at: datetime | None = turn.get("occurred_at")
        if key is not None:
            event_id, first, digest = self._keyed(tenant, key, {k: v for k, v in turn.items() if k != "occurred_at"})
            if occurred_at is None:
                occurred_at = first[0] if first is not None else await self.engine.pool.fetchval(
                    "SELECT occurred_at FROM messages WHERE tenant_id = $1 AND event_id = $2::uuid",
                    tenant, str(event_id))
                occurred_at = occurred_at or datetime.now(UTC)
        rec = await self._client(tenant, user).record_turn(
            thread, turn["role"], blocks, user_id=turn.get("user_id"), session_id=turn.get("session_id"),
            metadata=turn.get("metadata"), event_id=event_id, occurred_at=occurred_at, model=turn.get("model"))
        if key is not None and occurred_at is not None:
            self._remember_key(tenant, rec.event_id, occurred_at, digest)
        return {"thread": thread, "seq": rec.seq, "event_id": rec.event_id, "duplicate": rec.duplicate}

    def _keyed(self, tenant: str, key: str, request: dict[str, Any]) -> tuple[uuid.UUID, tuple[datetime, bytes] | None,
                                                                            bytes]:
        """``(event id, (occurred_at, digest) of the key's first request or None, digest of this request)`` for an
        ``Idempotency-Key``; ``invalid_request`` when the key named another request."""
        event_id = idempotency_event_id(tenant, key)  # the one mapping of a key (MCP's too, issue #26)
        try:
            digest = hashlib.sha256(msgspec.json.encode(request, order="sorted")).digest()
        except UnicodeEncodeError:  # before the codec sees it: its verdict and wording (events.codec)
            raise RpcError("invalid_event", "the request holds a string that is not valid Unicode text (a lone"
                           " surrogate); events are UTF-8") from None
        first = self.seen.get((tenant, str(event_id)))
        if first is not None and first[1] != digest:
            # Stripe's rule: a key names one request; reusing it for another is the caller's mistake (stored, it
            # would be dead-lettered as an id conflict; engine/runtime/runner.py ``_dedupe``)
            raise RpcError("invalid_request", "this Idempotency-Key was used for another request")
        return event_id, first, digest

    def _remember_key(self, tenant: str, event_id: str, occurred_at: datetime, digest: bytes) -> None:
        self.seen[(tenant, event_id)] = (occurred_at, digest)
        while len(self.seen) > IDEMPOTENCY_CACHE:
            self.seen.popitem(last=False)

    async def remember(self, tenant: str, body: dict[str, Any], key: str | None = None, *,
                       user: str | None = None) -> dict[str, Any]:
        """Publish ``MemoryAsserted`` (``MemoryClient.remember``): ``{seq, event_id, memory_id, duplicate}``, the id
        the item will have unless the enricher links it to an existing one (``asserted_memory_id``). ``key`` (the
        ``Idempotency-Key`` header, issue #26 item 7): as for ``record_turn``; a repeat this process remembers is the
        byte-identical event, answered with the first ``seq`` and ``duplicate``."""
        self._admit(tenant)
        thread = body.get("thread") or "_"
        check_token("thread", thread)
        event_id: uuid.UUID | None = None
        occurred_at: datetime | None = None
        if key is not None:
            event_id, first, digest = self._keyed(tenant, key, body)
            occurred_at = first[0] if first is not None else datetime.now(UTC)
        rec = await self._client(tenant, user).remember(
            body["text"], user=body.get("user"), memory_type=body.get("type") or "FACT",
            importance=body.get("importance", 0.5), tags=body.get("tags") or (), priority=body.get("priority"),
            thread=thread, event_id=event_id, occurred_at=occurred_at)
        if key is not None and occurred_at is not None:
            self._remember_key(tenant, rec.event_id, occurred_at, digest)
        return {"seq": rec.seq, "event_id": rec.event_id, "memory_id": asserted_memory_id(tenant, rec.event_id),
                "duplicate": rec.duplicate}

    async def retract(self, tenant: str, memory_id: str, *, reason: str | None = None,
                      wait: float = 0.0, user: str | None = None) -> dict[str, Any]:
        """Publish ``MemoryRetracted`` for an ``active`` or ``quarantined`` item of ``tenant`` (short ids accepted,
        as the CLI); ``RpcError("unknown_memory")`` for an id it does not hold, ``invalid_request`` for another
        status. With ``wait`` seconds, until the item reads ``retracted``. Returns ``{memory_id, previous_status,
        status, seq, event_id}``."""
        self._admit(tenant)
        item = (await self.ask("audit", tenant, {"memory_id": memory_id}, user=user))["memory"]
        if item["status"] not in ("active", "quarantined"):
            raise RpcError("invalid_request", f"memory {item['memory_id']} is {item['status']}; only active or"
                           " quarantined memories can be retracted")
        rec = await self._client(tenant, user).retract(item["memory_id"], reason=reason, user=item.get("user_id"))
        status = item["status"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while wait > 0 and status != "retracted" and loop.time() < deadline:
            await asyncio.sleep(0.05)
            status = (await self.ask("audit", tenant, {"memory_id": item["memory_id"]}, user=user))["memory"]["status"]
        return {"memory_id": item["memory_id"], "previous_status": item["status"], "status": status,
                "seq": rec.seq, "event_id": rec.event_id}

    # -- operations (engine-wide: admin callers only) -----------------------------------------------------------

    @staticmethod
    def _admin(admin: bool) -> None:
        if not admin:
            raise Forbidden("operations and dead letters are engine-wide: an admin key is needed")

    async def operations(self, admin: bool, *, limit: int = 50, kind: str | None = None) -> list[dict[str, Any]]:
        """The latest operations, newest first (``engine.ops.operations.recent``)."""
        self._admin(admin)
        return await ops.recent(self.engine.pool, limit, kind)

    async def dead_letters(self, admin: bool, *, status: str = "open", consumer: str | None = None,
                           limit: int = 100) -> list[dict[str, Any]]:
        """Dead letters without payloads, oldest first (``engine.ops.dead_letters.list_dead_letters``)."""
        self._admin(admin)
        return await dlq.list_dead_letters(self.engine.pool, consumer=consumer, status=status, limit=limit)

    async def dlq_retry(self, admin: bool, dead_letter_id: int) -> dict[str, Any]:
        """Republish one dead letter (``engine.ops.dead_letters.retry``)."""
        self._admin(admin)
        return await dlq.retry(self.engine, [dead_letter_id])

    async def dlq_drop(self, admin: bool, dead_letter_id: int) -> dict[str, Any]:
        """Give up on one dead letter (``engine.ops.dead_letters.drop``); the console asks first."""
        self._admin(admin)
        return await dlq.drop(self.engine, [dead_letter_id])
