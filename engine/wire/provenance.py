"""Who produced a message's text, for rendering context and traces to a model (issue #18 item 3, role-faithful
provenance).

A message of the wire (``MessageOut``: ``role``, ``user_id``, ``content`` blocks as JSON objects) is labelled by who
produced its text: ``user <id>`` (or ``user``), ``assistant``, ``system``, or ``tool <name>`` for a tool's output.
A message is a tool's output when its role is ``tool`` or when it carries a ``tool_result`` block, whatever its role:
Anthropic's format puts tool results in user messages, and an instruction hidden in a fetched web page must not read
as something the user said (OWASP agentic top 10, memory poisoning; MINJA, Dong et al. 2025). The tool's name comes
from the ``tool_use`` block with the result's ``tool_use_id`` among the messages at hand (``tool_names``). The same
rule labels recall hits on the server (``projections.vectors``). Needs nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Blocks = Sequence[Mapping[str, Any]]


def tool_names(contents: Iterable[Blocks]) -> dict[str, str]:
    """``{tool_use id: tool name}`` over the ``tool_use`` blocks of ``contents`` (each a message's block list)."""
    return {str(b.get("id")): str(b.get("name")) for blocks in contents for b in blocks
            if b.get("type") == "tool_use" and b.get("id") is not None}


def provenance(role: str, blocks: Blocks, calls: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """``(role, tool)`` of a message: ``("tool", name or None)`` when ``role`` is ``tool`` or a block is a
    ``tool_result`` (the name of the call its first result answers, from ``calls``); else ``(role, None)``."""
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if role == "tool" or results:
        tid = str(results[0].get("tool_use_id")) if results else None
        return "tool", (calls or {}).get(tid) if tid is not None else None
    return role, None


def speaker(role: str, user_id: str | None, blocks: Blocks, calls: Mapping[str, str] | None = None) -> str:
    """The label a model reads before a message: ``user maya`` / ``user``, ``assistant``, ``system``,
    ``tool web_fetch`` / ``tool``. A tool's output never carries the user's id, whichever user it was fetched for."""
    who, tool = provenance(role, blocks, calls)
    if who == "tool":
        return f"tool {tool}" if tool else "tool"
    if who == "user" and user_id:
        return f"user {user_id}"
    return who
