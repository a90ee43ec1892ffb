"""Verified forgetting on the real servers (issue #5 §4): after ``forget_thread`` / ``forget_user`` no table of any
schema, no stream (facts, derived, dead letters) holds the forgotten content or ids; a tombstone remains; another
thread is untouched; a rebuild afterwards does not bring anything back, and ``verify`` passes."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import forget as fg
from memengine.engine.ops import rebuild as rb
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from memengine.events import TurnRecorded
from tests.conftest import LOCOMO_DIR
from tests.integration.derive.test_derived_memory import derived_caught_up

pytestmark = pytest.mark.integration


async def _ingest(engine: Engine, evs: list) -> int:
    pub = await publish_all(engine, evs, "default", quiet=True)
    await derived_caught_up(engine, pub["last_seq"])
    await engine.recall.catch_up()
    return pub["last_seq"]


def _events(stem: str, n: int, thread: str | None = None) -> list:
    path = LOCOMO_DIR / f"{stem}.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    evs = read_locomo(path, "default")[:n]
    if thread:
        evs = [msgspec.structs.replace(e, thread_id=thread, event_id=uuid.uuid4()) for e in evs]
    return evs


async def _tables_containing(engine: Engine, needles: list[str]) -> list[str]:
    """``schema.table: needle`` for every row of every user table whose text form contains a needle."""
    found = []
    tables = await engine.pool.fetch(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
        " AND table_schema NOT IN ('pg_catalog', 'information_schema')")
    for t in tables:
        name = f'"{t["table_schema"]}"."{t["table_name"]}"'
        for needle in needles:
            hit = await engine.pool.fetchval(
                f"SELECT 1 FROM {name} x WHERE strpos(x::text, $1) > 0"
                f" OR strpos(x::text, encode(convert_to($1, 'UTF8'), 'hex')) > 0 LIMIT 1", needle)
            if hit:
                found.append(f"{name}: {needle[:40]}")
    return found


async def _streams_containing(engine: Engine, needles: list[str]) -> list[str]:
    found = []
    for stream in (engine.streams.facts, engine.streams.derived, engine.streams.dlq, engine.streams.served):
        info = await engine.js.stream_info(stream)
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                m = await engine.js.get_msg(stream, seq=seq)
            except Exception:  # noqa: BLE001 - deleted (a gap)
                continue
            blob = (m.data or b"") + msgspec.json.encode(m.headers or {})
            found += [f"{stream}#{seq}: {n[:40]}" for n in needles if n.encode() in blob]
    return found


async def test_forget_thread_everywhere(engine: Engine) -> None:
    gone = _events("26", 120)
    kept = _events("30", 40)
    await _ingest(engine, gone + kept)
    # a dead letter of the forgotten thread: its payload holds content too
    bad = msgspec.json.encode({"type": "TurnRecorded", "v": 2, "tenant_id": "default", "thread_id": "locomo-26",
                               "secret": "the-dead-letter-needle"})
    await engine.js.publish(engine.subjects.fact("default", "locomo-26", "TurnRecorded"), bad,
                            stream=engine.streams.facts)
    await engine.runner.catch_up()
    assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") >= 1

    turns = [e for e in gone if isinstance(e, TurnRecorded)]
    texts = [b.text for e in turns[5:60:5] for b in e.content if len(getattr(b, "text", "")) > 25]
    mem_ids = [r["memory_id"] for r in await engine.pool.fetch(
        "SELECT memory_id FROM memory_items WHERE thread_id = 'locomo-26'")]
    drv_ids = [str(r["event_id"]) for r in await engine.pool.fetch(
        "SELECT event_id FROM derived_events WHERE thread_id = 'locomo-26'")]
    assert texts and mem_ids and drv_ids
    needles = texts + [str(e.event_id) for e in turns[:20]] + mem_ids[:10] + drv_ids[:10] + ["the-dead-letter-needle"]
    assert await _tables_containing(engine, texts[:2]), "the needles must be found before forgetting"
    kept_before = await engine.client().context("locomo-30", window=8000)

    report = await fg.forget_thread(engine, "default", "locomo-26", reason="user request")
    assert report.facts_removed >= len(gone) and report.derived_removed >= 1 and report.dead_letters_removed >= 1

    assert await _tables_containing(engine, needles) == []
    assert await _streams_containing(engine, needles) == []
    threads = await engine.client().threads()
    assert [t.thread for t in threads.threads] == ["locomo-30"]
    # the probe asks with the forgotten text itself: a new question after the forgetting, which the access trail would
    # rightly record (issue #30); recorded, its query would read as a leak in the needle search below
    trail, engine.service.trail = engine.service.trail, None
    recall = await engine.client().recall(texts[0])
    engine.service.trail = trail
    assert all(h.thread != "locomo-26" for h in recall.hits)
    tomb = await engine.pool.fetch("SELECT scope, scope_id, reason, requested_by FROM tombstones")
    assert [(r["scope"], r["scope_id"], r["reason"]) for r in tomb] == [("thread", "locomo-26", "user request")]
    op = await engine.pool.fetchrow("SELECT kind, status, scope::text FROM operations WHERE kind = 'forget-thread'")
    assert op["status"] == "ok" and "locomo-26" in op["scope"]

    # a rebuild afterwards brings nothing back; the other thread is untouched; the read models equal a fold
    await rb.rebuild(engine)
    assert await _tables_containing(engine, needles) == []
    assert (await engine.client().context("locomo-30", window=8000)).messages == kept_before.messages
    assert (await rb.verify(engine)).ok
    with pytest.raises(fg.NothingToForget):
        await fg.forget_thread(engine, "default", "never-existed")


async def test_forget_user_everywhere(engine: Engine) -> None:
    evs = _events("26", 80)
    await _ingest(engine, evs)
    caroline = [e for e in evs if isinstance(e, TurnRecorded) and e.user_id == "Caroline"]
    melanie = [e for e in evs if isinstance(e, TurnRecorded) and e.user_id == "Melanie"]
    texts = [b.text for e in caroline[2:40:4] for b in e.content if len(getattr(b, "text", "")) > 25]
    needles = texts + [str(e.event_id) for e in caroline[:10]]
    assert await _tables_containing(engine, texts[:1])

    report = await fg.forget_user(engine, "default", "Caroline")
    assert report.facts_removed == len(caroline)

    assert await _tables_containing(engine, needles) == []
    assert await _streams_containing(engine, needles) == []
    hist = await engine.client().history("locomo-26", limit=1000)
    assert {m.user_id for m in hist.messages} == {"Melanie"}
    assert len(hist.messages) == len(melanie)
    assert (await engine.client().memories(user="Caroline")).memories == []
    assert (await rb.verify(engine)).ok
