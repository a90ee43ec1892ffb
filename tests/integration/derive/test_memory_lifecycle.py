"""Memory lifecycle on the real servers (issue #4, second part): explicit assert / retract / promote facts,
consolidation (seed 004 §7, seed 002 §4.1), physical pruning (seed 000 §3.1), idle-timeout episodes (seed 004 §4)
and the working-memory KV (seed 003). Every derived read model must equal a clean fold of the log."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.derive import consolidate, working_memory
from memengine.engine.ops.publish import publish_all
from memengine.events import SessionEnded, TextBlock, TurnRecorded, stable_event_id
from memengine.projections.registry import DERIVED_PROJECTIONS
from tests.conftest import wait_until
from tests.integration.folds import DERIVED_READ_MODELS, READ_MODELS, clean_fold, diff, snapshot

pytestmark = pytest.mark.integration


async def settle(engine: Engine, timeout: float = 60) -> None:
    """Until the core projections, the enricher and the derived projections have caught up with both streams."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    names = [p.name for p in DERIVED_PROJECTIONS]
    stable = 0
    while True:
        facts = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
        derived = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
        row = await engine.pool.fetchrow(
            "SELECT (SELECT min(last_seq) FROM projection_checkpoints WHERE projection IN ('thread_activity',"
            " 'messages')) AS core, (SELECT last_seq FROM projection_checkpoints WHERE projection = 'enricher') AS enr,"
            " (SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1::text[])) AS drv", names)
        done = (row["core"] or 0) >= facts and (row["enr"] or 0) >= facts and (row["drv"] or 0) >= derived
        stable = stable + 1 if done else 0
        if stable >= 3:  # the enricher may publish once more after its checkpoint moved: look twice
            return
        assert loop.time() < deadline, f"not caught up: {dict(row)} vs facts {facts}, derived {derived}"
        await asyncio.sleep(0.1)


def turn(thread: str, i: int, role: str, text: str, at: datetime, *, session: str = "s1",
         user: str = "maya") -> TurnRecorded:
    return TurnRecorded(event_id=stable_event_id("lifecycle", thread, str(i)), tenant_id="default", thread_id=thread,
                        occurred_at=at, user_id=user if role == "user" else None, session_id=session, role=role,
                        content=[TextBlock(text=text)])


async def item(engine: Engine, memory_id: str) -> dict:  # type: ignore[type-arg]
    row = await engine.pool.fetchrow("SELECT * FROM memory_items WHERE tenant_id = 'default' AND memory_id = $1",
                                     memory_id)
    assert row is not None, memory_id
    return dict(row)


async def by_text(engine: Engine, text: str) -> list[dict]:  # type: ignore[type-arg]
    return [dict(r) for r in await engine.pool.fetch(
        "SELECT * FROM memory_items WHERE tenant_id = 'default' AND text = $1 ORDER BY valid_at, memory_id", text)]


async def source_of(engine: Engine, event_id: str) -> str:
    return await engine.pool.fetchval(
        "SELECT memory_id FROM memory_item_sources WHERE tenant_id = 'default' AND source_event_id = $1::uuid",
        event_id)


async def assert_rebuild_equals_live(engine: Engine, make_db) -> None:  # type: ignore[no-untyped-def]
    """A clean fold of the derived stream reproduces every derived read model."""
    live = await snapshot(engine.database_url, DERIVED_READ_MODELS)
    clean = await make_db()
    await clean_fold(engine.js, engine.settings, clean, name="rebuild-lifecycle", derived=True)
    assert diff(live, await snapshot(clean, DERIVED_READ_MODELS)) == ""


async def test_assert_retract_promote_consolidate_and_rebuild(engine: Engine, make_db, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    client = engine.client()
    now = datetime.now(UTC).replace(microsecond=0)
    await publish_all(engine, [
        turn("t1", 1, "user", "I guess I prefer tea.", now - timedelta(seconds=30)),  # confidence 0.51: quarantined
        turn("t1", 2, "user", "I love hiking in the Alps.", now - timedelta(seconds=20)),
        turn("t1", 3, "user", "I need to renew my passport by Friday.", now - timedelta(seconds=10)),  # TASK
    ], "default", quiet=True)
    await settle(engine)
    [quarantined] = await by_text(engine, "User prefers tea.")
    assert quarantined["status"] == "quarantined"

    # the enricher sets the thread's focus from the new TASK (working memory, ephemeral)
    pad = await client.scratchpad("t1")
    assert pad.focus and "passport" in pad.focus

    # explicit assertion: its own item, linked to the fact's event id, confidence 1, model "explicit"
    tea = await client.remember("User prefers tea.", user="maya", memory_type="preference")
    locker = await client.remember("Maya's locker code is 4512", user="maya", importance=0.15, priority="LONG_TERM")
    faint = await client.remember("Maya once saw a red kite", user="maya", importance=0.1, priority="LONG_TERM")
    dune = await client.remember("Maya is reading Dune", user="maya", priority="LONG_TERM")
    skills = [await client.remember(t, user="maya", memory_type="SKILL") for t in
              ("Maya can juggle five balls", "Maya bakes sourdough bread", "Maya speaks Portuguese")]
    again = await client.remember("Maya is reading Dune", user="maya", priority="LONG_TERM")  # a duplicate
    await settle(engine)
    tea_id = await source_of(engine, tea.event_id)
    dune_id = await source_of(engine, dune.event_id)
    assert tea_id != quarantined["memory_id"]  # quarantined items are not merge targets
    assert await source_of(engine, again.event_id) == dune_id  # ignore: the repeat is evidence of the same item
    t = await item(engine, tea_id)
    assert (t["status"], t["type"], t["confidence"], t["priority"], t["thread_id"]) == (
        "active", "PREFERENCE", 1.0, "PERMANENT", "_")
    chain = await client.audit(tea_id)
    assert chain.derived_events[0].model == "explicit"
    assert chain.derived_events[0].sources[0].text == "User prefers tea."  # resolved from the log

    # retract: kept with invalid_at; promote: quarantined -> active, the fact recorded as evidence
    await client.retract(dune_id, reason="finished the book")
    await client.promote(quarantined["memory_id"], reason="confirmed by the user")
    await settle(engine)
    d = await item(engine, dune_id)
    assert d["status"] == "retracted" and d["invalid_at"] is not None and d["text"] == "Maya is reading Dune"
    assert (await item(engine, quarantined["memory_id"]))["status"] == "active"
    actions = [x.action for x in (await client.audit(quarantined["memory_id"])).derived_events]
    assert actions == ["add", "promote"]
    assert await client.memories(user="maya", status="retracted") and \
        [m.memory_id for m in (await client.memories(user="maya", status="retracted")).memories] == [dune_id]

    # consolidation 1, four days later: the two tea items merge, decay, demote, delete, expire
    rows_before = await engine.pool.fetchval("SELECT count(*) FROM memory_items")
    run1 = await consolidate.run(engine, "default", user="maya", as_of=now + timedelta(days=4))
    assert run1["published"] and run1["counts"]["merge"] == 1
    merged = {c["memory_id"]: c for c in run1["changes"] if c["action"] == "merge"}
    [(dup, change)] = merged.items()
    survivor = change["superseded_by"]
    assert {dup, survivor} == {tea_id, quarantined["memory_id"]}
    assert survivor == quarantined["memory_id"]  # more evidence (turn + promotion) wins
    s, x = await item(engine, survivor), await item(engine, dup)
    assert x["status"] == "superseded" and x["superseded_by"] == survivor and x["invalid_at"] is not None
    assert x["text"] == "User prefers tea."  # the superseded belief is still there
    assert tea.event_id in {src.event_id for d in (await client.audit(survivor)).derived_events
                            for src in d.sources}  # and its evidence moved to the survivor
    assert s["status"] == "active"
    locker_id, faint_id = await source_of(engine, locker.event_id), await source_of(engine, faint.event_id)
    lk, ft = await item(engine, locker_id), await item(engine, faint_id)
    assert lk["priority"] == "TRANSIENT" and lk["status"] == "active" and 0.1 <= lk["importance"] < 0.15
    assert ft["status"] == "deleted" and ft["invalid_at"] is not None
    [task] = [dict(r) for r in await engine.pool.fetch("SELECT * FROM memory_items WHERE type = 'TASK'")]
    assert task["status"] == "expired"  # SHORT_TERM: 3 days
    assert await engine.pool.fetchval("SELECT count(*) FROM memory_items") == rows_before  # nothing destroyed
    ops = await engine.pool.fetch("SELECT status, detail::text FROM operations WHERE kind = 'consolidate'")
    assert [o["status"] for o in ops] == ["ok"] and run1["event_id"] in ops[0]["detail"]
    # the same clock again: nothing left to change, nothing published
    again1 = await consolidate.run(engine, "default", user="maya", as_of=now + timedelta(days=4))
    assert not again1["published"] and not again1["changes"]

    # consolidation 2, 100 days later: the three old SKILL memories compress into one
    skill_ids = {await source_of(engine, r.event_id) for r in skills}
    assert len(skill_ids) == 3
    run2 = await consolidate.run(engine, "default", user="maya", as_of=now + timedelta(days=100))
    [created] = run2["created"]
    assert set(created["decision"]["target_ids"]) == skill_ids
    for sid in skill_ids:
        sk = await item(engine, sid)
        assert sk["status"] == "superseded" and sk["superseded_by"] == created["memory_id"]
    new = await item(engine, created["memory_id"])
    assert new["status"] == "active" and "juggle" in new["text"] and "Portuguese" in new["text"]
    assert {src.event_id for d in (await client.audit(created["memory_id"])).derived_events
            for src in d.sources} == {r.event_id for r in skills}

    await assert_rebuild_equals_live(engine, make_db)


async def test_pruning_keeps_turns_reachable_and_replays_in_any_order(settings: Settings, make_db,
                                                                     kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, max_messages_per_thread=40, summary_threshold=10)
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    evs = [turn("long", 0, "user", "I love hiking in the Alps.", t0)]
    evs += [turn("long", i, "user" if i % 2 else "assistant", f"message number {i} about topic{i % 7}",
                 t0 + timedelta(seconds=10 * i)) for i in range(1, 100)]
    async with lifespan(s) as engine:
        await publish_all(engine, evs, "default", quiet=True)
        await settle(engine)
        mark = await engine.pool.fetchrow("SELECT * FROM message_prune_marks WHERE thread_id = 'long'")
        live_n = await engine.pool.fetchval("SELECT count(*) FROM messages WHERE thread_id = 'long'")
        covered = await engine.pool.fetchval("SELECT covers_until_seq FROM conversation_summaries")
        assert mark is not None and mark["through_seq"] <= covered  # never beyond the summary
        assert live_n <= 40 and live_n + mark["pruned"] == 100
        async def vectors() -> bool:  # recall rows are never pruned (their own consumer: wait for it)
            return await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE thread_id = 'long'") == 100

        await wait_until(vectors, timeout=60)

        client = engine.client()
        seen, page = [], await client.history("long", limit=30)
        from_log = page.from_log
        while True:
            seen += page.messages
            if page.next_from_seq is None:
                break
            page = await client.history("long", limit=30, from_seq=page.next_from_seq)
            from_log += page.from_log
        assert [m.content[0]["text"] for m in seen] == [e.content[0].text for e in evs]
        assert [m.event_id for m in seen] == [str(e.event_id) for e in evs]
        assert from_log == mark["pruned"] and page.pruned_through_seq == mark["through_seq"]

        ctx = await client.context("long", window=100_000)  # everything live fits, but older turns were pruned
        assert ctx.mode == "tiered" and ctx.messages[0].tier == 1
        assert ctx.messages[0].content[0]["text"].startswith("[Conversation Summary]")
        assert ctx.messages[-1].event_id == str(evs[-1].event_id)

        [hike] = (await client.memories(user="maya")).memories
        src = (await client.audit(hike.memory_id)).derived_events[0].sources[0]
        assert src.text == "I love hiking in the Alps." and src.seq <= mark["through_seq"]  # from the log

        tables = {**READ_MODELS, **DERIVED_READ_MODELS}
        live = await snapshot(engine.database_url, tables)
        # replay in both orders: derived first (marks exist, the facts replay skips pruned turns) ...
        a = await make_db()
        await clean_fold(engine.js, s, a, name="replay-drv-first", derived=True)
        await clean_fold(engine.js, s, a, name="replay-facts-second")
        assert diff(live, await snapshot(a, tables)) == ""
        # ... facts first (turns inserted, then deleted by the prune) ...
        b = await make_db()
        await clean_fold(engine.js, s, b, name="replay-facts-first")
        await clean_fold(engine.js, s, b, name="replay-drv-second", derived=True)
        assert diff(live, await snapshot(b, tables)) == ""
        # ... and both at once
        c = await make_db()
        await asyncio.gather(clean_fold(engine.js, s, c, name="replay-both-facts"),
                             clean_fold(engine.js, s, c, name="replay-both-drv", derived=True))
        assert diff(live, await snapshot(c, tables)) == ""


async def test_idle_timeout_closes_episodes_on_event_time(settings: Settings, make_db, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, episode_idle_seconds=1800)
    t0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
    evs = [
        turn("idle", 1, "user", "Can you help me plan a trip to Lisbon?", t0),
        turn("idle", 2, "assistant", "Sure, when do you want to go?", t0 + timedelta(seconds=60)),
        # 45 minutes later, same session: the first stretch is an episode of its own
        turn("idle", 3, "user", "Back again: I also need a hotel near Alfama.", t0 + timedelta(minutes=46)),
        turn("idle", 4, "assistant", "Here are three hotels near Alfama.", t0 + timedelta(minutes=47)),
        SessionEnded(event_id=stable_event_id("lifecycle", "idle", "end"), tenant_id="default", thread_id="idle",
                     occurred_at=t0 + timedelta(minutes=50), session_id="s1", user_id="maya"),
    ]
    async with lifespan(s) as engine:
        await publish_all(engine, evs, "default", quiet=True)
        await settle(engine)
        eps = (await engine.client().episodes("idle")).episodes
        assert [(e.turns, e.ended_at[:19]) for e in eps] == [
            (2, "2026-02-01T09:01:00"), (2, "2026-02-01T09:47:00")]
        rows = await engine.pool.fetch("SELECT closed_by, source_event_ids FROM episodes ORDER BY started_at")
        assert [r["closed_by"] for r in rows] == ["idle", "session_ended"]
        assert [str(x) for x in rows[0]["source_event_ids"]] == [str(evs[0].event_id), str(evs[1].event_id)]
        await assert_rebuild_equals_live(engine, make_db)


async def test_working_memory_kv_limits_and_context(engine: Engine, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    js, prefix = engine.js, engine.settings.stream_prefix
    for i in range(60):
        await working_memory.put(js, "default", "wm", "done" if i % 2 else "note", f"entry {i}", prefix=prefix)
    items = await working_memory.entries(js, "default", "wm", prefix=prefix)
    assert len(items) == 50 and items[0].text == "entry 10" and items[-1].text == "entry 59"  # newest 50
    assert await working_memory.purge_thread(js, "default", "wm", prefix=prefix)
    assert await working_memory.entries(js, "default", "wm", prefix=prefix) == []

    # the TTL is the bucket's max_age (MEMENGINE_WORKING_MEMORY_TTL): a 1-second bucket forgets by itself
    short = prefix + "X"
    try:
        await working_memory.put(js, "default", "wm", "focus", "fleeting", prefix=short, ttl=1.0)
        info = await js.stream_info(f"KV_{working_memory.bucket_name(short)}")
        assert info.config.max_age == 1.0
        kv = await js.key_value(working_memory.bucket_name(short))
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            try:
                await kv.get("default.wm")
            except Exception:  # noqa: BLE001 - KeyNotFoundError once the server expired it
                break
            assert asyncio.get_running_loop().time() < deadline, "the KV entry did not expire"
            await asyncio.sleep(0.2)
    finally:
        await js.delete_key_value(working_memory.bucket_name(short))

    # RPC and context: the focus shows in Tier 1 even when the transcript is passed through whole
    client = engine.client()
    ack = await client.record_turn("wm", "user", "Let's fix the CSV export today.", user_id="maya")
    await client.scratchpad_put("wm", "focus", "Fix the CSV export")
    await client.scratchpad_put("wm", "done", "Wrote the failing test")
    pad = await client.scratchpad("wm")
    assert pad.focus == "Fix the CSV export" and pad.completed == ["Wrote the failing test"]
    ctx = await client.context("wm", window=8000, after_seq=ack.seq)
    tier1 = [m for m in ctx.messages if m.tier == 1]
    assert ctx.mode == "full" and len(tier1) == 1
    text = tier1[0].content[0]["text"]
    assert text.startswith("[Working Memory]") and "Current focus: Fix the CSV export" in text
    assert ctx.tokens["total"] <= ctx.budget.total
    await client.scratchpad_clear("wm")
    assert (await client.scratchpad("wm")).entries == []


def test_cli_remember_retract_promote_consolidate_scratchpad(settings: Settings, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.integration.ops.test_cli import run

    env_s = msgspec.structs.replace(settings, embedder="none")
    rem = json.loads(run(env_s, "remember", "Maya prefers aisle seats", "--user", "maya", "--type", "preference",
                         "--json").stdout)
    assert rem["decision"] == "add" and rem["status"] == "active" and rem["type"] == "PREFERENCE"
    bad = run(env_s, "memories", "promote", rem["memory_id"][:8], "--json", check=False)
    assert bad.returncode == 1 and "invalid_request" in bad.stderr  # only quarantined items can be promoted
    ret = json.loads(run(env_s, "retract", rem["memory_id"][:8], "--reason", "changed her mind", "--json").stdout)
    assert ret["memory_id"] == rem["memory_id"] and ret["status"] == "retracted"
    listed = json.loads(run(env_s, "memories", "--status", "retracted", "--json").stdout)["memories"]
    assert [m["memory_id"] for m in listed] == [rem["memory_id"]]
    plan = json.loads(run(env_s, "consolidate", "--dry-run", "--json").stdout)
    assert plan["dry_run"] and not plan["published"] and plan["items_considered"] == 0
    pad = json.loads(run(env_s, "scratchpad", "t9", "--focus", "Book the Lisbon flight", "--json").stdout)
    assert pad["focus"] == "Book the Lisbon flight"
