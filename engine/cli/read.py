"""The reading commands: ``context``, ``history``, ``threads``, ``summary``, ``episodes``, ``memories``, ``profile``,
``audit``, ``recall``. Each brings the read models current first (``engine.cli.options.with_reader``), asks through
``MemoryClient`` (the RPC path an agent uses) and prints a table or ``--json``; ``context`` and ``memories`` also
answer ``--as-of`` a past point from a fold of the log (issue #5 §3). ``print_context`` / ``print_threads`` are the
human renderings ``memengine demo`` reuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from memengine.engine.cli.options import (
    AsOfOpt,
    AsOfSeqOpt,
    Grid,
    JsonOpt,
    TenantOpt,
    answer_as_of,
    as_request,
    emit_json,
    known_thread,
    known_user,
    limit_of,
    out,
    parse_when,
    piped,
    run,
    settings_from_options,
    with_reader,
)
from memengine.engine.wire.requests import ContextRequest, MemoriesRequest, ProfileRequest


def _preview(content: Any, width: int = 90) -> str:
    parts = []
    for b in content:
        kind = b.get("type")
        if kind == "text":
            parts.append(b["text"])
        elif kind == "thinking":
            parts.append(f"[thinking {len(b['thinking'])} chars]")
        elif kind == "tool_use":
            parts.append(f"[tool_use {b['name']}]")
        elif kind == "tool_result":
            parts.append(f"[tool_result {len(b['content'])} chars]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


async def _thread_reply(client: Any, thread: str, method: str) -> Any:
    """``client.<method>(thread)`` (``summary`` or ``episodes``, whose replies are empty for an unknown thread);
    when the reply is empty, ``known_thread`` turns an unknown thread into ``RpcError("unknown_thread")``."""
    reply = await getattr(client, method)(thread)
    if (reply.summary is None and not reply.topics) if method == "summary" else not reply.episodes:
        await known_thread(client, thread)
    return reply


async def _known(engine: Any, tenant: str, user: str | None, thread: str | None) -> None:
    """``unknown_user`` / ``unknown_thread`` for a filter naming a user or thread the tenant does not have."""
    if user is not None:
        await known_user(engine, tenant, user)
    if thread is not None:
        await known_thread(engine.client(tenant), thread)


def print_context(result: dict[str, Any]) -> None:
    """Human rendering of a context reply: messages by tier (``chosen by``: ``relevance`` for Tier-2 turns recalled
    for ``--query``, issue #14), then the token accounting."""
    table = Grid(f"context for {result['thread']} ({result['mode']})",
                 ("tier", "seq", "role", "user", "tokens", "chosen by", "content"), fold=("content",), titled=True)
    for m in result["messages"]:
        table.add_row(m["tier"], m["seq"], m["role"], m.get("user_id") or "", m["tokens"], m.get("chosen_by") or "",
                      ("(condensed) " if m.get("condensed") else "")
                      + _preview(m["content"], 1_000_000 if piped() else 90))
    table.print()
    b, t = result["budget"], result["tokens"]
    acct = Grid("token accounting", ("", "budget", "used"), titled=True)
    acct.add_row("window", str(b["window"]), "")
    acct.add_row("- margin 10%", str(b["margin"]), "")
    acct.add_row("- output reserve", str(b["reserve"]), "")
    acct.add_row("- system prompt", str(b["system"]), "")
    acct.add_row("Tier 1 summary+topics", str(b["tier1"]), str(t["tier1"]))
    acct.add_row("Tier 2 condensed", str(b["tier2"]), str(t["tier2"]))
    acct.add_row("Tier 3 verbatim", str(b["tier3"]), str(t["tier3"]))
    acct.add_row("total", str(b["total"]), str(t["total"]))
    acct.print()
    out.print(f"tokenizer {result['tokenizer']}; {len(result['event_ids'])} events used, {result['dropped']} older "
              f"messages left out; read models at seq {result['applied_seq']}"
              + (" [yellow](stale: after_seq not reached)[/yellow]" if result["stale"] else ""))


def context(
    thread: str = typer.Argument(..., help="Thread id."),
    query: str = typer.Option(None, "--query", "-q", help=(
        "The current user message: Tier 2 then holds the older turns recalled for it (chosen by relevance), "
        "Tier 1 its memories and topics first.")),
    window: int = typer.Option(None, "--window", "-w", help="Model context window in tokens (default 128000)."),
    system_tokens: int = typer.Option(0, "--system-tokens", help="Tokens of your system prompt."),
    as_of: str = AsOfOpt,
    as_of_seq: int = AsOfSeqOpt,
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Assemble the tiered context for a thread within the window's budget (seed 000 §4).

    With --as-of / --as-of-seq: the context as it would have been answered then, from a fold of the log up to that
    point ("what did the agent know when it answered?"). --as-of is STORAGE time (when memengine stored the facts),
    not event time (when the conversation happened)."""
    settings = settings_from_options()
    if as_of is not None or as_of_seq is not None:
        result = run(lambda: answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.context(ContextRequest(
            tenant=tenant, thread=thread, window=window, query=query, system_tokens=system_tokens)), quiet=json_out,
            recall=query is not None))
    else:
        result = run(lambda: with_reader(settings, lambda e: e.client(tenant).context(
            thread, window=window, query=query, system_tokens=system_tokens), quiet=json_out))
    if json_out:
        emit_json(result)
    else:
        print_context(result)


def history(
    thread: str = typer.Argument(..., help="Thread id."),
    limit: int = typer.Option(100, "--limit", "-n", min=1, help="Messages per page (1-1000)."),
    from_seq: int = typer.Option(0, "--from-seq", help="Start after this stream sequence."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Print a thread's transcript, oldest first."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).history(
        thread, limit=limit, from_seq=from_seq), quiet=json_out))
    if json_out:
        emit_json(result)
        return
    for m in result["messages"]:
        who = m.get("user_id") or m["role"]
        text = _preview(m["content"], 1_000_000 if piped() else 200)
        out.print(f"[dim]{m['seq']:>6} {m['occurred_at'][:19]}[/dim] [bold]{escape(who)}[/bold]: {escape(text)}")
    if result["next_from_seq"]:
        out.print(f"[dim]more: memengine history {thread} --from-seq {result['next_from_seq']}[/dim]")


def threads(
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="How many threads (1-1000)."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many (paging)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List the tenant's threads, most recently active first."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).threads(limit=limit, offset=offset),
                                     quiet=json_out))
    if json_out:
        emit_json(result)
    else:
        print_threads(result)


def print_threads(result: dict[str, Any]) -> None:
    """Human rendering of a threads reply (TSV when piped, ``engine.cli.options.Grid``)."""
    table = Grid(f"threads of tenant {result['tenant']}", ("thread", "label", "messages", "sessions", "last active"))
    for t in result["threads"]:
        table.add_row(t["thread"], t["label"] or "", t["message_count"], t["sessions_ended"], t["last_active_at"][:19])
    table.print()


def summary(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's rolling summary (seed 000 §3.1) and its recallable topics. An unknown thread is an error
    (`error unknown_thread`, exit 1), as in every command."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: _thread_reply(e.client(tenant), thread, "summary"),
                                     quiet=json_out))
    if json_out:
        emit_json(result)
        return
    s = result["summary"]
    if s is None:
        out.print(f"no summary yet for {thread!r} (one is made every MEMORY_SUMMARY_THRESHOLD messages)")
    else:
        out.print(f"[bold]summary[/bold] of {s['message_count']} messages (up to seq {s['covers_until_seq']}, "
                  f"model {s['model']}):\n{escape(s['summary'])}")
    out.print("[bold]topics[/bold]: " + ", ".join(f"{t['topic']} ({t['mentions']})" for t in result["topics"]))


def episodes(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's episodes: one per ended session (seed 004 §4), with the tools its turns called. An unknown
    thread is an error (`error unknown_thread`, exit 1), as in every command."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: _thread_reply(e.client(tenant), thread, "episodes"),
                                     quiet=json_out))
    if json_out:
        emit_json(result)
        return
    if not result["episodes"]:
        out.print(f"no episodes yet for {thread!r} (one is made when a session ends)")
    for ep in result["episodes"]:
        out.print(f"[bold]{ep['session_id']}[/bold] {ep['started_at'][:16]} .. {ep['ended_at'][:16]} "
                  f"({ep['turns']} turns)")
        out.print(f"  {escape(ep['summary'][:400])}")
        if ep["goal"] or ep["outcome"]:
            out.print(f"  goal: {escape(ep['goal'] or '-')}; outcome: {escape(ep['outcome'] or '-')}")
        if ep["entities"]:
            out.print(f"  entities: {escape(', '.join(ep['entities'][:12]))}")
        if ep.get("tools_used"):
            out.print(f"  tools: {escape(', '.join(ep['tools_used']))}")


def memories(  # the callback of the `memories` sub-app (engine.cli.main), which also holds `promote`
    ctx: typer.Context,
    user: str = typer.Option(None, "--user", "-u", help="Only this user's memories."),
    thread: str = typer.Option(None, "--thread", help="Only memories derived from this thread."),
    mtype: str = typer.Option(None, "--type", help="PROFILE, PREFERENCE, FACT, TASK, RULE, ..."),
    status: str = typer.Option("active", "--status",
                               help="active | quarantined | superseded | retracted | deleted | expired | all"),
    limit: int = typer.Option(100, "--limit", "-n", min=1, help="How many items (1-1000)."),
    include_expired: bool = typer.Option(False, "--include-expired", help="Also list active items whose expires_at "
                                         "has passed (left out and counted otherwise)."),
    as_of: str = AsOfOpt,
    as_of_seq: int = AsOfSeqOpt,
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Typed memory items (seed 001/004), each with the turns it came from (see `memengine audit`).

    Active means active and still valid now: an item whose expires_at has passed is left out (and counted) even
    before a consolidation records the expiry. expires_at follows EVENT time (the turn's occurred_at + the item's
    lifetime), so chats imported from long ago show their lasting items only; --include-expired shows the rest.

    With --as-of / --as-of-seq: the memories as they stood at that STORAGE time (a fold of what was stored by
    then), expiry judged at that time."""
    if ctx.invoked_subcommand:  # `memengine memories promote ID`
        return
    settings = settings_from_options()
    if as_of is not None or as_of_seq is not None:
        # decoded as the query handler decodes it, so a bad --status is the live path's invalid_request, not an
        # empty list after a fold of the whole log
        req = as_request(MemoriesRequest, {"tenant": tenant, "user": user, "thread": thread, "type": mtype,
                                           "status": status, "limit": limit, "include_expired": include_expired})
        result = run(lambda: answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.memory.memories(req),
                                          quiet=json_out))
    else:
        async def listing(e: Any) -> Any:
            reply = await e.client(tenant).memories(user=user, thread=thread, type=mtype, status=status, limit=limit,
                                                    include_expired=include_expired)
            if not reply.memories:  # empty: say so if the user or thread named does not exist
                await _known(e, tenant, user, thread)
            return reply

        result = run(lambda: with_reader(settings, listing, quiet=json_out))
    if json_out:
        emit_json(result)
        return
    # quarantined items say why (data.quarantine.code, engine.derive.offline.safety): the operator decides on that
    why = any(m["status"] == "quarantined" for m in result["memories"])
    # a listing beyond the active items says which state each row is in (superseded, expired, retracted, ...)
    states = status != "active"
    table = Grid(f"memories ({status})", ("memory_id", "user", "type", *(("status",) if states else ()), "text",
                                           "conf", "sources", *(("quarantine",) if why else ())), fold=("text",))
    for m in result["memories"]:
        q = (m.get("data") or {}).get("quarantine") or {}
        reason = (q.get("code") or ("low_confidence" if m["status"] == "quarantined" else "")) if why else None
        # piped: the full id, to feed `memengine audit` / `retract` (a terminal shows the 8-character prefix)
        table.add_row(m["memory_id"] if piped() else m["memory_id"][:8], m["user_id"] or "", m["type"],
                      *((m["status"],) if states else ()), m["text"],
                      f"{m['confidence']:.2f}", len(m["sources"]),
                      *((reason if m["status"] == "quarantined" else "",) if why else ()))
    table.print()
    if result.get("expired_left_out"):
        when = result["as_of"]["at"][:19] if isinstance(result.get("as_of"), dict) else "now"
        out.print(f"{result['expired_left_out']} expired memories left out (expires_at before {when}); "
                  "--include-expired shows them")


def profile(
    user: str = typer.Argument(..., help="User id (e.g. Caroline after ingesting LoCoMo 26)."),
    out_dir: Path = typer.Option(None, "--out", help="Write MEMORY.md and USER.md into this directory."),
    include_expired: bool = typer.Option(False, "--include-expired", help="Also render active items whose "
                                         "expires_at has passed (left out and counted otherwise)."),
    as_of: str = AsOfOpt,
    as_of_seq: int = AsOfSeqOpt,
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """MEMORY.md (core memory: rules, permanent and key facts) and USER.md (user profile), from the memories active
    and still valid now (expired ones are left out and counted; see `memengine memories --help`).

    With --as-of / --as-of-seq: the profile as it stood at that STORAGE time (a fold of what was stored by then),
    expiry judged at that time."""
    settings = settings_from_options()

    async def render(e: Any) -> Any:
        reply = await e.client(tenant).profile(user, include_expired=include_expired)
        if not reply.memories and not reply.expired_left_out:  # empty: an unknown user is an error
            await known_user(e, tenant, user)
        return reply

    if as_of is not None or as_of_seq is not None:
        result = run(lambda: answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.memory.profile(ProfileRequest(
            tenant=tenant, user=user, include_expired=include_expired)), quiet=json_out))
    else:
        result = run(lambda: with_reader(settings, render, quiet=json_out))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in result["files"].items():
            (out_dir / name).write_text(text + "\n")
    if json_out:
        emit_json(result)
    elif out_dir is not None:
        out.print(f"wrote {', '.join(str(out_dir / n) for n in result['files'])} ({result['memories']} memories)")
    else:
        for _name, text in result["files"].items():
            out.print(escape(text))
            out.print()


def audit(
    memory_id: str = typer.Argument(..., help="A memory id (from `memengine memories --json`)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The provenance chain of a memory: item -> derived events (model, prompt version, decision) -> source turns."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).audit(memory_id), quiet=json_out))
    if json_out:
        emit_json(result)
        return
    m = result["memory"]
    out.print(f"[bold]{m['type']}[/bold] {escape(m['text'])}  (status {m['status']}, valid from {m['valid_at'][:19]}"
              + (f" until {m['invalid_at'][:19]}" if m["invalid_at"] else "")
              + (f", superseded by {m['superseded_by']}" if m["superseded_by"] else "") + ")")
    q = (m.get("data") or {}).get("quarantine")
    if q:  # why the gate held it back (kept after a promotion: the audit trail shows it was released)
        out.print(f"  quarantine: {escape(str(q.get('code')))} ({escape(str(q.get('detail') or ''))})"
                  + ("" if m["status"] == "quarantined" else f"; now {m['status']}"))
    acc = result.get("access")
    if acc is not None:  # the access trail (issue #30): how often and where it was placed in an answer
        out.print(f"  access_count {acc['access_count']}, last_accessed_at {acc['last_accessed_at'] or 'never'}")
        for u in acc["used_in"]:
            out.print(f"     used in {u['kind']} of {u['thread']} (served seq {u['seq']}, tier {u['tier']},"
                      f" rank {u['rank']}) at {u['served_at'][:19]}")
    for key in ("supersedes", "superseded_by"):
        for ln in result.get(key) or []:  # both directions of the supersede / merge chain (issue #15 item 4)
            verb = ln["relation"] if key == "supersedes" else f"superseded by ({ln['relation']})"
            out.print(f"  {verb} {ln['memory_id']} {ln['type']} {escape(ln['text'] or '')} ({ln['status']})"
                      + (f": {escape(ln['reason'])}" if ln.get("reason") else ""))
    for d in result["derived_events"]:
        out.print(f"  <- {d['type']} seq {d['seq']} ({d['model']}, prompt v{d['prompt_version']}), decision "
                  f"{d['action']}" + (f": {escape(d['reason'])}" if d.get("reason") else ""))
        for src in d["sources"]:
            out.print(f"     <- turn seq {src['seq']} {src['occurred_at'] and src['occurred_at'][:19]} "
                      f"{src['user_id'] or src['role']}: {escape((src['text'] or '')[:200])}")


def recall(
    query: str = typer.Argument(..., help="What to look for (a question or keywords)."),
    thread: str = typer.Option(None, "--thread", help="Only this thread."),
    user: str = typer.Option(None, "--user", "-u", help="Only turns (and memories) of this user."),
    limit: int = typer.Option(None, "--limit", "-n", min=1, max=100,
                              help="How many hits, 1-100 (default MEMORY_RECALL_TOP_K)."),
    k: int = typer.Option(None, "--k", min=1, max=100, hidden=True, help="Old spelling of --limit."),
    since: str = typer.Option(None, "--since", help="Only what happened at or after this EVENT time (ISO 8601; a "
                              "turn's occurred_at, a memory item's valid_at)."),
    until: str = typer.Option(None, "--until", help="Only what happened before this EVENT time (ISO 8601)."),
    sources: list[str] = typer.Option([], "--source", help="turns (default) and/or memories (typed memory items); "
                                      "repeatable."),
    types: list[str] = typer.Option([], "--type", help="Memory items of these types only (FACT, PREFERENCE, ...); "
                                    "repeatable."),
    tags: list[str] = typer.Option([], "--tag", help="Memory items carrying all these tags; repeatable."),
    status: list[str] = typer.Option([], "--status", help="Memory items of these statuses (default active; all for "
                                     "every status); repeatable."),
    include_expired: bool = typer.Option(False, "--include-expired", help="Also memory items whose expires_at has "
                                         "passed at --as-of."),
    as_of: str = typer.Option(None, "--as-of", help="The clock time decay and memory expiry are judged by (ISO "
                              "8601; default now), on the EVENT-time axis of expires_at: what was valid then among "
                              "what is stored NOW. Unlike `context --as-of` / `memories --as-of` (STORAGE time: a "
                              "fold of what was stored by then)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Hybrid recall (full-text + vectors, RRF) over the tenant's turns and/or memory items; every hit names its
    source event. Every filter of `MemoryClient.recall` is an option here.

    Example: memengine recall "When did Caroline go to the LGBTQ support group?" --thread locomo-26 -n 5
    """
    n = limit_of(limit, k, None)
    since_t, until_t, as_of_t = parse_when(since, "--since"), parse_when(until, "--until"), parse_when(as_of, "--as-of")
    settings = settings_from_options()

    async def ask(e: Any) -> Any:
        reply = await e.client(tenant).recall(
            query, thread=thread, user=user, limit=n, since=since_t, until=until_t, sources=sources or None,
            types=types or None, tags=tags or None, status=status or None, include_expired=include_expired or None,
            as_of=as_of_t)
        if not reply.hits:  # empty: say so if the user or thread named does not exist
            await _known(e, tenant, user, thread)
        return reply

    result = run(lambda: with_reader(settings, ask, quiet=json_out, embed=True))
    if json_out:
        emit_json(result)
        return
    table = Grid(f"recall ({result['mode']}{', ' + result['embedder'] if result['embedder'] else ''})",
                 ("#", "score", "thread", "seq", "text"), fold=("text",))
    for i, h in enumerate(result["hits"], 1):
        table.add_row(i, f"{h['score']:.4f}", h["thread"], h["seq"], h["text"])
    table.print()
    if result["mode"] == "fulltext":
        out.print("[yellow]full-text only[/yellow]: no embedder configured or no vectors yet")
