"""Retries through the MCP server record nothing twice (issue #26 item 7), on the real servers: an in-process MCP
session (the SDK's client, JSON-RPC frames in memory) on ``build_server(engine.client(...))``.

Before the fix an agent retrying ``record_turn`` after a timeout recorded the turn twice, and no tool took a key.
The rule (``engine.integrations.mcp_writes``): the same ``idempotency_key`` is the same write; without a key an
immediate identical retry in the same session is; a turn in between (a user saying "yes" twice) is not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from memengine.engine.bootstrap import Engine
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.integrations.mcp_server import build_server

pytestmark = pytest.mark.integration


async def call(mc: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result: CallToolResult = await mc.call_tool(tool, args)
    assert not result.is_error and result.structured_content is not None, result.content
    return result.structured_content


async def turns(client: MemoryClient, thread: str, seq: int) -> list[tuple[str, str]]:
    msgs = (await client.history(thread, after_seq=seq)).messages
    return [(m.role, m.content[0]["text"]) for m in msgs if isinstance(m.content, list)]


async def test_a_retried_record_turn_is_recorded_once(engine: Engine) -> None:
    client = engine.client("acme")
    server = build_server(client)
    async with Client(server, mode="legacy") as mc:
        turn = {"thread": "t1", "role": "user", "text": "Book the 7:40 to Porto", "user": "maya"}
        first = await call(mc, "record_turn", turn)
        retry = await call(mc, "record_turn", turn)  # the agent timed out and calls again
        assert not first["duplicate"] and retry["duplicate"]
        assert (retry["seq"], retry["event_id"]) == (first["seq"], first["event_id"])

        # a user saying "yes" twice is two turns: the assistant's turn lies between them
        yes = {"thread": "t1", "role": "user", "text": "yes", "user": "maya"}
        a = await call(mc, "record_turn", yes)
        b = await call(mc, "record_turn", {"thread": "t1", "role": "assistant", "text": "Window or aisle?"})
        c = await call(mc, "record_turn", yes)
        assert not c["duplicate"] and c["seq"] > b["seq"] > a["seq"] and c["event_id"] != a["event_id"]
    assert await turns(client, "t1", c["seq"]) == [("user", "Book the 7:40 to Porto"), ("user", "yes"),
                                                   ("assistant", "Window or aisle?"), ("user", "yes")]


async def test_an_idempotency_key_names_one_write_and_two_keys_two(engine: Engine) -> None:
    client = engine.client("acme")
    server = build_server(client)
    turn = {"thread": "t2", "role": "user", "text": "yes", "user": "maya"}
    async with Client(server, mode="legacy") as mc:
        first = await call(mc, "record_turn", {**turn, "idempotency_key": "k-1"})
        await call(mc, "record_turn", {"thread": "t2", "role": "assistant", "text": "Sure?"})
        again = await call(mc, "record_turn", {**turn, "idempotency_key": "k-1"})  # late retry, a turn in between
        assert again["duplicate"] and (again["seq"], again["event_id"]) == (first["seq"], first["event_id"])
        # two keys are two writes, even with the same content right after each other
        other = await call(mc, "record_turn", {**turn, "idempotency_key": "k-2"})
        also = await call(mc, "record_turn", {**turn, "idempotency_key": "k-3"})
        assert not other["duplicate"] and not also["duplicate"] and also["seq"] > other["seq"] > again["seq"]
        # a key names one request: reused for another one it is refused before anything is published
        reused = await mc.call_tool("record_turn", {**turn, "text": "no", "idempotency_key": "k-1"})
        assert reused.is_error and isinstance(reused.content[0], TextContent)
        assert reused.content[0].text.startswith("invalid_request: ")
    # a retry in another session of the same server, with the key: still the same write
    async with Client(server, mode="legacy") as mc2:
        late = await call(mc2, "record_turn", {**turn, "idempotency_key": "k-2"})
        assert late["duplicate"] and late["seq"] == other["seq"]
        # the key maps as the HTTP Idempotency-Key does: the same event id for the same key and tenant
        assert late["event_id"] == other["event_id"]
    assert await turns(client, "t2", also["seq"]) == [("user", "yes"), ("assistant", "Sure?"), ("user", "yes"),
                                                      ("user", "yes")]


async def test_a_keyed_retry_after_the_server_restarted_is_the_same_write(engine: Engine) -> None:
    """A restarted MCP server no longer knows the key's first ``occurred_at``: its retry is the same event id and
    content under another time stamp, stored as a second message. It was dead-lettered by every projector as an
    id conflict (an operator saw a poison message for a plain retry); now it is a repeat, skipped, and the turn and
    the memory are recorded once, with no dead letter."""
    from tests.integration.poison import dead_letters, drained

    client = engine.client("acme")
    turn = {"thread": "t9", "role": "user", "text": "Always book aisle seats", "user": "maya",
            "idempotency_key": "after-restart"}
    fact = {"text": "Maya is vegetarian", "user": "maya", "idempotency_key": "fact-after-restart"}
    async with Client(build_server(client), mode="legacy") as mc:
        first = await call(mc, "record_turn", turn)
        asserted = await call(mc, "remember", fact)
    async with Client(build_server(client), mode="legacy") as mc:  # a new server process: nothing remembered
        again = await call(mc, "record_turn", turn)
        asserted_again = await call(mc, "remember", fact)
    assert again["event_id"] == first["event_id"] and asserted_again["event_id"] == asserted["event_id"]
    await drained(engine)
    for seq in (again["seq"], asserted_again["seq"]):
        assert await dead_letters(engine, seq) == {}, seq
    assert await turns(client, "t9", again["seq"]) == [("user", "Always book aisle seats")]
    items = await engine.pool.fetch("SELECT text FROM memory_items WHERE tenant_id = 'acme' AND text = $1",
                                    "Maya is vegetarian")
    assert len(items) == 1


async def test_remember_retries_and_keys(engine: Engine) -> None:
    client = engine.client("acme")
    server = build_server(client)
    async with Client(server, mode="legacy") as mc:
        fact = {"text": "Maya is vegetarian", "user": "maya"}
        first = await call(mc, "remember", fact)
        retry = await call(mc, "remember", fact)
        assert retry["duplicate"] and (retry["seq"], retry["memory_id"]) == (first["seq"], first["memory_id"])
        keyed = await call(mc, "remember", {**fact, "idempotency_key": "m-1"})
        keyed_again = await call(mc, "remember", {**fact, "idempotency_key": "m-1"})
        assert not keyed["duplicate"] and keyed_again["duplicate"] and keyed_again["seq"] == keyed["seq"]
        assert keyed["memory_id"] != first["memory_id"]  # the key named a new write
    facts = (await engine.js.stream_info(engine.streams.facts)).state
    assert facts.messages == 2  # two MemoryAsserted stored, not four


async def test_retries_through_the_real_memengine_mcp_over_stdio(engine: Engine, tmp_path: Path) -> None:
    """The real command, as an agent host launches it, on the running engine: a client of the query handler (it asks
    ``rpc.dedup_key`` and checks duplicates through ``rpc.published``), with the SDK's stdio transport's session."""
    s = engine.settings
    env = {**os.environ, "NATS_URL": s.nats_url or engine.nats_url, "DATABASE_URL": engine.database_url,
           "MEMENGINE_SUBJECT_ROOT": s.subject_root, "MEMENGINE_STREAM_PREFIX": s.stream_prefix,
           "MEMENGINE_EMBEDDER": "none", "MEMENGINE_HOME": str(tmp_path), "MEMENGINE_TENANT": "desk"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memengine.engine.cli", "mcp"], env=env)
    turn = {"thread": "desk-2", "role": "user", "text": "retry me", "user": "maya"}
    with open(tmp_path / "mcp-stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as mc:
            first = await call(mc, "record_turn", turn)
            retry = await call(mc, "record_turn", turn)
            keyed = await call(mc, "record_turn", {**turn, "idempotency_key": "stdio-1"})
            keyed_again = await call(mc, "record_turn", {**turn, "idempotency_key": "stdio-1"})
    assert not first["duplicate"] and retry["duplicate"] and retry["seq"] == first["seq"]
    assert not keyed["duplicate"] and keyed_again["duplicate"] and keyed_again["seq"] == keyed["seq"]
    assert await turns(engine.client("desk"), "desk-2", keyed["seq"]) == [("user", "retry me")] * 2
