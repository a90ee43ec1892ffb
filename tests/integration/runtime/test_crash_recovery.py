"""SIGKILL the projector process in the middle of a 5,000-turn ingest, restart it, and the read models equal a clean
fold of the same events (DESIGN.md "Projector contract": a crash repeats work, never loses or doubles it)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from memengine.events import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, TurnRecorded, stable_event_id
from tests.integration.folds import clean_fold, diff, snapshot

pytestmark = [pytest.mark.integration, pytest.mark.slow]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_turns(n: int, threads: int = 7) -> list[TurnRecorded]:
    out = []
    for i in range(n):
        thread = f"th{i % threads}"
        k = i % 3
        if k == 0:
            content = [TextBlock(text=f"user says {i} " + "lorem " * (i % 17))]
            role = "user"
        elif k == 1:
            content = [ThinkingBlock(thinking="hmm " * (i % 23)), ToolUseBlock(id=f"c{i}", name="t", input={"i": i})]
            role = "assistant"
        else:
            content = [ToolResultBlock(tool_use_id=f"c{i - 1}", content="out " * (i % 90))]
            role = "tool"
        out.append(TurnRecorded(event_id=stable_event_id("crash", str(i)), tenant_id="default", thread_id=thread,
                                occurred_at=T0 + timedelta(seconds=i), role=role, content=content))
    return out


def projector_process(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home, "MEMENGINE_BATCH_SIZE": "50", "MEMENGINE_LOG_LEVEL": "info"}
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "memengine.engine.cli", "up", "--role", "projector", "--json"],
                                env=env, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh)


async def test_sigkill_mid_ingest_then_restart_equals_clean_fold(settings: Settings, make_db, tmp_path: Path) -> None:
    turns = make_turns(5000)
    log = tmp_path / "projector.log"
    async with lifespan(settings, roles=set()) as engine:
        async def checkpoint() -> int:
            v = await engine.pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints"
                                           " WHERE projection IN ('thread_activity', 'messages')")
            return int(v or 0)

        proc = projector_process(settings, log)
        publisher = asyncio.create_task(publish_all(engine, turns, "default", quiet=True))
        kills = 0
        try:
            deadline = asyncio.get_running_loop().time() + 120
            for threshold in (400, 1500, 3000):
                while await checkpoint() < threshold:
                    assert proc.poll() is None, log.read_text()[-2000:]
                    assert asyncio.get_running_loop().time() < deadline, log.read_text()[-2000:]
                    await asyncio.sleep(0.005)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                proc = projector_process(settings, log)
            summary = await publisher
            last_seq = summary["last_seq"]
            assert summary["published"] == 5000
            deadline = asyncio.get_running_loop().time() + 120
            while await checkpoint() < last_seq:
                assert asyncio.get_running_loop().time() < deadline, log.read_text()[-2000:]
                assert proc.poll() is None, log.read_text()[-2000:]
                await asyncio.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
        assert kills == 3
        live = await snapshot(settings.database_url)
        clean_dsn = await make_db()
        await clean_fold(engine.js, settings, clean_dsn)
        clean = await snapshot(clean_dsn)
    assert len(live["messages"]) == 5000
    assert diff(live, clean) == ""
    redelivered = [line for line in log.read_text().splitlines() if "dead-lettered" in line]
    assert redelivered == []
