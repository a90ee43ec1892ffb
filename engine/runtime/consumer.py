"""Where a follower reads from: the stream source of a projector, its durable consumer's name per partition, and
re-binding that consumer at the checkpoint of record (docs/contributors/architecture.md "projector contract",
issue #2 §4, issue #6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from memengine.events import StreamNames, Subjects, decode_derived_msg, decode_fact
from memengine.events.served import decode_served_msg


def partition_consumer(name: str, partition: int) -> str:
    """Durable consumer (and advisory lock, and dead-letter consumer) name of one partition: ``<name>-p<i>``."""
    return f"{name}-p{partition}"


@dataclass(frozen=True)
class StreamSource:
    """What a runner folds: a ``stream``, the ``filter_subject`` of its consumer, and ``read(subject, data,
    partitioned)``, the shared decode-and-verify step of that stream (``events.decode_fact`` /
    ``events.decode_derived_msg``): a current-version event whose tenant, thread and type are the subject's, or
    ``EventDecodeError`` (``SubjectMismatch`` for a subject/body disagreement) with the reason (issue #17)."""

    stream: str
    filter_subject: str
    read: Callable[[str, bytes, bool], Any]

    @classmethod
    def facts(cls, streams: StreamNames, subjects: Subjects) -> "StreamSource":
        return cls(streams.facts, subjects.all_facts,
                   lambda subject, data, partitioned: decode_fact(subject, data, subjects, partitioned=partitioned))

    @classmethod
    def derived(cls, streams: StreamNames, subjects: Subjects) -> "StreamSource":
        return cls(streams.derived, subjects.all_derived,
                   lambda subject, data, partitioned: decode_derived_msg(subject, data, subjects))

    @classmethod
    def served(cls, streams: StreamNames, subjects: Subjects) -> "StreamSource":
        """The served stream (the access trail, issue #30; ``events.served.decode_served_msg``)."""
        return cls(streams.served, subjects.all_served,
                   lambda subject, data, partitioned: decode_served_msg(subject, data, subjects))


async def bind_at_checkpoint(js: JetStreamContext, stream: str, name: str, filter_subject: str, checkpoint: int, *,
                             batch_size: int, description: str, ack_wait: float = 60,
                             filter_subjects: Sequence[str] | None = None) -> None:
    """(Re-)create the durable consumer ``name`` so that delivery resumes at ``checkpoint + 1``.

    The checkpoint in PostgreSQL is the position of record, not the consumer's ack floor. After a crash the server
    would redeliver the unacknowledged batch only after ``ack_wait``, while newer messages flowed, and an
    ``AckPolicy.ALL`` ack of those would cover the lost batch (found by
    tests/integration/runtime/test_crash_recovery.py).
    So the single, lock-holding owner re-creates its consumer on every start: delivery resumes in stream order
    exactly where the read models stand. ``max_deliver`` is unlimited: poison events are dead-lettered by us.
    ``filter_subjects`` (a non-empty list) replaces ``filter_subject``: a parallel rebuild's worker takes only its
    share (engine/ops/rebuild_parallel.py).
    """
    try:
        await js.delete_consumer(stream, name)
    except NotFoundError:
        pass
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=name,
        ack_policy=AckPolicy.ALL,
        deliver_policy=DeliverPolicy.BY_START_SEQUENCE if checkpoint else DeliverPolicy.ALL,
        opt_start_seq=checkpoint + 1 if checkpoint else None,
        filter_subject=None if filter_subjects else filter_subject,
        filter_subjects=list(filter_subjects) if filter_subjects else None,
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=max(10_000, batch_size * 4),
        description=description,
    ))
