"""A lean batch puller for one durable pull consumer.

nats-py's ``fetch()`` waits for each message with ``asyncio.wait_for`` (a task per message), which at tens of
thousands of events per second costs more than the fold itself. This puller keeps one pull request open at the
server (``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` with ``batch`` and ``expires``, the JetStream pull API)
and lets messages accumulate in a buffer through a subscription callback while the runner commits the previous
batch: ``fetch()`` returns at once whatever has arrived (up to ``batch``), or waits up to ``timeout`` for the first
message. Status messages end the request (404 no messages, 408 expired, 409 conflict); a 409 for a deleted consumer
raises ``ConsumerGone`` so the runner re-binds at its checkpoint.

Deliveries must arrive without a hole. The consumer numbers every delivery (``sequence.consumer``, from 1 on the fresh
consumer ``bind_at_checkpoint`` creates); a jump means the server counted a message as delivered that never reached
us, as when a stream leader dies with deliveries on the wire (tests/integration/runtime/test_cluster.py once lost one
turn of 2,118 that way). With ``AckPolicy.ALL`` the next ack would cover the lost message and the checkpoint would
pass it, so a jump raises ``ConsumerGone`` and the runner re-binds at its checkpoint: the message is delivered again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from memengine.engine.wire.errors import Unavailable


class ConsumerGone(Unavailable, RuntimeError):
    """The server deleted the consumer or answered the pull request with an error."""


class Puller:
    """Pull ``batch`` messages at a time from ``stream``/``consumer``; see the module docstring."""

    def __init__(self, nc: NATS, stream: str, consumer: str, *, batch: int, expires: float = 5.0,
                 api_prefix: str = "$JS.API", fresh: bool = True, batch_bytes: int | None = None) -> None:
        """``fresh``: the consumer was just created (``bind_at_checkpoint``), so its first delivery is number 1;
        ``False`` takes the first delivery's number as the start (a puller on a consumer used before).
        ``batch_bytes``: bound a batch's raw bytes too (``MEMENGINE_BATCH_BYTES``, the core and derived
        projectors): each pull asks for ``batch_bytes`` / the running mean message size messages (at least 1, at
        most ``batch``). Counted, not the pull API's own ``max_bytes``: the server refuses that outright for a
        message larger than the bound (409 "Message Size Exceeds MaxBytes"), which would wedge the consumer on one
        large event."""
        self.nc = nc
        self.subject = f"{api_prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self.batch = batch
        self.batch_bytes = batch_bytes or None
        self._mean_size = 0.0  # running mean of delivered payload bytes (0: nothing seen yet)
        self.expires = expires
        self.buf: list[Msg] = []
        self._inbox = ""
        self._sub: Subscription | None = None
        self._open = 0  # messages still owed by the open request
        self._opened_at = 0.0
        self._wake = asyncio.Event()
        self._error: str | None = None
        self._next_delivery = 1 if fresh else 0  # the consumer sequence due next (0: whatever comes first)

    async def start(self) -> None:
        self._inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe(self._inbox, cb=self._on_msg)

    async def stop(self) -> None:
        if self._sub is not None:
            try:
                await self._sub.unsubscribe()
            except Exception:  # noqa: BLE001 - connection may be closing
                pass
            self._sub = None
        self.buf.clear()
        self._open = 0

    async def _on_msg(self, msg: Msg) -> None:
        headers = msg.headers or {}
        status = headers.get("Status")
        if status:
            if status == "100":  # heartbeat / flow control: not an answer
                return
            self._open = 0
            if status == "409" and "Deleted" in (headers.get("Description") or ""):
                self._error = f"{status} {headers.get('Description')}"
            self._wake.set()
            return
        if self._error:
            return  # after a hole nothing more is taken: the runner re-binds at its checkpoint
        try:
            delivered = msg.metadata.sequence.consumer
        except Exception:  # noqa: BLE001 - not a JetStream delivery: a hole we cannot rule out
            delivered = -1
        if delivered != self._next_delivery and self._next_delivery:
            self._error = (f"delivery gap: consumer sequence {delivered} arrived, {self._next_delivery} was due "
                           "(a delivery was lost, e.g. in a leader change)")
            self._open = 0
            self._wake.set()
            return
        self._next_delivery = delivered + 1
        if self.batch_bytes:
            size = len(msg.data)
            self._mean_size = size if not self._mean_size else 0.95 * self._mean_size + 0.05 * size
        self.buf.append(msg)
        self._open -= 1
        self._wake.set()

    def limit(self) -> int:
        """Messages per batch now: ``batch``, or fewer while ``batch_bytes`` / the mean message size is smaller."""
        if not self.batch_bytes:
            return self.batch
        if not self._mean_size:
            return 1  # nothing seen yet: one message gives the size, so even the first batch respects the bound
        return max(1, min(self.batch, int(self.batch_bytes // self._mean_size)))

    async def _request(self) -> None:
        n = self.limit()
        self._open = n
        self._opened_at = time.monotonic()
        body = json.dumps({"batch": n, "expires": int(self.expires * 1e9)}).encode()
        await self.nc.publish(self.subject, body, reply=self._inbox)

    def _request_open(self) -> bool:
        # A request lost in a reconnect never answers: treat it as closed after its expiry (+1 s grace).
        return self._open > 0 and time.monotonic() - self._opened_at < self.expires + 1.0

    async def fetch(self, timeout: float) -> list[Msg]:
        """Up to ``limit()`` messages in stream order; ``[]`` if none arrived within ``timeout`` seconds."""
        if self._error:
            raise ConsumerGone(self._error)
        if not self.buf:
            deadline = time.monotonic() + timeout
            while not self.buf:
                if not self._request_open():
                    await self._request()
                self._wake.clear()
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=min(left, self.expires))
                except TimeoutError:
                    pass
                if self._error:
                    raise ConsumerGone(self._error)
        n = self.limit()
        out = self.buf[:n]
        del self.buf[:n]
        if not self._request_open() and len(self.buf) < n:
            await self._request()  # keep the next batch flowing while this one is committed
        return out


async def replay(js: Any, stream: str, subject: str = ">", *, batch: int = 1000) -> AsyncIterator[Msg]:
    """Every message of ``stream`` under ``subject`` in stream order, through an ephemeral consumer with no acks
    (deleted when the iteration ends or is abandoned). For one-off reads of the log (forgetting, time travel), not
    for projectors: those use a durable consumer and ``Puller``."""
    info = await js.stream_info(stream)
    if info.state.messages == 0:
        return
    cfg = ConsumerConfig(deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, inactive_threshold=30.0)
    sub = await js.pull_subscribe(subject, stream=stream, config=cfg)
    try:
        while True:
            try:
                msgs = await sub.fetch(batch, timeout=0.5)
            except TimeoutError:
                return
            for m in msgs:
                yield m
            if msgs and msgs[-1].metadata.num_pending == 0:
                return
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
