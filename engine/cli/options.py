"""What every ``memengine`` command shares: the consoles, the common options, settings, running a command's
coroutine with the CLI's error contract, the readers that bring the read models current first, and the output
plumbing of issue #15 item 5.

- ``out`` / ``err``: rich consoles on stdout / stderr (``--json`` output goes through ``emit_json`` on stdout).
  Piped (stdout not a terminal), ``out`` does not wrap lines at 80 columns and ``Grid`` prints tables as TSV.
- ``TenantOpt``, ``JsonOpt``, ``AsOfOpt``, ``AsOfSeqOpt``: the options many commands take, spelled the same
  everywhere (and one result count, ``--limit/-n``; ``limit_of`` keeps an old hidden spelling working).
- ``settings_from_options()``: ``Settings.from_env()``; a bad variable exits 2 before any server starts.
- ``run(fn)``: ``asyncio.run(fn())``; an ``RpcError`` exits 1 with ``error <code>: <message>`` (the one error path:
  an unknown thread is ``error unknown_thread: ...`` whichever command met it), Ctrl-C exits 130, a lost PostgreSQL /
  NATS exits ``EXIT_UNAVAILABLE`` (75) with one ``error unavailable`` line (issue #17 defect 11).
- ``with_reader`` / ``answer_as_of``: answer from read models brought current (``engine.ops.publish``), or from a
  fold of the log up to a point in time (issue #5 §3).
- ``lifespan`` / ``ensure_current`` / ``ROLES``: the engine's, imported when first called.

Import cost (issue #15 item 5: ``memengine --help`` under 0.3 s): this module and the command modules import only
typer, rich, msgspec and the wire contract at module level; the engine (asyncpg, NATS, faststream, the models) is
imported inside the functions that run a command, so listing commands and rendering help never loads it
(tests/unit/test_cli_conventions.py checks the import graph).

The command modules (serve, read, ops, memory, dlq, eval) import only public names from here; ``engine.cli.main``
composes them into the ``memengine`` app (issue #10: no import cycle inside the CLI).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.markup import escape

from memengine.engine.wire import errors
from memengine.engine.wire.errors import RpcError

if TYPE_CHECKING:
    from memengine.engine.adapters.settings import Settings
    from memengine.engine.bootstrap import Engine

out = Console()
err = Console(stderr=True)
# piped: no wrapping at 80 columns (a long row or message stays one line for grep / cut)
out.soft_wrap = not out.is_terminal
err.soft_wrap = not err.is_terminal
T = TypeVar("T")

#: The engine's roles (``engine.bootstrap.ROLES``, kept equal by tests/unit/test_cli_conventions.py): here so that
#: ``up --role``'s default is known without importing the engine.
ROLES = frozenset({"projector", "query", "enricher"})

#: Exit status of a command that lost PostgreSQL or NATS (sysexits' EX_TEMPFAIL: run it again when they are back).
EXIT_UNAVAILABLE = 75


class Unavailable(errors.Unavailable, RuntimeError):
    """PostgreSQL or NATS cannot be reached (stopped, restarting, network): the command stopped; what it had stored
    is kept. The CLI prints ``error unavailable: <message>`` on one line and exits ``EXIT_UNAVAILABLE``."""


def unavailable_cause(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain (itself, its cause or context) that says PostgreSQL or NATS is unreachable
    (``engine.adapters.postgres.is_transient``, NATS connection errors), else ``None``."""
    import nats.errors  # lazy (module docstring)

    from memengine.engine.adapters.postgres import is_transient

    # NATS client errors that mean the server is gone (not a bad request)
    nats_down = (nats.errors.ConnectionClosedError, nats.errors.NoServersError, nats.errors.StaleConnectionError,
                 nats.errors.TimeoutError, nats.errors.ConnectionDrainingError,
                 nats.errors.ConnectionReconnectingError)
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, Unavailable) or isinstance(cur, nats_down) or is_transient(cur):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def one_line(exc: BaseException) -> str:
    """``exc`` on one line: its message (``Unavailable``) or ``<type>: <message>``."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, Unavailable) else f"{type(exc).__name__}: {text}"


TenantOpt = typer.Option("default", "--tenant", "-t", help="Tenant id ([A-Za-z0-9_-], 1-128 chars).")
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def settings_from_options() -> Settings:
    """``Settings.from_env()`` with logging configured; a configuration error exits 2 (nothing started)."""
    from memengine.engine.adapters.logs import configure_logging  # lazy (module docstring)
    from memengine.engine.adapters.settings import Settings, SettingsError

    quiet_model_loading()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from None
    configure_logging(settings.log_level)
    return settings


class OneLineOutage(logging.Filter):
    """asyncpg's pool logs "Failed to restore the pool connection floor" with a traceback on every retry while
    PostgreSQL is down; a command ends with one ``error unavailable`` line instead, so keep the warning, drop the
    traceback of a transient error (issue #17 defect 11)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and unavailable_cause(record.exc_info[1]) is not None:
            record.msg = f"{record.getMessage()}: {one_line(record.exc_info[1])}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def as_request(kind: type[T], fields: dict[str, Any]) -> T:
    """``kind`` (an ``engine.wire.requests`` Struct) from ``fields``, validated as the query handler decodes a
    request: a value it would refuse exits 1 with ``error invalid_request: ...`` (the CLI's error contract) before
    any work. For commands that answer in-process (``--as-of``) rather than over NATS."""
    import msgspec  # lazy (module docstring)

    try:
        return msgspec.convert({k: v for k, v in fields.items() if v is not None}, kind)
    except msgspec.ValidationError as exc:
        err.print(f"[red]error[/red] invalid_request: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None


def run(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a command's coroutine: its result, or the exit codes of the CLI's error contract (module docstring)."""
    import asyncio  # lazy (module docstring)

    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, OneLineOutage) for f in pool_log.filters):
        pool_log.addFilter(OneLineOutage())
    try:
        return asyncio.run(fn())
    except RpcError as exc:
        err.print(f"[red]error[/red] {exc.code}: {escape(exc.message)}", soft_wrap=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        from memengine.engine.embedding.registry import EmbeddingModelMismatch  # lazy (module docstring)

        if isinstance(exc, EmbeddingModelMismatch):  # a start refused: the message names the command (issue #28)
            err.print(f"[red]error[/red] embedding model: {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(2) from None
        # PostgreSQL or NATS stopped: one typed line, not an asyncpg traceback (issue #17 defect 11)
        cause = unavailable_cause(exc)
        if cause is None:
            raise
        message = one_line(exc) if isinstance(exc, Unavailable) else \
            f"PostgreSQL or NATS cannot be reached ({one_line(cause)}); run the command again when they are back"
        err.print(f"[red]error[/red] unavailable: {escape(message)}", soft_wrap=True)
        raise typer.Exit(EXIT_UNAVAILABLE) from None


def emit_json(obj: Any) -> None:
    """One line of JSON on stdout (msgspec encodes Structs, datetimes and UUIDs)."""
    sys.stdout.write(msgspec.json.encode(obj).decode() + "\n")


AsOfOpt = typer.Option(
    None, "--as-of", help="Answer as of this STORAGE time (ISO 8601, e.g. 2026-11-22T10:00:00Z): from what memengine "
    "had stored by then, expiry judged at that time. Not event time (when a conversation happened, a turn's "
    "occurred_at: chats from 2023 imported today were stored today); a time before the first stored fact is an "
    "error.")
AsOfSeqOpt = typer.Option(None, "--as-of-seq", help="Answer as of this facts-stream sequence (storage order).")


async def answer_as_of(settings: Settings, as_of: str | None, as_of_seq: int | None,
                       ask: Callable[[Any], Awaitable[Any]], *, quiet: bool, recall: bool = False) -> Any:
    """Time travel (issue #5 §3): fold the log up to the point into scratch tables, ask there, drop them.
    The answer gains ``as_of``: ``{facts_seq, derived_seq, at, fold_seconds}``. ``recall``: fold the recall rows too
    and recall with the engine's embedder (a context with a query picks Tier 2 by recall, issue #14)."""
    from memengine.engine.ops import time_travel as tt  # lazy (module docstring)

    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet)
        point = await tt.point_of(engine, as_of, as_of_seq)
        async with tt.service_at(engine, point, recall=recall) as svc:
            result = await ask(svc)
    answer = msgspec.json.decode(msgspec.json.encode(result))
    answer["as_of"] = tt.stamp(point)
    return answer


async def with_reader(settings: Settings, fn: Callable[[Engine], Awaitable[Any]], *, quiet: bool,
                      embed: bool = False) -> Any:
    """``fn(engine)``, as JSON values (a ``engine.wire.replies`` Struct becomes what ``--json`` prints), on an engine
    whose read models were brought current (``ensure_current``; ``embed``: the turns' vectors too, for recall)."""
    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet, embed=embed)
        return msgspec.to_builtins(await fn(engine))


def lifespan(settings: Settings, **kwargs: Any) -> AbstractAsyncContextManager[Engine]:
    """``engine.bootstrap.lifespan(settings, **kwargs)``, the engine imported on the first call (module docstring)."""
    from memengine.engine.bootstrap import lifespan as engine_lifespan  # lazy (module docstring)

    return engine_lifespan(settings, **kwargs)


async def ensure_current(engine: Engine, **kwargs: Any) -> int:
    """``engine.ops.publish.ensure_current(engine, **kwargs)``: the read models brought up to the log's end."""
    from memengine.engine.ops.publish import ensure_current as bring_current  # lazy (module docstring)

    return await bring_current(engine, **kwargs)


#: Variables that silence model loading (sentence-transformers / transformers "Loading weights" bars, Hugging Face
#: download bars and advisory warnings) in a CLI run; set only where the user has not set them.
QUIET_MODEL_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
                   "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1", "TOKENIZERS_PARALLELISM": "false"}


def quiet_model_loading() -> None:
    """Silence model-loading chatter (issue #15 item 5): the CLI says on stderr what it is doing in its own words
    (``engine.ops.publish``); progress bars of libraries it loads are noise there, and garbage in a log file.
    Must run before transformers is imported (it reads the variables once); a variable already set is kept."""
    for key, value in QUIET_MODEL_ENV.items():
        os.environ.setdefault(key, value)


def limit_of(limit: int | None, old: int | None, default: int | None) -> int | None:
    """The result count from ``--limit/-n`` or a command's old hidden spelling (``recall --k``): one name everywhere,
    old scripts kept working (issue #15 item 5). ``--limit`` wins when both are given."""
    if limit is not None:
        return limit
    return old if old is not None else default


def parse_when(value: str | None, option: str) -> Any:
    """An ISO 8601 option value as an aware datetime (naive: UTC), ``None`` when not given; exit 2 with a usage
    error otherwise (before any server starts)."""
    if value is None:
        return None
    from datetime import UTC, datetime  # cheap; kept beside its only use

    try:
        t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        err.print(f"[red]{option} must be an ISO 8601 time[/red] (e.g. 2023-05-08T13:56:00Z), got {value!r}")
        raise typer.Exit(2) from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def piped() -> bool:
    """True when stdout is not a terminal (a pipe, a file): tables print as TSV, nothing is cut or wrapped."""
    return not out.is_terminal


def tsv_cell(value: Any) -> str:
    """One TSV field: ``None`` empty; backslash, tab, newline and carriage return escaped as ``\\\\``, ``\\t``,
    ``\\n``, ``\\r`` (PostgreSQL's text COPY format), so a row is one line and splits on tabs exactly."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


class Grid:
    """A table of plain-text cells: a rich ``Table`` on a terminal; piped, TSV (header row, then one line per row,
    nothing truncated; issue #15 item 5: ``memengine operations | cat`` prints full rows).

    ``columns``: header names; ``fold``: columns that wrap instead of being cut on a terminal; ``titled``: piped, a
    ``# title`` line precedes the header (for commands that print several tables). Cells are plain text, never rich
    markup (escaped for the terminal here)."""

    def __init__(self, title: str, columns: Iterable[str], *, fold: Iterable[str] = (), titled: bool = False) -> None:
        self.title = title
        self.columns = list(columns)
        self.fold = set(fold)
        self.titled = titled
        self.rows: list[list[str]] = []

    def add_row(self, *cells: Any) -> None:
        """One row, a cell per column (``None`` prints empty)."""
        self.rows.append(["" if c is None else str(c) for c in cells])

    def print(self) -> None:
        """On stdout: TSV when piped, else the rich table."""
        if piped():
            lines = ([f"# {self.title}"] if self.titled else []) + ["\t".join(map(tsv_cell, self.columns))]
            lines += ["\t".join(map(tsv_cell, row)) for row in self.rows]
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
            return
        from rich.table import Table  # lazy (module docstring)

        table = Table(title=self.title)
        for col in self.columns:
            table.add_column(col, overflow="fold" if col in self.fold else "ellipsis")
        for row in self.rows:
            table.add_row(*(escape(c) for c in row))
        out.print(table)


class LazyModule:
    """A module imported when one of its attributes is first read (``LazyModule("memengine.engine.ops.x").f``): for
    a command module that uses a heavy module in many commands (module docstring, "Import cost")."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


async def known_user(engine: Engine, tenant: str, user: str) -> None:
    """``RpcError("unknown_user")`` when ``tenant`` has neither a turn by ``user`` nor a memory item about them: an
    empty profile or listing of a user who does not exist is that error, as an unknown thread is (issue #15 item 5).
    Asked only when an answer came back empty."""
    exists = await engine.pool.fetchval(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE tenant_id = $1 AND user_id = $2)"
        " OR EXISTS (SELECT 1 FROM memory_items WHERE tenant_id = $1 AND user_id = $2)", tenant, user)
    if not exists:
        raise RpcError("unknown_user", f"no user {user!r} in tenant {tenant!r} (no turn by them, no memory about them)")


async def known_thread(client: Any, thread: str) -> None:
    """``RpcError("unknown_thread")`` when the tenant has no such thread: what ``context`` and ``history`` answer,
    asked the same way of the replies that are empty for an unknown thread (``summary``, ``episodes``), so every
    command says ``error unknown_thread: ...`` and exits 1 (issue #15 item 5)."""
    await client.history(thread, limit=1)
