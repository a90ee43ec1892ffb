"""``verify`` under concurrent projection (issue #17 defect 13).

CI (2 cores, whole suite) twice saw the first ``verify`` of test_rebuild_under_load_then_verify name a
``memory_vectors`` row as differing, right after ingest and catch-up. The cause was a real divergence of the live
table, not a false alarm: the test called ``engine.read.recall.catch_up()`` while the engine's own ``run()`` loop drove
the same ``ProjectorRunner``; the two loops stepped one puller and committed two batches concurrently, and the later
batch could commit first. ``memory_vectors``' window fold reads the table it writes (the newest turns of the
session), so the earlier batch, committed second, derived its windows without the later turns: ``next_seq`` /
``win_text`` / ``emb_text`` of the batch's last turn then differed from a fresh fold. Steps of one runner are now
serialised (engine/runtime/runner.py ``ProjectorRunner.step``).
"""

from __future__ import annotations

import asyncio

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from tests.conftest import LOCOMO_DIR, wait_until

pytestmark = pytest.mark.integration


async def _active(engine: Engine) -> bool:
    return engine.runner.active and engine.recall.active


@pytest.fixture
def conv26_events() -> list:
    path = LOCOMO_DIR / "26.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    return read_locomo(path, "default")


async def test_catch_up_beside_run_keeps_the_fold_exact(engine: Engine, conv26_events: list) -> None:
    """Several ``catch_up()`` callers beside the running loop, while the log grows in small pieces: the live
    ``memory_vectors`` and transcript stay equal to a fresh fold."""
    async def publish() -> int:
        last = 0
        for i in range(0, len(conv26_events), 7):
            last = (await publish_all(engine, conv26_events[i:i + 7], "default", quiet=True))["last_seq"]
            await asyncio.sleep(0)
        return last

    async def chase(stop: asyncio.Event) -> None:
        while not stop.is_set():
            await engine.recall.catch_up()
            await engine.runner.catch_up()
            await asyncio.sleep(0)

    await wait_until(lambda: _active(engine))
    stop = asyncio.Event()
    chasers = [asyncio.create_task(chase(stop)) for _ in range(3)]
    try:
        last = await publish()
    finally:
        stop.set()
        await asyncio.gather(*chasers)
    await engine.recall.catch_up()
    await engine.runner.catch_up()
    assert engine.recall.stats.last_seq >= last
    report = await rb.verify(engine, ["vectors", "messages"])
    assert report.ok, [(t.table, t.only_live[:2], t.only_fold[:2]) for t in report.tables if not t.ok]
