"""NATS wiring: connections, and the JetStream streams created from ``events.streams`` specs.

JetStream control (streams, durable consumers, fetch, ack) uses nats-py directly; FastStream serves the
request/reply handlers (``engine.read.rpc``).
"""

from __future__ import annotations

import re
import secrets

import nats
import structlog
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig, SubjectTransform
from nats.js.errors import NotFoundError

from memengine.events.streams import DEDUP_SECRET_KEY, StreamNames, StreamSpec, stream_specs
from memengine.events.subjects import Subjects

log = structlog.get_logger("memengine.bus")


def server_list(url: str) -> list[str]:
    """``NATS_URL`` may list several servers of a cluster, comma-separated (the NATS CLI convention)."""
    return [u.strip() for u in url.split(",") if u.strip()]


async def connect(url: str, *, name: str = "memengine") -> NATS:
    """Connect with unlimited reconnects: a NATS restart pauses memengine, it does not stop it. ``url`` may list
    several servers (comma-separated); the client also learns the cluster's other servers from the first one."""

    async def on_error(exc: Exception) -> None:
        log.warning("nats error", error=str(exc))

    return await nats.connect(
        server_list(url),
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
        max_age=spec.max_age or None,  # seconds (nats-py sends nanoseconds); None: unlimited
        max_bytes=spec.max_bytes or None,
        subject_transform=SubjectTransform(src=spec.subject_transform[0], dest=spec.subject_transform[1])
        if spec.subject_transform else None,
    )


def partitions_of(config: StreamConfig) -> int:
    """The partition count a facts stream was configured with: ``n`` of its ``partition(n, ...)`` subject
    transform, 1 without one."""
    tr = config.subject_transform
    m = re.search(r"partition\((\d+)", tr.dest) if tr is not None and tr.dest else None
    return int(m.group(1)) if m else 1


async def stores_partitioned(js: JetStreamContext, stream: str) -> bool:
    """True when ``stream`` stores under a partition transform (six-token fact subjects, ``partitions_of`` > 1):
    what ``events.decode_fact(..., partitioned=)`` needs to accept the server-added token (issue #17 defect 12)."""
    return partitions_of((await js.stream_info(stream)).config) > 1


def _transform(config: StreamConfig) -> tuple[str, str] | None:
    tr = config.subject_transform
    return (tr.src, tr.dest) if tr is not None and tr.src else None


def _retention(config: StreamConfig) -> tuple[float, int]:
    """``(max_age seconds, max_bytes)`` with the server's "unlimited" spellings (None, 0, -1) as 0."""
    age = config.max_age or 0
    size = config.max_bytes if config.max_bytes and config.max_bytes > 0 else 0
    return float(age), int(size)


async def ensure_streams(js: JetStreamContext, names: StreamNames, subjects: Subjects, *, replicas: int = 1,
                         duplicate_window: float, partitions: int = 0, served_max_age: float = 0.0,
                         served_max_bytes: int = 0) -> int:
    """Create the streams if missing, update their config if it changed (idempotent); returns the facts partition
    count in force.

    ``partitions``: 0 = as the facts stream already is (1 for a new one), so that a command run without
    ``MEMENGINE_PARTITIONS`` never re-partitions a running deployment; n >= 1 sets it (issue #6). ``replicas``: 1, or
    3/5 on a JetStream cluster, for new streams. ``served_max_age`` / ``served_max_bytes``: the served stream's
    retention (issue #30), applied to an existing stream too.
    """
    if partitions == 0:
        try:
            partitions = partitions_of((await js.stream_info(names.facts)).config)
        except NotFoundError:
            partitions = 1
    for spec in stream_specs(names, subjects, replicas=replicas, duplicate_window=duplicate_window,
                             partitions=partitions, served_max_age=served_max_age,
                             served_max_bytes=served_max_bytes):
        config = to_config(spec)
        facts = spec.name == names.facts
        try:
            info = await js.stream_info(spec.name)
        except NotFoundError:
            if facts:  # the deployment's dedup secret (events.DEDUP_SECRET_KEY, issue #26 item 2)
                config.metadata = {DEDUP_SECRET_KEY: secrets.token_hex(32)}
            await js.add_stream(config)
            log.info("stream created", stream=spec.name, subjects=spec.subjects)
            continue
        current = info.config
        secret = (current.metadata or {}).get(DEDUP_SECRET_KEY)
        if facts:  # keep the secret on an update (a new one would change every message id); add one if missing
            config.metadata = {DEDUP_SECRET_KEY: secret or secrets.token_hex(32)}
        if (current.subjects != config.subjects or current.duplicate_window != config.duplicate_window
                or current.max_msg_size != config.max_msg_size or _transform(current) != spec.subject_transform
                or (facts and secret is None) or _retention(current) != _retention(config)):
            # The replica count of an existing stream is left as it is: a command run without
            # MEMENGINE_STREAM_REPLICAS must not shrink an R3 stream (change it with `nats stream edit --replicas`).
            config.num_replicas = current.num_replicas
            await js.update_stream(config)
            log.info("stream updated", stream=spec.name)
    return partitions
