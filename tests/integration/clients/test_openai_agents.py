"""The OpenAI Agents SDK session on the real engine (issue #11 item 3): ``Runner.run(agent, input, session=...)``
with a scripted model (the SDK's ``Model`` interface, no network) over several turns with a function tool; the second
run continues from memengine's history; ``pop_item`` / ``clear_session`` are ``TurnsWithdrawn`` facts; retried adds
never duplicate; a fresh fold of the log equals the read model."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memengine.engine.bootstrap import Engine
from memengine.engine.integrations.openai_agents import (
    MemengineSession,
    MemengineSessionError,
    session_thread,
)
from memengine.engine.ops import rebuild as rb
from memengine.engine.wire.errors import RpcError
from memengine.events import TurnsWithdrawn

pytestmark = pytest.mark.integration
set_tracing_disabled(True)


def say(text: str, n: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def call(name: str, args: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name=name,
                                    arguments=json.dumps(args), status="completed")


class ScriptedModel(Model):
    """Answers each model call with the next scripted output and keeps the input it was given."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = list(outputs)
        self.inputs: list[list[TResponseInputItem]] = []

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append([{"role": "user", "content": input}] if isinstance(input, str) else list(input))
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the test does not stream")


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def dicts(items: list[Any]) -> list[dict[str, Any]]:
    """Items as plain JSON (what a session stores and returns)."""
    return json.loads(json.dumps([i if isinstance(i, dict) else i.model_dump(mode="json", exclude_unset=True)
                                  for i in items]))


async def test_runner_runs_twice_on_memengine_history(engine: Engine) -> None:
    client = engine.client("acme")
    model = ScriptedModel([
        [call("get_weather", {"city": "Paris"}, 1)],  # run 1: the tool call...
        [say("It is sunny in Paris.", 2)],  # ...then the answer
        [say("Take sunglasses.", 3)],  # run 2
    ])
    agent = Agent(name="weather", instructions="Be brief.", model=model, tools=[get_weather])
    session = MemengineSession("chat-1", client, user_id="maya")

    first = await Runner.run(agent, "Weather in Paris?", session=session)
    assert first.final_output == "It is sunny in Paris."
    after_first = await session.get_items()
    assert [i.get("type", "message") for i in after_first] == [
        "message", "function_call", "function_call_output", "message"]
    assert after_first[1]["call_id"] == "call_1" and after_first[2]["output"] == "sunny in Paris"

    # a second run, on a fresh session object (nothing cached; the first one's last_seq is its read-your-writes
    # token): the model sees run 1's items, read from memengine
    fresh = MemengineSession("chat-1", client, user_id="maya", after_seq=session.last_seq)
    second = await Runner.run(agent, "What should I take?", session=fresh)
    assert second.final_output == "Take sunglasses."
    assert dicts(model.inputs[2][:4]) == after_first
    assert model.inputs[2][4]["content"] == "What should I take?"
    items = await MemengineSession("chat-1", client, after_seq=fresh.last_seq).get_items()
    assert len(items) == 6 and items[:4] == after_first and items[5]["id"] == "msg_3"
    assert await fresh.get_items() == items
    assert await session.get_items(limit=2) == items[4:]

    # memengine's own view: one turn per item, exactly once, with blocks its readers understand
    history = await client.history("chat-1", limit=100)
    assert [m.role for m in history.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    kinds = [[b["type"] for b in m.content] for m in history.messages]  # type: ignore[union-attr]
    assert kinds == [["text"], ["tool_use"], ["tool_result"], ["text"], ["text"], ["text"]]
    tool_use = history.messages[1].content[0]  # type: ignore[index]
    assert tool_use == {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
    assert history.messages[2].content[0]["tool_use_id"] == "call_1"  # type: ignore[index]
    assert {m.session_id for m in history.messages} == {"chat-1"} and {m.user_id for m in history.messages} == {
        "maya"}
    ctx = await client.context("chat-1", window=8000)
    assert "Take sunglasses." in json.dumps([m.content for m in ctx.messages])

    # the log folded afresh gives the same read models
    report = await rb.verify(engine, ["messages", "thread_activity"])
    assert report.ok, [(t.table, t.only_live[:1], t.only_fold[:1]) for t in report.tables if not t.ok]


async def test_retried_adds_never_duplicate(engine: Engine) -> None:
    client = engine.client("acme")
    session = MemengineSession("retry", client)
    batch = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    await session.add_items(batch)
    await session.add_items(batch)  # the same call again (its acknowledgement was lost, say)
    await MemengineSession("retry", client, after_seq=session.last_seq).add_items(batch)  # again, elsewhere
    assert await session.get_items() == batch
    # a failure part-way: the first item landed, the retry records only the rest, once
    x, y = {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}
    await session.add_items([x])
    other = MemengineSession("retry", client, after_seq=session.last_seq)
    await other.add_items([x, y])
    session = MemengineSession("retry", client, after_seq=other.last_seq)
    assert await session.get_items() == [*batch, x, y]
    # the same content later, after another turn, is a new turn
    await session.add_items(batch)
    assert await session.get_items() == [*batch, x, y, *batch]
    history = await client.history("retry")
    assert len({m.event_id for m in history.messages}) == len(history.messages) == 6


async def test_pop_and_clear_are_facts(engine: Engine) -> None:
    client = engine.client("acme")
    session = MemengineSession("undo me", client)  # not a subject token: the thread is derived from it
    thread = session_thread("undo me")
    assert thread.startswith("oa-") and session.thread == thread
    assert await session.pop_item() is None and await session.get_items() == []
    a, b, c = ({"role": "user", "content": t} for t in ("a", "b", "c"))
    await session.add_items([a, b, c])
    assert await session.pop_item() == c
    assert await session.get_items() == [a, b]
    assert await MemengineSession("undo me", client, after_seq=session.last_seq).get_items() == [a, b]  # no cache

    # the popped item added again at the same place is recorded again (its old id stays withdrawn)
    await session.add_items([c])
    assert await session.get_items() == [a, b, c]
    # ... also by another instance, which does not know the old id was withdrawn: the log keeps the first copy (the
    # reused id with the same content is a repeat, skipped: events.retry_digest) and the item is recorded under the
    # id's next variant
    assert await session.pop_item() == c
    other = MemengineSession("undo me", client, after_seq=session.last_seq)
    await other.add_items([c])
    assert await other.get_items() == [a, b, c]
    session = MemengineSession("undo me", client, after_seq=other.last_seq)

    await session.clear_session()
    assert await session.get_items() == []
    await session.add_items([a])  # the same first item after a clear
    assert await session.get_items() == [a]
    assert await MemengineSession("undo me", client, after_seq=session.last_seq).get_items() == [a]

    # no dead letters: the reused id above differed from its first copy only in occurred_at, a repeat (it was
    # dead-lettered as an id conflict before the dedupe compared re-stamped copies), and the re-adds made none
    assert await engine.pool.fetch("SELECT DISTINCT event_id::text AS e, error FROM dead_letters") == []
    # nothing was rewritten: the log holds every turn and the withdrawals as facts
    sub = engine.subjects.fact("acme", thread, TurnsWithdrawn.__name__)
    info = await engine.js.stream_info(engine.streams.facts, subjects_filter=sub)
    assert sum((info.state.subjects or {}).values()) >= 3
    report = await rb.verify(engine, ["messages", "thread_activity"])
    assert report.ok, [(t.table, t.only_live[:1], t.only_fold[:1]) for t in report.tables if not t.ok]


async def test_errors_keep_the_code_and_write_nothing(engine: Engine) -> None:
    client = engine.client("acme")
    session = MemengineSession("errs", client)
    huge = {"role": "user", "content": "x" * 300_000}  # over MAX_TEXT: the fact would be dead-lettered
    with pytest.raises(MemengineSessionError, match=r"^\[(invalid_event|payload_too_large)\]"):
        await session.add_items([{"role": "user", "content": "fine"}, huge])
    with pytest.raises(RpcError) as nothing:
        await client.history("errs")  # not even the valid first item was published
    assert nothing.value.code == "unknown_thread"
    gone = MemengineSession("errs", engine.client("acme"))
    gone.client.subjects = type(gone.client.subjects)("nobody-listens")  # no query handler on this root
    with pytest.raises(MemengineSessionError, match=r"^\[unavailable\]"):
        await gone.get_items()
