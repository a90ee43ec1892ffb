"""The MCP server (issue #11 item 1) against the real engine: an in-process MCP client session on
``build_server(engine.client(...))``, and the real ``memengine mcp`` launched over stdio by the SDK's stdio transport.

Done-when of the issue: the tools are listed; ``record_turn`` then ``get_context`` holds the turn; ``recall_memory``
finds it; ``remember`` then ``audit_memory`` leads back to the fact; a bad call is an MCP tool error carrying
memengine's error code and the session keeps working.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from memengine.engine.bootstrap import Engine
from memengine.engine.integrations.mcp_server import build_server
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

TOOLS = ["record_turn", "get_context", "recall_memory", "search_memory", "search_conversation_traces", "remember",
         "forget_memory", "audit_memory", "list_threads"]


def text_of(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent), result
    return result.content[0].text


async def ok(mc: Client, tool: str, args: dict[str, Any]) -> CallToolResult:
    result = await mc.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result


async def test_tools_and_resources_over_an_in_process_session(engine: Engine) -> None:
    server = build_server(engine.client("acme"))
    async with Client(server, mode="legacy") as mc:  # the initialize handshake and JSON-RPC frames, in memory
        listed = (await mc.list_tools()).tools
        assert [t.name for t in listed] == TOOLS
        for tool in listed:  # the tenant is configuration, never an argument a model can set
            assert "tenant" not in tool.input_schema.get("properties", {}), tool.name
        schema = next(t for t in listed if t.name == "record_turn").input_schema
        assert set(schema["required"]) == {"thread", "role", "text"}

        # record_turn answers after the JetStream ack; get_context with its seq (read-your-writes) holds the turn
        rec = (await ok(mc, "record_turn", {
            "thread": "trip", "role": "user", "user": "maya", "session": "s1",
            "text": "I always book an aisle seat on flights to Lisbon"})).structured_content
        assert rec is not None and rec["seq"] > 0 and not rec["duplicate"]
        again = await ok(mc, "record_turn", {"thread": "trip", "role": "assistant", "text": "Noted: aisle seat."})
        assert again.structured_content is not None
        last = again.structured_content["seq"]
        ctx = await ok(mc, "get_context", {"thread": "trip", "after_seq": last, "window": 8000, "query": "seat"})
        text = text_of(ctx)
        assert "aisle seat on flights to Lisbon" in text and "user maya" in text and "Token accounting" in text
        acct = ctx.structured_content
        assert acct is not None and acct["stale"] is False and acct["applied_seq"] >= last
        assert rec["event_id"] in acct["event_ids"] and acct["tokens"]["total"] > 0
        assert acct["budget"]["window"] == 8000
        assert "[tier 3 | seq" in text and "assistant" in text and "Noted: aisle seat." in text

        async def recalled() -> Any:
            hits = (await ok(mc, "recall_memory", {"query": "aisle seat Lisbon", "thread": "trip"})).structured_content
            return hits is not None and any(m["event_id"] == rec["event_id"] for m in hits["memories"])

        await wait_until(recalled, timeout=20)
        traces = (await ok(mc, "search_conversation_traces", {"query": "aisle seat Lisbon"})).structured_content
        assert traces is not None and any(t["event_id"] == rec["event_id"] for t in traces["traces"])

        # remember -> audit_memory leads back to the fact; the profile resource shows it
        rem = (await ok(mc, "remember", {"text": "Maya is allergic to peanuts", "user": "maya",
                                         "type": "FACT"})).structured_content
        assert rem is not None

        async def audited() -> Any:
            result = await mc.call_tool("audit_memory", {"memory_id": rem["memory_id"]})
            if result.is_error:
                assert text_of(result).startswith("unknown_memory:"), text_of(result)  # not derived yet
                return None
            return result.structured_content

        chain = await wait_until(audited, timeout=30)
        assert chain["memory"]["text"] == "Maya is allergic to peanuts" and chain["memory"]["status"] == "active"
        sources = [s for d in chain["derived_events"] for s in d["sources"]]
        assert [s["event_id"] for s in sources] == [rem["event_id"]]
        found = (await ok(mc, "search_memory", {"query": "peanuts", "user": "maya"})).structured_content
        assert found is not None and [m["memory_id"] for m in found["memories"]] == [rem["memory_id"]]
        profile = await mc.read_resource("memengine://profile/maya/MEMORY.md")
        assert "Maya is allergic to peanuts" in profile.contents[0].text  # type: ignore[union-attr]
        user_md = await mc.read_resource("memengine://profile/maya/USER.md")
        assert user_md.contents[0].text.startswith("# USER.md — maya")  # type: ignore[union-attr]

        # bad calls: MCP tool errors that start with memengine's code; the session keeps working
        for tool, args, code in [
            ("audit_memory", {"memory_id": "0190f5c2-0000-7000-8000-000000000000"}, "unknown_memory"),
            ("forget_memory", {"memory_id": "no-such-memory"}, "unknown_memory"),
            ("record_turn", {"thread": "bad.thread", "role": "user", "text": "x"}, "invalid_token"),
            ("get_context", {"thread": "bad thread"}, "invalid_token"),
        ]:
            bad = await mc.call_tool(tool, args)
            assert bad.is_error and text_of(bad).startswith(f"{code}: "), (tool, text_of(bad))
        schema_bad = await mc.call_tool("record_turn", {"thread": "trip", "role": "robot", "text": "x"})
        assert schema_bad.is_error and text_of(schema_bad).startswith("invalid_request: ")  # nothing published
        with pytest.raises(MCPError):
            await mc.read_resource("memengine://profile/../../etc/MEMORY.md")

        threads = (await ok(mc, "list_threads", {})).structured_content
        assert threads is not None and [t["thread"] for t in threads["threads"]] == ["trip"]
        assert threads["threads"][0]["message_count"] == 2

        # forget_memory: a MemoryRetracted fact; the item is kept, retracted
        gone = (await ok(mc, "forget_memory", {"memory_id": rem["memory_id"]})).structured_content
        assert gone is not None and gone["previous_status"] == "active"

        async def retracted() -> bool:
            item = (await ok(mc, "audit_memory", {"memory_id": rem["memory_id"]})).structured_content
            return item is not None and item["memory"]["status"] == "retracted"

        await wait_until(retracted, timeout=30)
        profile = await mc.read_resource("memengine://profile/maya/MEMORY.md")
        assert "peanuts" not in profile.contents[0].text  # type: ignore[union-attr]

    # the tenant was the client's: another tenant's client sees nothing of it
    assert (await engine.client("other").threads()).threads == []


@pytest.mark.parametrize("own_engine", [False, True], ids=["on-running-engine", "own-engine"])
async def test_memengine_mcp_over_stdio(engine: Engine, make_db, tmp_path, own_engine: bool) -> None:  # type: ignore[no-untyped-def]
    """The real command, as Claude Desktop launches it: stdout carries MCP frames only (a stray line would break the
    client's JSON-RPC decoding), the tenant comes from MEMENGINE_TENANT and the bound user from MEMENGINE_USER (issue
    #18). On a running engine it is a client of its query handler; with none answering on its subjects it runs the
    engine itself (own database and streams)."""
    s = engine.settings
    root, prefix, dsn = s.subject_root, s.stream_prefix, engine.database_url
    if own_engine:
        root, prefix, dsn = root + "own", prefix + "OWN", await make_db()
    env = {**os.environ, "NATS_URL": s.nats_url or engine.nats_url, "DATABASE_URL": dsn,
           "MEMENGINE_SUBJECT_ROOT": root, "MEMENGINE_STREAM_PREFIX": prefix,
           "MEMENGINE_EMBEDDER": "none", "MEMENGINE_HOME": str(tmp_path), "MEMENGINE_TENANT": "desk",
           "MEMENGINE_LOG_LEVEL": "info",  # info: the engine and the SDK log, and must not touch stdout
           "MEMENGINE_USER": "maya"}  # issue #18: the tools are bound to maya; no argument can widen that
    params = StdioServerParameters(command=sys.executable, args=["-m", "memengine.engine.cli", "mcp"], env=env)
    log = tmp_path / "mcp-stderr.log"
    try:
        with open(log, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30) as mc:
                names = [t.name for t in (await mc.list_tools()).tools]
                assert names == TOOLS, log.read_text()[-2000:]
                rec = await mc.call_tool("record_turn",
                                         {"thread": "desk-1", "role": "user", "text": "Hello from stdio"})
                assert not rec.is_error, text_of(rec)
                assert rec.structured_content is not None
                seq = rec.structured_content["seq"]
                ctx = await mc.call_tool("get_context", {"thread": "desk-1", "after_seq": seq})
                assert "Hello from stdio" in text_of(ctx), log.read_text()[-2000:]
                other = await mc.call_tool("record_turn", {"thread": "desk-1", "role": "user", "text": "x",
                                                           "user": "bob"})
                assert other.is_error and text_of(other).startswith("forbidden:"), text_of(other)
                threads = (await mc.call_tool("list_threads", {})).structured_content
                assert threads is not None and threads["tenant"] == "desk"
        if not own_engine:
            history = await engine.client("desk").history("desk-1", after_seq=seq)
            assert [m.content[0]["text"] for m in history.messages] == ["Hello from stdio"]  # type: ignore[index]
            assert [m.user_id for m in history.messages] == ["maya"]  # stamped with the bound user
        else:  # its own streams hold the turn; the running engine's namespace saw nothing
            assert (await engine.js.stream_info(f"{prefix}_FACTS")).state.messages == 1
            assert (await engine.client("desk").threads()).threads == []
    finally:
        if own_engine:
            for suffix in ("FACTS", "DERIVED", "DLQ"):
                with contextlib.suppress(Exception):
                    await engine.js.delete_stream(f"{prefix}_{suffix}")
