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
from rich.table import Table

from memengine.engine.cli.options import (
    AsOfOpt,
    AsOfSeqOpt,
    JsonOpt,
    TenantOpt,
    answer_as_of,
    emit_json,
    out,
    run,
    settings_from_options,
    with_reader,
)
from memengine.engine.wire.requests import ContextRequest, MemoriesRequest


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
    return escape(text if len(text) <= width else text[: width - 1] + "…")


def print_context(result: dict[str, Any]) -> None:
    """Human rendering of a context reply: messages by tier (``chosen by``: ``relevance`` for Tier-2 turns recalled
    for ``--query``, issue #14), then the token accounting."""
    table = Table(title=f"context for {result['thread']} ({result['mode']})", show_lines=False)
    for col in ("tier", "seq", "role", "user", "tokens", "chosen by", "content"):
        table.add_column(col, overflow="fold" if col == "content" else "ellipsis")
    for m in result["messages"]:
        table.add_row(str(m["tier"]), str(m["seq"]), m["role"], m.get("user_id") or "", str(m["tokens"]),
                      m.get("chosen_by") or "",
                      ("(condensed) " if m.get("condensed") else "") + _preview(m["content"]))
    out.print(table)
    b, t = result["budget"], result["tokens"]
    acct = Table(title="token accounting", show_header=True)
    for col in ("", "budget", "used"):
        acct.add_column(col)
    acct.add_row("window", str(b["window"]), "")
    acct.add_row("- margin 10%", str(b["margin"]), "")
    acct.add_row("- output reserve", str(b["reserve"]), "")
    acct.add_row("- system prompt", str(b["system"]), "")
    acct.add_row("Tier 1 summary+topics", str(b["tier1"]), str(t["tier1"]))
    acct.add_row("Tier 2 condensed", str(b["tier2"]), str(t["tier2"]))
    acct.add_row("Tier 3 verbatim", str(b["tier3"]), str(t["tier3"]))
    acct.add_row("total", str(b["total"]), str(t["total"]))
    out.print(acct)
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
    limit: int = typer.Option(100, "--limit", "-n", help="Messages per page (1-1000)."),
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
        out.print(f"[dim]{m['seq']:>6} {m['occurred_at'][:19]}[/dim] [bold]{who}[/bold]: {_preview(m['content'], 200)}")
    if result["next_from_seq"]:
        out.print(f"[dim]more: memengine history {thread} --from-seq {result['next_from_seq']}[/dim]")


def threads(
    limit: int = typer.Option(50, "--limit", "-n", help="How many threads (1-1000)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List the tenant's threads, most recently active first."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).threads(limit=limit), quiet=json_out))
    if json_out:
        emit_json(result)
    else:
        print_threads(result)


def print_threads(result: dict[str, Any]) -> None:
    table = Table(title=f"threads of tenant {result['tenant']}")
    for col in ("thread", "label", "messages", "sessions", "last active"):
        table.add_column(col)
    for t in result["threads"]:
        table.add_row(t["thread"], t["label"] or "", str(t["message_count"]), str(t["sessions_ended"]),
                      t["last_active_at"][:19])
    out.print(table)


def summary(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's rolling summary (seed 000 §3.1) and its recallable topics."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).summary(thread), quiet=json_out))
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
    """The thread's episodes: one per ended session (seed 004 §4)."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).episodes(thread), quiet=json_out))
    if json_out:
        emit_json(result)
        return
    for ep in result["episodes"]:
        out.print(f"[bold]{ep['session_id']}[/bold] {ep['started_at'][:16]} .. {ep['ended_at'][:16]} "
                  f"({ep['turns']} turns)")
        out.print(f"  {escape(ep['summary'][:400])}")
        if ep["goal"] or ep["outcome"]:
            out.print(f"  goal: {escape(ep['goal'] or '-')}; outcome: {escape(ep['outcome'] or '-')}")
        if ep["entities"]:
            out.print(f"  entities: {escape(', '.join(ep['entities'][:12]))}")


def memories(  # the callback of the `memories` sub-app (engine.cli.main), which also holds `promote`
    ctx: typer.Context,
    user: str = typer.Option(None, "--user", "-u", help="Only this user's memories."),
    thread: str = typer.Option(None, "--thread", help="Only memories derived from this thread."),
    mtype: str = typer.Option(None, "--type", help="PROFILE, PREFERENCE, FACT, TASK, RULE, ..."),
    status: str = typer.Option("active", "--status",
                               help="active | quarantined | superseded | retracted | deleted | expired | all"),
    limit: int = typer.Option(100, "--limit", "-n"),
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
        result = run(lambda: answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.memory.memories(
            MemoriesRequest(tenant=tenant, user=user, thread=thread, type=mtype, status=status, limit=limit,
                            include_expired=include_expired)), quiet=json_out))
    else:
        result = run(lambda: with_reader(settings, lambda e: e.client(tenant).memories(
            user=user, thread=thread, type=mtype, status=status, limit=limit, include_expired=include_expired),
            quiet=json_out))
    if json_out:
        emit_json(result)
        return
    table = Table(title=f"memories ({status})")
    # quarantined items say why (data.quarantine.code, engine.derive.offline.safety): the operator decides on that
    why = any(m["status"] == "quarantined" for m in result["memories"])
    for col in ("memory_id", "user", "type", "text", "conf", "sources", *(("quarantine",) if why else ())):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for m in result["memories"]:
        q = (m.get("data") or {}).get("quarantine") or {}
        reason = (q.get("code") or ("low_confidence" if m["status"] == "quarantined" else "")) if why else None
        table.add_row(m["memory_id"][:8], m["user_id"] or "", m["type"], escape(m["text"]), f"{m['confidence']:.2f}",
                      str(len(m["sources"])), *((reason if m["status"] == "quarantined" else "",) if why else ()))
    out.print(table)
    if result.get("expired_left_out"):
        when = result["as_of"]["at"][:19] if isinstance(result.get("as_of"), dict) else "now"
        out.print(f"{result['expired_left_out']} expired memories left out (expires_at before {when}); "
                  "--include-expired shows them")


def profile(
    user: str = typer.Argument(..., help="User id (e.g. Caroline after ingesting LoCoMo 26)."),
    out_dir: Path = typer.Option(None, "--out", help="Write MEMORY.md and USER.md into this directory."),
    include_expired: bool = typer.Option(False, "--include-expired", help="Also render active items whose "
                                         "expires_at has passed (left out and counted otherwise)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """MEMORY.md (core memory: rules, permanent and key facts) and USER.md (user profile), from the memories active
    and still valid now (expired ones are left out and counted; see `memengine memories --help`)."""
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).profile(
        user, include_expired=include_expired), quiet=json_out))
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
              + (f" until {m['invalid_at'][:19]}, superseded by {m['superseded_by']}" if m["invalid_at"] else "") + ")")
    q = (m.get("data") or {}).get("quarantine")
    if q:  # why the gate held it back (kept after a promotion: the audit trail shows it was released)
        out.print(f"  quarantine: {escape(str(q.get('code')))} ({escape(str(q.get('detail') or ''))})"
                  + ("" if m["status"] == "quarantined" else f"; now {m['status']}"))
    for d in result["derived_events"]:
        out.print(f"  <- {d['type']} seq {d['seq']} ({d['model']}, prompt v{d['prompt_version']}), decision "
                  f"{d['action']}")
        for src in d["sources"]:
            out.print(f"     <- turn seq {src['seq']} {src['occurred_at'] and src['occurred_at'][:19]} "
                      f"{src['user_id'] or src['role']}: {escape((src['text'] or '')[:200])}")


def recall(
    query: str = typer.Argument(..., help="What to look for (a question or keywords)."),
    thread: str = typer.Option(None, "--thread", help="Only this thread."),
    user: str = typer.Option(None, "--user", help="Only turns of this user."),
    k: int = typer.Option(None, "--k", help="How many turns (default MEMORY_RECALL_TOP_K)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Hybrid recall (full-text + vectors, RRF) over the tenant's turns; every hit names its source event.

    Example: memengine recall "When did Caroline go to the LGBTQ support group?" --thread locomo-26 --k 5
    """
    settings = settings_from_options()
    result = run(lambda: with_reader(settings, lambda e: e.client(tenant).recall(query, thread=thread, user=user, k=k),
                                     quiet=json_out, embed=True))
    if json_out:
        emit_json(result)
        return
    table = Table(title=f"recall ({result['mode']}{', ' + result['embedder'] if result['embedder'] else ''})")
    for col in ("#", "score", "thread", "seq", "text"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for i, h in enumerate(result["hits"], 1):
        table.add_row(str(i), f"{h['score']:.4f}", h["thread"], str(h["seq"]), escape(h["text"]))
    out.print(table)
    if result["mode"] == "fulltext":
        out.print("[yellow]full-text only[/yellow]: no embedder configured or no vectors yet")
