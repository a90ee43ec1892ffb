"""``memengine dlq``: list, show, retry and drop dead letters (issue #5 §6). The logic is in
``engine.ops.dead_letters``.

``app`` is mounted as ``memengine dlq`` by ``engine.cli.main``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from memengine.engine.cli.options import (
    Grid,
    JsonOpt,
    LazyModule,
    emit_json,
    err,
    lifespan,
    out,
    run,
    settings_from_options,
)

if TYPE_CHECKING:
    from memengine.engine.ops import dead_letters as dlq
else:  # imported on first use: `memengine --help` must not load the engine (engine.cli.options, "Import cost")
    dlq = LazyModule("memengine.engine.ops.dead_letters")

app = typer.Typer(
    help=(
        "Dead letters: events a consumer could not decode or apply.\n\n"
        "Each is a row in the dead_letters table and a message on the <PREFIX>_DLQ stream, with the consumer, the "
        "error and the attempt count. Typical session:\n\n"
        "  memengine dlq list                      # what is open\n\n"
        "  memengine dlq show 7                    # the event, the error, the raw payload\n\n"
        "  memengine dlq retry 7                   # after a fix in the engine: back through the normal path\n\n"
        "  memengine dlq retry 7 --payload-file fixed.json   # after fixing the data\n\n"
        "  memengine dlq drop 7 --yes              # give up on it (kept for audit)\n\n"
        "Retry and drop are recorded in the operations table and logged. Nothing is dropped without `drop`."
    ),
    no_args_is_help=True,
)

ConsumerOpt = typer.Option(None, "--consumer", "-c", help=(
    "Only this consumer's dead letters (core, recall, derived, ...; its partitions core-p0, core-p1... too)."))
IdsArg = typer.Argument(None, help="Dead-letter ids (the `id` column of `memengine dlq list`).", show_default=False)
AllOpt = typer.Option(False, "--all", help="Every OPEN dead letter (of --consumer if given) instead of ids.")


def _fail(exc: dlq.DeadLetterError) -> typer.Exit:
    err.print(f"[red]error[/red] {exc.code}: {escape(exc.message)}")
    return typer.Exit(1)


def _check_selection(ids: list[int] | None, all_: bool) -> None:
    if bool(ids) == all_:
        err.print("[red]give dead-letter ids or --all[/red] (not both). See `memengine dlq list`.")
        raise typer.Exit(2)


async def _with_engine(settings: Any, fn: Any) -> Any:
    # roles=set(): no projector, enricher or query handler, just the connections (a retried event is folded by
    # whichever projector runs: `memengine up`, or the next reading command).
    async with lifespan(settings, roles=set()) as engine:
        return await fn(engine)


def _call(fn: Any) -> Any:
    """Run ``fn(engine)``; a ``DeadLetterError`` becomes exit code 1 with its code and message on stderr."""
    settings = settings_from_options()  # configuration errors exit 2 before any server starts
    try:
        return run(lambda: _with_engine(settings, fn))
    except dlq.DeadLetterError as exc:
        raise _fail(exc) from None


@app.command("list")
def list_cmd(
    consumer: str = ConsumerOpt,
    status: str = typer.Option("open", "--status", "-s", help="open | retried | dropped | all."),
    limit: int = typer.Option(100, "--limit", "-n", help="At most this many, oldest first."),
    json_out: bool = JsonOpt,
) -> None:
    """List dead letters (open ones by default), oldest first.

    Shows id, consumer, status, attempts, stream seq, subject, error and created time.
    JSON: {"dead_letters": [{id, consumer, stream, stream_seq, last_seq, subject, event_id, error, attempts,
    retries, status, retried_seq, created_at, updated_at, payload_bytes, corrected}], "count": n}.
    Example: memengine dlq list --consumer core --status all
    """
    rows = _call(lambda e: dlq.list_dead_letters(e.pool, consumer=consumer, status=status, limit=limit))
    if json_out:
        emit_json({"dead_letters": rows, "count": len(rows), "status": status, "consumer": consumer})
        return
    if not rows:
        out.print(f"no {'' if status == 'all' else status + ' '}dead letters"
                  + (f" for consumer {escape(consumer)}" if consumer else ""))
        return
    table = Grid(f"dead letters ({status})", ("id", "consumer", "status", "attempts", "stream seq", "subject", "error",
                                               "created"), fold=("error",))
    for r in rows:
        table.add_row(r["id"], r["consumer"], r["status"], r["attempts"], r["stream_seq"], r["subject"],
                      dlq.printable(r["error"], 200), r["created_at"][:19])
    table.print()
    out.print("[dim]details: memengine dlq show ID; then memengine dlq retry ID or memengine dlq drop ID[/dim]")


@app.command("show")
def show_cmd(
    dead_letter_id: int = typer.Argument(..., metavar="ID", help="Dead-letter id (from `memengine dlq list`)."),
    json_out: bool = JsonOpt,
) -> None:
    """One dead letter in full: the event, the error, the raw payload.

    The original event decoded (upcast) when possible, else the raw payload shown safely (control characters
    escaped; base64 in JSON), with consumer, error, attempts, subject, stream seq, times and the dlq operations
    that touched it.

    JSON: {"dead_letter": {... as in list, dlq_seqs}, "event": {...} | null, "decode_error": str | null,
    "payload": {bytes, sha256, text | null, base64}, "corrected": {event, decode_error, payload} | null,
    "operations": [{id, kind, actor, status, started_at}]}.
    """
    result = _call(lambda e: dlq.show(e, dead_letter_id))
    if json_out:
        emit_json(result)
        return
    d = result["dead_letter"]
    out.print(f"[bold]dead letter {d['id']}[/bold]  consumer {escape(d['consumer'])}  status {d['status']}  "
              f"attempts {d['attempts']}  retries {d['retries']}")
    out.print(f"stream {d['stream']} seq {d['stream_seq']} (last failing delivery {d['last_seq']}), "
              f"subject {escape(d['subject'])}")
    out.print(f"event id {d['event_id'] or '-'}; created {d['created_at'][:19]}, updated {d['updated_at'][:19]}")
    out.print(f"[red]error[/red]: {escape(dlq.printable(d['error']))}")
    _print_payload("original event", result["event"], result["decode_error"], result["payload"])
    if result["corrected"] is not None:
        c = result["corrected"]
        _print_payload("corrected payload (last retry)", c["event"], c["decode_error"], c["payload"])
    for o in result["operations"]:
        out.print(f"[dim]{o['started_at'][:19]} {o['kind']} by {escape(o['actor'])}: {o['status']}[/dim]")


def _print_payload(title: str, event: dict[str, Any] | None, error: str | None, payload: dict[str, Any]) -> None:
    if event is not None:
        out.print(f"[bold]{title}[/bold] (decoded, {payload['bytes']} bytes):")
        out.print(escape(dlq.printable(json.dumps(event, indent=2, ensure_ascii=False, default=str))))
        return
    out.print(f"[bold]{title}[/bold]: does not decode ({escape(dlq.printable(error or ''))}); raw "
              f"{payload['bytes']} bytes, sha256 {payload['sha256'][:16]}:")
    if payload["text"] is not None:
        out.print(escape(dlq.printable(payload["text"])))
    else:
        out.print(f"(not UTF-8) base64: {payload['base64'][:4000]}")


@app.command("retry")
def retry_cmd(
    ids: list[int] = IdsArg,
    all_: bool = AllOpt,
    consumer: str = ConsumerOpt,
    payload_file: Path = typer.Option(
        None, "--payload-file", exists=True, dir_okay=False,
        help="Retry ONE dead letter with these bytes instead (the fixed event JSON). It must decode; it is "
             "published on the subject its tenant/thread/type name. The original payload is kept for audit."),
    json_out: bool = JsonOpt,
) -> None:
    """Send dead letters back through the normal path (republish), or retry one with a corrected payload.

    Each is republished on its stream with a fresh message id (retry:<id>:<n>). Projectors that applied the
    event skip it; the one that failed applies it, or dead-letters it again (attempts + 1 on the same row, status
    open again). Marks them `retried`; open dead letters of other consumers for the same message go along.

    Retry unchanged after fixing the engine; use --payload-file after fixing the data (a decode error retried
    unchanged fails again). The event is folded by whichever projector runs (`memengine up`, or the next
    `memengine context`/`history`/`threads`). Exit 1 when every named id was skipped (e.g. dropped).

    JSON: {"operation_id", "retried": [{ids, stream, original_seq, subject, retry_seq, msg_id, duplicate,
    corrected, dlq_messages_deleted}], "skipped": [{id, reason}]}.
    """
    _check_selection(ids, all_)
    payload = payload_file.read_bytes() if payload_file is not None else None
    if payload is not None and (all_ or len(set(ids)) != 1):
        err.print("[red]--payload-file retries exactly one dead letter[/red]")
        raise typer.Exit(2)
    result = _call(lambda e: dlq.retry(e, ids or None, all_open=all_, consumer=consumer, payload=payload,
                                       payload_source=str(payload_file) if payload_file else None))
    if json_out:
        emit_json(result)
    else:
        _print_retried(result)
    if ids and not result["retried"]:
        raise typer.Exit(1)  # every named dead letter was skipped (dropped, or of another --consumer)


def _print_retried(result: dict[str, Any]) -> None:
    for r in result["retried"]:
        out.print(f"retried {', '.join(map(str, r['ids']))}: {r['stream']} seq {r['original_seq']} republished as "
                  f"seq {r['retry_seq']} on {escape(r['subject'])}" + (" (corrected payload)" if r["corrected"] else "")
                  + (" (already published by an earlier attempt)" if r["duplicate"] else ""))
    for s in result["skipped"]:
        out.print(f"[yellow]skipped[/yellow] {s['id']}: {s['reason']}")
    if not result["retried"] and not result["skipped"]:
        out.print("nothing to retry")


@app.command("drop")
def drop_cmd(
    ids: list[int] = IdsArg,
    all_: bool = AllOpt,
    consumer: str = ConsumerOpt,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask. Required when not run from a terminal."),
    json_out: bool = JsonOpt,
) -> None:
    """Give up on dead letters (asks first; --yes when not on a terminal).

    Status becomes `dropped` and their messages are deleted from the DLQ stream. The rows and their payloads stay
    in dead_letters for audit (`memengine dlq list --status dropped`).

    Asks for confirmation on a terminal; without a terminal it refuses (exit 2) unless --yes is given. Exit 1 when
    every named id was skipped.
    JSON: {"operation_id", "dropped": list of ids, "dlq_messages_deleted": n, "skipped": [{id, reason}]}.
    """
    _check_selection(ids, all_)
    interactive = sys.stdin.isatty()
    if not yes and not interactive:
        err.print("[red]refusing to drop without --yes[/red] (not a terminal, so nobody can confirm). "
                  "Nothing was dropped.")
        raise typer.Exit(2)

    async def main(engine: Any) -> dict[str, Any]:
        import asyncio  # lazy (engine.cli.options, "Import cost")

        if not yes:
            what = (f"every open dead letter{' of ' + consumer if consumer else ''}" if all_
                    else f"dead letter(s) {', '.join(map(str, ids))}")
            if all_:
                n = len(await dlq.list_dead_letters(engine.pool, consumer=consumer, status="open", limit=1_000_000))
                what += f" ({n})"
            if not await asyncio.to_thread(typer.confirm, f"Drop {what}?", default=False, err=True):
                return {"aborted": True}
        return await dlq.drop(engine, ids or None, all_open=all_, consumer=consumer)

    result = _call(main)
    if result.get("aborted"):
        err.print("nothing dropped")
        raise typer.Exit(1)
    if json_out:
        emit_json(result)
    else:
        _print_dropped(result)
    if ids and not result["dropped"]:
        raise typer.Exit(1)  # every named dead letter was skipped (already dropped, or of another --consumer)


def _print_dropped(result: dict[str, Any]) -> None:
    out.print(f"dropped {len(result['dropped'])} dead letter(s) {', '.join(map(str, result['dropped']))}; "
              f"{result['dlq_messages_deleted']} DLQ message(s) deleted")
    for s in result["skipped"]:
        out.print(f"[yellow]skipped[/yellow] {s['id']}: {s['reason']}")
