"""``memengine``: the command line.

Every command accepts ``--tenant`` (default ``default``) and ``--json``. With no ``NATS_URL`` / ``DATABASE_URL`` the
embedded servers are started under ``MEMENGINE_HOME`` (or re-used if ``memengine up`` or another command runs them).
A command that needs the read models current folds the log first, unless ``memengine up`` is already projecting,
in which case it waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from engine.bootstrap import ROLES, Engine, lifespan
from engine.logs import configure_logging
from engine.protocol import RpcError
from engine.security import redact_url
from engine.settings import Settings, SettingsError

app = typer.Typer(
    name="memengine",
    help=(
        "Event-sourced long-term memory for LLM agents.\n\n"
        "Agents publish turns to NATS JetStream; projectors fold them into PostgreSQL read models; the query "
        "handler answers with tiered context over NATS request/reply.\n\n"
        "Start with `memengine demo`. Servers: embedded by default (under MEMENGINE_HOME), or NATS_URL / "
        "DATABASE_URL."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)
T = TypeVar("T")

TenantOpt = typer.Option("default", "--tenant", "-t", help="Tenant id ([A-Za-z0-9_-], 1-128 chars).")
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def _settings() -> Settings:
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from None
    configure_logging(settings.log_level)
    return settings


def _run(fn: Callable[[], Awaitable[T]]) -> T:
    try:
        return asyncio.run(fn())
    except RpcError as exc:
        err.print(f"[red]error[/red] {exc.code}: {exc.message}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _emit_json(obj: Any) -> None:
    sys.stdout.write(msgspec.json.encode(obj).decode() + "\n")


async def _ensure_current(engine: Engine, *, quiet: bool, target: int | None = None, embed: bool = False) -> int:
    """Bring the read models up to the stream's end (or ``target``): fold here if this process holds the
    projector lock, else wait for the process that does. Returns the sequence reached."""
    info = await engine.js.stream_info(engine.streams.facts)
    goal = info.state.last_seq if target is None else target
    show = not quiet and sys.stderr.isatty()
    with Progress(TextColumn("projecting"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TimeRemainingColumn(), console=err, disable=not show, transient=True) as bar:
        start_seq = engine.runner.stats.last_seq
        task = bar.add_task("fold", total=max(goal - start_seq, 0), rate="")
        t0 = time.monotonic()

        def report(done: int, _target: int) -> None:
            rate = (done - start_seq) / max(time.monotonic() - t0, 1e-6)
            bar.update(task, completed=max(done - start_seq, 0), rate=f"{rate:,.0f} events/s")

        if engine.runner.active:
            reached = await engine.runner.catch_up(progress=report)
        else:
            reached, ok = await engine.service.progress.wait_for(goal, timeout=600)
            report(reached, goal)
            if not ok:
                err.print(f"[yellow]warning[/yellow]: projections at {reached}, stream at {goal}")
    if engine.recall.active:
        await engine.recall.catch_up()
    await _derive_current(engine, quiet=quiet)
    if embed:
        await _embed_current(engine, quiet=quiet)
    return reached


async def _embed_current(engine: Engine, *, quiet: bool) -> None:
    """Embed the turns that have no vector yet (recall's dense list), when this process projects."""
    if engine.embed_worker is None or not engine.recall.active:
        return
    with err.status(f"embedding turns ({engine.embed_worker.embedder.name})", spinner="dots") if (
            not quiet and sys.stderr.isatty()) else _nullcontext():
        await engine.embed_worker.catch_up()


async def _derive_current(engine: Engine, *, quiet: bool) -> None:
    """Run the enricher to the end of the facts while the derived projector folds what it publishes."""
    if not (engine.enricher.active and engine.derived.active):
        return
    stop = asyncio.Event()
    folding = asyncio.create_task(engine.derived.run(stop))
    try:
        with err.status("deriving memory (summaries, topics, memories, episodes)", spinner="dots") if (
                not quiet and sys.stderr.isatty()) else _nullcontext():
            await engine.enricher.catch_up()
    finally:
        stop.set()
        await folding
    await engine.derived.catch_up()


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def parse_partitions(spec: str) -> list[int]:
    """``"0-3"`` -> ``[0, 1, 2, 3]``, ``"0,2"`` -> ``[0, 2]``, ranges and lists mixed; ``ValueError`` otherwise."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{spec!r} is not a list of partitions like 0-3 or 0,2")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise ValueError(f"empty range {part!r}")
        out.update(range(a, b + 1))
    return sorted(out)


@app.command()
def up(
    role: list[str] = typer.Option(sorted(ROLES), "--role", help="Roles to run: projector, query (repeatable)."),
    metrics_port: int = typer.Option(None, "--metrics-port", help="Serve Prometheus /metrics, /healthz and /readyz "
                                     "on this port (default MEMENGINE_METRICS_PORT; 0 or unset: off)."),
    partitions: str = typer.Option(None, "--partitions", help="Facts partitions projected here, e.g. 0-3 or 0,2 "
                                   "(default all of MEMENGINE_PARTITIONS)."),
    json_out: bool = JsonOpt,
) -> None:
    """Run the servers, projectors and query handler until Ctrl-C, with a status line.

    Other memengine commands and agents on the same machine use this process's servers and handler. Scale-out
    (issue #6): with MEMENGINE_PARTITIONS=4, `up --role projector --partitions 0-1` and `--partitions 2-3` on two
    machines share the projection, per-thread order kept.
    """
    settings = _settings()
    bad = set(role) - ROLES
    if bad:
        err.print(f"[red]unknown role(s)[/red] {sorted(bad)}; expected {sorted(ROLES)}")
        raise typer.Exit(2)
    try:
        owned = parse_partitions(partitions) if partitions else None
    except ValueError as exc:
        err.print(f"[red]--partitions[/red]: {exc}")
        raise typer.Exit(2) from None

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with lifespan(settings, roles=role, partitions=owned) as engine, contextlib.AsyncExitStack() as extra:
            port = settings.metrics_port if metrics_port is None else metrics_port
            if port:
                from engine.metrics import MetricsServer

                server = await MetricsServer(engine, port, settings.metrics_host).start()
                extra.push_async_callback(server.stop)
            from engine.cli_memory import start_schedules  # issue #4: scheduled consolidation

            extra.push_async_callback(start_schedules(engine, role))
            hello = {"event": "up", "nats_url": redact_url(engine.nats_url), "roles": sorted(role),
                     "subject_root": engine.subjects.root, "streams": msgspec.to_builtins(engine.streams),
                     "metrics_port": server.port if port else None, "partitions": owned}
            if json_out:
                _emit_json(hello)
            else:
                err.print(f"memengine up: NATS {redact_url(engine.nats_url)}, roles {', '.join(sorted(role))}"
                          + (f", metrics on :{server.port}" if port else "") + ". Ctrl-C to stop.")
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), timeout=1.0)
                except asyncio.TimeoutError:
                    pass
                s = engine.runner.stats
                line = (f"applied {s.events:,}  skipped {s.skipped:,}  dead {s.dead:,}  checkpoint {s.last_seq:,}"
                        f"  {'projecting' if engine.runner.active else 'standby'}")
                if not json_out and sys.stderr.isatty():
                    err.print(line, end="\r")
        if not json_out:
            err.print("\nstopped.")

    _run(main)


@app.command()
def ingest(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="A LoCoMo .json file or a .jsonl of events."),
    fmt: str = typer.Option(None, "--format", help="locomo | jsonl (default: from the file name)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Publish a file's turns as events, then wait until the projections have caught up.

    Re-running the same ingest publishes nothing new (event ids are stable; the stream deduplicates).
    Example: memengine ingest ../shared/data/locomo-dev/26.json
    """
    from engine.ingest import IngestFormatError, read_events

    settings = _settings()
    try:
        evs = read_events(path, tenant, fmt)
    except (IngestFormatError, ValueError) as exc:
        err.print(f"[red]cannot ingest[/red] {exc}")
        raise typer.Exit(1) from None

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles={"projector", "enricher"}, run_projector=False) as engine:
            summary = await publish_all(engine, evs, tenant, quiet=json_out)
            applied = await _ensure_current(engine, quiet=json_out, target=summary["last_seq"], embed=True)
            summary["applied_seq"] = applied
            return summary

    summary = _run(main)
    if json_out:
        _emit_json(summary)
    else:
        out.print(f"ingested {summary['published']} new events ({summary['duplicates']} already stored) into "
                  f"thread(s) {', '.join(summary['threads'])}; projections at seq {summary['applied_seq']}")


async def publish_all(engine: Engine, evs: list[Any], tenant: str, *, quiet: bool = False) -> dict[str, Any]:
    """Publish ``evs`` pipelined (up to 512 unacknowledged) with a progress bar; count new vs duplicate."""
    from events import encode

    client = engine.client(tenant)
    js = engine.js
    published = duplicates = last_seq = 0
    pending: list[Any] = []
    show = not quiet and sys.stderr.isatty()

    async def drain(n: int) -> None:
        nonlocal published, duplicates, last_seq
        while len(pending) > n:
            ack = await pending.pop(0)
            last_seq = max(last_seq, ack.seq)
            if ack.duplicate:
                duplicates += 1
            else:
                published += 1

    with Progress(TextColumn("publishing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, disable=not show, transient=True) as bar:
        task = bar.add_task("publish", total=len(evs))
        for i, ev in enumerate(evs):
            subject = client.subjects.fact(ev.tenant_id, ev.thread_id, type(ev).__name__)
            pending.append(await js.publish_async(subject, encode(ev), headers={"Nats-Msg-Id": str(ev.event_id)}))
            await drain(512)
            if i % 64 == 0:
                bar.update(task, completed=i)
        await drain(0)
        bar.update(task, completed=len(evs))
    threads = sorted({ev.thread_id for ev in evs})
    return {"tenant": tenant, "threads": threads, "events": len(evs), "published": published,
            "duplicates": duplicates, "last_seq": last_seq}


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
    """Human rendering of a context reply: messages by tier, then the token accounting."""
    table = Table(title=f"context for {result['thread']} ({result['mode']})", show_lines=False)
    for col in ("tier", "seq", "role", "user", "tokens", "content"):
        table.add_column(col, overflow="fold" if col == "content" else "ellipsis")
    for m in result["messages"]:
        table.add_row(str(m["tier"]), str(m["seq"]), m["role"], m.get("user_id") or "", str(m["tokens"]),
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


AsOfOpt = typer.Option(None, "--as-of", help="Answer as of this time (ISO 8601, e.g. 2026-11-22T10:00:00Z).")
AsOfSeqOpt = typer.Option(None, "--as-of-seq", help="Answer as of this facts-stream sequence.")


async def _answer_as_of(settings: Settings, as_of: str | None, as_of_seq: int | None,
                        ask: Callable[[Any], Awaitable[Any]], *, quiet: bool) -> Any:
    """Time travel (issue #5 §3): fold the log up to the point into scratch tables, ask there, drop them.
    The answer gains ``as_of``: ``{facts_seq, derived_seq, at, fold_seconds}``."""
    from engine import rebuild as rb
    from engine.query import ProgressWatcher, QueryService

    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await _ensure_current(engine, quiet=quiet)
        try:
            point = await rb.resolve_as_of(engine, seq=as_of_seq,
                                           at=rb.parse_time(as_of) if as_of is not None else None)
        except rb.TimeTravelError as exc:
            raise RpcError("invalid_request", str(exc)) from None
        async with rb.as_of_pool(engine, point) as pool:
            result = await ask(QueryService(pool, settings, ProgressWatcher(pool)))
    answer = msgspec.json.decode(msgspec.json.encode(result))
    answer["as_of"] = {"facts_seq": point.facts_seq, "derived_seq": point.derived_seq, "at": point.at.isoformat(),
                       "fold_seconds": point.seconds}
    return answer


async def _with_reader(settings: Settings, fn: Callable[[Engine], Awaitable[T]], *, quiet: bool,
                       embed: bool = False) -> T:
    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await _ensure_current(engine, quiet=quiet, embed=embed)
        return await fn(engine)


@app.command()
def context(
    thread: str = typer.Argument(..., help="Thread id."),
    query: str = typer.Option(None, "--query", "-q", help="The current user message (for Tier-1 relevance)."),
    window: int = typer.Option(None, "--window", "-w", help="Model context window in tokens (default 128000)."),
    system_tokens: int = typer.Option(0, "--system-tokens", help="Tokens of your system prompt."),
    as_of: str = AsOfOpt,
    as_of_seq: int = AsOfSeqOpt,
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Assemble the tiered context for a thread within the window's budget (seed 000 §4).

    With --as-of / --as-of-seq: the context as it would have been answered then, from a fold of the log up to that
    point ("what did the agent know when it answered?")."""
    settings = _settings()
    if as_of is not None or as_of_seq is not None:
        from engine.protocol import ContextRequest

        result = _run(lambda: _answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.context(ContextRequest(
            tenant=tenant, thread=thread, window=window, query=query, system_tokens=system_tokens)), quiet=json_out))
    else:
        result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).context(
            thread, window=window, query=query, system_tokens=system_tokens), quiet=json_out))
    if json_out:
        _emit_json(result)
    else:
        print_context(result)


@app.command()
def history(
    thread: str = typer.Argument(..., help="Thread id."),
    limit: int = typer.Option(100, "--limit", "-n", help="Messages per page (1-1000)."),
    from_seq: int = typer.Option(0, "--from-seq", help="Start after this stream sequence."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Print a thread's transcript, oldest first."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).history(
        thread, limit=limit, from_seq=from_seq), quiet=json_out))
    if json_out:
        _emit_json(result)
        return
    for m in result["messages"]:
        who = m.get("user_id") or m["role"]
        out.print(f"[dim]{m['seq']:>6} {m['occurred_at'][:19]}[/dim] [bold]{who}[/bold]: {_preview(m['content'], 200)}")
    if result["next_from_seq"]:
        out.print(f"[dim]more: memengine history {thread} --from-seq {result['next_from_seq']}[/dim]")


@app.command()
def threads(
    limit: int = typer.Option(50, "--limit", "-n", help="How many threads (1-1000)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """List the tenant's threads, most recently active first."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).threads(limit=limit), quiet=json_out))
    if json_out:
        _emit_json(result)
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


@app.command()
def status(
    metrics_url: str = typer.Option(None, "--metrics-url", help="A running `memengine up`'s /metrics, for its "
                                    "events/s, RPC latency and LLM counters (default: 127.0.0.1 at "
                                    "MEMENGINE_METRICS_PORT, when set)."),
    json_out: bool = JsonOpt,
) -> None:
    """Streams, consumers, projection checkpoints with their lag, dead letters, and (from a running `up`'s metrics
    endpoint) events folded, RPC latency per method and LLM calls/tokens: the figures of /metrics."""
    settings = _settings()
    if metrics_url is None and settings.metrics_port:
        metrics_url = f"http://127.0.0.1:{settings.metrics_port}/metrics"

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=set()) as engine:
            streams = {}
            for name in (engine.streams.facts, engine.streams.derived, engine.streams.dlq):
                si = await engine.js.stream_info(name)
                streams[name] = {"messages": si.state.messages, "bytes": si.state.bytes,
                                 "first_seq": si.state.first_seq, "last_seq": si.state.last_seq}
            consumers = []
            for ci in await engine.js.consumers_info(engine.streams.facts):
                consumers.append({"name": ci.name, "pending": ci.num_pending, "ack_pending": ci.num_ack_pending,
                                  "redelivered": ci.num_redelivered, "waiting": ci.num_waiting,
                                  "delivered_seq": ci.delivered.stream_seq if ci.delivered else None})
            rows = await engine.pool.fetch(
                "SELECT projection, version, stream, last_seq, updated_at FROM projection_checkpoints ORDER BY 1")
            checkpoints = [{"projection": r["projection"], "version": r["version"], "stream": r["stream"],
                            "last_seq": r["last_seq"],
                            "lag": max(0, streams.get(r["stream"], {}).get("last_seq", 0) - r["last_seq"]),
                            "updated_at": r["updated_at"].isoformat()}
                           for r in rows]
            dead = await engine.pool.fetch(
                "SELECT consumer, status, count(*) AS n FROM dead_letters GROUP BY 1, 2 ORDER BY 1, 2")
            return {"nats_url": redact_url(engine.nats_url), "streams": streams, "consumers": consumers,
                    "checkpoints": checkpoints,
                    "dead_letters": [{"consumer": r["consumer"], "status": r["status"], "count": r["n"]}
                                     for r in dead]}

    result = _run(main)
    result["process"] = None
    if metrics_url:
        from engine.metrics import scrape

        try:
            result["process"] = scrape(metrics_url)
        except (OSError, ValueError) as exc:
            result["process"] = {"url": metrics_url, "error": str(exc)}
    if json_out:
        _emit_json(result)
        return
    t = Table(title="streams")
    for col in ("stream", "messages", "bytes", "first seq", "last seq"):
        t.add_column(col)
    for name, s in result["streams"].items():
        t.add_row(name, str(s["messages"]), str(s["bytes"]), str(s["first_seq"]), str(s["last_seq"]))
    out.print(t)
    t = Table(title="consumers")
    for col in ("consumer", "pending", "ack pending", "redelivered"):
        t.add_column(col)
    for c in result["consumers"]:
        t.add_row(c["name"], str(c["pending"]), str(c["ack_pending"]), str(c["redelivered"]))
    out.print(t)
    t = Table(title="projections")
    for col in ("projection", "version", "checkpoint", "lag"):
        t.add_column(col)
    for c in result["checkpoints"]:
        t.add_row(c["projection"], str(c["version"]), str(c["last_seq"]), str(c["lag"]))
    out.print(t)
    n = sum(d["count"] for d in result["dead_letters"] if d["status"] == "open")
    out.print(f"dead letters open: {n}")
    proc = result["process"]
    if proc and "error" in proc:
        out.print(f"[yellow]metrics endpoint {proc['url']} unreachable[/yellow]: {escape(proc['error'])}")
    elif proc:
        t = Table(title=f"memengine up ({proc['url']})")
        for col in ("figure", "value"):
            t.add_column(col)
        for name, v in proc["projection_events"].items():
            t.add_row(f"events folded {name}", f"{v:,}")
        for method, r in proc["rpc"].items():
            t.add_row(f"rpc {method}", f"{r['requests']:,} requests, {r['errors']:,} errors, mean {r['mean_ms']} ms")
        for key, v in proc["llm"].items():
            t.add_row(f"llm {key}", f"{v:,}")
        out.print(t)


@app.command()
def demo(
    window: int = typer.Option(4000, "--window", "-w", help="Context window for the demo's context request."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The main job on the embedded servers: ingest a sample multi-session conversation (thinking blocks, tool
    calls), list the threads, and assemble the context for its last turn with the token accounting."""
    from engine.ingest import SAMPLE_CONVERSATION, read_events

    settings = _settings()
    evs = read_events(SAMPLE_CONVERSATION, tenant, "jsonl")
    thread = evs[-1].thread_id

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
            summary = await publish_all(engine, evs, tenant, quiet=json_out)
            await _ensure_current(engine, quiet=json_out, target=summary["last_seq"])
            client = engine.client(tenant)
            listing = await client.threads()
            ctx = await client.context(thread, window=window, after_seq=summary["last_seq"])
            return {"ingest": summary, "threads": listing, "context": ctx}

    result = _run(main)
    if json_out:
        _emit_json(result)
        return
    s = result["ingest"]
    out.print(f"[bold]1. ingested[/bold] {s['events']} events of the sample conversation ({s['published']} new, "
              f"{s['duplicates']} already stored) into tenant {tenant!r}\n")
    out.print("[bold]2. threads[/bold]")
    print_threads(result["threads"])
    out.print(f"\n[bold]3. context for the last turn of {thread!r}[/bold] (window {window} tokens)")
    print_context(result["context"])
    out.print("\n[bold]Next:[/bold] ingest a LoCoMo conversation and ask for its context:\n"
              "  memengine ingest ../shared/data/locomo-dev/26.json\n"
              "  memengine context locomo-26 --window 8000\n"
              "  memengine status")


@app.command()
def summary(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's rolling summary (seed 000 §3.1) and its recallable topics."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).summary(thread), quiet=json_out))
    if json_out:
        _emit_json(result)
        return
    s = result["summary"]
    if s is None:
        out.print(f"no summary yet for {thread!r} (one is made every MEMORY_SUMMARY_THRESHOLD messages)")
    else:
        out.print(f"[bold]summary[/bold] of {s['message_count']} messages (up to seq {s['covers_until_seq']}, "
                  f"model {s['model']}):\n{escape(s['summary'])}")
    out.print("[bold]topics[/bold]: " + ", ".join(f"{t['topic']} ({t['mentions']})" for t in result["topics"]))


@app.command()
def episodes(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The thread's episodes: one per ended session (seed 004 §4)."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).episodes(thread), quiet=json_out))
    if json_out:
        _emit_json(result)
        return
    for ep in result["episodes"]:
        out.print(f"[bold]{ep['session_id']}[/bold] {ep['started_at'][:16]} .. {ep['ended_at'][:16]} "
                  f"({ep['turns']} turns)")
        out.print(f"  {escape(ep['summary'][:400])}")
        if ep["goal"] or ep["outcome"]:
            out.print(f"  goal: {escape(ep['goal'] or '-')}; outcome: {escape(ep['outcome'] or '-')}")
        if ep["entities"]:
            out.print(f"  entities: {escape(', '.join(ep['entities'][:12]))}")


memories_app = typer.Typer(help="Typed memory items; `memengine memories promote ID` lets one out of quarantine.")
app.add_typer(memories_app, name="memories")


@memories_app.callback(invoke_without_command=True)
def memories(
    ctx: typer.Context,
    user: str = typer.Option(None, "--user", "-u", help="Only this user's memories."),
    thread: str = typer.Option(None, "--thread", help="Only memories derived from this thread."),
    mtype: str = typer.Option(None, "--type", help="PROFILE, PREFERENCE, FACT, TASK, RULE, ..."),
    status: str = typer.Option("active", "--status",
                               help="active | quarantined | superseded | retracted | deleted | expired | all"),
    limit: int = typer.Option(100, "--limit", "-n"),
    as_of: str = AsOfOpt,
    as_of_seq: int = AsOfSeqOpt,
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Typed memory items (seed 001/004), each with the turns it came from (see `memengine audit`).

    With --as-of / --as-of-seq: the memories as they stood then (a fold of the log up to that point)."""
    if ctx.invoked_subcommand:  # `memengine memories promote ID`
        return
    settings = _settings()
    if as_of is not None or as_of_seq is not None:
        from engine.protocol import MemoriesRequest

        result = _run(lambda: _answer_as_of(settings, as_of, as_of_seq, lambda svc: svc.memory.memories(
            MemoriesRequest(tenant=tenant, user=user, thread=thread, type=mtype, status=status, limit=limit)),
            quiet=json_out))
    else:
        result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).memories(
            user=user, thread=thread, type=mtype, status=status, limit=limit), quiet=json_out))
    if json_out:
        _emit_json(result)
        return
    table = Table(title=f"memories ({status})")
    for col in ("memory_id", "user", "type", "text", "conf", "sources"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for m in result["memories"]:
        table.add_row(m["memory_id"][:8], m["user_id"] or "", m["type"], escape(m["text"]), f"{m['confidence']:.2f}",
                      str(len(m["sources"])))
    out.print(table)


@app.command()
def profile(
    user: str = typer.Argument(..., help="User id (e.g. Caroline after ingesting LoCoMo 26)."),
    out_dir: Path = typer.Option(None, "--out", help="Write MEMORY.md and USER.md into this directory."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """MEMORY.md (core memory: rules, permanent and key facts) and USER.md (user profile), from active memories."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).profile(user), quiet=json_out))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in result["files"].items():
            (out_dir / name).write_text(text + "\n")
    if json_out:
        _emit_json(result)
    elif out_dir is not None:
        out.print(f"wrote {', '.join(str(out_dir / n) for n in result['files'])} ({result['memories']} memories)")
    else:
        for name, text in result["files"].items():
            out.print(escape(text))
            out.print()


@app.command()
def audit(
    memory_id: str = typer.Argument(..., help="A memory id (from `memengine memories --json`)."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The provenance chain of a memory: item -> derived events (model, prompt version, decision) -> source turns."""
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).audit(memory_id), quiet=json_out))
    if json_out:
        _emit_json(result)
        return
    m = result["memory"]
    out.print(f"[bold]{m['type']}[/bold] {escape(m['text'])}  (status {m['status']}, valid from {m['valid_at'][:19]}"
              + (f" until {m['invalid_at'][:19]}, superseded by {m['superseded_by']}" if m["invalid_at"] else "") + ")")
    for d in result["derived_events"]:
        out.print(f"  <- {d['type']} seq {d['seq']} ({d['model']}, prompt v{d['prompt_version']}), decision "
                  f"{d['action']}")
        for src in d["sources"]:
            out.print(f"     <- turn seq {src['seq']} {src['occurred_at'] and src['occurred_at'][:19]} "
                      f"{src['user_id'] or src['role']}: {escape((src['text'] or '')[:200])}")


@app.command()
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
    settings = _settings()
    result = _run(lambda: _with_reader(settings, lambda e: e.client(tenant).recall(query, thread=thread, user=user, k=k),
                                       quiet=json_out, embed=True))
    if json_out:
        _emit_json(result)
        return
    table = Table(title=f"recall ({result['mode']}{', ' + result['embedder'] if result['embedder'] else ''})")
    for col in ("#", "score", "thread", "seq", "text"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for i, h in enumerate(result["hits"], 1):
        table.add_row(str(i), f"{h['score']:.4f}", h["thread"], str(h["seq"]), escape(h["text"]))
    out.print(table)
    if result["mode"] == "fulltext":
        out.print("[yellow]full-text only[/yellow]: no embedder configured or no vectors yet")


eval_app = typer.Typer(help="Retrieval evaluations.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("locomo")
def eval_locomo(
    files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, help="LoCoMo conversation .json files."),
    ks: str = typer.Option("5,10,20", "--k", help="Comma-separated cut-offs."),
    as_of_end: bool = typer.Option(False, "--as-of-end", help="Time decay measured from one day after the "
                                   "conversation's last turn (as an agent asking right after it), not from now."),
    json_out: bool = JsonOpt,
) -> None:
    """Evidence recall@k of the recall path, per LoCoMo category, plus recall latency.

    Each file goes into a fresh tenant (thread locomo-<stem>); every question of categories 1-4 with evidence is
    asked through the recall RPC. Example: memengine eval locomo ../shared/data/locomo-dev/*.json --json
    """
    from engine.eval_locomo import run_eval

    try:
        cutoffs = sorted({int(x) for x in ks.split(",") if x.strip()})
    except ValueError:
        err.print(f"[red]--k must be comma-separated integers[/red], got {ks!r}")
        raise typer.Exit(2) from None
    if not cutoffs or min(cutoffs) < 1 or max(cutoffs) > 100:
        err.print("[red]--k values must be in 1..100[/red]")
        raise typer.Exit(2)
    settings = _settings()
    show = not json_out and sys.stderr.isatty()

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
            with Progress(TextColumn("asking"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                          console=err, disable=not show, transient=True) as bar:
                task = bar.add_task("eval", total=None)
                return await run_eval(engine, files, cutoffs, quiet=json_out, as_of_end=as_of_end,
                                      progress=lambda d, t: bar.update(task, completed=d, total=t))

    result = _run(main)
    if json_out:
        _emit_json(result)
        return
    table = Table(title=f"LoCoMo evidence recall ({result['questions']} questions)")
    table.add_column("category")
    table.add_column("n")
    for k in cutoffs:
        table.add_column(f"R@{k}")
    table.add_row("all", str(result["questions"]), *[f"{result['recall_at'][str(k)]:.3f}" for k in cutoffs])
    for name, c in result["by_category"].items():
        table.add_row(name, str(c["questions"]), *[f"{c['recall_at'][str(k)]:.3f}" for k in cutoffs])
    out.print(table)
    out.print(f"latency p50 {result['latency_ms']['p50']} ms, p95 {result['latency_ms']['p95']} ms")


# `python -m engine.cli` runs this file as __main__: alias it so that sub-app modules register on this very `app`.
sys.modules.setdefault("engine.cli", sys.modules[__name__])
import engine.cli_dlq  # noqa: E402,F401  - registers `memengine dlq`
import engine.cli_ops  # noqa: E402,F401  - rebuild, verify, forget-thread, forget-user, operations
import engine.cli_memory  # noqa: E402,F401  - remember, retract, memories promote, consolidate, scratchpad


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
