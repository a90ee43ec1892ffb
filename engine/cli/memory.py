"""CLI of the memory lifecycle (issue #4): ``remember``, ``retract``, ``memories promote``, ``consolidate``,
``scratchpad``. (The consolidation schedule of ``memengine up`` is started by ``engine.bootstrap.lifespan``.)

Every change goes through the log: ``remember`` / ``retract`` / ``promote`` publish facts (``MemoryAsserted``,
``MemoryRetracted``, ``MemoryPromoted``) that the enricher turns into derived events; ``consolidate`` publishes one
``MemoriesConsolidated`` derived event. No command updates a read model directly. Each command waits until its
change is folded and prints the item as it now stands (``--json`` for machines).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
import typer
from rich.markup import escape

from memengine.engine.cli.options import (
    ROLES,
    Grid,
    JsonOpt,
    LazyModule,
    TenantOpt,
    emit_json,
    ensure_current,
    err,
    lifespan,
    out,
    run,
    settings_from_options,
)
from memengine.engine.wire.errors import RpcError

if TYPE_CHECKING:
    import asyncio

    from memengine.engine.bootstrap import Engine
else:  # asyncio pulls in ssl and sockets: imported when a command first runs (engine.cli.options, "Import cost")
    asyncio = LazyModule("asyncio")

WAIT_S = 60.0


async def _item_for_fact(engine: Engine, tenant: str, event_id: str, timeout: float = WAIT_S) -> dict[str, Any]:
    """The memory item a fact was linked to (``memory_item_sources.source_event_id``), once folded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        row = await engine.pool.fetchrow(
            "SELECT s.memory_id, s.action, i.status, i.type, i.text FROM memory_item_sources s"
            " JOIN memory_items i ON i.tenant_id = s.tenant_id AND i.memory_id = s.memory_id"
            " WHERE s.tenant_id = $1 AND s.source_event_id = $2::uuid ORDER BY s.memory_id LIMIT 1",
            tenant, event_id)
        if row is not None:
            return dict(row)
        if loop.time() > deadline:
            raise RpcError("unavailable", f"the fact {event_id} was not derived within {timeout:.0f}s "
                                          "(is the enricher running? `memengine up`)")
        await asyncio.sleep(0.05)


async def _resolve(engine: Engine, tenant: str, memory_id: str) -> dict[str, Any]:
    """Full item (short ids from MEMORY.md / USER.md accepted); ``RpcError("unknown_memory")`` otherwise."""
    chain = await engine.client(tenant).audit(memory_id)
    item: dict[str, Any] = msgspec.to_builtins(chain.memory)
    return item


async def _change(tenant: str, memory_id: str, publish: Callable[[Any, str], Awaitable[Any]], allowed: Collection[str],
                  expect: str, quiet: bool) -> dict[str, Any]:
    settings = settings_from_options()
    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet)
        item = await _resolve(engine, tenant, memory_id)
        if item["status"] not in allowed:
            raise RpcError("invalid_request", f"memory {item['memory_id']} is {item['status']}; expected "
                                              f"{' or '.join(allowed)}")
        ack = await publish(engine.client(tenant), item["memory_id"])
        await ensure_current(engine, quiet=quiet)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while True:
            status = await engine.pool.fetchval(
                "SELECT status FROM memory_items WHERE tenant_id = $1 AND memory_id = $2", tenant, item["memory_id"])
            if status == expect:
                break
            if loop.time() > deadline:
                raise RpcError("unavailable", f"change not folded within {WAIT_S:.0f}s (is `memengine up` running?)")
            await asyncio.sleep(0.05)
        return {"tenant": tenant, "memory_id": item["memory_id"], "previous_status": item["status"],
                "status": status, "event_id": ack.event_id, "seq": ack.seq, "text": item["text"]}


def remember(
    text: str = typer.Argument(..., help="What to remember, e.g. \"Maya prefers aisle seats\"."),
    user: str = typer.Option(None, "--user", "-u", help="Whose memory (user id)."),
    mtype: str = typer.Option(None, "--type", help="PROFILE, PREFERENCE, FACT, TASK, PATTERN, SKILL, RULE, ERROR, "
                                                   "EPISODIC (unknown types are stored as FACT). Default: inferred "
                                                   "from the text (likes/prefers -> PREFERENCE, lives in/works at -> "
                                                   "PROFILE, else FACT)."),
    importance: float = typer.Option(0.5, "--importance", min=0.0, max=1.0, help="0..1 (seed 001)."),
    tags: list[str] = typer.Option([], "--tag", help="Tag (repeatable)."),
    priority: str = typer.Option("PERMANENT", "--priority",
                                 help="TRANSIENT (1 d) | SHORT_TERM (3 d) | LONG_TERM (30 d) | PERMANENT (seed 004)."),
    thread: str = typer.Option("_", "--thread", help="Thread it belongs to (`_`: user-level)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Assert a memory explicitly ("remember this"): publishes a MemoryAsserted fact; the enricher records it with
    the usual merge decision (a duplicate links to the existing item, a contradiction replaces it).

    Example: memengine remember "Maya prefers aisle seats" --user maya   (type inferred: PREFERENCE)
    """
    if mtype is None:
        from memengine.engine.derive.offline import statement_type  # lazy (engine.cli.options, "Import cost")

        mtype = statement_type(text, user)
    settings = settings_from_options()

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
            ack = await engine.client(tenant).remember(text, user=user, memory_type=mtype, importance=importance,
                                                       tags=tags, priority=priority.upper(), thread=thread)
            await ensure_current(engine, quiet=json_out)
            item = await _item_for_fact(engine, tenant, ack.event_id)
            return {"tenant": tenant, "event_id": ack.event_id, "seq": ack.seq, "memory_id": item["memory_id"],
                    "decision": item["action"], "status": item["status"], "type": item["type"], "text": item["text"]}

    result = run(main)
    if json_out:
        emit_json(result)
    else:
        out.print(f"{result['decision']}: [bold]{result['memory_id']}[/bold] {result['type']} "
                  f"{escape(result['text'])} ({result['status']})")


def retract(
    memory_id: str = typer.Argument(..., help="Memory id (full, or the 8-character id printed in MEMORY.md)."),
    reason: str = typer.Option(None, "--reason", help="Why (kept in the audit trail)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Retract a memory: publishes MemoryRetracted; the item becomes `retracted` (kept, with invalid_at, so its
    history stays auditable)."""
    result = run(lambda: _change(tenant, memory_id, lambda c, mid: c.retract(mid, reason=reason),
                                  ("active", "quarantined"), "retracted", json_out))
    if json_out:
        emit_json(result)
    else:
        out.print(f"retracted {result['memory_id']} (was {result['previous_status']}): {escape(result['text'])}")


def promote(
    memory_id: str = typer.Argument(..., help="Id of a quarantined memory (`memengine memories --status "
                                              "quarantined`)."),
    reason: str = typer.Option(None, "--reason", help="Why (kept in the audit trail)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Promote a quarantined memory (confidence under 0.8, seed 003) into memory: publishes MemoryPromoted."""
    result = run(lambda: _change(tenant, memory_id, lambda c, mid: c.promote(mid, reason=reason),
                                  ("quarantined",), "active", json_out))
    if json_out:
        emit_json(result)
    else:
        out.print(f"promoted {result['memory_id']}: {escape(result['text'])}")


def _parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        err.print(f"[red]--as-of must be an ISO 8601 time[/red], got {value!r}")
        raise typer.Exit(2) from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def consolidate(
    user: str = typer.Option(None, "--user", "-u", help="Only this user's memories (default: the whole tenant)."),
    as_of: str = typer.Option(None, "--as-of", help="The clock expiry and decay are judged by (ISO 8601; default "
                              "now), compared with expires_at, which follows EVENT time (the turn's occurred_at). "
                              "Unlike `memories --as-of` (storage time: a fold of what was stored by then) it "
                              "consolidates today's memories as if it were that time; e.g. 2023-09-01 for LoCoMo."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan; publish nothing."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Consolidate memories (seed 004 §7, seed 002 §4.1): merge duplicates, decay importance, delete < 0.1,
    demote < 0.3 to TRANSIENT, expire, compress old rarely-used groups. Publishes ONE MemoriesConsolidated event
    listing every change and why; nothing is destroyed (superseded / deleted / expired items keep their rows).
    `memengine up` runs it every MEMENGINE_CONSOLIDATE_INTERVAL seconds (default daily; 0 = off)."""
    from memengine.engine.derive import consolidate as cons  # lazy (engine.cli.options, "Import cost")

    settings = settings_from_options()
    when = _parse_time(as_of)

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
            await ensure_current(engine, quiet=json_out)
            return await cons.run(engine, tenant, user=user, as_of=when, dry_run=dry_run)

    result = run(main)
    if json_out:
        emit_json(result)
        return
    counts = ", ".join(f"{k} {v}" for k, v in result["counts"].items())
    verb = "would change" if dry_run else ("published" if result["published"] else "nothing to publish")
    out.print(f"consolidation of {result['items_considered']} open memories as of {result['as_of'][:19]}: {counts}"
              f" ({verb}{', event ' + result['event_id'] if result['event_id'] else ''})")
    if result["changes"]:
        table = Grid("changes", ("memory_id", "action", "reason"), fold=("reason",))  # TSV when piped
        for c in result["changes"][:200]:
            table.add_row(c["memory_id"][:8], c["action"], c.get("reason") or "")
        table.print()
    for m in result["created"]:
        out.print(f"created {m['memory_id'][:8]} {m['memory_type']}: {escape(m['text'][:300])}")


def scratchpad(
    thread: str = typer.Argument(..., help="Thread id."),
    focus: str = typer.Option(None, "--focus", help="Set the current focus (task)."),
    done: str = typer.Option(None, "--done", help="Record a completed task."),
    note: str = typer.Option(None, "--note", help="Add a note."),
    clear: bool = typer.Option(False, "--clear", help="Remove the thread's working memory."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's working memory (seed 003 / seed 004 Scratchpad): current focus, recent completions, notes.
    Kept in a NATS KV bucket with a TTL (24 h, at most 50 entries); ephemeral, not rebuilt from the log."""
    settings = settings_from_options()
    writes = [(k, v) for k, v in (("focus", focus), ("done", done), ("note", note)) if v]

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles={"query"}) as engine:
            client = engine.client(tenant)
            if clear:
                await client.scratchpad_clear(thread)
            for kind, text in writes:
                await client.scratchpad_put(thread, kind, text)
            pad: dict[str, Any] = msgspec.to_builtins(await client.scratchpad(thread))  # as --json prints it
            return pad

    result = run(main)
    if json_out:
        emit_json(result)
        return
    out.print(f"[bold]current focus[/bold]: {escape(result['focus'] or '-')}")
    for t in result["completed"]:
        out.print(f"  done: {escape(t)}")
    for t in result["notes"]:
        out.print(f"  note: {escape(t)}")
    out.print(f"[dim]{len(result['entries'])} entries[/dim]")

