"""The query handler's NATS subscriptions (FastStream), guarded, timed and answered concurrently.

**Concurrency (issue #17 defect 5).** FastStream runs a subscription's handler one message at a time (``max_workers``
= 1), so three ``rpc.context`` requests waiting 30 s for a far-future ``after_seq`` held every other tenant's
context requests behind them. FastStream's ``max_workers=N`` would only move the cliff to N waits: its worker slot is
held for the whole handler, wait included, and once all N are held the subscription's callback blocks and new
requests queue behind them again. So each endpoint here only starts a task per request and returns; the bound lives
where the cost is: ``RpcHandlers`` runs at most ``MEMENGINE_RPC_WORKERS`` queries at once and a read-your-writes
wait holds no slot (``engine.read.rpc``); at most ``MAX_INFLIGHT`` requests are in flight per process, beyond that the
caller gets ``unavailable`` at once instead of a timeout.

**Every request gets a reply (issue #17 defect 7).** FastStream's default decoder ran ``json.loads`` on every body
before the handler: a 40 KB ``[[[...`` raised ``RecursionError`` there, so no handler ran, no reply was sent and
(with ``logger=None``) nothing was logged. The endpoints take the raw NATS message (``_raw_msg``) and reply
themselves; anything that still escapes a handler is logged and answered with ``internal`` and a reference, never
its text.

**No argument injection (issue #13 item 3).** The broker is built with ``apply_types=False`` (``build_broker``):
FastStream then calls the endpoint with what the decoder returned (the raw message) instead of resolving the
endpoint's annotations through FastDepends on every request, which cost ~0.2 ms of each request's ~0.3 ms in
FastStream (two worker-thread hops among it: a 30 KB reply, plain nats-py 0.36 ms p50, FastStream as before 0.63,
without injection 0.45, load 3).
"""

import asyncio
import uuid
from typing import Any

import structlog
from faststream.nats import NatsBroker, NatsMessage
from nats.aio.msg import Msg

from memengine.engine.adapters.tasks import cancel_and_wait
from memengine.engine.read.rpc import ScopedHandler, guard, instrument, traced
from memengine.engine.wire import tracing
from memengine.engine.wire.replies import encode_error

log = structlog.get_logger("memengine.serving")

#: Requests in flight per query process (waiting, queued for a worker or running); each holds at most
#: ``MEMENGINE_MAX_REQUEST_BYTES`` (64 KiB), so this bounds their memory at ~64 MiB.
MAX_INFLIGHT = 1024

#: The queue group every query handler joins: NATS spreads the requests over the replicas (DESIGN.md "Scale-out").
QUERY_GROUP = "memengine-query"


async def _raw_msg(msg: NatsMessage) -> Msg:
    """FastStream decoder that hands the endpoint the raw nats-py message: ``RpcHandlers`` decodes its bytes against
    the request type (with limits); FastStream's own ``json.loads`` raised ``RecursionError`` on deep nesting, before
    any handler ran. A coroutine on purpose: FastStream runs a plain-function decoder in a worker thread
    (``to_async``), a thread hop per request that cost ~0.2 ms of every context request idle and more under load
    (issue #13 item 3)."""
    return msg.raw_message


class RpcDispatcher:
    """Answers each request in its own task, at most ``max_inflight`` at once; ``close()`` cancels what is left."""

    def __init__(self, max_inflight: int = MAX_INFLIGHT) -> None:
        self.max_inflight = max_inflight
        self.tasks: set[asyncio.Task[None]] = set()

    def endpoint(self, handle: ScopedHandler, scoped: bool) -> Any:
        """The FastStream handler of one subscription: start the answer and return (holds no worker)."""

        async def serve(raw: Msg) -> None:  # the decoder's value (_raw_msg); the broker injects nothing
            if not raw.reply:
                return  # a publish, not a request: nobody to answer
            tenant = raw.subject.rsplit(".", 1)[1] if scoped else None
            if len(self.tasks) >= self.max_inflight:
                await _respond(raw, encode_error("unavailable", f"the query handler has {self.max_inflight}"
                                                 " requests in flight; retry shortly"))
                return
            task = asyncio.create_task(self._answer(raw, handle, tenant), name="rpc")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        return serve

    async def _answer(self, raw: Any, handle: ScopedHandler, tenant: str | None) -> None:
        try:
            # the request's traceparent (engine.wire.tracing) is the parent of the handler's ``query`` span
            with tracing.remote_parent(raw.headers):
                body = await handle(raw.data, tenant)
        except Exception:  # RpcHandlers never raises; this is the last line of defence
            ref = uuid.uuid4().hex[:12]
            log.exception("rpc handler raised", subject=raw.subject, ref=ref)
            body = encode_error("internal", f"internal error (ref {ref}); it was logged")
        await _respond(raw, body)

    async def close(self) -> None:
        """Cancel the requests still in flight (the broker stopped taking new ones)."""
        await asyncio.gather(*(cancel_and_wait(t) for t in list(self.tasks)))


async def _respond(raw: Any, body: bytes) -> None:
    try:
        await raw.respond(body)
    except Exception as exc:  # noqa: BLE001 - the caller left, or the connection is closing
        log.warning("rpc reply failed", subject=raw.subject, error=repr(exc))


def serve_rpc(broker: NatsBroker, handlers: Any, subjects: Any, *, queue: str) -> RpcDispatcher:
    """Subscribe every method of ``handlers`` (``engine.read.rpc.RpcHandlers``) on ``broker`` in the queue group
    ``queue``, twice: ``<root>.rpc.<method>`` (tenant from the payload, for trusted callers) and
    ``<root>.rpc.<method>.<tenant>`` (the subject's tenant must be the payload's, ``engine.read.rpc``). Each is
    guarded (size, tenant scope, rate: ``engine.read.rpc.guard``), timed (``engine.read.rpc.instrument``) and
    answered by the returned ``RpcDispatcher`` (close it after stopping the broker). ``broker`` must be built with
    ``apply_types=False`` (the endpoints take the decoder's raw message, module docstring)."""
    settings = handlers.settings
    limiter = handlers.limiter
    dispatcher = RpcDispatcher()
    for method, handle in handlers.methods().items():
        h = instrument(method, traced(method, guard(handle, max_bytes=settings.max_request_bytes, limiter=limiter)))
        for subject, scoped in ((subjects.rpc(method), False), (subjects.rpc(method) + ".*", True)):
            broker.subscriber(subject, queue=queue, decoder=_raw_msg, no_reply=True)(dispatcher.endpoint(h, scoped))
    return dispatcher
