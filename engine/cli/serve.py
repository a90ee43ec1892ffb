"""``memengine up``, ``ingest`` and ``demo``: the commands that run the engine or feed it.

``up`` runs the servers, projectors, enricher and query handler until Ctrl-C (with the consolidation schedule and the
metrics endpoint that ``engine.bootstrap.lifespan`` starts from the settings); ``ingest`` publishes a file's events
and waits until they are folded; ``demo`` ingests the sample conversation and prints its context.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import msgspec
import typer

from memengine.engine.cli.options import (
    ROLES,
    JsonOpt,
    TenantOpt,
    Unavailable,
    emit_json,
    ensure_current,
    err,
    lifespan,
    one_line,
    out,
    run,
    settings_from_options,
    unavailable_cause,
)
from memengine.engine.cli.read import print_context, print_threads

# The engine (asyncpg, NATS, the fold, the models) is imported inside the command bodies: `memengine --help` must not
# load it (engine.cli.options, "Import cost").


#: Seconds between two status lines of `up` when stderr is not a terminal (a log file, journald).
UP_LINE_EVERY_S = 60.0


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


def up(
    role: list[str] = typer.Option(sorted(ROLES), "--role", help="Roles to run: projector, query (repeatable)."),
    metrics_port: int = typer.Option(None, "--metrics-port", help="Serve Prometheus /metrics, /healthz and /readyz "
                                     "on this port (default MEMENGINE_METRICS_PORT; 0 or unset: off)."),
    partitions: str = typer.Option(None, "--partitions", help="Facts partitions projected here, e.g. 0-3 or 0,2 "
                                   "(default all of MEMENGINE_PARTITIONS)."),
    http_port: int = typer.Option(None, "--http-port", min=0, max=65535, help="Serve the HTTP API (/v1, /docs) and "
                                  "the web console (/) on this port (default MEMENGINE_HTTP_PORT; unset: off; 0: any"
                                  " free port). API keys: MEMENGINE_HTTP_KEYS_FILE (none: loopback only, tenant "
                                  "default)."),
    projectors: str = typer.Option(None, "--projectors", help="Projector groups run by the projector role, "
                                   "comma-separated: core (transcript, thread activity), recall (recall rows and "
                                   "their embeddings), derived (memories, summaries, episodes). Default "
                                   "MEMENGINE_PROJECTORS, else all three."),
    json_out: bool = JsonOpt,
) -> None:
    """Run the servers, projectors and query handler until Ctrl-C, with a status line.

    Other memengine commands and agents on the same machine use this process's servers and handler. Scale-out
    (issue #6): with MEMENGINE_PARTITIONS=4, `up --role projector --partitions 0-1` and `--partitions 2-3` on two
    machines share the projection, per-thread order kept. `up --role projector --projectors recall` folds the recall
    rows (and embeds them) on other cores or machines than `up --projectors core,derived`: each group under its own
    lock, so a second process naming the same group stands by and takes over when the first stops.
    """
    from memengine.engine.adapters.security import redact_url  # lazy (engine.cli.options, "Import cost")

    settings = settings_from_options()
    if metrics_port is not None:
        settings = msgspec.structs.replace(settings, metrics_port=metrics_port)
    if http_port is not None:
        settings = msgspec.structs.replace(settings, http_port=http_port)
    if projectors is not None:
        from memengine.engine.adapters.settings import SettingsError

        try:
            settings = msgspec.structs.replace(settings, projectors=projectors)
            settings.validate()
        except SettingsError as exc:
            err.print(f"[red]--projectors[/red]: {exc}")
            raise typer.Exit(2) from None
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
        import asyncio  # lazy (engine.cli.options, "Import cost")

        from memengine.engine.runtime import malloc_tuning
        from memengine.engine.runtime.gc_tuning import tune_after_startup

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # the lifespan starts the metrics endpoint (settings.metrics_port, here --metrics-port) and the consolidation
        # schedule (issue #4) of a long-running engine
        async with lifespan(settings, roles=role, partitions=owned) as engine:
            # start-up done: freeze it and raise the young-generation threshold (engine.runtime.gc_tuning, issue #13)
            tune_after_startup(settings.gc_gen0_threshold)
            # and the C allocator: freed C-heap pages go back to the kernel every few seconds (malloc_tuning)
            malloc_tuning.cap_arenas(settings.malloc_arena_max)
            trimmer = asyncio.create_task(malloc_tuning.trim_periodically(settings.malloc_trim_s), name="malloc-trim")
            port = engine.metrics.port if engine.metrics is not None else None
            http_url = engine.http.url if engine.http is not None else None
            hello = {"event": "up", "nats_url": redact_url(engine.nats_url), "roles": sorted(role),
                     "subject_root": engine.subjects.root, "streams": msgspec.to_builtins(engine.streams),
                     "metrics_port": port, "partitions": owned, "http_url": http_url,
                     "projectors": sorted(settings.projector_groups) if "projector" in role else [],
                     "http_auth": None if engine.http is None else
                     ("loopback, tenant default" if engine.http.keys.open else "api keys")}
            if json_out:
                emit_json(hello)
            else:
                err.print(f"memengine up: NATS {redact_url(engine.nats_url)}, roles {', '.join(sorted(role))}"
                          + (f", metrics on :{port}" if port else "")
                          + (f", HTTP API and console on {http_url}" if http_url else "")
                          + (" (no API keys: loopback requests only, as tenant default)"
                             if engine.http is not None and engine.http.keys.open else "") + ". Ctrl-C to stop.")
            said, said_at = "", 0.0
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), timeout=1.0)
                except TimeoutError:
                    pass
                shown = _status_runner(engine, settings.projector_groups)
                s = shown.stats
                line = (("" if shown is engine.runner else f"{shown.name}: ")
                        + f"applied {s.events:,}  skipped {s.skipped:,}  dead {s.dead:,}  checkpoint {s.last_seq:,}"
                        f"  {'projecting' if shown.active else 'standby'}")
                if not json_out and sys.stderr.isatty():
                    err.print(line, end="\r")
                elif not json_out and line != said and loop.time() - said_at >= UP_LINE_EVERY_S:
                    # a log file gets a plain line when the figures changed, at most once a minute
                    err.print(line, soft_wrap=True)
                    said, said_at = line, loop.time()
            trimmer.cancel()
        if not json_out:
            err.print("\nstopped.")

    run(main)


def _status_runner(engine: Any, groups: frozenset[str]) -> Any:
    """The runner whose figures ``up``'s status line shows: the core projector's, else the first group run here."""
    runners = {"core": engine.runner, "recall": engine.recall, "derived": engine.derived}
    return next((runners[g] for g in ("core", "recall", "derived") if g in groups), engine.runner)


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
    from memengine.engine.ops.ingest import IngestFormatError, read_events  # lazy (engine.cli.options)
    from memengine.engine.ops.publish import dead_lettered, publish_all

    settings = settings_from_options()
    try:
        evs = read_events(path, tenant, fmt)
    except (IngestFormatError, ValueError) as exc:
        err.print(f"[red]cannot ingest[/red] {exc}")
        raise typer.Exit(1) from None

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles={"projector", "enricher"}, run_projector=False) as engine:
            summary = await publish_all(engine, evs, tenant, quiet=json_out)
            try:
                applied = await ensure_current(engine, quiet=json_out, target=summary["last_seq"], embed=True)
            except Exception as exc:
                cause = unavailable_cause(exc)
                if cause is None:
                    raise
                raise Unavailable(
                    f"PostgreSQL or NATS cannot be reached ({one_line(cause)}) while the projections caught up;"
                    f" the {summary['events']} events are stored in the log ({summary['published']} new, last seq"
                    f" {summary['last_seq']}) and are folded when the servers are back (`memengine up`, or run this"
                    " ingest again: it publishes nothing twice)"
                ) from exc
            summary["applied_seq"] = applied
            summary.update(await dead_lettered(engine, summary.pop("seqs")))
            return summary

    summary = run(main)
    if json_out:
        emit_json(summary)
    else:
        out.print(f"ingested {summary['published']} new events ({summary['duplicates']} already stored) into "
                  f"thread(s) {', '.join(summary['threads'])}; projections at seq {summary['applied_seq']}")
        if summary["dead_lettered"]:
            err.print(f"[yellow]warning[/yellow]: {summary['dead_lettered']} of them dead-lettered, "
                      f"{summary['conflicts']} because the tenant already holds another event under the same id "
                      "(see `memengine dlq list`)")
    if summary["dead_lettered"]:
        raise typer.Exit(1)  # not everything in the file made it into memory: scripts must notice


def demo(
    window: int = typer.Option(4000, "--window", "-w", help="Context window for the demo's context request."),
    tenant: str = TenantOpt,
    json_out: bool = JsonOpt,
) -> None:
    """The main job on the embedded servers: ingest a sample multi-session conversation (thinking blocks, tool
    calls), list the threads, and assemble the context for its last turn with the token accounting."""
    from memengine.engine.ops.ingest import SAMPLE_CONVERSATION, read_events  # lazy (engine.cli.options)
    from memengine.engine.ops.publish import dead_lettered, publish_all

    settings = settings_from_options()
    evs = read_events(SAMPLE_CONVERSATION, tenant, "jsonl")
    thread = evs[-1].thread_id

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
            summary = await publish_all(engine, evs, tenant, quiet=json_out)
            await ensure_current(engine, quiet=json_out, target=summary["last_seq"])
            summary.update(await dead_lettered(engine, summary.pop("seqs")))
            client = engine.client(tenant)
            listing = await client.threads()
            ctx = await client.context(thread, window=window, after_seq=summary["last_seq"])
            return {"ingest": summary, "threads": msgspec.to_builtins(listing), "context": msgspec.to_builtins(ctx)}

    result = run(main)
    if json_out:
        emit_json(result)
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
