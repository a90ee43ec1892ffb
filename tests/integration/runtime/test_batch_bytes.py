"""A live projector's batch is bounded in raw bytes too (``MEMENGINE_BATCH_BYTES``, issue #13 item 6).

The soak's memory high-water mark rose whenever a stall let batches of 1,000 events build up (a folded batch holds
~12x its raw bytes). The puller now asks for ``batch_bytes`` / the mean message size messages per pull: batches stay
within the bound, one event larger than the bound is still folded (alone), and nothing is lost or doubled.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.events import TextBlock, TurnRecorded
from memengine.projections.ops import FoldConfig
from memengine.projections.registry import PROJECTIONS

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _turns(n: int, big_at: int) -> list[TurnRecorded]:
    out = []
    for i in range(n):
        text = f"turn {i:04d} " + ("x" * 20_000 if i == big_at else "lorem ipsum " * 80)  # ~1 KB, one of ~20 KB
        out.append(TurnRecorded(event_id=uuid.UUID(int=i + 1), tenant_id="acme", thread_id=f"t{i % 3}",
                                role="user", content=[TextBlock(text=text)], occurred_at=T0 + timedelta(seconds=i)))
    return out


async def _fold(engine, name: str, batch_bytes: int | None) -> list[int]:  # type: ignore[no-untyped-def]
    sizes: list[int] = []

    async def seen(applied: list[object]) -> None:
        sizes.append(len(applied))

    runner = ProjectorRunner(name=name, projections=PROJECTIONS, nc=engine.nc, js=engine.js, pool=engine.pool,
                             streams=engine.streams, subjects=engine.subjects, fold_config=FoldConfig(),
                             batch_size=1000, batch_bytes=batch_bytes, after_commit=[seen])
    assert await runner.try_start()
    try:
        await runner.catch_up(timeout=60)
    finally:
        await runner.stop()
    return sizes


async def test_batches_stay_within_the_byte_bound(settings) -> None:  # type: ignore[no-untyped-def]
    turns = _turns(300, big_at=150)
    async with lifespan(settings, roles=set()) as engine:
        pub = await publish_all(engine, turns, "acme", quiet=True)
        assert pub["published"] == 300
        bounded = await _fold(engine, "bounded", 8 * 1024)
        rows = await engine.pool.fetchval("SELECT count(*) FROM messages")
        # the bound: ~1 KB turns, so at most 8 per batch (the first pull takes one to learn the size); the 20 KB turn
        # is folded too, never refused for being over the bound
        assert sum(bounded) == 300 and rows == 300
        assert max(bounded) <= 8, bounded
        assert min(bounded) == 1
        # the same log folded without the bound comes in larger batches (the test can tell the difference)
        await engine.pool.execute("TRUNCATE messages, thread_activity, applied_events, projection_checkpoints")
        unbounded = await _fold(engine, "unbounded", None)
        assert sum(unbounded) == 300 and max(unbounded) > 8, unbounded
        assert await engine.pool.fetchval("SELECT count(*) FROM messages") == 300
