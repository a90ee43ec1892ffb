"""What every ``memengine`` command shares: the consoles, the common options, settings, running a command's
coroutine with the CLI's error contract, and the readers that bring the read models current first.

- ``out`` / ``err``: rich consoles on stdout / stderr (``--json`` output goes through ``emit_json`` on stdout).
- ``TenantOpt``, ``JsonOpt``, ``AsOfOpt``, ``AsOfSeqOpt``: the options many commands take.
- ``settings_from_options()``: ``Settings.from_env()``; a bad variable exits 2 before any server starts.
- ``run(fn)``: ``asyncio.run(fn())``; an ``RpcError`` exits 1 with ``error <code>: <message>``, Ctrl-C exits 130, a
  lost PostgreSQL / NATS exits ``EXIT_UNAVAILABLE`` (75) with one ``error unavailable`` line (issue #17 defect 11).
- ``with_reader`` / ``answer_as_of``: answer from read models brought current (``engine.ops.publish``), or from a
  fold of the log up to a point in time (issue #5 §3).

The command modules (serve, read, ops, memory, dlq, eval) import only public names from here; ``engine.cli.main``
composes them into the ``memengine`` app (issue #10: no import cycle inside the CLI).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import msgspec
import nats.errors
import structlog
import typer
from rich.console import Console
from rich.markup import escape

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.adapters.postgres import is_transient
from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.bootstrap import ROLES, Engine, lifespan
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.publish import ensure_current
from memengine.engine.read.progress import ProgressWatcher
from memengine.engine.read.recall import Recaller
from memengine.engine.read.service import QueryService
from memengine.engine.wire import errors
from memengine.engine.wire.errors import RpcError

out = Console()
err = Console(stderr=True)
log = structlog.get_logger("memengine.cli")
T = TypeVar("T")

#: Exit status of a command that lost PostgreSQL or NATS (sysexits' EX_TEMPFAIL: run it again when they are back).
EXIT_UNAVAILABLE = 75


class Unavailable(errors.Unavailable, RuntimeError):
    """PostgreSQL or NATS cannot be reached (stopped, restarting, network): the command stopped; what it had stored
    is kept. The CLI prints ``error unavailable: <message>`` on one line and exits ``EXIT_UNAVAILABLE``."""


#: NATS client errors that mean the server is gone (not a bad request).
_NATS_DOWN = (nats.errors.ConnectionClosedError, nats.errors.NoServersError, nats.errors.StaleConnectionError,
              nats.errors.TimeoutError, nats.errors.ConnectionDrainingError, nats.errors.ConnectionReconnectingError)


def unavailable_cause(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain (itself, its cause or context) that says PostgreSQL or NATS is unreachable
    (``engine.adapters.postgres.is_transient``, NATS connection errors), else ``None``."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, Unavailable) or isinstance(cur, _NATS_DOWN) or is_transient(cur):
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


def run(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a command's coroutine: its result, or the exit codes of the CLI's error contract (module docstring)."""
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, OneLineOutage) for f in pool_log.filters):
        pool_log.addFilter(OneLineOutage())
    try:
        return asyncio.run(fn())
    except RpcError as exc:
        err.print(f"[red]error[/red] {exc.code}: {exc.message}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
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
    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet)
        try:
            point = await rb.resolve_as_of(engine, seq=as_of_seq,
                                           at=rb.parse_time(as_of) if as_of is not None else None)
        except rb.TimeTravelError as exc:
            raise RpcError("invalid_request", str(exc)) from None
        async with rb.as_of_pool(engine, point, recall=recall) as pool:
            live = engine.service.recaller
            svc = QueryService(pool, settings, ProgressWatcher(pool),
                               Recaller(pool, live.embedder, live.default_k, live.weights))
            svc.memory.clock = point.at  # validity (expiry) judged at the point, as a reader then would have
            result = await ask(svc)
    answer = msgspec.json.decode(msgspec.json.encode(result))
    answer["as_of"] = {"facts_seq": point.facts_seq, "derived_seq": point.derived_seq, "at": point.at.isoformat(),
                       "fold_seconds": point.seconds}
    return answer


async def with_reader(settings: Settings, fn: Callable[[Engine], Awaitable[Any]], *, quiet: bool,
                      embed: bool = False) -> Any:
    """``fn(engine)``, as JSON values (a ``engine.wire.replies`` Struct becomes what ``--json`` prints), on an engine whose read models were brought current (``ensure_current``; ``embed``: the
    turns' vectors too, for recall)."""
    async with lifespan(settings, roles=ROLES, run_projector=False) as engine:
        await ensure_current(engine, quiet=quiet, embed=embed)
        return msgspec.to_builtins(await fn(engine))
