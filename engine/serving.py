"""The query handler's NATS subscriptions (FastStream), guarded and timed.

No ``from __future__ import annotations`` here: FastStream reads the endpoint's ``NatsMessage`` annotation at
subscription time to inject the raw message.
"""

from typing import Any

from faststream.nats import NatsBroker, NatsMessage

from engine.metrics import instrument
from engine.security import RateLimiter, ScopedHandler, guard


def serve_rpc(broker: NatsBroker, handlers: Any, subjects: Any, *, queue: str) -> None:
    """Subscribe every method of ``handlers`` (``engine.query.RpcHandlers``) on ``broker`` in the queue group
    ``queue``, twice: ``<root>.rpc.<method>`` (tenant from the payload, for trusted callers) and
    ``<root>.rpc.<method>.<tenant>`` (the subject's tenant must be the payload's, ``engine.security``). Each is
    guarded (size, tenant scope, rate: ``engine.security.guard``) and timed (``engine.metrics.instrument``)."""
    settings = handlers.settings
    limiter = RateLimiter(settings.rpc_rate, settings.rpc_burst or None)

    def endpoint(handle: ScopedHandler, scoped: bool) -> Any:
        async def serve(msg: NatsMessage) -> bytes:
            tenant = msg.raw_message.subject.rsplit(".", 1)[1] if scoped else None
            return await handle(msg.body, tenant)

        return serve

    for method, handle in handlers.methods().items():
        h = instrument(method, guard(handle, max_bytes=settings.max_request_bytes, limiter=limiter))
        broker.subscriber(subjects.rpc(method), queue=queue)(endpoint(h, False))
        broker.subscriber(subjects.rpc(method) + ".*", queue=queue)(endpoint(h, True))
