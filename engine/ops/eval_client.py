"""The client ``memengine eval`` asks with: the query handler's own methods, in process (issue #27 item 4).

An operator's evaluation asks hundreds of questions a second of one tenant: through the NATS edge it met the engine's
per-tenant rate limit (``MEMENGINE_RPC_RATE``, 50/s with bursts of 100, ``engine.read.rpc.guard``) and failed
half-way with ``rate_limited``. The limit guards the edge against callers the engine does not control; the eval is
the operator's own process, so it calls ``RpcHandlers.methods()`` directly: the same request decoding, validation,
read-your-writes waits, worker slots and service code as a request over NATS, without the edge's size and rate guard
(and without another process's handler answering from the queue group, whose limiter this process does not own).
Chosen over exempting a tenant name (anyone could name that tenant) and over pacing (an 8-conversation eval would
take minutes longer for nothing). The eval says so in its output (``ASKED_VIA``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.wire.errors import RpcError

#: What the eval's output says about how it asked (``run_eval``'s ``asked_via``).
ASKED_VIA = ("in-process: the query handler's methods called directly, not over NATS, so the per-tenant rate limit"
             " (MEMENGINE_RPC_RATE) of the NATS/HTTP edge does not apply")


class InProcessClient(MemoryClient):
    """A ``MemoryClient`` whose queries call ``engine.rpc``'s handlers directly (module docstring); publishing goes
    to JetStream as usual. ``RpcError("unavailable")`` when the engine has no query handler methods (``engine.rpc``
    is ``None``); every other error is the handler's typed reply, as over NATS."""

    def __init__(self, engine: Any, tenant: str) -> None:
        super().__init__(engine.nc, tenant=tenant, subject_root=engine.subjects.root,
                         stream_prefix=engine.settings.stream_prefix)
        if engine.rpc is None:
            raise RpcError("unavailable", "the engine has no query handler to ask in process")
        self._methods = engine.rpc.methods()

    async def _ask(self, method: str, body: dict[str, Any], timeout: float | None) -> bytes:
        handle = self._methods.get(method)
        if handle is None:
            raise RpcError("invalid_request", f"unknown method {method!r}")
        body = {"tenant": self.tenant, **{k: v for k, v in body.items() if v is not None}}
        reply: bytes = await handle(msgspec.json.encode(body))
        return reply
