"""What a publisher without read access to the facts stream asks the query handler (issue #26 item 2,
``engine.client.publishing``): whether a duplicate acknowledgement names its own message (``rpc.published``) and its
tenant's dedup key (``rpc.dedup_key``). Both answer only about the tenant of the request, which on the tenant-scoped
subject is the one NATS permissions bind the caller to (``engine.read.rpc.guard``).
"""

from __future__ import annotations

from typing import Any

from nats.js.errors import NotFoundError

from memengine.engine.client.publishing import dedup_secret, digest_of, stored_is, tenant_dedup_key
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.replies import DedupKeyReply, PublishedReply
from memengine.engine.wire.requests import DedupKeyRequest, PublishedRequest
from memengine.events import InvalidToken, StreamNames, Subjects


class PublishChecks:
    """``rpc.published`` and ``rpc.dedup_key`` over the engine's JetStream (direct get, stream info)."""

    def __init__(self, js: Any, streams: StreamNames, subjects: Subjects) -> None:
        self.js = js
        self.streams = streams
        self.subjects = subjects
        self._secret: str | None = None  # the facts stream's dedup secret ("" = none), read on first use

    async def published(self, req: PublishedRequest) -> PublishedReply:
        """Whether the fact stored at ``req.seq`` is ``req.tenant``'s message on ``req.thread`` /
        ``req.event_type`` whose bytes hash to ``req.digest`` (``False`` for anything else, a gone message
        included: nothing about another tenant's message is told). ``invalid_request`` for a bad thread or type."""
        try:
            subject = self.subjects.fact(req.tenant, req.thread, req.event_type)
        except InvalidToken as exc:
            raise RpcError("invalid_request", str(exc)) from None
        try:
            stored = await self.js.get_msg(self.streams.facts, req.seq, direct=True)
        except NotFoundError:
            return PublishedReply(owned=False)
        data = stored.data or b""
        # stored_is compares the subjects (given the same bytes); the digest compares the bytes
        return PublishedReply(owned=digest_of(data) == req.digest
                              and stored_is(self.subjects, stored.subject, data, subject, data))

    async def dedup_key(self, req: DedupKeyRequest) -> DedupKeyReply:
        """``req.tenant``'s dedup key in hex (``engine.client.publishing.tenant_dedup_key``), ``None`` when the
        facts stream has no secret."""
        if self._secret is None:
            self._secret = (await dedup_secret(self.js, self.streams.facts)) or ""
        return DedupKeyReply(key=tenant_dedup_key(self._secret, req.tenant).hex() if self._secret else None)
