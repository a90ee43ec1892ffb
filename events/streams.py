"""Stream definitions as plain data (the engine turns them into JetStream configs).

DESIGN.md "Subjects and streams": ``MEMORY_FACTS`` holds the source of truth, ``MEMORY_DERIVED`` what models
derived, ``MEMORY_DLQ`` what a consumer could not process. ``Nats-Msg-Id`` is the event id, so a publish repeated
inside ``duplicate_window`` is dropped by the server; projections are idempotent by event id beyond it.
"""

from __future__ import annotations

import msgspec

from memengine.events.subjects import Subjects

#: Metadata key of the facts stream holding the deployment's dedup secret (hex, set by the engine when it creates or
#: updates the stream; only the engine's credentials can read stream configs). ``events.msg_id``'s digest of a fact
#: is keyed by ``HMAC(secret, tenant)`` so that no tenant can compute another tenant's message ids (issue #26 item 2).
DEDUP_SECRET_KEY = "memengine_dedup_secret"

#: 24 h: a re-run of the same import on the same day publishes nothing (the JetStream default is 2 min).
DEFAULT_DUPLICATE_WINDOW_S = 24 * 3600.0


class StreamSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One stream: ``name``, ``subjects`` (filters), ``duplicate_window`` in seconds, ``replicas`` (1, 3 or 5),
    ``subject_transform`` (``(src, dest)`` applied as messages are stored; the facts partitions) or ``None``."""

    name: str
    subjects: list[str]
    duplicate_window: float = DEFAULT_DUPLICATE_WINDOW_S
    replicas: int = 1
    subject_transform: tuple[str, str] | None = None
    max_msg_size: int = 1024 * 1024
    description: str = ""
    #: retention (0 = unlimited): seconds a message is kept, bytes the stream keeps (oldest dropped first)
    max_age: float = 0.0
    max_bytes: int = 0


class StreamNames(msgspec.Struct, frozen=True, kw_only=True):
    """The stream names of one deployment: ``<PREFIX>_FACTS``, ``<PREFIX>_DERIVED``, ``<PREFIX>_DLQ`` and
    ``<PREFIX>_SERVED`` (the access trail, events/served.py; issue #30)."""

    facts: str
    derived: str
    dlq: str
    served: str = ""

    @classmethod
    def for_prefix(cls, prefix: str = "MEMORY") -> "StreamNames":
        return cls(facts=f"{prefix}_FACTS", derived=f"{prefix}_DERIVED", dlq=f"{prefix}_DLQ",
                   served=f"{prefix}_SERVED")


def stream_specs(
    names: StreamNames,
    subjects: Subjects,
    *,
    replicas: int = 1,
    duplicate_window: float = DEFAULT_DUPLICATE_WINDOW_S,
    partitions: int = 1,
    served_max_age: float = 0.0,
    served_max_bytes: int = 0,
) -> list[StreamSpec]:
    """The streams memengine needs, in creation order. ``partitions`` > 1 adds the facts partition transform
    (``Subjects.partition_transform``). ``served_max_age`` (seconds) / ``served_max_bytes``: the served stream's own
    retention (0 = unlimited; issue #30 item 5)."""
    specs = [
        StreamSpec(
            name=names.facts,
            subjects=[subjects.publish_facts],  # five tokens only: a sixth is the partition transform's

            duplicate_window=duplicate_window,
            replicas=replicas,
            subject_transform=subjects.partition_transform(partitions) if partitions > 1 else None,
            description="memengine facts: what agents and users said and did (source of truth)",
        ),
        StreamSpec(
            name=names.derived,
            subjects=[subjects.all_derived],
            duplicate_window=duplicate_window,
            replicas=replicas,
            description="memengine derived events: model output with provenance",
        ),
        StreamSpec(
            name=names.dlq,
            subjects=[subjects.all_dlq],
            duplicate_window=duplicate_window,
            replicas=replicas,
            description="memengine dead letters: events a consumer could not process, with the error",
        ),
    ]
    if names.served:
        specs.append(StreamSpec(
            name=names.served,
            subjects=[subjects.all_served],
            # ids are fresh UUIDv7s: a short window suffices (and JetStream wants it within max_age)
            duplicate_window=min(duplicate_window, 120.0, served_max_age or 120.0),
            replicas=replicas,
            max_age=served_max_age,
            max_bytes=served_max_bytes,
            description="memengine access trail: what each context and recall answer was built from",
        ))
    return specs
