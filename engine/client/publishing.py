"""The one publish path of facts (issue #26 item 2): every publisher's JetStream acknowledgement goes through
``settle``, so a duplicate acknowledgement is believed only when it names the caller's own message.

Why: JetStream de-duplicates on ``Nats-Msg-Id`` alone, per stream, and that header is written by the publisher. The
facts of every tenant share one stream (one sequence: ``after_seq`` read-your-writes, one projector consumer), so a
tenant allowed to publish only on ``<root>.fact.<its tenant>.*.*`` can still put *another* tenant's message id
(``events.msg_id``: ``<tenant>:<event id>:<content digest>``, predictable for UUIDv5 ids of public data or known
keys, and known content) on its own message first. The server then answers the victim's publish ``duplicate`` with
the attacker's sequence and stores nothing: the victim's turn never exists. Before this module only ``memengine
ingest`` (``engine.ops.publish.publish_all``) checked; ``MemoryClient.publish`` (and so the HTTP gateway, MCP and
every adapter) trusted ``ack.duplicate``.

The rule (``settle``): a duplicate acknowledgement is the caller's own message only if the message stored at the
acknowledged sequence has the same tenant, thread and event type in its subject and the same bytes (``stored_is``).
Anything else is a collision: the event is published again under the next id of a short deterministic chain
(``reclaim_id``: ``<id>:r1``, ``:r2``, ... then a random suffix nobody else can have chosen) and counted as
reclaimed; the projectors still fold it once per event id (``engine.runtime.dedupe``). A legitimate retry (same
tenant, same event id, same bytes) is still answered as the duplicate with the first sequence, also after a
reclaim (it walks the same chain to its own copy): exactly-once is kept.

**The server-side defence** (the header a tenant can choose, made one it cannot compute): a fact's message id ends
in a digest keyed by the tenant's dedup key (``tenant_dedup_key``: HMAC of a per-deployment secret kept in the facts
stream's metadata, which only the engine's credentials can read). An agent gets its own tenant's key from the query
handler (``rpc.dedup_key``, answered only on the tenant-scoped subject NATS permissions bind to that tenant), so
tenant B can no longer compute the id of tenant A's next event, however predictable its event id and content.
Chosen over the alternatives: JetStream has no per-subject dedup (the window is per stream, keyed on the header
alone) and cannot derive a header from the subject or the credentials; per-tenant streams would scope the window
but split the one sequence every read-your-writes ``after_seq``, the projectors' single consumer and the partitions
are built on; an auth-callout or publish proxy that rewrites headers is a new service in the write path. The check
above stays: it covers a deployment whose stream has no secret yet, a leaked key, and a client that could not fetch
its key (it then publishes the plain digest rather than fail the write).

Who can check: reading a stored message needs the stream's direct-get API, which the engine's own connection has
(``Engine.client``: the HTTP gateway, the in-process MCP server, ingest) and an agent user of one tenant must not
have (it could read every tenant's facts by sequence; ``deploy/nats/accounts.conf``). A client without it asks the
query handler instead (``rpc.published``, answered only on the caller's tenant-scoped subject), see
``MemoryClient``. Needs only nats-py and ``memengine.events`` (the client's base install).
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from nats.js.errors import NotFoundError

from memengine.events import DEDUP_SECRET_KEY, Subjects

#: ``owns(seq, subject, data)``: whether the message stored at ``seq`` is this publisher's ``data`` on ``subject``.
Owns = Callable[[int, str, bytes], Awaitable[bool]]


def stored_is(subjects: Subjects, stored_subject: str, stored_data: bytes, subject: str, data: bytes) -> bool:
    """Whether a stored message (``stored_subject``, ``stored_data``) is the message ``data`` published on
    ``subject``: same tenant, thread and event type (the stored subject may carry the partition token the server
    adds, ``Subjects.parse_fact(partitioned=True)``) and the same bytes. ``False`` for anything that is not a fact."""
    try:
        return (stored_data == data and subjects.parse_fact(stored_subject, partitioned=True)
                == subjects.parse_fact(subject))
    except ValueError:  # not a fact subject: not this event
        return False


def digest_of(data: bytes) -> str:
    """sha256 hex of the published bytes: what ``rpc.published`` compares (the bytes themselves need not travel)."""
    return hashlib.sha256(data).hexdigest()


async def dedup_secret(js: Any, stream: str) -> str | None:
    """The deployment's dedup secret from the facts stream's metadata (``events.DEDUP_SECRET_KEY``; set by
    ``engine.adapters.jetstream.ensure_streams``), ``None`` if it has none. Needs the JetStream API (the engine's
    credentials)."""
    info = await js.stream_info(stream)
    secret: str | None = (info.config.metadata or {}).get(DEDUP_SECRET_KEY)
    return secret


def tenant_dedup_key(secret: str, tenant: str) -> bytes:
    """A tenant's dedup key: ``HMAC-SHA256(secret, tenant)``. ``events.msg_id(..., key=)`` keys a fact's digest
    with it, so only the engine and that tenant's own clients (which get it from ``rpc.dedup_key`` on the tenant's
    subject) can compute the tenant's message ids."""
    return hmac.new(secret.encode(), tenant.encode(), hashlib.sha256).digest()


def stored_owner(js: Any, stream: str, subjects: Subjects) -> Owns:
    """An ``Owns`` that reads the message at ``seq`` of ``stream`` (direct get; needs the JetStream API of the
    account, i.e. the engine's credentials). A message gone since (forgotten, aged out) is not the caller's."""

    async def owns(seq: int, subject: str, data: bytes) -> bool:
        try:
            stored = await js.get_msg(stream, seq, direct=True)
        except NotFoundError:
            return False
        return stored_is(subjects, stored.subject, stored.data or b"", subject, data)

    return owns


#: Reclaim ids tried in order (``<dedup id>:r1`` .. ``:r<n>``) before a random one: a retry of a reclaimed event
#: walks the same chain and finds its first copy (exactly-once kept); an attacker must burn one message per step.
RECLAIM_CHAIN = 8


def reclaim_id(dedup_id: str, step: int) -> str:
    """The message id of the ``step``-th republish of an event whose own id was taken by another message:
    ``<dedup_id>:r<step>`` up to ``RECLAIM_CHAIN`` (deterministic: a retry finds the same copy), then a random
    suffix that no other publisher can have used."""
    return f"{dedup_id}:r{step}" if step <= RECLAIM_CHAIN else f"{dedup_id}:{uuid.uuid4().hex}"


async def settle(ack: Any, *, subject: str, data: bytes, dedup_id: str, owns: Owns,
                 republish: Callable[[str], Awaitable[Any]]) -> tuple[Any, bool]:
    """The acknowledgement to report for a publish of ``data`` on ``subject`` under ``dedup_id``, and whether the
    event's own id was taken (it was reclaimed, now or by an earlier attempt).

    A fresh ack, or a duplicate ack naming the caller's own message (``owns``), is returned as is. A duplicate ack
    naming any other message is a collision (module docstring): the same bytes are published again under
    ``reclaim_id(dedup_id, 1)``, ``2``, ... until the ack is fresh or names the caller's own copy, so a retry of a
    reclaimed event is still answered ``duplicate`` with its first sequence. Errors of ``owns`` or ``republish``
    propagate: the caller then does not know whether its event is stored, and must not say it is."""
    step = 0
    while ack.duplicate and not await owns(ack.seq, subject, data):
        step += 1
        ack = await republish(reclaim_id(dedup_id, step))
    return ack, step > 0
