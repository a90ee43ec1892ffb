"""NATS wiring: connections, and the JetStream streams created from ``events.streams`` specs.

JetStream control (streams, durable consumers, fetch, ack) uses nats-py directly; FastStream serves the
request/reply handlers (``engine.query``).
"""

from __future__ import annotations

import nats
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from events.streams import StreamNames, StreamSpec, stream_specs
from events.subjects import Subjects

log = structlog.get_logger("memengine.bus")


async def connect(url: str, *, name: str = "memengine") -> NATS:
    """Connect with unlimited reconnects: a NATS restart pauses memengine, it does not stop it."""

    async def on_error(exc: Exception) -> None:
        log.warning("nats error", error=str(exc))

    return await nats.connect(
        url,
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        error_cb=on_error,
        pending_size=64 * 1024 * 1024,
    )


def to_config(spec: StreamSpec) -> StreamConfig:
    return StreamConfig(
        name=spec.name,
        subjects=list(spec.subjects),
        description=spec.description,
        storage=StorageType.FILE,
        num_replicas=spec.replicas,
        duplicate_window=spec.duplicate_window,
        max_msg_size=spec.max_msg_size,
        allow_direct=True,
    )


async def ensure_streams(js: JetStreamContext, names: StreamNames, subjects: Subjects, *, replicas: int = 1,
                         duplicate_window: float) -> None:
    """Create the streams if missing, update their config if it changed (idempotent)."""
    for spec in stream_specs(names, subjects, replicas=replicas, duplicate_window=duplicate_window):
        config = to_config(spec)
        try:
            info = await js.stream_info(spec.name)
        except NotFoundError:
            await js.add_stream(config)
            log.info("stream created", stream=spec.name, subjects=spec.subjects)
            continue
        current = info.config
        if (current.subjects != config.subjects or current.duplicate_window != config.duplicate_window
                or current.max_msg_size != config.max_msg_size):
            await js.update_stream(config)
            log.info("stream updated", stream=spec.name)
