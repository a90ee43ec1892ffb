"""Operator commands: ``status``, ``rebuild``, ``verify``, ``forget-thread``, ``forget-user``, ``operations``
(issue #5).

Each runs against the embedded servers by default or ``NATS_URL`` / ``DATABASE_URL``, records itself in the
``operations`` table (engine/ops/operations.py), prints a human summary or ``--json``, and exits non-zero on failure:
``verify`` exits 1 when a read model differs from a fresh fold of the log.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import msgspec
import typer
from rich.markup import escape

from memengine.engine.cli.options import (
    ROLES,
    Grid,
    JsonOpt,
    TenantOpt,
    emit_json,
    ensure_current,
    err,
    lifespan,
    out,
    run,
    settings_from_options,
)
from memengine.engine.ops.progress_lines import ProgressLines
from memengine.events import InvalidToken, check_token

if TYPE_CHECKING:
    from rich.progress import TaskID

    from memengine.engine.bootstrap import Engine

# The engine (asyncpg, NATS, the fold) is imported inside the command bodies: `memengine --help` must not load it
# (engine.cli.options, "Import cost").

#: ``status --tenant``: no default, since status is engine-wide unless a tenant is named.
TenantFilterOpt = typer.Option(None, "--tenant", "-t", help="Also this tenant's threads, messages and memory items "
                               "by status ([A-Za-z0-9_-], 1-128 chars).")


def _check_tenant(tenant: str | None) -> None:
    """Exit 2 on a tenant id that cannot be one (before any server starts)."""
    if tenant is None:
        return
    try:
        check_token("tenant", tenant)
    except InvalidToken as exc:
        err.print(f"[red]--tenant[/red]: {exc}")
        raise typer.Exit(2) from None


async def _tenant_figures(engine: Engine, tenant: str) -> dict[str, Any]:
    """What the read models hold for one tenant: threads, messages, memory items by status (as folded so far: the
    projections' lag is in the checkpoints)."""
    threads = await engine.pool.fetchval("SELECT count(*) FROM thread_activity WHERE tenant_id = $1", tenant)
    messages = await engine.pool.fetchval("SELECT count(*) FROM messages WHERE tenant_id = $1", tenant)
    items = await engine.pool.fetch(
        "SELECT status, count(*) AS n FROM memory_items WHERE tenant_id = $1 GROUP BY 1 ORDER BY 1", tenant)
    return {"tenant": tenant, "threads": threads, "messages": messages,
            "memories": {r["status"]: r["n"] for r in items}}


async def _user_figures(engine: Engine, tenant: str, user: str) -> dict[str, Any]:
    """Seed 002 §7 for one user, with §6.2's hot memories (``engine.read.access.AccessQueries.user_metrics``)."""
    from memengine.engine.read.access import AccessQueries  # lazy (engine.cli.options, "Import cost")

    return await AccessQueries(engine.pool).user_metrics(tenant, user)


def _embedding_advice(settings: Any, models: list[dict[str, Any]]) -> str | None:
    """A line for a store that ``MEMENGINE_EMBEDDER=auto`` keeps on its older local model (session 23: a new store
    gets ``minilm+use``), naming the rebuild that moves it; ``None`` when nothing is to be said."""
    from memengine.engine.embedding.models import MODEL_ALIASES, auto_choice  # lazy (engine.cli.options)

    active = next((m["model"] for m in models if m["state"] == "active"), None)
    if settings.embedder != "auto" or active is None or settings.embedding_base_url or settings.api_base_url:
        return None
    new = auto_choice(None)
    if new is None or MODEL_ALIASES.get(new) == active:
        return None
    return (f"this store keeps {active} (MEMENGINE_EMBEDDER=auto follows the store's model); a new store would get"
            f" {new}, which also reads Chinese: `memengine rebuild vectors --model {new}` moves it (queries go on)")


def status(
    tenant: str = TenantFilterOpt,
    metrics_url: str = typer.Option(None, "--metrics-url", help="A running `memengine up`'s /metrics, for its "
                                    "events/s, RPC latency and LLM counters (default: 127.0.0.1 at "
                                    "MEMENGINE_METRICS_PORT, when set)."),
    user: str = typer.Option(None, "--user", help="Also this user's memory figures and hot memories (seed 002 §6.2,"
                             " §7; tenant from --tenant, default `default`)."),
    json_out: bool = JsonOpt,
) -> None:
    """Streams, consumers, projection checkpoints with their lag, dead letters, the embedding backlog (turns
    waiting for a vector, the oldest one's age, texts/s), and (from a running `up`'s metrics
    endpoint) events folded, RPC latency per method and LLM calls/tokens: the figures of /metrics. With --tenant,
    also that tenant's threads, messages and memory items by status. With --user, that user's memories by type,
    average importance, answers served and hot memories by access_count (the access trail, issue #30)."""
    from memengine.engine.adapters.security import redact_url  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.ops.metrics import scrape, snapshot

    _check_tenant(tenant)
    settings = settings_from_options()
    if metrics_url is None and settings.metrics_port:
        metrics_url = f"http://127.0.0.1:{settings.metrics_port}/metrics"

    async def main() -> dict[str, Any]:
        async with lifespan(settings, roles=set()) as engine:
            snap = await snapshot(engine)  # the figures /metrics serves (engine.ops.metrics)
            # status lists the facts stream's consumers, without the stream name (as before snapshot was shared)
            consumers = [{k: v for k, v in c.items() if k != "stream"} for c in snap["consumers"]
                         if c["stream"] == engine.streams.facts]
            return {"nats_url": redact_url(engine.nats_url), "streams": snap["streams"], "consumers": consumers,
                    "checkpoints": snap["checkpoints"], "dead_letters": snap["dead_letters"],
                    "embedding": snap["embedding"],
                    "tenant": await _tenant_figures(engine, tenant) if tenant is not None else None,
                    "user": await _user_figures(engine, tenant or "default", user) if user else None}

    result = run(main)
    result["process"] = None
    result["embedding_advice"] = _embedding_advice(settings, result["embedding"])
    if metrics_url:
        try:
            result["process"] = scrape(metrics_url)
        except (OSError, ValueError) as exc:
            result["process"] = {"url": metrics_url, "error": str(exc)}
    if json_out:
        emit_json(result)
        return
    t = Grid("streams", ("stream", "messages", "bytes", "first seq", "last seq"), titled=True)
    for name, s in result["streams"].items():
        t.add_row(name, s["messages"], s["bytes"], s["first_seq"], s["last_seq"])
    t.print()
    t = Grid("consumers", ("consumer", "pending", "ack pending", "redelivered"), titled=True)
    for c in result["consumers"]:
        t.add_row(c["name"], c["pending"], c["ack_pending"], c["redelivered"])
    t.print()
    t = Grid("projections", ("projection", "version", "checkpoint", "lag"), titled=True)
    for c in result["checkpoints"]:
        t.add_row(c["projection"], c["version"], c["last_seq"], c["lag"])
    t.print()
    if result["embedding"]:
        # turns waiting for a vector are recallable by their words meanwhile (engine.embedding.backlog)
        # which model each vector table holds (issue #28 item 3): only the active one may serve queries
        t = Grid("embedding models", ("model", "state", "dim", "checksum", "waiting", "oldest waiting",
                                      "texts/s (30 s)"), titled=True)
        for b in result["embedding"]:
            age = "-" if b["oldest_age_s"] is None else f"{b['oldest_age_s']:.1f} s"
            t.add_row(b["model"], b["state"], b["dim"], (b["checksum"] or "-")[:19], f"{b['waiting']:,}", age,
                      f"{b['texts_per_s']:.1f}")
        t.print()
    if result["embedding_advice"]:
        out.print(f"[yellow]embedding[/yellow]: {escape(result['embedding_advice'])}")
    if result["tenant"] is not None:
        f = result["tenant"]
        t = Grid(f"tenant {f['tenant']}", ("figure", "value"), titled=True)
        t.add_row("threads", f["threads"])
        t.add_row("messages", f["messages"])
        for st, n in f["memories"].items():
            t.add_row(f"memories {st}", n)
        t.print()
    if result.get("user") is not None:
        f = result["user"]
        t = Grid(f"user {f['user']}", ("figure", "value"), titled=True)
        t.add_row("memories (active)", f["total_memories"])
        for ty, n in f["by_type"].items():
            t.add_row(f"memories {ty}", n)
        t.add_row("average importance", f["avg_importance"])
        t.add_row("answers served", f["answers_served"])
        t.add_row("last served", f["last_served_at"])
        t.print()
        t = Grid(f"hot memories of {f['user']}", ("memory", "type", "access count", "last accessed", "text"),
                 titled=True, fold=["text"])
        for h in f["hot_memories"]:
            t.add_row(h["memory_id"], h["type"], h["access_count"], (h["last_accessed_at"] or "")[:19], h["text"])
        t.print()
    n = sum(d["count"] for d in result["dead_letters"] if d["status"] == "open")
    out.print(f"dead letters open: {n}")
    proc = result["process"]
    if proc and "error" in proc:
        out.print(f"[yellow]metrics endpoint {proc['url']} unreachable[/yellow]: {escape(proc['error'])}")
    elif proc:
        t = Grid(f"memengine up ({proc['url']})", ("figure", "value"), titled=True)
        for name, v in proc["projection_events"].items():
            t.add_row(f"events folded {name}", f"{v:,}")
        for method, r in proc["rpc"].items():
            t.add_row(f"rpc {method}", f"{r['requests']:,} requests, {r['errors']:,} errors, mean {r['mean_ms']} ms")
        for key, v in proc["llm"].items():
            t.add_row(f"llm {key}", f"{v:,}")
        for key, v in proc.get("trail", {}).items():  # the access trail (issue #30)
            t.add_row(f"served records {key}", f"{v:,}")
        t.print()


class _Bar:
    """Progress per runner group on stderr: a rich bar with events/s and ETA on a terminal, periodic plain lines
    otherwise (``engine.ops.progress_lines``); silent with --json."""

    def __init__(self, quiet: bool, what: str = "folding") -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn  # lazy: drawn by few commands

        enabled = not quiet and sys.stderr.isatty()
        self.progress = Progress(TextColumn("{task.description:>8}"), BarColumn(), TextColumn("{task.completed:,}/"
                                 "{task.total:,}"), TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                 console=err, disable=not enabled, transient=False)
        self.lines_on = not quiet and not enabled
        self.what = what
        self.lines: dict[str, ProgressLines] = {}
        self.tasks: dict[str, TaskID] = {}
        self.t0: dict[str, float] = {}

    def __call__(self, group: str, done: int, target: int) -> None:
        if self.lines_on:
            if group not in self.lines:
                self.lines[group] = ProgressLines(f"{self.what} {group}")
            self.lines[group].update(done, max(target, done))
        if group not in self.tasks:
            self.tasks[group] = self.progress.add_task(group, total=target, rate="")
            self.t0[group] = time.monotonic()
        rate = done / max(time.monotonic() - self.t0[group], 1e-6)
        self.progress.update(self.tasks[group], completed=done, total=max(target, done), rate=f"{rate:,.0f} ev/s")

    def __enter__(self) -> "_Bar":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)
        for lines in self.lines.values():
            lines.finish()


def _check_projections(names: list[str] | None) -> None:
    """Exit 2 with the list of valid names when one is unknown (before any server starts)."""
    from memengine.engine.ops import rebuild as rb  # lazy (engine.cli.options, "Import cost")

    try:
        rb.select(names)
    except rb.UnknownProjection as exc:
        err.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(2) from None


#: What rebuild, verify and forget run with: they fold, they do not answer queries. In the query group a
#: rebuild killed mid-run took the requests NATS had just routed to it with it (CI: a context read after kill -9).
OPS_ROLES = ROLES - {"query"}


async def _engine_current(settings: Any, fn: Any, *, quiet: bool) -> Any:
    async with lifespan(settings, roles=OPS_ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet)
        return await fn(engine)


def rebuild(
    projections: list[str] = typer.Argument(None, help="Projection names (see `memengine rebuild --list`)."),
    all_: bool = typer.Option(False, "--all", help="Rebuild every read model."),
    list_: bool = typer.Option(False, "--list", help="List the projection names and exit."),
    workers: int = typer.Option(None, "--workers", min=1, help="Worker processes folding the facts stream (default: "
                                "the machine's cores, at most 8, fewer for a short log; 1 = one serial fold)."),
    model: str = typer.Option(None, "--model", help="With `vectors`: embed the store with this model (minilm, use, "
                              "minilm+use, e5, minilm+e5, use+e5, minilm+use+e5, or a model of the "
                              "OpenAI-compatible endpoint) into its own table and make it the store's model; "
                              "queries go on meanwhile, never mixing two models."),
    json_out: bool = JsonOpt,
) -> None:
    """Rebuild read models from the log without downtime (blue/green).

    Folds the log from sequence 1 into shadow tables, catches up with the live tail, then swaps them in atomically;
    queries are answered throughout. The facts stream is folded by `--workers` processes in parallel, split by
    thread (the derived stream by one); the result is the serial fold's. Derived events mean no model is called; the
    embedding cache means nothing embedded before is embedded again. Safe to interrupt: the live tables change only at
    the swap, and a re-run starts clean.

    `memengine rebuild vectors --model M` changes the embedding model: the store is embedded with M into M's own
    table, then M becomes the store's model (engine/embedding/switch.py); restart the engine with M configured.

    Examples: `memengine rebuild --all`, `memengine rebuild messages thread_activity --json`,
    `memengine rebuild vectors --model use`.
    """
    from memengine.engine.ops import rebuild as rb  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.ops.operations import operation

    if model is not None:
        if projections != ["vectors"] or all_:
            err.print("--model goes with `vectors` alone: `memengine rebuild vectors --model M`")
            raise typer.Exit(2)
        _switch_model(model, json_out)
        return
    if list_:
        names = rb.all_projection_names()
        emit_json({"projections": names}) if json_out else out.print("\n".join(names))
        return
    if not projections and not all_:
        err.print("name projections to rebuild, or --all (see --list)")
        raise typer.Exit(2)
    _check_projections(projections)
    settings = settings_from_options()

    async def go(engine: Engine) -> dict[str, Any]:
        scope = {"projections": projections or "all"}
        async with operation(engine.pool, "rebuild", scope=scope, dsn=engine.database_url) as op:
            with _Bar(json_out, "rebuilding") as bar:
                report = await rb.rebuild(engine, projections or None, progress=bar, workers=workers)
            op.detail.update(events=report.events, seconds=report.seconds, swap_ms=report.swap_ms,
                             checkpoints=report.checkpoints, workers=report.workers)
        return {**msgspec.structs.asdict(_RebuildOut(**report.__dict__)), "operation_id": op.id}

    try:
        result = run(lambda: _engine_current(settings, go, quiet=json_out))
    except (rb.RebuildBusy, RuntimeError) as exc:
        err.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(1) from None
    if json_out:
        emit_json(result)
        return
    total = sum(result["events"].values())
    out.print(f"rebuilt {len(result['tables'])} tables ({', '.join(result['tables'])}) from {total:,} events in "
              f"{result['seconds']:.2f} s ({total / max(result['seconds'], 1e-6):,.0f} events/s, "
              f"{result['workers']} worker(s)); swap {result['swap_ms']} ms after {result['swap_attempts']} attempt(s)")
    if result["parallel_fallback"]:
        err.print(f"[yellow]note[/yellow]: folded serially: {result['parallel_fallback']}")


def _switch_model(model: str, json_out: bool) -> None:
    """``memengine rebuild vectors --model M`` (engine.embedding.switch); exits 2 on a model it cannot build."""
    from memengine.engine.embedding.models import embedder_for_model  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.embedding.switch import switch_model
    from memengine.engine.ops.operations import operation

    settings = settings_from_options()
    try:
        embedder = embedder_for_model(settings, model)
    except ValueError as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}")
        raise typer.Exit(2) from None

    async def go() -> dict[str, Any]:
        # without the configured embedder: the store may hold another model's vectors (that is why this runs)
        async with lifespan(settings, roles=OPS_ROLES, run_projector=False, embedder=None) as engine:
            await ensure_current(engine, quiet=json_out)
            async with operation(engine.pool, "rebuild", scope={"projections": ["vectors"], "model": embedder.name},
                                 dsn=engine.database_url) as op:
                report = await switch_model(engine.pool, embedder, batch=settings.embed_batch,
                                            concurrency=settings.embed_concurrency)
                op.detail.update(report.__dict__)
            return {**report.__dict__, "operation_id": op.id}

    try:
        result = run(go)
    except RuntimeError as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}")
        raise typer.Exit(1) from None
    if json_out:
        emit_json(result)
        return
    out.print(f"embedding model {result['model']} (dim {result['dim']}) is the store's model, was"
              f" {result['previous'] or 'none'}: {result['vectors']:,} vectors written ({result['embedded']:,} texts"
              f" embedded, {result['cached']:,} from the cache) in {result['seconds']:.2f} s; restart the engine"
              f" with this model configured")


class _RebuildOut(msgspec.Struct):
    projections: list[str]
    tables: list[str]
    checkpoints: dict[str, int]
    events: dict[str, int]
    seconds: float
    swap_attempts: int
    swap_ms: float
    workers: int
    worker_events: list[dict[str, int]]
    parallel_fallback: str | None


def verify(
    projections: list[str] = typer.Argument(None, help="Projection names (default: all)."),
    json_out: bool = JsonOpt,
) -> None:
    """Check that every read model equals a fresh fold of the log; exit 1 on a difference.

    Folds the log into scratch tables up to the live checkpoints and compares, per table, the row count and a
    checksum over every row; a differing table is named with sample rows from each side. Changes nothing.
    """
    from memengine.engine.ops import rebuild as rb  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.ops.operations import operation

    _check_projections(projections)
    settings = settings_from_options()

    async def go(engine: Engine) -> dict[str, Any]:
        async with operation(engine.pool, "verify", scope={"projections": projections or "all"},
                             dsn=engine.database_url) as op:
            with _Bar(json_out, "verifying") as bar:
                report = await rb.verify(engine, projections or None, progress=bar)
            op.detail.update(ok=report.ok, differing=report.differing, seconds=report.seconds)
            if not report.ok:
                op.fail(f"read models differ from a fresh fold: {', '.join(report.differing)}")
        return {
            "ok": report.ok, "differing": report.differing, "checkpoints": report.checkpoints,
            "seconds": report.seconds, "operation_id": op.id,
            "tables": [{"table": t.table, "ok": t.ok, "live_rows": t.live_rows, "fold_rows": t.fold_rows,
                        "live_checksum": t.live_checksum, "fold_checksum": t.fold_checksum,
                        "only_live": t.only_live, "only_fold": t.only_fold} for t in report.tables],
        }

    result = run(lambda: _engine_current(settings, go, quiet=json_out))
    if json_out:
        emit_json(result)
    else:
        table = Grid("verify: live read models vs a fresh fold", ("table", "live rows", "fold rows", "checksum"))
        for t in result["tables"]:
            table.add_row(t["table"], t["live_rows"], t["fold_rows"], "equal" if t["ok"] else "DIFFERENT")
        table.print()
        for t in result["tables"]:
            for row in t["only_live"]:
                out.print(f"  {t['table']} only live: {escape(row[:200])}")
            for row in t["only_fold"]:
                out.print(f"  {t['table']} only in the fold: {escape(row[:200])}")
        out.print("[green]ok[/green]" if result["ok"] else f"[red]differs[/red]: {', '.join(result['differing'])}")
    if not result["ok"]:
        raise typer.Exit(1)


def _forget(kind: str, scope_id: str, tenant: str, reason: str | None, yes: bool, json_out: bool) -> None:
    from memengine.engine.ops import forget as fg  # lazy (engine.cli.options, "Import cost")
    from memengine.engine.ops import rebuild as rb

    if not yes and not json_out and sys.stdin.isatty():
        typer.confirm(f"Forget {kind} {scope_id!r} of tenant {tenant!r} everywhere, including the log? "
                      "This cannot be undone", abort=True)
    elif not yes:
        err.print("refusing to forget without --yes (non-interactive)")
        raise typer.Exit(2)
    settings = settings_from_options()

    async def go(engine: Engine) -> dict[str, Any]:
        fn = fg.forget_thread if kind == "thread" else fg.forget_user
        report = await fn(engine, tenant, scope_id, reason=reason)
        return dict(report.__dict__)

    try:
        result = run(lambda: _engine_current(settings, go, quiet=json_out))
    except (fg.NothingToForget, InvalidToken, ValueError, fg.ForgetBusy, rb.RebuildBusy) as exc:
        # nothing to forget means the thread / user is unknown (again, after a finished forget): the same error as
        # every command that meets an unknown thread or user (issue #15 item 5)
        code = (f"unknown_{kind}" if isinstance(exc, fg.NothingToForget)
                else "busy" if isinstance(exc, (fg.ForgetBusy, rb.RebuildBusy)) else "invalid")
        if json_out:
            emit_json({"error": {"code": code, "message": str(exc)}})
        else:
            err.print(f"[red]error[/red] {code}: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    if json_out:
        emit_json(result)
    else:
        out.print(f"forgot {kind} {scope_id!r}: {result['facts_removed']} facts and {result['derived_removed']} "
                  f"derived events purged from the log, {result['dead_letters_removed']} dead letters, "
                  f"{result['embeddings_removed']} vectors; tombstone at seq {result['tombstone_seq']}; "
                  f"rebuilt {len(result['rebuilt'])} projections in {result['seconds']:.2f} s")


def forget_thread(
    thread: str = typer.Argument(..., help="Thread id."),
    tenant: str = TenantOpt,
    reason: str = typer.Option(None, "--reason", help="Why (kept in the tombstone; no personal data)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    json_out: bool = JsonOpt,
) -> None:
    """Forget a thread: every read model, cache and the log itself; a tombstone (who, when, scope) remains.

    Publishes ThreadDeleted, purges the thread's subjects from the facts and derived streams, rebuilds the derived
    read models, and scrubs dead letters, embeddings and working memory. A later rebuild does not bring it back.
    """
    _forget("thread", thread, tenant, reason, yes, json_out)


def forget_user(
    user: str = typer.Argument(..., help="User id (as in the turns' user_id)."),
    tenant: str = TenantOpt,
    reason: str = typer.Option(None, "--reason", help="Why (kept in the tombstone; no personal data)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    json_out: bool = JsonOpt,
) -> None:
    """Forget a user across the tenant (right to erasure): their turns, memories and whatever was derived from them.

    Rolling summaries, topics and episodes of threads the user spoke in are dropped too (their text carries the
    user's words); every read model is then rebuilt from the purged log.
    """
    _forget("user", user, tenant, reason, yes, json_out)


def operations(
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many, newest first."),
    kind: str = typer.Option(None, "--kind", help="Only this kind (rebuild, verify, forget-thread, ...)."),
    tenant: str = typer.Option(None, "--tenant", "-t", help="Only operations on this tenant (forgets, ...) and the "
                               "engine-wide ones (rebuild, verify: a read model is one fold of every tenant)."),
    json_out: bool = JsonOpt,
) -> None:
    """The engine's own audit trail: rebuilds, verifies, forgets, consolidations and dead-letter actions.

    Status: ok, failed, running (its process, shown as host:pid, still runs it) or interrupted (it was killed or lost
    its database session: run a forget again to finish it; a rebuild re-run starts clean). Piped (`| cat`, `> file`),
    rows are TSV with scope and detail in full."""
    from memengine.engine.ops.operations import recent  # lazy (engine.cli.options, "Import cost")

    _check_tenant(tenant)
    settings = settings_from_options()

    async def go() -> list[dict[str, Any]]:
        async with lifespan(settings, roles=frozenset(), run_projector=False) as engine:
            return await recent(engine.pool, limit, kind, tenant=tenant)

    rows = run(go)
    if json_out:
        emit_json({"operations": rows})
        return
    table = Grid("operations", ("id", "kind", "actor", "status", "started", "owner", "scope", "detail"),
                 fold=("scope", "detail"))
    for r in rows:
        owner = f"{r['owner_host']}:{r['owner_pid']}" if r["owner_host"] else ""
        table.add_row(r["id"], r["kind"], r["actor"], r["status"], r["started_at"][:19], owner,
                      msgspec.json.encode(r["scope"]).decode(), msgspec.json.encode(r["detail"]).decode())
    table.print()
