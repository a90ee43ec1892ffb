"""LangChain v1 agent middleware: memengine's context in, the agent's turns out (issue #11 item 2).

    agent = create_agent(model, tools, middleware=[MemengineMiddleware(client)], store=MemengineStore(client))
    await agent.ainvoke({"messages": [{"role": "user", "content": "hi"}]}, {"configurable": {"thread_id": "t1"}})

- Context in (``awrap_model_call``): before each model call, memengine's tiered context of the thread (``query`` =
  the last user message's text) is rendered as text and put into the model request's system message (appended to
  the agent's own). It is done in the model-call wrapper, not as a ``before_model`` state update, so the context
  reaches the request without being written into the agent's message history (and then published as a turn).
- Turns out (``aafter_model`` and ``aafter_agent``): every message of the state not yet published by this
  middleware instance is published as a ``TurnRecorded`` (human -> ``user``, AI -> ``assistant`` with its tool calls
  as ``tool_use`` blocks, tool -> ``tool`` with a ``tool_result`` block; system messages are the agent's prompt, not
  turns). The event id is ``stable_event_id("langgraph", thread, message id)`` (message index when it has no id), so
  a retried or replayed step names the same ids and publishes nothing twice: an instance skips the ids it
  published, and on its first publish to a thread it reads the thread's recorded event ids (``history``), so a
  replay in another process skips them too. Left open: a message published by another process but not yet
  projected when this one reads the history is published again with another ``occurred_at``; the projectors still
  keep one turn per event id (the repeat is dead-lettered as a conflict).
- The thread is the run config's ``configurable.thread_id`` (a subject token: ``[A-Za-z0-9_-]{1,128}``), the tenant
  the client's; ``user_id`` is the middleware's ``user`` (or ``configurable.user_id``).

Errors: ``ValueError`` when the run has no usable thread id; memengine errors map as in ``MemengineStore``
(``ValueError`` for invalid input, ``MemengineStoreError`` otherwise, ``[<code>]`` kept). Not supported yet: the sync
API (``invoke``; use ``ainvoke``/``astream``), ``RemoveMessage`` (a removed message stays recorded), thinking blocks.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_config

from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.integrations.langgraph import map_error
from memengine.engine.wire.errors import NotFound, RpcError
from memengine.engine.wire.provenance import speaker, tool_names
from memengine.engine.wire.replies import ContextResult
from memengine.events import TextBlock, ToolResultBlock, ToolUseBlock, TurnRecorded, check_token, stable_event_id
from memengine.events.model import Role

_THREADS = 1000  # threads whose recorded event ids an instance keeps (an evicted one is read again)


def render_context(ctx: ContextResult) -> str:
    """The context reply as text an LLM reads: one ``[who] text`` line per message, oldest first, ``who`` saying
    who produced the text (``engine.wire.provenance.speaker``: ``user maya``, ``assistant``, ``tool web_fetch``; a
    tool's output is never labelled as the user's, issue #18)."""
    contents = [m.content if isinstance(m.content, list) else [] for m in ctx.messages]
    calls = tool_names(contents)
    lines = []
    for m, blocks in zip(ctx.messages, contents, strict=True):
        text = " ".join(str(b.get("text") or b.get("content") or b.get("name") or "") for b in blocks).strip()
        if text:
            lines.append(f"[{speaker(m.role, m.user_id, blocks, calls)}] {text}")
    return "\n".join(lines)


class MemengineMiddleware(AgentMiddleware):
    """Puts memengine's context into each model request and records the agent's turns (module docstring).

    ``client``: a connected ``MemoryClient``; ``window``: the model's context window in tokens for the context
    (``None``: the engine's default); ``user``: the ``user_id`` of recorded turns; ``header``: the line before the
    rendered context in the system message.
    """

    def __init__(self, client: MemoryClient, *, window: int | None = None, user: str | None = None,
                 header: str = "Memory from earlier in this conversation and about the user (memengine):") -> None:
        super().__init__()
        self.client = client
        self.window = window
        self.user = user
        self.header = header
        #: thread -> event ids it holds (read from history once, then added as published); least recent evicted
        self._seen: OrderedDict[str, set[uuid.UUID]] = OrderedDict()
        self._last_seq: dict[str, int] = {}  # thread -> stream seq of its latest publish here

    @staticmethod
    def _thread() -> str:
        thread = (get_config().get("configurable") or {}).get("thread_id")
        if thread is None:
            raise ValueError("MemengineMiddleware needs configurable.thread_id in the run config")
        return check_token("thread", str(thread))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelResponse:
        """Call the model with the thread's context appended to the system message (``[]`` context: unchanged)."""
        thread = self._thread()
        query = next((str(m.text) for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        try:  # after_seq: the context reflects the turns this instance published (read-your-writes)
            ctx = await self.client.context(thread, window=self.window, query=query or None,
                                            after_seq=self._last_seq.get(thread))
        except NotFound:  # a thread's first model call: nothing recorded yet, the request goes unchanged
            return await handler(request)
        except RpcError as exc:
            raise map_error(exc) from exc
        text = render_context(ctx)
        if not text:
            return await handler(request)
        own = str(request.system_message.text) if request.system_message else ""
        system = SystemMessage(content=f"{own}\n\n{self.header}\n{text}".strip())
        return await handler(request.override(system_message=system))

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Publish the state's messages not yet published (the user turn and the model's answer)."""
        await self._publish(state)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Publish what is left (tool results after the last model call, if any)."""
        await self._publish(state)
        return None

    async def _recorded(self, thread: str) -> set[uuid.UUID]:
        """The event ids ``thread`` holds: read from its history once (a replay elsewhere published them), then kept
        up to date by this instance's publishes."""
        if thread in self._seen:
            self._seen.move_to_end(thread)
            return self._seen[thread]
        seen: set[uuid.UUID] = set()
        from_seq: int | None = 0
        try:
            while from_seq is not None:
                page = await self.client.history(thread, limit=1000, from_seq=from_seq)
                seen.update(uuid.UUID(m.event_id) for m in page.messages if m.event_id)
                from_seq = page.next_from_seq
        except NotFound:
            pass  # a new thread
        except RpcError as exc:
            raise map_error(exc) from exc
        self._seen[thread] = seen
        while len(self._seen) > _THREADS:
            self._seen.popitem(last=False)
        return seen

    async def _publish(self, state: Any) -> None:
        thread = self._thread()
        seen = await self._recorded(thread)
        user = self.user or (get_config().get("configurable") or {}).get("user_id")
        for index, msg in enumerate(state["messages"]):
            turn = _turn(msg)
            if turn is None:
                continue
            role, blocks = turn
            event_id = stable_event_id("langgraph", thread, msg.id or f"index-{index}")
            if event_id in seen:
                continue
            event = TurnRecorded(event_id=event_id, tenant_id=self.client.tenant, thread_id=thread,
                                 occurred_at=datetime.now(UTC), user_id=user, producer="memengine-langgraph",
                                 metadata={"langgraph_message_id": msg.id} if msg.id else {}, role=role,
                                 content=blocks)
            try:
                ack = await self.client.publish(event)
            except RpcError as exc:
                raise map_error(exc) from exc
            self._last_seq[thread] = max(self._last_seq.get(thread, 0), ack.seq)
            seen.add(event_id)


def _turn(msg: AnyMessage) -> tuple[Role, list[Any]] | None:
    """``(role, blocks)`` of a message, ``None`` for one that is no turn (system prompt, empty)."""
    text = str(msg.text)  # a TextAccessor (str subclass) in langchain-core 1.x
    if isinstance(msg, HumanMessage):
        return ("user", [TextBlock(text=text)]) if text else None
    if isinstance(msg, AIMessage):
        blocks: list[Any] = [TextBlock(text=text)] if text else []
        blocks += [ToolUseBlock(id=str(c.get("id") or c["name"]), name=c["name"], input=dict(c.get("args") or {}))
                   for c in msg.tool_calls]
        return ("assistant", blocks) if blocks else None
    if isinstance(msg, ToolMessage):
        return ("tool", [ToolResultBlock(tool_use_id=msg.tool_call_id, content=text,
                                         is_error=msg.status == "error")])
    return None
