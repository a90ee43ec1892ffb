"""The in-process mirror of the working-memory bucket (``engine.read.working_mirror``, issue #13 item 3): context
reads the scratchpad from it without a KV round trip, and what it shows is what a direct read of the KV shows:
after this process's ``rpc.scratchpad`` writes at once, after another connection's writes once the watch delivered
them; when the bucket is deleted it stops answering (the context reads the KV again)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import nats
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive import working_memory
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def tier1_text(ctx) -> str:  # type: ignore[no-untyped-def]
    tier1 = [m for m in ctx.messages if m.tier == 1]
    return tier1[0].content[0]["text"] if tier1 else ""


async def direct_lines(engine: Engine, thread: str) -> list[str]:
    return working_memory.render_lines(await working_memory.entries(
        engine.js, "default", thread, prefix=engine.settings.stream_prefix, ttl=engine.settings.working_memory_ttl))


async def test_context_reads_the_mirror_and_it_follows_the_bucket(engine: Engine, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    client = engine.client()
    service = engine.service
    mirror = service.working
    ack = await client.record_turn("wm", "user", "Let's fix the CSV export today.", user_id="maya")
    await client.scratchpad_put("wm", "note", "first note")  # the bucket exists before the watch starts
    ctx = await client.context("wm", window=8000, after_seq=ack.seq)  # starts the mirror; read from the KV
    assert "Note: first note" in tier1_text(ctx)
    await wait_until(lambda: _true(mirror.ready))

    # from now on context does not read the KV: a direct read would fail, the mirror answers
    async def no_kv(tenant: str, thread: str) -> list[str]:
        raise AssertionError("the context read the KV although the mirror is in step")

    service._scratch_lines = no_kv  # type: ignore[method-assign]
    assert mirror.lines("default", "wm") == await direct_lines(engine, "wm")

    # a write through rpc.scratchpad shows in the next context at once (the reply waits for the mirror)
    await client.scratchpad_put("wm", "focus", "Fix the CSV export")
    ctx = await client.context("wm", window=8000)
    assert "Current focus: Fix the CSV export" in tier1_text(ctx) and "Note: first note" in tier1_text(ctx)
    await client.scratchpad_put("wm", "done", "Wrote the failing test")
    assert "Recently completed: Wrote the failing test" in tier1_text(await client.context("wm", window=8000))
    await client.scratchpad_clear("wm")
    assert "[Working Memory]" not in tier1_text(await client.context("wm", window=8000))
    assert mirror.lines("default", "wm") == [] == await direct_lines(engine, "wm")

    # a write by another connection (another replica, the enricher) arrives through the watch
    nc = await nats.connect(engine.settings.nats_url)
    try:
        other = nc.jetstream()
        await working_memory.put(other, "default", "wm2", "focus", "Book the Lisbon flight",
                                 prefix=engine.settings.stream_prefix, ttl=engine.settings.working_memory_ttl)
        await wait_until(lambda: _true(mirror.lines("default", "wm2") == ["Current focus: Book the Lisbon flight"]))
        assert mirror.lines("default", "wm2") == await direct_lines(engine, "wm2")
        # entries older than the TTL are dropped at read time, as a direct read drops them
        later = datetime.now(UTC) + timedelta(seconds=engine.settings.working_memory_ttl + 1)
        assert mirror.lines("default", "wm2", now=later) == []
        await working_memory.purge_thread(other, "default", "wm2", prefix=engine.settings.stream_prefix)
        await wait_until(lambda: _true(mirror.lines("default", "wm2") == []))

        # the bucket deleted: the mirror stops answering at once (the context reads the KV again)
        await other.delete_key_value(working_memory.bucket_name(engine.settings.stream_prefix))
        await wait_until(lambda: _true(not mirror.ready))
        assert mirror.lines("default", "wm") is None
    finally:
        await nc.close()


async def _true(value: bool) -> bool:
    return value
