"""Partitioned projectors (issue #6 item 1): threads map to 4 partitions by the facts stream's ``partition()``
subject transform; three ``memengine up --role projector --partitions ...`` processes share them (one is killed and
its partitions are taken over), and the read models equal a single-process, unpartitioned fold of the same log."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.events import TextBlock
from tests.integration.folds import diff, live_and_clean
from tests.integration.procs import conversation, hello, memengine_up, publish_retrying, stop_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 4
CORE = ("thread_activity", "messages")


async def test_three_processes_over_four_partitions_equal_a_single_fold(settings: Settings, make_db,
                                                                        tmp_path: Path) -> None:
    settings = msgspec.structs.replace(settings, partitions=PARTITIONS, batch_size=100)
    events = conversation(3000, threads=24)
    logs = {k: tmp_path / f"{k}.log" for k in "abc"}
    procs = {}
    async with lifespan(settings, roles=set()) as engine:
        info = await engine.js.stream_info(engine.streams.facts)
        assert info.config.subject_transform is not None  # the stream stores <subject>.<partition>

        async def watermark(names: tuple[str, ...] = CORE) -> int:
            return int(await engine.pool.fetchval(
                "SELECT coalesce(min(last_seq), 0) FROM projection_checkpoints"
                " WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($1::text[])", list(names)))

        async def bound() -> bool:
            names = {c.name for c in await engine.js.consumers_info(engine.streams.facts)}
            return {f"core-p{i}" for i in range(PARTITIONS)} <= names

        try:
            procs["a"] = memengine_up(settings, logs["a"], "--role", "projector", "--partitions", "0-1")
            procs["b"] = memengine_up(settings, logs["b"], "--role", "projector", "--partitions", "2-3")
            await _until(bound, logs, 30)
            # c stands by on 1-3 (held by a and b) until b dies
            procs["c"] = memengine_up(settings, logs["c"], "--role", "projector", "--partitions", "1-3")
            await _until(lambda: hello(logs["c"]) is not None, logs, 30)
            stats: dict = {}
            publisher = asyncio.create_task(publish_retrying(engine.js, engine.subjects, events, rate=1500,
                                                             stats=stats))
            await _until(lambda: stats.get("sent", 0) >= 1200, logs, 60)
            procs["b"].send_signal(signal.SIGKILL)
            procs["b"].wait()
            await publisher
            assert stats["published"] == len(events)
            last = stats["last_seq"]
            deadline = asyncio.get_running_loop().time() + 90
            while min(await watermark(), await watermark(("vectors",))) < last:
                assert asyncio.get_running_loop().time() < deadline, _tails(logs)
                for k in "ac":
                    assert procs[k].poll() is None, _tails(logs)
                await asyncio.sleep(0.1)
            rows = await engine.pool.fetch("SELECT projection FROM projection_checkpoints ORDER BY 1")
            # each partition has its own row per projection; no unpartitioned row is left behind
            expected = {f"{p}@p{i}" for p in (*CORE, "vectors") for i in range(PARTITIONS)}
            assert expected <= {r["projection"] for r in rows}
            assert not {r["projection"] for r in rows} & {*CORE, "vectors"}
            # the dedupe keys stay per projector, shared by its partitions
            assert {r["projector"] for r in await engine.pool.fetch(
                "SELECT DISTINCT projector FROM applied_events")} == {"core", "recall"}
            # every partition got events, and c folded partitions 2-3 after b died
            for i in range(PARTITIONS):
                ci = await engine.js.consumer_info(engine.streams.facts, f"core-p{i}")
                assert ci.delivered.stream_seq > 0
            assert "projector standing by" in logs["c"].read_text()
        finally:
            for p in procs.values():
                stop_process(p)
        live, live_recall, clean, clean_recall = await live_and_clean(engine.js, settings, await make_db())
    assert len(live["messages"]) == sum(1 for e in events if type(e).__name__ == "TurnRecorded")
    assert diff(live, clean) == ""
    assert diff(live_recall, clean_recall) == ""
    assert all("dead-lettered" not in log.read_text() for log in logs.values())


async def _until(pred, logs: dict[str, Path], timeout: float) -> None:  # type: ignore[no-untyped-def]
    """Poll ``pred`` (sync or async) until truthy; fail with the processes' logs after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = pred()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        assert asyncio.get_running_loop().time() < deadline, _tails(logs)
        await asyncio.sleep(0.05)


def _tails(logs: dict[str, Path]) -> str:
    return "\n".join(f"--- {k}\n{p.read_text()[-1500:] if p.exists() else ''}" for k, p in logs.items())


async def test_one_process_owning_every_partition_answers(settings: Settings) -> None:
    # Each partition runner holds a pool connection for its lock: with the pool sized without them, a process owning
    # four partitions (core + recall: eight locks) had no connection left and never answered a query.
    settings = msgspec.structs.replace(settings, partitions=PARTITIONS)
    async with lifespan(settings) as engine:
        client = engine.client()
        last = 0
        for i in range(8):
            last = (await client.record_turn(f"t{i % 4}", "user", [TextBlock(text=f"turn {i}")])).seq
        hist = await asyncio.wait_for(client.history("t3", after_seq=last), 60)
        assert [m.content[0]["text"] for m in hist.messages] == ["turn 3", "turn 7"]
