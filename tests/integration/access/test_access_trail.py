"""The access trail on the real servers (issue #30): every context and recall answer is recorded on the served
stream, folded into ``access_count`` / ``last_accessed_at``; ``audit`` and ``served`` show them; ``rebuild`` and
``verify`` reproduce them exactly; a full queue or a missing served stream never fails an answer (what is dropped
is counted); forgetting a thread removes its served records."""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import forget as fg
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.metrics import MetricsServer
from memengine.engine.read.access import AccessQueries
from memengine.events import ContextWanted
from memengine.events.served import decode_served_msg
from tests.conftest import wait_until
from tests.integration.ops.test_metrics import scrape, value
from tests.integration.poison import drained

pytestmark = pytest.mark.integration

ACCESS_TABLES = ("served_answers", "memory_access", "turn_access")


async def _seed(engine: Engine) -> str:
    """Maya's threads: a rule and a fact become memory items; returns the fact's memory id."""
    c = engine.client()
    await c.record_turn("maya-old", "user", "Please always answer in French.", user_id="maya")
    await c.record_turn("maya-old", "user", "I have two cats named Milo and Otis.", user_id="maya")
    await c.record_turn("maya-new", "user", "Tell me about my cats.", user_id="maya")
    await drained(engine)

    async def item() -> str | None:
        return await engine.pool.fetchval(
            "SELECT memory_id FROM memory_items WHERE user_id = 'maya' AND status = 'active' AND text ILIKE '%cats%'")

    return str(await wait_until(item, timeout=60, interval=0.05))


async def _settled(engine: Engine) -> None:
    assert engine.trail is not None and engine.access is not None
    await engine.trail.settled()
    await engine.access.catch_up()


async def _rows(engine: Engine) -> dict[str, list[str]]:
    return {t: sorted(r["x"] for r in await engine.pool.fetch(f"SELECT x::text AS x FROM {t} x"))
            for t in ACCESS_TABLES}


async def test_answers_recorded_folded_audited_and_rebuilt(engine: Engine) -> None:
    mid = await _seed(engine)
    c = engine.client()
    ctx = await c.context("maya-new", query="What are my cats called?")
    assert ctx.user_memory is not None and mid in ctx.user_memory.memory_ids
    rec = await c.recall("cats Milo", sources=["turns", "memories"])
    assert rec.hits
    await _settled(engine)

    # the served stream holds both answers, each naming what it placed, with tier and rank
    events = []
    info = await engine.js.stream_info(engine.streams.served)
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        m = await engine.js.get_msg(engine.streams.served, seq=seq)
        events.append(decode_served_msg(m.subject, m.data, engine.subjects))
    kinds = {type(e).__name__ for e in events}
    assert kinds == {"ContextServed", "RecallServed"}
    cs = next(e for e in events if type(e).__name__ == "ContextServed")
    assert cs.thread_id == "maya-new" and cs.query == "What are my cats called?" and cs.user_id == "maya"
    assert cs.applied_seq == ctx.applied_seq and cs.window == ctx.budget.window
    placed = {(p.kind, p.id): p for p in cs.items}
    assert placed[("memory", mid)].tier == 1
    for m in ctx.messages:
        if m.event_id:
            assert placed[("turn", m.event_id)].tier == m.tier
    assert [p.rank for p in cs.items] == list(range(1, len(cs.items) + 1))

    # audit of the placed memory: access_count >= 1 and last_accessed_at; the answer is listed where it was used
    audit = await c.audit(mid)
    assert audit.access is not None and audit.access.access_count >= 1 and audit.access.last_accessed_at
    assert any(u.thread == "maya-new" and u.kind == "context" for u in audit.access.used_in)
    listing = await AccessQueries(engine.pool).served("default", "maya-new")
    assert [a["kind"] for a in listing["answers"]] == ["context"]
    one = await AccessQueries(engine.pool).served("default", "maya-new", seq=listing["answers"][0]["seq"])
    ids = {(i["kind"], i["id"]) for i in one["answer"]["items"]}
    assert ("memory", mid) in ids and set(placed) == ids
    mem = next(i for i in one["answer"]["items"] if i["id"] == mid)
    assert mem["provenance"]["source_event_ids"] and mem["provenance"]["audit"] == f"memengine audit {mid}"
    hot = await AccessQueries(engine.pool).hot("default", "maya")
    assert hot and hot[0]["access_count"] >= 1

    # a second context counts again; the counters equal a fresh fold (verify) and survive a rebuild exactly
    await c.context("maya-new", query="What are my cats called?")
    await _settled(engine)
    assert (await c.audit(mid)).access.access_count == audit.access.access_count + 1  # type: ignore[union-attr]
    report = await rb.verify(engine, ["access"])
    assert report.ok, report.differing
    before = await _rows(engine)
    await rb.rebuild(engine, ["access"])
    assert await _rows(engine) == before


async def test_trail_never_fails_an_answer(engine: Engine) -> None:
    await _seed(engine)
    c = engine.client()
    assert engine.trail is not None
    # a full queue: the answer comes, the record is dropped and counted
    engine.trail.max_pending = 0
    await c.context("maya-new")
    assert engine.trail.stats().dropped_full == 1
    engine.trail.max_pending = 10
    # the served stream gone: the answers still come, the records are counted as failed
    await engine.js.delete_stream(engine.streams.served)
    await c.context("maya-new")
    await c.recall("cats")
    await engine.trail.settled()
    stats = engine.trail.stats()
    assert stats.dropped_failed == 2 and stats.pending == 0
    # counted on /metrics, with the outcome as the only label
    server = await MetricsServer(engine, 0, "127.0.0.1").start()
    try:
        samples = await scrape(server.port)
    finally:
        await server.stop()
    assert value(samples, "memengine_served_records_total", outcome="dropped_full") == 1
    assert value(samples, "memengine_served_records_total", outcome="dropped_failed") == 2
    assert value(samples, "memengine_read_models_up") == 1  # a missing served stream does not make it unready


async def test_trail_off(settings) -> None:  # type: ignore[no-untyped-def]
    from memengine.engine.bootstrap import lifespan

    async with lifespan(msgspec.structs.replace(settings, access_trail=False)) as engine:
        assert engine.trail is None and engine.service.trail is None
        rec = await engine.client().record_turn("t1", "user", "hello there")
        await engine.client().context("t1", after_seq=rec.seq)
        assert (await engine.js.stream_info(engine.streams.served)).state.messages == 0


async def test_forget_thread_removes_its_served_records(engine: Engine) -> None:
    mid = await _seed(engine)
    c = engine.client()
    await c.context("maya-new", query="What are my cats called?")
    await c.context("maya-old")
    await c.recall("cats", thread="maya-old")
    await _settled(engine)
    old_turns = [str(r["event_id"]) for r in await engine.pool.fetch(
        "SELECT event_id FROM messages WHERE thread_id = 'maya-old'")]
    assert await engine.pool.fetchval("SELECT count(*) FROM served_answers WHERE thread_id = 'maya-old'") == 2
    await fg.forget_thread(engine, "default", "maya-old")
    # nothing of the forgotten thread on the served stream: its own answers, and answers elsewhere that placed one of
    # its turns or a memory item derived from them
    info = await engine.js.stream_info(engine.streams.served)
    needles = [*old_turns, mid, "maya-old"]
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            m = await engine.js.get_msg(engine.streams.served, seq=seq)
        except Exception:  # noqa: BLE001 - deleted (a gap)
            continue
        assert not any(n.encode() in (m.data or b"") for n in needles), m.data
    for t in ACCESS_TABLES:
        text = " ".join(r["x"] for r in await engine.pool.fetch(f"SELECT x::text AS x FROM {t} x"))
        assert not any(n in text for n in needles), (t, text)
    assert (await rb.verify(engine, ["access"])).ok


async def test_pushed_context_recorded_as_pushed(engine: Engine) -> None:
    c = engine.client()
    await c.record_turn("p1", "user", "Remind me what we said.", user_id="ann",
                        want_context=ContextWanted(window=4000))

    async def recorded() -> bool:
        await _settled(engine)
        return bool(await engine.pool.fetchval(
            "SELECT count(*) FROM served_answers WHERE thread_id = 'p1' AND pushed"))

    await wait_until(recorded, timeout=30, interval=0.1)


async def test_access_models_outlive_the_served_streams_retention(settings) -> None:  # type: ignore[no-untyped-def]
    from memengine.engine.bootstrap import lifespan

    async with lifespan(msgspec.structs.replace(settings, served_max_age=1.0, served_max_bytes=1 << 20)) as engine:
        cfg = (await engine.js.stream_info(engine.streams.served)).config
        assert cfg.max_age == 1.0 and cfg.max_bytes == 1 << 20
        rec = await engine.client().record_turn("r1", "user", "hello there")
        ctx = await engine.client().context("r1", after_seq=rec.seq)
        await _settled(engine)
        turn = ctx.messages[-1].event_id
        assert await engine.pool.fetchval("SELECT access_count FROM turn_access WHERE event_id = $1", turn) == 1

        async def expired() -> bool:
            return (await engine.js.stream_info(engine.streams.served)).state.messages == 0

        await wait_until(expired, timeout=10, interval=0.2)
        # folded, not kept by the stream: the counters stay (a rebuild now would start from the empty window)
        assert await engine.pool.fetchval("SELECT access_count FROM turn_access WHERE event_id = $1", turn) == 1


async def test_forget_user_removes_the_served_records_built_for_them(engine: Engine) -> None:
    mid = await _seed(engine)
    c = engine.client()
    await c.record_turn("other", "user", "Unrelated chat about trains.", user_id="otto")
    await drained(engine)
    await c.context("maya-new", query="What are my cats called?")
    await c.recall("cats", user="maya", sources=["memories"])
    await c.context("other")
    await _settled(engine)
    assert await engine.pool.fetchval("SELECT count(*) FROM served_answers WHERE user_id = 'maya'") == 2
    # forget_user rebuilds every group: with access the fourth, the scratch pool once had too few connections
    await fg.forget_user(engine, "default", "maya")
    served = []
    info = await engine.js.stream_info(engine.streams.served)
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            served.append((await engine.js.get_msg(engine.streams.served, seq=seq)).data)
        except Exception:  # noqa: BLE001 - deleted (a gap)
            continue
    assert len(served) == 1 and b"otto" in served[0] and mid.encode() not in served[0]
    rows = await engine.pool.fetch("SELECT thread_id, user_id FROM served_answers")
    assert [(r["thread_id"], r["user_id"]) for r in rows] == [("other", "otto")]
    assert not await engine.pool.fetchval("SELECT count(*) FROM memory_access WHERE memory_id = $1", mid)
    report = await rb.verify(engine)  # every group, access included
    assert report.ok, report.differing
