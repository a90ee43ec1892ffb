"""memengine as an MCP server (issue #11 item 1), built with the official ``mcp`` SDK 2.x (``MCPServer``).

``build_server(client)`` returns an ``MCPServer`` whose tools and resources speak to a running engine through
``client`` (a ``MemoryClient``); ``memengine mcp`` (``engine.cli.mcp_cmd``) serves it over stdio or streamable HTTP.

Tools (JSON-schema'd arguments; each answers structured content plus the same as text, except ``get_context`` whose
text is the context itself):

- ``record_turn(thread, role, text, user?, session?, idempotency_key?)``: a ``TurnRecorded`` fact; answers only
  after JetStream acknowledged it, with ``seq`` (pass it to ``get_context`` as ``after_seq``), ``event_id`` and
  ``duplicate``. A retry records nothing twice: the same ``idempotency_key`` (the HTTP API's ``Idempotency-Key``
  mapping), or without a key an immediate identical retry in the same MCP session (``engine.integrations.mcp_writes``,
  issue #26 item 7) is answered with the first write's ``seq`` and ``duplicate: true``;
- ``get_context(thread, window?, query?, after_seq?)``: the tiered context (``rpc.context``) rendered as text an LLM
  reads, with the token accounting in the text and in the structured content;
- ``recall_memory``, ``search_memory``, ``search_conversation_traces``: the agent tools of ``engine.client.tools``
  (same names, arguments and answers);
- ``remember(text, user, type?, tags?, idempotency_key?)``: a ``MemoryAsserted`` fact (retries as ``record_turn``);
  ``forget_memory(memory_id)``: a ``MemoryRetracted`` fact (the item is kept as ``retracted``, nothing is rewritten);
  ``audit_memory(memory_id)``: the provenance chain item -> derived events -> source turns; ``list_threads(limit?)``.

Resources: ``memengine://profile/{user}/MEMORY.md`` and ``memengine://profile/{user}/USER.md`` (``rpc.profile``).

The tenant is the client's (configuration: ``--tenant`` / ``MEMENGINE_TENANT``); no tool argument can name another.
The user likewise (issue #18 item 2): a server built over a client bound to a user (``--user`` / ``MEMENGINE_USER``,
``MemoryClient.for_user``) reads and writes that user's memory only. A ``user`` argument naming another user, a
memory about another user (``forget_memory``, ``audit_memory``), another user's profile resource or another user's
thread (``get_context``) answers ``forbidden: ...``; turns and memories it records carry the bound
user; ``list_threads`` lists the bound user's threads, and ``record_turn`` into another user's thread is refused
(the query handler enforces the binding, ``engine.read.scope``, issue #26 item 4). Without a bound user the server
is in operator scope: the whole tenant, as the CLI.
Errors: every failure of a tool is an MCP tool error (``isError``) whose text starts with memengine's wire code
(``unknown_memory: ...``, ``invalid_token: ...``, ``unavailable: ...``; ``engine.wire.errors``); a resource read
fails with an MCP resource error carrying the code likewise. The server itself never stops on a failed call.
"""

import contextlib
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import msgspec
import nats.errors
import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import Field, ValidationError

from memengine.engine.client import tools as agent_tools
from memengine.engine.client.memory_client import MemoryClient, asserted_memory_id
from memengine.engine.client.ryw import LastWritten
from memengine.engine.integrations.mcp_writes import WriteMemory, fingerprint
from memengine.engine.wire.errors import InvalidInput, NotFound, rpc_error
from memengine.engine.wire.provenance import speaker, tool_names
from memengine.engine.wire.replies import ContextResult

__all__ = ["TOOL_NAMES", "MemengineMCPServer", "MemengineToolError", "build_server", "error_text", "render_context"]

log = structlog.get_logger("memengine.mcp")

#: The tools ``build_server`` registers, in the order ``tools/list`` returns them.
TOOL_NAMES = ("record_turn", "get_context", "recall_memory", "search_memory", "search_conversation_traces",
              "remember", "forget_memory", "audit_memory", "list_threads")

MemoryType = Literal["PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC"]
Thread = Annotated[str, Field(description="Conversation thread id: 1-128 characters of [A-Za-z0-9_-].")]
TopK = Annotated[int | None, Field(ge=1, le=100, description="How many results (default 5).")]
#: ``top_k``: the old name of ``limit`` (issue #15 item 5: one name for the result count), accepted from clients
#: written against it; ``limit`` wins when both are given.
OldTopK = Annotated[int | None, Field(ge=1, le=100, description="Old name of limit (use limit).")]

IdempotencyKey = Annotated[str | None, Field(max_length=200, description=(
    "Any string naming this write (optional): calling again with the same key records nothing twice and answers "
    "the first write's seq with duplicate=true. Use a new key for each new write; without one, only an immediate "
    "identical retry in this session is recognised."))]

INSTRUCTIONS = (
    "memengine is the long-term memory of this agent. Record every user and assistant turn with record_turn; before "
    "answering, call get_context for the thread (pass the seq record_turn returned as after_seq to see your own "
    "write). Use search_memory for what is known about the user, recall_memory and search_conversation_traces for "
    "details of past conversations, remember for facts the user asks you to keep, forget_memory to retract one, "
    "audit_memory to show where a memory came from.")


def error_text(exc: BaseException) -> str:
    """``"<code>: <message>"`` for ``exc``: memengine's wire code (``engine.wire.errors.rpc_error``), ``unavailable``
    for a NATS connection or timeout error, ``internal`` (with no detail: it is logged) for anything else."""
    if isinstance(exc, nats.errors.Error | TimeoutError):
        return f"unavailable: NATS did not answer ({type(exc).__name__}: {exc}); retry shortly"
    code, message = rpc_error(exc)
    if message is None:
        log.error("mcp tool failed", error=repr(exc), exc_info=exc)
        return f"{code}: unexpected error (see the memengine server log)"
    return f"{code}: {message}"


class MemengineToolError(ToolError):
    """A tool's failure, its text ``"<code>: <message>"`` (``error_text``); ``__cause__`` is the original error."""


@contextlib.contextmanager
def _as_tool_error() -> Iterator[None]:
    """Re-raise any failure as ``MemengineToolError`` (an ``isError`` result the model reads), code first."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        raise MemengineToolError(error_text(exc)) from exc


class MemengineMCPServer(MCPServer[Any]):
    """``MCPServer`` whose tool errors read ``"<code>: <message>"`` with memengine's wire code first, as the model
    and the client see them: the SDK prefixes a tool's ``ToolError`` with ``Error executing tool <name>:``, and
    reports arguments that fail the input schema or an unknown tool the same way (here ``invalid_request: ...``)
    and a crash as ``Error executing tool <name>`` (here ``internal: ...``, logged with its traceback)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, MemengineToolError):
                text = str(cause)
            elif isinstance(exc, UnexpectedToolError):
                log.error("mcp tool crashed", tool=name, exc_info=cause or exc)
                text = f"internal: unexpected error in {name} (see the memengine server log)"
            elif isinstance(cause, ValidationError):
                text = f"invalid_request: arguments of {name} do not match its input schema: {cause}"
            else:
                text = f"invalid_request: {exc}"
            log.info("mcp tool error", tool=name, error=text)
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@contextlib.contextmanager
def _as_resource_error() -> Iterator[None]:
    """Re-raise any failure as the SDK's ``ResourceError`` (``ResourceNotFoundError`` for memengine's ``NotFound``)."""
    try:
        yield
    except ResourceError:
        raise
    except Exception as exc:
        raise (ResourceNotFoundError if isinstance(exc, NotFound) else ResourceError)(error_text(exc)) from exc


def _block_text(block: dict[str, Any], calls: dict[str, str] | None = None) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return f"[thinking: {block.get('thinking', '')}]"
    if kind == "tool_use":
        args = json.dumps(block.get("input", {}), ensure_ascii=False, sort_keys=True)
        return f"[tool call {block.get('name')}({args}) id={block.get('id')}]"
    if kind == "tool_result":
        err = " error" if block.get("is_error") else ""
        name = (calls or {}).get(str(block.get("tool_use_id")))
        of = f" of {name}" if name else ""
        return f"[tool result{err}{of} for {block.get('tool_use_id')}: {block.get('content', '')}]"
    return json.dumps(block, ensure_ascii=False)


def render_context(ctx: ContextResult) -> str:
    """The context as plain text for an LLM: a header with the token accounting (memory tokens used / budget per
    tier, the window, dropped messages, the read models' sequence), then the messages oldest first, one block each:
    ``[tier 3 | seq 12 | 2026-11-23T12:00 | user maya]`` and its content (tool calls and results inline).

    The label says who produced the text (issue #18, ``engine.wire.provenance``): ``user maya``, ``assistant``,
    ``system``, or ``tool web_fetch`` for a tool's output (also one carried in a user message): never the user's
    name on a tool's output."""
    b, t = ctx.budget, ctx.tokens
    lines = [
        f"# memengine context for thread {ctx.thread} ({ctx.mode})",
        (f"Token accounting: {t.get('total', 0)} of {b.total} memory tokens used (window {b.window}, margin "
         f"{b.margin}, output reserve {b.reserve}, system prompt {b.system}); tier 1 summary+topics "
         f"{t.get('tier1', 0)}/{b.tier1}, tier 2 condensed {t.get('tier2', 0)}/{b.tier2}, tier 3 verbatim "
         f"{t.get('tier3', 0)}/{b.tier3}; {ctx.dropped} older messages left out; tokenizer {ctx.tokenizer}; "
         f"read models at seq {ctx.applied_seq}" + (" (stale: after_seq not reached yet)" if ctx.stale else "")),
    ]
    if not ctx.messages:
        lines.append("\n(no messages in this thread yet)")
    contents = [m.content if isinstance(m.content, list) else msgspec.json.decode(m.content) for m in ctx.messages]
    calls = tool_names(contents)
    for m, content in zip(ctx.messages, contents, strict=True):
        who = speaker(m.role, m.user_id, content, calls)
        head = f"tier {m.tier} | memory summary" if m.tier == 1 and m.seq == 0 else \
            f"tier {m.tier} | seq {m.seq} | {m.occurred_at[:16]} | {who}" + (" | condensed" if m.condensed else "") \
            + (" | recalled for the query" if m.chosen_by == "relevance" else "")
        lines.append(f"\n[{head}]\n" + "\n".join(_block_text(blk, calls) for blk in content))
    return "\n".join(lines)


def _session_of(ctx: Context[Any, Any] | None) -> Any:
    """The MCP session a tool call came in on (what ``WriteMemory`` scopes an unkeyed retry to): the transport's
    session id (streamable HTTP), else the connection's outbound channel (one per stdio stream: the 2026 protocol
    builds a ``Connection`` per request but shares the stream's channel; the handshake era one per client loop);
    ``None`` without a request context. The SDK builds a ``ServerSession`` per request, so that object cannot be the
    key. A stateless HTTP request has a channel of its own: only keyed retries are recognised there."""
    try:
        session = ctx.session if ctx is not None else None
    except ValueError:  # outside a request
        return None
    connection = getattr(session, "connection", None) or getattr(session, "_connection", None)
    if connection is None:
        return session
    return getattr(connection, "session_id", None) or getattr(connection, "outbound", None) or connection


def build_server(client: MemoryClient, *, name: str = "memengine",
                 log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING") -> MCPServer[Any]:
    """An ``MCPServer`` (``MemengineMCPServer``, not started) exposing ``TOOL_NAMES`` and the profile resources over
    ``client``.

    Run it with ``await server.run_stdio_async()`` or ``run_streamable_http_async(host=..., port=...)``, or connect
    to it in-process with ``mcp.Client(server)``. Every call uses ``client``'s tenant. ``log_level``: the SDK's
    logging (its handler writes to stderr). Raises nothing itself; tool failures become MCP tool errors whose text
    starts with memengine's error code (module docstring).
    """
    server = MemengineMCPServer(name, instructions=INSTRUCTIONS, log_level=log_level)
    writes = WriteMemory(client.tenant)  # retries record nothing twice (engine.integrations.mcp_writes)
    # read-your-writes without the model's help (issue #27 item 3): get_context waits for this server's last write
    # to the thread. Per server: one stdio session; HTTP sessions of one server share it (a wait for another
    # session's write to the same thread only makes the context fresher)
    written = LastWritten()

    @server.tool(name="record_turn", description=(
        "Record one conversation turn in long-term memory. Answers after the write is durably stored, with its "
        "stream sequence (seq: pass it to get_context as after_seq) and event_id."))
    async def record_turn(
        thread: Thread,
        role: Annotated[Literal["user", "assistant", "system", "tool"], Field(description="Who spoke.")],
        text: Annotated[str, Field(description="What was said.")],
        user: Annotated[str | None, Field(description="The user's id (optional).")] = None,
        session: Annotated[str | None, Field(description="Session id within the thread (optional).")] = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context[Any, Any] | None = None,
    ) -> dict[str, Any]:
        with _as_tool_error():
            event_id, at = writes.identity(_session_of(ctx), f"turn:{thread}",
                                           fingerprint(thread, role, text, user, session), idempotency_key)
            ack = await client.record_turn(thread, role, text, user_id=user, session_id=session, event_id=event_id,
                                           occurred_at=at)
            written.note(thread, ack.seq)
            return {"thread": thread, "seq": ack.seq, "event_id": ack.event_id, "duplicate": ack.duplicate}

    @server.tool(name="get_context", structured_output=False, description=(
        "The memory context of a thread to put before your answer: a summary and topics, condensed older turns "
        "and the recent turns verbatim, fitted to your context window, with the token accounting."))
    async def get_context(
        thread: Thread,
        window: Annotated[int | None, Field(ge=1, le=10_000_000,
                                            description="Your context window in tokens (default 128000).")] = None,
        query: Annotated[str | None, Field(description=(
            "The current user message: older turns relevant to it are put in the context (recalled for the query), "
            "with its memories and topics first."))] = None,
        after_seq: Annotated[int | None, Field(ge=0, description=(
            "A seq from record_turn: wait (a few seconds at most) until that turn is included."))] = None,
    ) -> CallToolResult:
        with _as_tool_error():
            ctx = await client.context(thread, window=window, query=query, after_seq=written.after(thread, after_seq))
        accounting = {"thread": ctx.thread, "mode": ctx.mode, "budget": msgspec.to_builtins(ctx.budget),
                      "tokens": ctx.tokens, "messages": len(ctx.messages), "event_ids": ctx.event_ids,
                      "dropped": ctx.dropped, "applied_seq": ctx.applied_seq, "stale": ctx.stale}
        return CallToolResult(content=[TextContent(type="text", text=render_context(ctx))],
                              structured_content=accounting)

    @server.tool(name="recall_memory", description=agent_tools.RECALL_MEMORY["function"]["description"])
    async def recall_memory(
        query: Annotated[str, Field(description="What to recall: a question or keywords.")],
        limit: TopK = None,
        thread: Annotated[str | None, Field(description="Only this conversation thread (optional).")] = None,
        user: Annotated[str | None, Field(description="Only messages of this user (optional).")] = None,
        top_k: OldTopK = None,
    ) -> dict[str, Any]:
        with _as_tool_error():
            answer = await agent_tools.recall_memory(
                {"query": query, "limit": limit, "top_k": top_k, "thread": thread, "user": user}, client)
            return dict(json.loads(answer))

    @server.tool(name="search_memory", description=agent_tools.SEARCH_MEMORY["function"]["description"])
    async def search_memory(
        query: Annotated[str, Field(description="What to look for: a question or keywords.")],
        types: Annotated[list[MemoryType] | None, Field(description="Only memories of these types (optional).")]
        = None,
        tags: Annotated[list[str] | None, Field(description="Only memories carrying all of these tags (optional).")]
        = None,
        user: Annotated[str | None, Field(description="Only memories about this user (optional).")] = None,
        thread: Annotated[str | None, Field(description="Only memories from this conversation (optional).")] = None,
        limit: TopK = None,
        top_k: OldTopK = None,
    ) -> dict[str, Any]:
        with _as_tool_error():
            answer = await agent_tools.search_memory(
                {"query": query, "types": types, "tags": tags, "user": user, "thread": thread, "limit": limit,
                 "top_k": top_k}, client)
            return dict(json.loads(answer))

    @server.tool(name="search_conversation_traces",
                 description=agent_tools.SEARCH_CONVERSATION_TRACES["function"]["description"])
    async def search_conversation_traces(
        query: Annotated[str, Field(description="What to look for.")],
        thread: Annotated[str | None, Field(description="Only this conversation thread (optional).")] = None,
        limit: Annotated[int | None, Field(ge=1, le=50, description="How many turns to return (default 5).")]
        = None,
    ) -> dict[str, Any]:
        with _as_tool_error():
            answer = await agent_tools.search_conversation_traces(
                {"query": query, "thread": thread, "limit": limit}, client)
            return dict(json.loads(answer))

    @server.tool(name="remember", description=(
        "Store a memory about a user (a fact, preference, rule, ...) explicitly. Answers after it is durably "
        "stored, with the memory_id it will have once derived (a duplicate of an existing memory is linked to "
        "that one instead); audit_memory(memory_id) shows it and its source."))
    async def remember(
        text: Annotated[str, Field(description="The memory, as one self-contained statement.")],
        user: Annotated[str | None, Field(description=(
            "The user it is about (required unless this server is bound to a user; then only that user)."))] = None,
        type: Annotated[MemoryType, Field(description="Kind of memory (default FACT).")] = "FACT",
        tags: Annotated[list[str] | None, Field(description="Tags to find it by (optional).")] = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context[Any, Any] | None = None,
    ) -> dict[str, Any]:
        with _as_tool_error():
            if user is None and client.user is None:
                raise InvalidInput("remember needs a user (this server is not bound to one)")
            event_id, at = writes.identity(_session_of(ctx), f"memory:{user or client.user}",
                                           fingerprint(text, user, type, tags), idempotency_key)
            ack = await client.remember(text, user=user, memory_type=type, tags=tags or (), event_id=event_id,
                                        occurred_at=at)
            return {"seq": ack.seq, "event_id": ack.event_id, "duplicate": ack.duplicate,
                    "memory_id": asserted_memory_id(client.tenant, ack.event_id)}

    @server.tool(name="forget_memory", description=(
        "Retract a memory: it stops being used (kept as retracted for the audit trail). Answers after the "
        "retraction is durably stored."))
    async def forget_memory(
        memory_id: Annotated[str, Field(description="The memory's id (from search_memory or remember).")],
    ) -> dict[str, Any]:
        with _as_tool_error():
            item = (await client.audit(memory_id)).memory  # unknown_memory before anything is published
            ack = await client.retract(item.memory_id, user=item.user_id, reason="forget_memory (MCP)")
            return {"memory_id": item.memory_id, "previous_status": item.status, "seq": ack.seq,
                    "event_id": ack.event_id}

    @server.tool(name="audit_memory", description=(
        "Where a memory came from: the memory, the derived events that created or changed it (model, prompt "
        "version, decision) and the conversation turns they were derived from."))
    async def audit_memory(
        memory_id: Annotated[str, Field(description="The memory's id (from search_memory or remember).")],
    ) -> dict[str, Any]:
        with _as_tool_error():
            return dict(msgspec.to_builtins(await client.audit(memory_id)))

    @server.tool(name="list_threads", description="The conversation threads in memory, most recently active first.")
    async def list_threads(
        limit: Annotated[int, Field(ge=1, le=1000, description="How many threads (default 50).")] = 50,
    ) -> dict[str, Any]:
        with _as_tool_error():
            return dict(msgspec.to_builtins(await client.threads(limit=limit)))

    async def profile_file(user: str, name: str) -> str:
        with _as_resource_error():
            return (await client.profile(user)).files.get(name, "")

    @server.resource("memengine://profile/{user}/MEMORY.md", name="MEMORY.md", mime_type="text/markdown",
                     description="Core memory of a user: rules, permanent and key facts (from active memories).")
    async def memory_md(user: str) -> str:
        return await profile_file(user, "MEMORY.md")

    @server.resource("memengine://profile/{user}/USER.md", name="USER.md", mime_type="text/markdown",
                     description="Profile of a user: who they are and what they prefer (from active memories).")
    async def user_md(user: str) -> str:
        return await profile_file(user, "USER.md")

    return server
