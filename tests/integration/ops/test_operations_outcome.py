"""Issue #15 item 4: ``operations`` records a verify that found differences as ``failed`` (it recorded ``ok``), on
the real servers through the CLI as a user runs it."""

from __future__ import annotations

import asyncio
import json

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.operations import operation
from memengine.engine.ops.publish import publish_all
from tests.conftest import LOCOMO_DIR, wait_until
from tests.integration.ops.test_cli import run

pytestmark = pytest.mark.integration


async def test_operation_fail_closes_failed(engine: Engine) -> None:
    async with operation(engine.pool, "verify", dsn=engine.database_url) as op:
        op.fail("read models differ from a fresh fold: messages")
    row = await engine.pool.fetchrow("SELECT status, detail FROM operations WHERE id = $1", op.id)
    assert row["status"] == "failed" and "messages" in json.loads(row["detail"])["error"]


async def test_cli_verify_that_differs_is_recorded_failed(engine: Engine) -> None:
    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    pub = await publish_all(engine, read_locomo(path, "default")[:40], "default", quiet=True)

    async def projected() -> bool:
        seq = await engine.pool.fetchval("SELECT last_seq FROM projection_checkpoints WHERE projection = 'messages'")
        return (seq or 0) >= pub["last_seq"]
    await wait_until(projected, timeout=60)
    ok = await asyncio.to_thread(run, engine.settings, "verify", "messages", "--json", check=False)
    assert ok.returncode == 0, ok.stderr[-2000:]
    await engine.pool.execute("UPDATE messages SET role = 'assistant' WHERE seq = (SELECT min(seq) FROM messages)")
    bad = await asyncio.to_thread(run, engine.settings, "verify", "messages", "--json", check=False)
    assert bad.returncode == 1 and json.loads(bad.stdout)["ok"] is False
    rows = await engine.pool.fetch("SELECT status, detail FROM operations WHERE kind = 'verify' ORDER BY id")
    assert [r["status"] for r in rows] == ["ok", "failed"]
    assert "messages" in json.loads(rows[-1]["detail"])["error"]


async def test_demo_episodes_list_the_tools_their_sessions_called(engine: Engine) -> None:
    """Issue #15 item 4: ``memengine episodes`` of the demo thread said ``tools_used: []`` (the enricher built the
    offline turns without their tool calls)."""
    from memengine.engine.ops.ingest import SAMPLE_CONVERSATION, read_events
    from memengine.events import ToolUseBlock, TurnRecorded

    evs = read_events(SAMPLE_CONVERSATION, "default", "jsonl")
    called: dict[str, list[str]] = {}
    for e in evs:
        if isinstance(e, TurnRecorded):
            for b in e.content:
                if isinstance(b, ToolUseBlock):
                    called.setdefault(e.session_id or "", []).append(b.name)
    assert called  # the demo calls tools
    await publish_all(engine, evs, "default", quiet=True)
    client = engine.client()

    async def ended() -> list:  # type: ignore[type-arg]
        eps = (await client.episodes("demo-maya")).episodes
        return eps if {e.session_id for e in eps} >= set(called) else []
    eps = await wait_until(ended, timeout=60)
    for ep in eps:
        assert ep.tools_used == list(dict.fromkeys(called.get(ep.session_id or "", [])))
