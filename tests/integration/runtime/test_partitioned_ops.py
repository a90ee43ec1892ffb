"""Operations on a partitioned projector (issue #31 item 3: found by mypy strict). ``engine.runner`` is a
``RunnerGroup`` when ``MEMENGINE_PARTITIONS`` > 1, and the metrics snapshot (``memengine status``, ``/metrics``) and
forgetting read ``runner.projections``, which only a single ``ProjectorRunner`` had: both raised AttributeError."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops import forget, metrics
from memengine.engine.runtime.partitions import RunnerGroup
from memengine.events import TextBlock

pytestmark = [pytest.mark.integration]


async def test_status_and_forget_work_on_a_partitioned_projector(settings: Settings) -> None:
    settings = msgspec.structs.replace(settings, partitions=4, embedder="none")
    async with lifespan(settings, roles={"projector", "query"}) as engine:
        assert isinstance(engine.runner, RunnerGroup)
        client = engine.client()
        last = 0
        for i in range(4):
            last = (await client.record_turn(f"p{i}", "user", [TextBlock(text=f"turn {i}")])).seq
        await asyncio.wait_for(client.history("p1", after_seq=last), 60)

        snap = await metrics.snapshot(engine)
        core = snap["projectors"][engine.runner.name]
        assert set(core["projections"]) >= {"messages", "thread_activity"}

        report = await forget.forget_thread(engine, "default", "p1")
        assert report.facts_removed == 1
        hist = await client.history("p0")
        assert [m.content[0]["text"] for m in hist.messages] == ["turn 0"]
