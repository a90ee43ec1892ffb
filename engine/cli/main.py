"""``memengine``: the command line.

Every command that reads a tenant's data accepts ``--tenant`` (default ``default``; ``status`` and ``operations``:
engine-wide unless given), and every command ``--json``. The conventions of issue #15 item 5 (one result-count
option, TSV when piped, one error line) are in ``engine.cli.options``; so is why importing this module loads no
engine (``memengine --help`` in a fraction of a second). With no ``NATS_URL`` / ``DATABASE_URL`` the
embedded servers are started under ``MEMENGINE_HOME`` (or re-used if ``memengine up`` or another command runs them).
A command that needs the read models current folds the log first, unless ``memengine up`` is already projecting,
in which case it waits for it.

This module only composes the app: the commands live in ``engine.cli.serve`` (up, ingest, demo), ``engine.cli.read``
(context, history, threads, summary, episodes, memories, profile, audit, recall), ``engine.cli.access`` (served:
the access trail of issue #30), ``engine.cli.ops`` (status,
rebuild, verify, forget-thread, forget-user, operations), ``engine.cli.memory`` (remember, retract, memories promote,
consolidate, scratchpad), ``engine.cli.mcp_cmd`` (mcp: the MCP server of issue #11), and the sub-apps
``engine.cli.eval`` and ``engine.cli.dlq``; what they share is in ``engine.cli.options``. Commands are registered here
in the order ``memengine --help`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from memengine.engine.cli import access, dlq, mcp_cmd, memory, ops, read, serve
from memengine.engine.cli import eval as eval_cli

__all__ = ["app", "main"]

app = typer.Typer(
    name="memengine",
    help=(
        "Event-sourced long-term memory for LLM agents.\n\n"
        "Agents publish turns to NATS JetStream; projectors fold them into PostgreSQL read models; the query "
        "handler answers with tiered context over NATS request/reply.\n\n"
        "Start with `memengine demo`. Servers: embedded by default (under MEMENGINE_HOME), or NATS_URL / "
        "DATABASE_URL.\n\n"
        "Conventions: --tenant on every command that reads a tenant's data; --limit/-n for a result count; --json "
        "for machines; piped, tables print as TSV (header row, full rows) and progress as plain lines on stderr; "
        "errors are one `error <code>: message` line on stderr with exit 1 (an unknown thread or user: "
        "unknown_thread / unknown_user), 2 for usage, 75 when NATS or PostgreSQL is unreachable."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: The top-level commands, in the order ``memengine --help`` lists them (typer names them from the function:
#: ``forget_thread`` -> ``forget-thread``).
COMMANDS: tuple[Callable[..., None], ...] = (
    serve.up, serve.ingest, read.context, read.history, read.threads, ops.status, serve.demo, read.summary,
    read.episodes, read.profile, read.audit, access.served, read.recall, ops.rebuild, ops.verify, ops.forget_thread,
    ops.forget_user,
    ops.operations, memory.remember, memory.retract, memory.consolidate, memory.scratchpad, mcp_cmd.mcp,
)
for command in COMMANDS:
    app.command()(command)

memories_app = typer.Typer(help="Typed memory items; `memengine memories promote ID` lets one out of quarantine.")
memories_app.callback(invoke_without_command=True)(read.memories)
memories_app.command("promote")(memory.promote)
app.add_typer(memories_app, name="memories")
app.add_typer(eval_cli.app, name="eval")
app.add_typer(dlq.app, name="dlq")

def main() -> None:
    """Console-script entry point."""
    app()

if __name__ == "__main__":  # pragma: no cover
    main()
