"""Issue #17 defect 6: ``want_context`` must not amplify (real NATS and PostgreSQL).

Before the fix, each pushed context was assembled inside the core projector's after-commit hook: 2,000 turns asking
for a 10M-token window delayed another tenant's next turn by ~30 s. Now the hook only notes the latest wanting turn
per thread and a lifespan task pushes (``engine.read.push.ContextPusher``): pushes are coalesced per thread, assembled
for at most ``MEMENGINE_PUSH_MAX_WINDOW`` tokens, and the projector never waits for them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import msgspec
import nats
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.events import ContextWanted, TextBlock, TurnRecorded
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

FLOOD = 2000


async def test_a_want_context_flood_does_not_delay_other_tenants(settings: Settings) -> None:
    # The flood and the other tenant's turn are in the log before the projector starts: it folds them in
    # batches of up to MEMENGINE_BATCH_SIZE, so without the fix every one of the 2,000 pushes (each over the whole,
    # growing thread) ran before the batch with the other tenant's turn could be acknowledged.
    async with lifespan(settings, roles={"query"}) as engine:
        flood = engine.client("flood")
        for i in range(FLOOD):
            last_flood = await flood.record_turn("big", "user", f"turn {i}: please remember the seat numbers",
                                                 want_context=ContextWanted(window=10_000_000))
        other = await engine.client("other").record_turn("t", "user", "my next turn")

    nc = await nats.connect(settings.nats_url)
    pushes: list[tuple[int, dict]] = []  # type: ignore[type-arg]

    async def on_push(msg) -> None:  # type: ignore[no-untyped-def]
        pushes.append((int(msg.headers["Memengine-Seq"]), msgspec.json.decode(msg.data)))

    sub = await nc.subscribe(f"{settings.subject_root}.ctx.flood.big", cb=on_push)
    await nc.flush()
    try:
        async with lifespan(settings) as engine:
            t0 = time.monotonic()
            ctx = await engine.client("other").context("t", after_seq=other.seq, wait=30)  # the most a request waits
            while ctx.stale and time.monotonic() - t0 < 120:  # a loaded machine: ask again rather than time out
                ctx = await engine.client("other").context("t", after_seq=other.seq, wait=30)
            took = time.monotonic() - t0
            assert not ctx.stale and ctx.messages[-1].content[0]["text"] == "my next turn"
            # how long is the bench's to measure (bench/RESULTS.md), not a test's: a bound here failed CI-like runs
            # on a loaded machine. The cause the fix removed is asserted below: pushes are coalesced per batch, so
            # the other tenant's batch no longer waits for 2,000 of them.
            print(f"another tenant's turn projected in {took:.1f} s")

            async def last_pushed() -> bool:
                return bool(pushes) and pushes[-1][0] == last_flood.seq

            await wait_until(last_pushed, timeout=60, interval=0.05)
            assert len(pushes) < FLOOD / 10  # coalesced: one push per thread per batch at most, not one per turn
            seqs = [s for s, _ in pushes]
            assert seqs == sorted(seqs)  # one thread's pushes stay in order
            seq, body = pushes[-1]
            assert body["ok"], body
            result = body["result"]
            assert result["budget"]["window"] == settings.push_max_window  # 10M asked, capped
            assert result["messages"][-1]["event_id"] == last_flood.event_id
            assert engine.pusher is not None and engine.pusher.dropped == 0
    finally:
        await sub.unsubscribe()
        await nc.close()


def _turn(tenant: str, thread: str, text: str) -> TurnRecorded:
    return TurnRecorded(event_id=uuid.uuid4(), tenant_id=tenant, thread_id=thread,
                        occurred_at=datetime(2026, 3, 2, tzinfo=UTC), role="user",
                        content=[TextBlock(text=text)], want_context=ContextWanted(window=4000))


async def test_pushes_are_coalesced_per_thread_and_the_queue_is_bounded(settings: Settings) -> None:
    # the query role wires the pusher without its task: the hook's bookkeeping can be watched, then run() started
    async with lifespan(msgspec.structs.replace(settings, push_max_pending=2), roles={"query"}) as engine:
        pusher = engine.pusher
        assert pusher is not None
        await pusher([(1, _turn("acme", "a", "one")), (2, _turn("acme", "b", "two")), (3, _turn("acme", "a", "three")),
                      (4, _turn("acme", "c", "dropped")), (5, _turn("acme", "b", "four"))])
        # a keeps its place in line with its latest turn; c found the queue full
        assert [(k, seq) for k, (seq, _) in pusher.pending.items()] == [(("acme", "a"), 3), (("acme", "b"), 5)]
        assert pusher.dropped == 1
        got: list[tuple[str, int, str]] = []

        async def on_push(msg) -> None:  # type: ignore[no-untyped-def]
            body = msgspec.json.decode(msg.data)
            got.append((msg.subject.rsplit(".", 1)[1], int(msg.headers["Memengine-Seq"]),
                        body["ok"] or body["error"]["code"]))

        sub = await engine.nc.subscribe(f"{settings.subject_root}.ctx.acme.*", cb=on_push)
        await engine.nc.flush()
        task = asyncio.create_task(pusher.run())
        try:
            await wait_until(lambda: _true(len(got) == 2), timeout=10)
            # nothing was projected, so each push is the typed error a context request would get
            assert sorted(got) == [("a", 3, "unknown_thread"), ("b", 5, "unknown_thread")]
            assert pusher.pushed == 2 and not pusher.pending
        finally:
            task.cancel()
            await sub.unsubscribe()


async def _true(v: bool) -> bool:
    return v
