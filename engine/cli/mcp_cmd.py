"""``memengine mcp``: serve memengine's memory to agents as an MCP server (issue #11;
``engine.integrations.mcp_server``).

``memengine mcp`` speaks MCP on stdin/stdout (what Claude Desktop, Cursor, Codex and the OpenAI Agents SDK's
``MCPServerStdio`` launch); ``memengine mcp --http PORT`` serves streamable HTTP on ``--host`` (127.0.0.1 by default)
at ``/mcp``. The engine: with ``NATS_URL`` set and a query handler answering there (``memengine up``), the server is a
plain ``MemoryClient`` on it; otherwise it runs the engine in this process (``engine.bootstrap.lifespan``, every role,
projecting or standing by like ``up``), on the embedded servers under ``MEMENGINE_HOME`` unless ``NATS_URL`` /
``DATABASE_URL`` say otherwise. The tenant is ``--tenant`` / ``MEMENGINE_TENANT`` (default ``default``); the user
the tools are bound to is ``--user`` / ``MEMENGINE_USER`` (issue #18: the model then reads and writes that user's
memory only; without it the server is in operator scope, every user of the tenant).

In stdio mode stdout carries MCP frames only: logs (structlog, the SDK's logging) and progress go to stderr, and while
the engine starts, file descriptor 1 itself points at stderr, so nothing a library or child process prints there can
corrupt the stream.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Literal

import msgspec
import typer

from memengine.engine.cli.options import ROLES, err, lifespan, run, settings_from_options
from memengine.engine.wire.errors import RpcError
from memengine.events import InvalidToken, check_token

if TYPE_CHECKING:
    from memengine.engine.adapters.settings import Settings
    from memengine.engine.client.memory_client import MemoryClient


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True) -> Iterator[None]:
    """Point file descriptor 1 (and ``sys.stdout``) at stderr inside the block, then restore it: child processes
    started meanwhile (embedded servers) keep stderr as their stdout. A no-op when ``enabled`` is false."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.asynccontextmanager
async def engine_client(settings: Settings, tenant: str) -> AsyncIterator[MemoryClient]:
    """A ``MemoryClient`` for ``tenant`` on a running engine: the query handler at ``settings.nats_url`` if one answers
    there, else an engine run in this process (every role; its projectors stand by if another process projects). The
    in-process engine serves no metrics and schedules no consolidation: ``memengine up`` does those."""
    from memengine.engine.client.memory_client import MemoryClient  # lazy (engine.cli.options, "Import cost")

    if settings.nats_url:
        client = await MemoryClient.connect(settings.nats_url, tenant=tenant, subject_root=settings.subject_root,
                                            stream_prefix=settings.stream_prefix)
        try:
            await client.threads(limit=1)
        except RpcError as exc:
            await client.close()
            if exc.code != "unavailable":
                raise
        else:
            try:
                yield client
            finally:
                await client.close()
            return
    local = msgspec.structs.replace(settings, metrics_port=0, consolidate_interval=0.0)
    async with lifespan(local, roles=ROLES, run_projector=True) as engine:
        yield engine.client(tenant)


def mcp(
    http: int = typer.Option(None, "--http", min=1, max=65535,
                             help="Serve streamable HTTP on this port (at /mcp) instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind with --http (default loopback only)."),
    tenant: str = typer.Option("default", "--tenant", "-t", envvar="MEMENGINE_TENANT",
                               help="Tenant id of every call ([A-Za-z0-9_-], 1-128 chars); env MEMENGINE_TENANT."),
    user: str = typer.Option(None, "--user", "-u", envvar="MEMENGINE_USER",
                             help="Bind the tools to this user: the model reads and writes only this user's memory "
                                  "(default: operator scope, every user of the tenant); env MEMENGINE_USER."),
) -> None:
    """Serve memory to agents over MCP: stdio (Claude Desktop, Cursor, Agents SDK) or --http PORT.

    Tools: record_turn, get_context, recall_memory, search_memory, search_conversation_traces, remember,
    forget_memory, audit_memory, list_threads; resources memengine://profile/{user}/MEMORY.md and USER.md."""
    stdio = http is None
    with stdout_to_stderr(stdio):  # settings_from_options configures logging; nothing of it may reach stdout
        settings = settings_from_options()
    try:
        check_token("tenant", tenant)
    except InvalidToken as exc:
        err.print(f"[red]--tenant[/red]: {exc}")
        raise typer.Exit(2) from None
    if user is not None and (not user or len(user) > 1024 or "\x00" in user):
        err.print("[red]--user[/red]: 1-1024 characters, no NUL")
        raise typer.Exit(2)
    try:
        from memengine.engine.integrations.mcp_server import build_server
    except ImportError as exc:  # the SDK is an extra
        err.print(f"[red]the MCP SDK is not installed[/red] ({exc}): pip install 'memengine[mcp]'")
        raise typer.Exit(2) from None
    low = settings.log_level.lower()
    level: Literal["DEBUG", "INFO", "WARNING"] = "DEBUG" if low == "debug" else "INFO" if low == "info" else "WARNING"

    async def main() -> None:
        async with contextlib.AsyncExitStack() as stack:
            with stdout_to_stderr(stdio):
                client = await stack.enter_async_context(engine_client(settings, tenant))
                if user is not None:
                    client = client.for_user(user)  # the binding: no tool argument can widen it
                server = build_server(client, log_level=level)
            if stdio:
                await server.run_stdio_async()
            else:
                scope = f"user {user}" if user is not None else "operator scope"
                err.print(f"memengine mcp: streamable HTTP on http://{host}:{http}/mcp (tenant {tenant}, {scope}). "
                          "Ctrl-C to stop.")
                await server.run_streamable_http_async(host=host, port=http)

    run(main)
