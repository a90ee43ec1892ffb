"""Event ids: UUIDv7 for live events (time-ordered, RFC 9562 §5.7), UUIDv5 for imported ones (RFC 9562 §5.5) so
that importing the same source twice yields the same ids and the server's dedup drops the repeat.

**Ids are unique per tenant, not globally** (issue #17 defect 4). An id is chosen by its publisher, and import ids
are UUIDv5 of public data, so another tenant can publish any id first. Every de-duplication key therefore carries the
tenant: the JetStream ``Nats-Msg-Id`` (``msg_id`` below: the one rule every publisher uses) and the projectors'
``applied_events`` rows (``(projector, tenant_id, event_id)``, schema/0010).
"""

from __future__ import annotations

import hashlib
import hmac
import uuid

from uuid_utils.compat import uuid7

#: Namespace of memengine's name-based ids (a fixed random UUID).
NAMESPACE = uuid.UUID("5b0f4e4e-8f0e-4c3e-9a53-6d656d656e67")


def new_event_id() -> uuid.UUID:
    """A fresh UUIDv7."""
    return uuid7()


def stable_event_id(*parts: str) -> uuid.UUID:
    """A UUIDv5 of ``parts`` joined by ``/``: the same parts always give the same id."""
    return uuid.uuid5(NAMESPACE, "/".join(parts))


def idempotency_event_id(tenant_id: str, key: str) -> uuid.UUID:
    """The event id of a write its caller names with an idempotency key (HTTP ``Idempotency-Key``, the MCP tools'
    ``idempotency_key``; issue #26 item 7): the key itself when it is a UUID, else
    ``stable_event_id("http-idempotency-key", tenant, key)``. The same key gives the same id on every surface and
    after a restart, so a retry is the same event (the namespace keeps its first user's name: ids already recorded
    stay valid)."""
    try:
        return uuid.UUID(key)
    except ValueError:
        return stable_event_id("http-idempotency-key", tenant_id, key)


def msg_id(tenant_id: str, event_id: uuid.UUID | str, data: bytes | None = None, *,
           key: bytes | None = None) -> str:
    """The ``Nats-Msg-Id`` under which an event is published: ``<tenant>:<event id>`` and, for a fact (``data``
    given: the exact bytes published), ``:<first 32 hex digits of sha256(data)>``.

    The tenant keeps one tenant's id from swallowing another's inside the server's dedup window (issue #17 defect
    4). The content digest (facts only) lets the server drop only a *byte-identical* repeat (a retried publish, a
    re-run import): a second event of the same tenant with the same id but other content is stored, and the
    projectors dead-letter it as a conflict (engine/runtime/runner.py ``_dedupe``) instead of the server hiding it for
    24 h. Derived events (``data`` omitted) keep ``<tenant>:<event id>``: their ids are deterministic from their sources
    and a re-derivation (e.g. the enricher redoing a batch after a crash) must be dropped, the first recorded model
    output wins (DESIGN.md "Why derived events").

    Tenant tokens never contain ``:`` (``events.model.TOKEN_PATTERN``), so the key is unambiguous. The header is
    still written by the publisher: a publisher that forges another tenant's key can only be detected by a reader of
    the stream: every publisher checks a duplicate acknowledgement (``engine.client.publishing.settle``).

    ``key`` (issue #26 item 2): the tenant's dedup key, ``HMAC(deployment secret, tenant)``
    (``engine.client.publishing.tenant_dedup_key``); with it the digest is ``HMAC-SHA256(key, data)``, which no other
    tenant can compute, so another tenant cannot take this id in the first place. ``None``: the plain sha256 (a
    deployment whose facts stream carries no secret, benchmarks)."""
    dedup = f"{tenant_id}:{event_id}"
    if data is not None:
        digest = hmac.new(key, data, hashlib.sha256) if key is not None else hashlib.sha256(data)
        dedup += ":" + digest.hexdigest()[:32]
    return dedup
