"""The projectors' exactly-once dedupe by event id (``applied_events``): which items of a batch are applied for the
first time. Split from engine/runtime/runner.py (issue #10: modules of at most 600 lines); the runner calls it inside
its batch transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import asyncpg
import structlog

from memengine.events import content_digest, retry_digest

log = structlog.get_logger("memengine.runner")

# The dedupe's insert (``claim``): the first copy of each (tenant, event id) claims it. The legacy form also treats
# an id applied before tenants were recorded (tenant ``'*'``, schema/0012) as taken: one index probe more per event,
# paid only by a key that has such rows (``legacy_ids``).
_INSERT_APPLIED = (
    "INSERT INTO applied_events (projector, tenant_id, event_id, seq, digest)"
    " SELECT $1, t, e, s, d FROM unnest($2::text[], $3::uuid[], $4::bigint[], $5::bytea[]) AS u(t, e, s, d)"
    " ON CONFLICT DO NOTHING RETURNING tenant_id, event_id")
_INSERT_APPLIED_LEGACY = (
    "INSERT INTO applied_events (projector, tenant_id, event_id, seq, digest)"
    " SELECT $1, t, e, s, d FROM unnest($2::text[], $3::uuid[], $4::bigint[], $5::bytea[]) AS u(t, e, s, d)"
    " WHERE NOT EXISTS (SELECT 1 FROM applied_events l"
    "                   WHERE l.projector = $1 AND l.tenant_id = '*' AND l.event_id = u.e)"
    " ON CONFLICT DO NOTHING RETURNING tenant_id, event_id")


class _Claimant(Protocol):
    """What ``claim`` reads and sets on a batch item (engine/runtime/runner.py ``_Item``)."""

    seq: int
    event: Any
    error: str | None


Item = TypeVar("Item", bound=_Claimant)


async def claim(conn: asyncpg.Connection, live: list[Item], *, key: str, legacy_ids: bool,
                original_digest: Callable[[int], Awaitable[tuple[bytes, bytes] | None]],
                projector: str) -> list[Item]:
    """The items of ``live`` (decoded, in stream order) whose ``(tenant, event id)`` the dedupe ``key`` (a projector
    name) has not applied before, claimed in ``applied_events`` in the caller's transaction (first copy wins).
    ``legacy_ids``: the key has rows from before schema/0012 (tenant ``'*'``). ``original_digest(seq)``: the
    ``(content_digest, retry_digest)`` of the stream message at ``seq`` under today's codecs (``None`` when gone).

    Issue #17 defect 4: the key carries the tenant (ids are chosen by publishers; import ids are UUIDv5 of
    public data), and the row keeps the event's canonical digest (``events.content_digest``). Another copy of
    an applied id is skipped silently when it is the same stream message (a redelivery) or the same event (same
    digest: a repeat, whatever version it was encoded in); otherwise it is a different event reusing the id and
    gets ``item.error`` (the caller dead-letters it) instead of vanishing. A stored digest that differs is
    checked against the first copy itself (the stream message at the row's seq, decoded by today's codecs), so
    an upcaster added since never turns a repeat into a conflict, and a copy that differs from it only in
    ``occurred_at`` (``events.retry_digest``: a keyed retry whose publisher lost the first time stamp, e.g. a
    restarted MCP server) is a repeat too: the first copy's time stays. Rows from before schema/0012 have no digest
    (compared through the first copy alone); those whose tenant the migration could not find carry ``'*'`` and
    still count as applied for every tenant, as they did."""
    if not live:
        return []
    digests = {id(i): content_digest(i.event) for i in live}
    first: dict[tuple[str, Any], Item] = {}
    for item in live:
        first.setdefault((item.event.tenant_id, item.event.event_id), item)
    keys = list(first)
    rows = await conn.fetch(
        _INSERT_APPLIED_LEGACY if legacy_ids else _INSERT_APPLIED,
        key, [k[0] for k in keys], [k[1] for k in keys], [first[k].seq for k in keys],
        [digests[id(first[k])] for k in keys],
    )
    new = {(r["tenant_id"], r["event_id"]) for r in rows}
    # what each key was applied as: (seq, digest or None for a row older than digests, tenant unknown ('*'))
    applied: dict[tuple[str, Any], tuple[int, bytes | None, bool]] = {
        k: (first[k].seq, digests[id(first[k])], False) for k in new}
    if len(new) < len(keys):
        old = [k for k in keys if k not in new]
        for r in await conn.fetch(
                "SELECT a.tenant_id AS t, a.event_id AS e, a.seq, a.digest, u.t AS asked"
                " FROM unnest($2::text[], $3::uuid[]) AS u(t, e)"
                " JOIN applied_events a ON a.projector = $1 AND a.event_id = u.e AND a.tenant_id IN (u.t, '*')",
                key, [k[0] for k in old], [k[1] for k in old]):
            applied.setdefault((r["asked"], r["e"]), (r["seq"], r["digest"], r["t"] == "*"))
    fresh: list[Item] = []
    for item in live:
        ident = (item.event.tenant_id, item.event.event_id)
        if ident in new and first[ident] is item:
            fresh.append(item)
            continue
        seq, digest, legacy = applied.get(ident, (item.seq, None, True))
        if seq == item.seq or legacy or digest == digests[id(item)]:
            continue  # a redelivery, a repeat, or an id applied before tenants were recorded: exactly once
        original = await original_digest(seq)
        if original is None and digest is None:
            continue  # nothing to compare: an id applied before digests were kept, its first copy gone
        if original is not None and original[0] == digests[id(item)]:
            continue  # the same event (its digest was taken under older codecs, or never)
        if original is not None and original[1] == retry_digest(item.event):
            log.info("event repeated with another occurred_at", projector=projector, seq=item.seq, first_seq=seq,
                     tenant=item.event.tenant_id, event_id=str(item.event.event_id))
            continue  # the same write re-stamped (a keyed retry that lost its first time stamp)
        item.error = (f"duplicate event id with different content: {item.event.event_id} of tenant "
                      f"{item.event.tenant_id!r} was applied from seq {seq}")
        log.warning("event id conflict", projector=projector, seq=item.seq, first_seq=seq,
                    tenant=item.event.tenant_id, event_id=str(item.event.event_id))
    return fresh
