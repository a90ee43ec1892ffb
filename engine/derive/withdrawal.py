"""What the enricher derives from a ``TurnsWithdrawn`` fact (issue #26 item 6: withdrawn is not forgotten).

The OpenAI Agents session's ``pop_item`` / ``clear_session`` publish ``TurnsWithdrawn``. The facts projections fold it
themselves (``messages``, recall rows in ``projections.vectors``); derived memory has one writer, the derived
projector, so the enricher resolves the fact into ``SourcesWithdrawn`` events (``events.derived``):

- the withdrawn turns, from the log (``FactLog``, so turns already pruned from ``messages`` are found too): the named
  ids that are ``TurnRecorded`` facts of this thread before the fact (an id of another thread, or a turn recorded
  after the fact, is not withdrawn), or every such turn with ``all_before``;
- the memory items left without live evidence: every extraction link (add, merge, replace, keep_both, ignore) of the
  item is to a withdrawn turn, this one's or an earlier one's. Read from ``memory_item_sources`` (folded up to what
  the enricher published before this batch: ``Enricher._wait_for_projections``) plus this batch's unfolded
  ``MemoriesExtracted`` in ``out``. They are retracted;
- the items that keep living but took a withdrawn turn's wording in a merge: reworded as if it had not been merged;
- the items such a retracted item had replaced (``supersedes``, still superseded by it) that keep live evidence of
  their own: restored (the belief the withdrawn turn overturned, "I live in Oslo" before a withdrawn "I moved to
  Reykjavik", comes back, as if the turn had never been recorded);
- ``summary_reset`` when the thread's rolling summary covers a withdrawn turn (the enricher then re-summarises the
  turns left, ``engine.derive.summaries``).

Order across groups: the enricher reads the facts stream in order and a withdrawal only reaches turns before it, so
whatever it derived from a turn is published, and folded, before the withdrawal's ``SourcesWithdrawn``; a turn
withdrawn later in the same batch is not mined at all (``withdrawn_ahead``). A rebuild replays the derived stream
and derives nothing, so it reproduces the same state.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from memengine.engine.derive.offline import dedupe_hash, richer_text
from memengine.engine.read.transcript import FactLog
from memengine.events import (
    MemoriesConsolidated,
    MemoriesExtracted,
    Reworded,
    SourcesWithdrawn,
    TurnRecorded,
    TurnsWithdrawn,
    derived_event_id,
)

#: ``memory_item_sources.action`` of the links that are evidence for an item (the extraction decisions); status links
#: (retract, promote, the consolidation's) are not
EVIDENCE = ("add", "merge", "replace", "keep_both", "ignore")
#: withdrawn turn ids per ``SourcesWithdrawn`` (``events.derived``)
CHUNK = 1000
MODEL = "rule"
PROMPT_VERSION = "withdraw-1"


class Withdrawal:
    """The derived side of one ``TurnsWithdrawn``: ``events`` to publish (in order), the ``retracted`` item ids,
    the ``restored`` items ``(memory_id, type, text, user_id)``, the ``tasks`` texts of retracted TASK items
    (working-memory focus to drop), and ``reset`` (the summary goes)."""

    def __init__(self, events: list[Any], retracted: list[str], tasks: list[str], reset: bool,
                 restored: list[tuple[str, str, str, str | None]] | None = None) -> None:
        self.events, self.retracted, self.tasks, self.reset = events, retracted, tasks, reset
        self.restored = restored or []


def withdrawn_ahead(facts: list[tuple[int, Any, Any]]) -> tuple[dict[tuple[str, str, uuid.UUID], int],
                                                                 dict[tuple[str, str], int]]:
    """Withdrawals in a batch: ``({(tenant, thread, turn id): latest withdrawal seq}, {(tenant, thread): latest
    clear seq})``, so a turn withdrawn later in the same batch is not mined (``is_withdrawn``)."""
    by_id: dict[tuple[str, str, uuid.UUID], int] = {}
    cleared: dict[tuple[str, str], int] = {}
    for seq, _, ev in facts:
        if isinstance(ev, TurnsWithdrawn):
            for i in ev.event_ids:
                by_id[(ev.tenant_id, ev.thread_id, i)] = seq
            if ev.all_before:
                cleared[(ev.tenant_id, ev.thread_id)] = seq
    return by_id, cleared


def is_withdrawn(seq: int, ev: TurnRecorded, ahead: tuple[dict[tuple[str, str, uuid.UUID], int],
                                                          dict[tuple[str, str], int]]) -> bool:
    """Whether turn ``ev`` at ``seq`` is withdrawn by a later fact of the batch ``ahead`` describes."""
    by_id, cleared = ahead
    return (by_id.get((ev.tenant_id, ev.thread_id, ev.event_id), 0) > seq
            or cleared.get((ev.tenant_id, ev.thread_id), 0) > seq)


def _pending(tenant: str, out: list[Any]) -> tuple[dict[str, set[uuid.UUID]], set[uuid.UUID],
                                                   dict[str, tuple[str, str, str | None]], dict[str, list[str]]]:
    """This batch's unfolded derived events of ``tenant``: evidence links by item, turns already withdrawn, the
    ``(type, text, user)`` of the items they create, and the items each ``replace`` closed."""
    links: dict[str, set[uuid.UUID]] = {}
    gone: set[uuid.UUID] = set()
    kinds: dict[str, tuple[str, str, str | None]] = {}
    replaced: dict[str, list[str]] = {}
    for d in out:
        if d.tenant_id != tenant:
            continue
        if isinstance(d, SourcesWithdrawn):
            gone.update(d.withdrawn_event_ids)
        elif isinstance(d, (MemoriesExtracted, MemoriesConsolidated)):
            for m in (d.memories if isinstance(d, MemoriesExtracted) else d.created):
                owners = m.decision.target_ids if m.decision.action == "ignore" else [m.memory_id]
                for owner in owners:
                    links.setdefault(owner, set()).update(m.source_event_ids or d.source_event_ids)
                kinds[m.memory_id] = (m.memory_type, m.text, m.user_id)
                if m.decision.action == "replace":
                    replaced.setdefault(m.memory_id, []).extend(m.decision.target_ids)
    return links, gone, kinds, replaced


async def _live(pool: asyncpg.Pool, tenant: str, mids: list[str], gone: set[uuid.UUID],
                links: dict[str, set[uuid.UUID]]) -> dict[str, bool]:
    """Whether each item keeps a piece of evidence that is not withdrawn (folded links, and this batch's)."""
    rows = await pool.fetch(
        "SELECT memory_id, bool_or(action = ANY($4::text[]) AND withdrawn_by IS NULL"
        "                          AND NOT (source_event_id = ANY($3::uuid[]))) AS live"
        "  FROM memory_item_sources WHERE tenant_id = $1 AND memory_id = ANY($2::text[]) GROUP BY memory_id",
        tenant, mids, list(gone), list(EVIDENCE))
    live = {r["memory_id"]: bool(r["live"]) for r in rows}
    return {m: live.get(m, False) or bool(links.get(m, set()) - gone) for m in mids}


class _Items:
    """The item changes of one withdrawal: ``retracted`` ids, ``restored`` items (``ExistingItem``-like tuples
    ``(memory_id, type, text, user_id)``), ``tasks`` (texts of retracted TASK items)."""

    def __init__(self, retracted: list[str], restored: list[tuple[str, str, str, str | None]],
                 tasks: list[str]) -> None:
        self.retracted, self.restored, self.tasks = retracted, restored, tasks


async def _items(pool: asyncpg.Pool, tenant: str, ids: list[uuid.UUID], out: list[Any]) -> _Items:
    """Items left with no live evidence once ``ids`` are withdrawn (retracted), and the items those had replaced
    that keep live evidence of their own (restored: the belief the withdrawn turn overturned comes back)."""
    links, earlier, kinds, replaced = _pending(tenant, out)
    gone = set(ids) | earlier
    rows = await pool.fetch(
        "SELECT DISTINCT i.memory_id, i.type, i.text, i.user_id, i.invalid_at IS NULL AS open"
        "  FROM memory_item_sources s JOIN memory_items i ON i.tenant_id = s.tenant_id AND i.memory_id = s.memory_id"
        " WHERE s.tenant_id = $1 AND s.source_event_id = ANY($2::uuid[]) AND s.action = ANY($3::text[])",
        tenant, list(gone), list(EVIDENCE))
    state = {r["memory_id"]: (bool(r["open"]), r["type"], r["text"], r["user_id"]) for r in rows}
    for mid, srcs in links.items():
        if srcs & gone and mid not in state:
            state[mid] = (True, *kinds.get(mid, ("", "", None)))
    live = await _live(pool, tenant, sorted(state), gone, links)
    retracted = sorted(m for m, (open_, *_) in state.items() if open_ and not live[m])
    tasks = [state[m][2] for m in retracted if state[m][1] == "TASK"]
    # what a retracted item had replaced: folded (relation + still superseded by it) and this batch's replaces
    closed = await pool.fetch(
        "SELECT i.memory_id, i.type, i.text, i.user_id FROM memory_relations r JOIN memory_items i"
        "    ON i.tenant_id = r.tenant_id AND i.memory_id = r.to_id"
        " WHERE r.tenant_id = $1 AND r.relation = 'supersedes' AND r.from_id = ANY($2::text[])"
        "   AND i.status = 'superseded' AND i.superseded_by = r.from_id", tenant, retracted)
    back = {r["memory_id"]: (r["type"], r["text"], r["user_id"]) for r in closed}
    for mid in retracted:
        for target in replaced.get(mid, []):
            if target not in back:
                row = await pool.fetchrow("SELECT type, text, user_id FROM memory_items WHERE tenant_id = $1"
                                          " AND memory_id = $2", tenant, target)
                kind = (row["type"], row["text"], row["user_id"]) if row else kinds.get(target)
                if kind:
                    back[target] = kind
    keep = await _live(pool, tenant, sorted(set(back) - set(retracted)), gone, links)
    restored = [(m, *back[m]) for m, ok in keep.items() if ok]
    return _Items(retracted, restored, tasks)


#: ``fetch(seq)``: the derived event stored at ``MEMORY_DERIVED`` sequence ``seq`` (``None`` when gone or unreadable)
Fetch = Callable[[int], Awaitable[Any]]


async def _reworded(pool: asyncpg.Pool, fetch: Fetch, tenant: str, gone: set[uuid.UUID],
                    retracted: set[str]) -> list[Reworded]:
    """Items that keep living but took a withdrawn turn's wording in a merge (``richer_text`` keeps the candidate's
    words when they are richer): their wording replayed over the live steps only. Each step's wording is read from
    its derived event (``derived_events.seq``: the item's text after the step); a live merge that changed the text
    brought the candidate's words, one that did not brought none. Items created in this batch are not looked at."""
    rows = await pool.fetch(
        "SELECT DISTINCT s.memory_id FROM memory_item_sources s JOIN memory_items i"
        "    ON i.tenant_id = s.tenant_id AND i.memory_id = s.memory_id"
        " WHERE s.tenant_id = $1 AND s.source_event_id = ANY($2::uuid[]) AND s.action = 'merge'"
        "   AND i.invalid_at IS NULL", tenant, list(gone))
    out: list[Reworded] = []
    for mid in sorted(r["memory_id"] for r in rows if r["memory_id"] not in retracted):
        steps = await pool.fetch(
            "SELECT d.seq, bool_and(s.withdrawn_by IS NOT NULL OR s.source_event_id = ANY($3::uuid[])) AS gone,"
            "       i.text, i.user_id"
            "  FROM memory_item_sources s JOIN derived_events d ON d.tenant_id = s.tenant_id"
            "       AND d.event_id = s.derived_event_id"
            "  JOIN memory_items i ON i.tenant_id = s.tenant_id AND i.memory_id = s.memory_id"
            " WHERE s.tenant_id = $1 AND s.memory_id = $2 AND s.action IN ('add', 'merge', 'replace', 'keep_both')"
            " GROUP BY d.seq, i.text, i.user_id ORDER BY d.seq", tenant, mid, list(gone))
        cur: str | None = None
        prev: str | None = None
        for st in steps:
            ev = await fetch(st["seq"])
            m = next((m for m in getattr(ev, "memories", []) if m.memory_id == mid), None)
            if m is None:  # a consolidation's copied links: the wording did not change there
                continue
            changed, prev = m.text != prev, m.text
            if st["gone"]:
                continue
            if cur is None:
                cur = m.text
            elif changed:
                cur = richer_text(m.text, cur)
        if steps and cur is not None and cur != steps[0]["text"]:
            out.append(Reworded(memory_id=mid, text=cur, dedupe_hash=dedupe_hash(steps[0]["user_id"], cur)))
    return out


async def withdrawal(pool: asyncpg.Pool, log: FactLog, seq: int, ev: TurnsWithdrawn, out: list[Any],
                     fetch: Fetch | None = None) -> Withdrawal:
    """The ``SourcesWithdrawn`` events of fact ``ev`` at ``seq`` (none when it withdraws no turn); see the module
    docstring. NATS and PostgreSQL errors propagate (the enricher retries the batch)."""
    if not ev.event_ids and not ev.all_before:
        return Withdrawal([], [], [], False)
    named = set(ev.event_ids)
    turns = await log.thread_turns(ev.tenant_id, ev.thread_id, after_seq=0, through_seq=seq - 1, limit=10**9)
    gone = [(s, t.event_id) for s, t in turns if ev.all_before or t.event_id in named]
    ids = list(dict.fromkeys(i for _, i in gone))
    if not ids:
        return Withdrawal([], [], [], False)
    items = await _items(pool, ev.tenant_id, ids, out)
    reworded = await _reworded(pool, fetch, ev.tenant_id, set(ids) | _pending(ev.tenant_id, out)[1],
                               set(items.retracted)) if fetch else []
    covered = await pool.fetchval("SELECT covers_until_seq FROM conversation_summaries WHERE tenant_id = $1"
                                  " AND thread_id = $2", ev.tenant_id, ev.thread_id)
    reset = covered is not None and min(s for s, _ in gone) <= covered
    reason = f"source turns withdrawn ({ev.reason})" if ev.reason else "source turns withdrawn"
    chunks = [ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)]
    events: list[Any] = []
    for n, chunk in enumerate(chunks):
        last = n == len(chunks) - 1
        events.append(SourcesWithdrawn(
            event_id=derived_event_id(ev.tenant_id, ev.thread_id, "withdrawn", str(ev.event_id), str(n)),
            tenant_id=ev.tenant_id, thread_id=ev.thread_id, occurred_at=ev.occurred_at, user_id=ev.user_id,
            session_id=ev.session_id, producer="memengine-enricher", causation_id=ev.event_id,
            source_event_ids=[ev.event_id], source_seq_range=[gone[0][0], seq], model=MODEL,
            prompt_version=PROMPT_VERSION, withdrawn_event_ids=chunk, retracted=items.retracted if last else [],
            restored=[r[0] for r in items.restored] if last else [], reworded=reworded if last else [],
            summary_reset=reset and last,
            reason=reason[:1000]))
    return Withdrawal(events, items.retracted, items.tasks, reset, items.restored)
