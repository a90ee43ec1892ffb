"""Read-your-writes within a session (issue #27 item 3): an MCP session that recorded a turn sees it in its next
``get_context`` without the model passing ``after_seq``.

The projector is wired but not running (``run_projector=False``) and folds only when the test says so, half a second
after the context was asked for: without the session's own ``after_seq`` the context is answered at once, without
the turn (the race a fast projector usually hides); with it, the query handler waits until the fold applied it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.integrations.mcp_server import build_server

pytestmark = pytest.mark.integration


@pytest.fixture
async def held(settings: Settings) -> AsyncIterator[Engine]:
    """Projector lock taken, fold loop not running: ``engine.runner.catch_up()`` folds on demand."""
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as e:
        yield e


def text_of(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent), result
    return result.content[0].text


async def fold_later(engine: Engine, delay: float = 0.5) -> None:
    await asyncio.sleep(delay)
    await engine.runner.catch_up()


async def test_mcp_record_turn_then_get_context_without_after_seq_holds_the_turn(held: Engine) -> None:
    async with Client(build_server(held.client("acme")), mode="legacy") as mc:
        first = await mc.call_tool("record_turn", {"thread": "trip", "role": "user", "text": "Hello there."})
        assert not first.is_error, text_of(first)
        await held.runner.catch_up()  # the thread exists; what follows is about the next turn
        rec = await mc.call_tool("record_turn", {"thread": "trip", "role": "user",
                                                 "text": "I always book an aisle seat on flights to Lisbon"})
        assert not rec.is_error and rec.structured_content is not None, text_of(rec)
        folding = asyncio.create_task(fold_later(held))
        ctx = await mc.call_tool("get_context", {"thread": "trip", "window": 8000})  # no after_seq
        await folding
        assert not ctx.is_error, text_of(ctx)
        acct = ctx.structured_content
        assert acct is not None and rec.structured_content["event_id"] in acct["event_ids"], text_of(ctx)
        assert acct["stale"] is False and acct["applied_seq"] >= rec.structured_content["seq"]
        # another thread's writes do not make this one wait: its own seq is what counts
        other = await mc.call_tool("get_context", {"thread": "trip", "window": 8000, "after_seq": 1})
        assert not other.is_error and "aisle seat" in text_of(other)
