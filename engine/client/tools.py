"""Memory tools for agents: OpenAI tool/function schemas plus their handlers (issue #3 §4).

Hand ``TOOLS`` to a model unchanged; when it calls one, ``await call_tool(name, arguments_json, client)`` returns the
JSON string to put in the tool message. ``recall_memory`` (seed 000 §4.4): the most relevant past turns, with their
dates and speakers. ``search_memory`` (seed 004 §6, first level): typed long-term memories (preferences, rules,
facts, experiences), active and unexpired by default, each with the turns it was derived from.
``search_conversation_traces`` (seed 004 §6, second level): raw turns, tool calls with their arguments and results
included, from the transcript of the turns recall finds.

Scope (issue #18 item 2): the tools act in the scope of the ``MemoryClient`` they are given. A client the application
bound to a user (``MemoryClient.connect(..., user=...)``, ``client.for_user(user)``) answers for that user only: a
``user`` argument the model supplies may repeat the bound user, and naming another one answers
``{"error": "forbidden: ...", "code": "forbidden"}``; a model cannot widen its scope. An unbound client (operator
scope) searches the whole tenant, or the ``user`` given.

Provenance (issue #18 item 3): every recalled turn and trace says who produced its text: ``role`` (user, assistant,
system or tool), ``tool`` (the tool's name for a tool's output) and ``user_id`` (whose conversation it belongs to);
the recalled ``text`` is labelled the same way (``[date] tool web_fetch: ...``), never with the user's name for a
tool's output, so an instruction inside a fetched page reads as that tool's output, not as the user's request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.wire.errors import RpcError
from memengine.engine.wire.provenance import provenance

RECALL_MEMORY: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "recall_memory",
        "description": ("Search long-term memory of past conversations for details relevant to a question or topic. "
                        "Returns the most relevant past messages with their date and speaker."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to recall: a question or keywords."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "How many memories to return (default 5)."},
                "thread": {"type": "string", "description": "Only this conversation thread (optional)."},
                "user": {"type": "string", "description": (
                    "Only messages of this user (optional; an agent bound to a user sees that user only).")},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

MEMORY_TYPES = ["PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC"]

SEARCH_MEMORY: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_memory",
        "description": ("Search long-term memories about the user: preferences, rules, facts, skills, lessons from "
                        "errors, tasks. Expired and superseded memories are left out. Use this first; use "
                        "search_conversation_traces for exact details such as tool arguments and results."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for: a question or keywords."},
                "types": {"type": "array", "items": {"type": "string", "enum": MEMORY_TYPES},
                          "description": "Only memories of these types (optional)."},
                "tags": {"type": "array", "items": {"type": "string"},
                         "description": "Only memories carrying all of these tags (optional)."},
                "user": {"type": "string", "description": (
                    "Only memories about this user (optional; an agent bound to a user sees that user only).")},
                "thread": {"type": "string", "description": "Only memories from this conversation (optional)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "How many memories to return (default 5)."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

SEARCH_CONVERSATION_TRACES: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_conversation_traces",
        "description": ("Search the raw transcript of past conversations, including tool calls with their arguments "
                        "and tool results, e.g. to see exactly what a tool returned before."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "thread": {"type": "string", "description": "Only this conversation thread (optional)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                          "description": "How many turns to return (default 5)."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

TOOLS: list[dict[str, Any]] = [RECALL_MEMORY, SEARCH_MEMORY, SEARCH_CONVERSATION_TRACES]


def _args(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value


def _limit(a: dict[str, Any]) -> Any:
    """The result count: ``limit`` (every tool's name for it, issue #15 item 5) or ``top_k``, its old name in
    ``recall_memory`` / ``search_memory``, still accepted from agents written against it."""
    return a["limit"] if a.get("limit") is not None else a.get("top_k")


async def recall_memory(arguments: str | dict[str, Any], client: MemoryClient) -> str:
    """Handler of ``recall_memory``: ``{"mode", "memories": [{"text", "role", "tool", "user_id", "thread",
    "occurred_at", "event_id", "score"}]}``, best first: ``role`` / ``tool`` say who produced ``text`` (module
    docstring). ``RpcError("forbidden")`` for a ``user`` other than the client's bound user."""
    a = _args(arguments)
    res = await client.recall(str(a["query"]), thread=a.get("thread"), user=a.get("user"), k=_limit(a))
    return json.dumps({
        "mode": res.mode,
        "memories": [{"text": h.text, "role": h.role, "tool": h.tool, "user_id": h.user_id, "thread": h.thread,
                      "occurred_at": h.occurred_at, "event_id": h.event_id, "score": h.score} for h in res.hits],
    }, ensure_ascii=False)


async def search_memory(arguments: str | dict[str, Any], client: MemoryClient) -> str:
    """Handler of ``search_memory``: ``{"mode", "memories": [{"memory_id", "type", "text", "tags", "importance",
    "valid_at", "expires_at", "score", "source_event_ids"}]}``, best first; active, unexpired items only (seed 004
    §6), about the bound user only when the client is bound. ``ValueError`` / ``TypeError`` for malformed arguments,
    ``RpcError("forbidden")`` for another user (``call_tool`` turns them into ``{"error"}``)."""
    a = _args(arguments)
    types, tags = a.get("types"), a.get("tags")
    for name, value in (("types", types), ("tags", tags)):
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise TypeError(f"{name} must be a list of strings")
    res = await client.recall(str(a["query"]), thread=a.get("thread"), user=a.get("user"), k=_limit(a),
                              sources=["memories"], types=types or None, tags=tags or None)
    return json.dumps({
        "mode": res.mode,
        "memories": [{"memory_id": h.memory_id, "type": h.type, "text": h.text, "user_id": h.user_id, "tags": h.tags,
                      "importance": h.importance, "valid_at": h.occurred_at, "expires_at": h.expires_at,
                      "score": h.score, "source_event_ids": h.source_event_ids} for h in res.hits],
    }, ensure_ascii=False)


async def search_conversation_traces(arguments: str | dict[str, Any], client: MemoryClient) -> str:
    """Handler of ``search_conversation_traces``: the matching turns verbatim (content blocks, tool_use inputs and
    tool_result contents), each with its thread, seq, time, ``role`` (who produced it: user, assistant, system or
    tool, a ``tool_result`` carried in a user message included), ``tool`` (the tool's name), ``message_role`` (the
    role the turn was recorded with) and ``user_id``. A bound client traces its user's turns only."""
    a = _args(arguments)
    limit = int(a.get("limit") or 5)
    res = await client.recall(str(a["query"]), thread=a.get("thread"), user=a.get("user"), k=limit)
    traces = []
    for h in res.hits:
        if h.thread is None or h.seq is None:  # turn hits carry both; typed Optional for memory hits
            continue
        hist = await client.history(h.thread, limit=1, from_seq=h.seq - 1)
        for m in hist.messages:
            if m.seq == h.seq:
                content = m.content if isinstance(m.content, list) else msgspec.json.decode(m.content)
                role, tool = provenance(m.role, content)
                traces.append({"thread": h.thread, "seq": m.seq, "event_id": m.event_id, "role": role,
                               "tool": h.tool or tool, "message_role": m.role, "user_id": m.user_id,
                               "occurred_at": m.occurred_at, "content": content})
    return json.dumps({"mode": res.mode, "traces": traces}, ensure_ascii=False)


HANDLERS: dict[str, Callable[[str | dict[str, Any], MemoryClient], Awaitable[str]]] = {
    "recall_memory": recall_memory,
    "search_memory": search_memory,
    "search_conversation_traces": search_conversation_traces,
}


async def call_tool(name: str, arguments: str | dict[str, Any], client: MemoryClient) -> str:
    """Run tool ``name``; errors come back as ``{"error": ...}`` JSON for the model, never as an exception."""
    handler = HANDLERS.get(name)
    if handler is None:
        return json.dumps({"error": f"unknown tool {name!r}"})
    try:
        return await handler(arguments, client)
    except (ValueError, KeyError, TypeError) as exc:
        return json.dumps({"error": f"bad arguments: {exc}"})
    except RpcError as exc:
        return json.dumps({"error": f"{exc.code}: {exc.message}", "code": exc.code})
