"""LangGraph store and LangChain v1 middleware on the real engine (issue #11 item 2): store round trips as
memengine facts, LangMem's tools on the store, and an agent's turns recorded exactly once."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import InvalidNamespaceError, PutOp
from langgraph.warnings import LangGraphDeprecatedSinceV10

with warnings.catch_warnings():  # langmem 0.0.30's trustcall imports Send from langgraph.constants (third party)
    warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10, message="Importing Send")
    from langmem import create_manage_memory_tool, create_search_memory_tool

from memengine.engine.bootstrap import Engine
from memengine.engine.integrations.langgraph import MemengineStore, key_token
from memengine.engine.integrations.langgraph_middleware import MemengineMiddleware

pytestmark = pytest.mark.integration


async def test_store_round_trips_are_memengine_facts(engine: Engine) -> None:
    client = engine.client("acme")
    store = MemengineStore(client)  # namespace (user, ...): label 0 is the user
    ns = ("maya", "prefs")
    value = {"content": "prefers aisle seats", "n": 3, "nested": {"a": [1, 2.5, None, "x"]}, "ok": True}
    await store.aput(ns, "seat", value)
    item = await store.aget(ns, "seat")
    assert item is not None and item.value == value and item.key == "seat" and item.namespace == ns
    first = (await client.memories(thread=key_token(ns, "seat"))).memories
    assert [m.user_id for m in first] == ["maya"] and first[0].tags == ["prefs"]

    await store.aput(ns, "seat", {"content": "prefers window seats"})  # a second put revises the key
    again = await store.aget(ns, "seat")
    assert again is not None and again.value == {"content": "prefers window seats"}
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    await store.aput(ns, "meal", {"content": "vegetarian meals", "kind": "food"})
    await store.aput(("omar", "prefs"), "seat", {"content": "prefers aisle seats"})  # same text, other key: kept

    hits = await store.asearch(("maya",), query="window seats")
    assert [h.key for h in hits][:1] == ["seat"] and hits[0].score is not None
    assert {h.key for h in await store.asearch(("maya", "prefs"))} == {"seat", "meal"}
    assert [h.key for h in await store.asearch(("maya",), filter={"kind": "food"})] == ["meal"]
    assert [h.key for h in await store.asearch(("maya",), filter={"type": "fact", "tags": ["prefs"]},
                                               limit=1, offset=1)] in (["seat"], ["meal"])
    assert await store.alist_namespaces() == [("maya", "prefs"), ("omar", "prefs")]
    assert await store.alist_namespaces(prefix=("omar",)) == [("omar", "prefs")]
    assert await store.alist_namespaces(max_depth=1) == [("maya",), ("omar",)]
    other = await store.aget(("omar", "prefs"), "seat")
    assert other is not None and other.value == {"content": "prefers aisle seats"}

    await store.adelete(ns, "seat")  # a put of None: a MemoryRetracted fact, the item gone
    assert await store.aget(ns, "seat") is None
    versions = (await client.memories(thread=key_token(ns, "seat"), status="all")).memories
    assert sorted(m.status for m in versions) == ["retracted", "retracted"]
    chain = await client.audit(versions[0].memory_id)
    assert [e.type for e in chain.derived_events] == ["MemoriesExtracted", "MemoriesRevised"]
    assert {h.key for h in await store.asearch(("maya",))} == {"meal"}
    assert await store.adelete(ns, "missing") is None

    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("a.b",), "k", {"content": "x"})])
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {"content": "x"})
    with pytest.raises(ValueError, match=r"\[invalid_event\]"):
        await store.aput(ns, "huge", {"content": "x" * 300_000})
    assert await store.aget(ns, "huge") is None  # nothing half-written
    with pytest.raises(RuntimeError, match="async API"):  # on the client's loop the sync API would deadlock
        store.put(ns, "sync", {"content": "x"})
    from_thread = await asyncio.to_thread(store.get, ns, "meal")  # from another thread it runs on the loop
    assert from_thread is not None and from_thread.value["kind"] == "food"


async def test_langmem_tools_store_and_find_a_memory(engine: Engine) -> None:
    store = MemengineStore(engine.client("acme"), user_label=-1)  # LangMem's ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    config = {"configurable": {"langgraph_user_id": "maya"}}
    out = await manage.ainvoke({"content": "Maya is allergic to peanuts", "action": "create"}, config=config)
    assert out.startswith("created memory ")
    found = await search.ainvoke({"query": "peanut allergy"}, config=config)
    assert "allergic to peanuts" in found
    memory_id = out.removeprefix("created memory ")
    await manage.ainvoke({"action": "delete", "id": memory_id}, config=config)
    assert "peanuts" not in await search.ainvoke({"query": "peanut allergy"}, config=config)
    items = (await engine.client("acme").memories(user="maya", status="all")).memories
    assert [m.status for m in items] == ["retracted"]


class ScriptedModel(BaseChatModel):
    """A chat model that answers from a script and keeps the system messages it was given (no network)."""

    script: list[str]
    seen_system: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Sequence[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen_system.append(" ".join(str(m.text) for m in messages if isinstance(m, SystemMessage)))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.script.pop(0)))])


async def test_agent_turns_recorded_once_also_when_a_step_is_rerun(engine: Engine) -> None:
    client = engine.client("acme")
    model = ScriptedModel(script=["Noted: aisle seats.", "You prefer aisle seats.", "Bye!", "Bye again!"])
    agent = create_agent(model, tools=[], system_prompt="You are a travel agent.",
                         middleware=[MemengineMiddleware(client, user="maya")], checkpointer=InMemorySaver(),
                         store=MemengineStore(client))
    config: Any = {"configurable": {"thread_id": "trip-1"}}
    for text in ("I prefer aisle seats", "What seat do I like?", "Thanks"):
        await agent.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    assert "I prefer aisle seats" in model.seen_system[1]  # memengine's context reached the second request
    assert model.seen_system[0].startswith("You are a travel agent.")

    # re-run the last step's publishing node from its checkpoint (a retried step): no turn twice
    history = [s async for s in agent.aget_state_history(config)]
    before = next(s for s in history if any(n.endswith("after_model") for n in s.next))
    await agent.ainvoke(None, before.config)
    # and a second middleware instance (another process) replaying it once the turns are projected (read-your-writes
    # on the stream's last seq; the module docstring says what a replay racing the projection does)
    facts = (await engine.js.stream_info(engine.streams.facts)).state
    assert facts.messages == 6  # the replay in the same instance published nothing
    await client.history("trip-1", after_seq=facts.last_seq)
    again = create_agent(model, tools=[], middleware=[MemengineMiddleware(client, user="maya")],
                         checkpointer=agent.checkpointer)
    await again.ainvoke(None, before.config)

    expected = [("user", "I prefer aisle seats"), ("assistant", "Noted: aisle seats."),
                ("user", "What seat do I like?"), ("assistant", "You prefer aisle seats."),
                ("user", "Thanks"), ("assistant", "Bye!")]

    facts = (await engine.js.stream_info(engine.streams.facts)).state
    assert facts.messages == len(expected)  # nothing published twice, not even a repeat the projectors would drop
    msgs = (await client.history("trip-1", after_seq=facts.last_seq)).messages
    assert [(m.role, m.content[0]["text"]) for m in msgs if isinstance(m.content, list)] == expected
