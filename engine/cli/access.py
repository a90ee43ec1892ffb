"""``memengine served THREAD [--at TIME | --seq N]``: the auditor's view of the access trail (issue #30).

Without ``--at`` / ``--seq``: the answers given in the thread, newest first. With one of them: exactly what that
answer held (every memory item and turn, tier and rank), each linked to its provenance (``memengine audit ID``).
Reads the access read models after bringing them current (``engine.cli.options.with_reader``).
"""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from memengine.engine.cli.options import (
    Grid,
    JsonOpt,
    TenantOpt,
    emit_json,
    out,
    parse_when,
    run,
    settings_from_options,
    with_reader,
)


def served(
    thread: str = typer.Argument(..., help="The thread (`_` for recall answers bound to no thread)."),
    at: str = typer.Option(None, "--at", help="The last answer given at or before this time (ISO 8601)."),
    seq: int = typer.Option(None, "--seq", help="The answer at this sequence of the served stream."),
    limit: int = typer.Option(50, "--limit", "-n", help="Answers listed (without --at / --seq)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """What each answer of a thread was built from: the contexts and recalls served, and for one (--at / --seq)
    every memory item and turn it placed with tier, rank and provenance (issue #30)."""
    if at is not None and seq is not None:
        raise typer.BadParameter("give --at or --seq, not both")
    when = parse_when(at, "--at") if at is not None else None
    settings = settings_from_options()

    async def ask(e: Any) -> Any:
        from memengine.engine.read.access import AccessQueries  # lazy (engine.cli.options)

        if e.trail is not None:
            await e.trail.settled()
        return await AccessQueries(e.pool).served(tenant, thread, at=when, seq=seq, limit=limit)

    result = run(lambda: with_reader(settings, ask, quiet=json_out))
    if json_out:
        emit_json(result)
        return
    if "answers" in result:
        table = Grid(f"answers served in {thread}",
                     ["seq", "kind", "served at", "user", "items", "applied", "query"], fold=["query"])
        for a in result["answers"]:
            table.add_row(str(a["seq"]), a["kind"] + (" (pushed)" if a["pushed"] else ""), (a["served_at"] or "")[:19],
                          a["user"] or "", a["items"], a["applied_seq"], a["query"] or "")
        table.print()
        return
    a = result["answer"]
    out.print(f"[bold]{a['kind']}[/bold] seq {a['seq']} served {a['served_at'][:19]} (applied_seq {a['applied_seq']},"
              f" user {a['user'] or '-'}, window {a['window']}, query {escape(repr(a['query']))})")
    for it in a["items"]:
        p = it["provenance"]
        if it["kind"] == "memory":
            what = (f"{p['type']} {escape(p['text'][:80])} ({p['status']}; {p['audit']})" if p
                    else "(no longer in memory)")
        else:
            what = (f"turn {p['thread']}#{p['seq']} {p['speaker']} {(p['occurred_at'] or '')[:19]}" if p
                    else "(no longer in the recall rows)")
        out.print(f"  tier {it['tier']} rank {it['rank']:>3} {it['kind']:<6} {it['id']}  {what}")
