"""De-duplication is scoped by tenant end to end (issue #17 defect 4), on the real servers.

Event ids are chosen by publishers, and import ids are UUIDv5 of public data: another tenant can publish any id
first. Before the fix the server's dedup window (``Nats-Msg-Id`` = bare event id) and ``applied_events`` (keyed by
projector and event id) dropped tenant A's event when tenant B had used its id: a LoCoMo import kept 350 of 369
turns and ``memengine ingest`` reported ``duplicates: 20``. Now the message id is ``events.msg_id`` (tenant, id,
content digest), ``applied_events`` is keyed by tenant and keeps a content digest, and a different event of the same
tenant reusing an id is dead-lettered instead of skipped.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.client.publishing import tenant_dedup_key
from memengine.engine.ops.ingest import read_locomo
from memengine.events import TextBlock, TurnRecorded, decode, encode, msg_id
from tests.conftest import LOCOMO_DIR, wait_until
from tests.integration.folds import clean_fold, diff, snapshot
from tests.integration.ops.test_cli import run

pytestmark = pytest.mark.integration

CONFLICT = "duplicate event id with different content"


async def _facts_folded(engine: Engine, seq: int) -> bool:
    """Every projector of the facts stream (core and recall) committed up to ``seq``."""
    low = await engine.pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints WHERE stream = $1",
                                     engine.streams.facts)
    return (low or 0) >= seq


async def _same_as_clean_fold(engine: Engine, settings: Settings, make_db) -> None:  # type: ignore[no-untyped-def]
    clean = await make_db()
    await clean_fold(engine.js, settings, clean)
    assert diff(await snapshot(settings.database_url), await snapshot(clean)) == ""


async def test_an_import_keeps_every_turn_when_another_tenant_used_its_ids_first(settings: Settings) -> None:
    """The issue's reproduction: tenant ``mallory`` pre-publishes 20 ids of ``victim``'s LoCoMo import, under the
    old bare-id message id, under its own tenant-scoped one, and under a forged copy of the victim's exact key. The
    victim's ``memengine ingest`` keeps all 369 turns, exits 0 and says what happened."""
    path = LOCOMO_DIR / "30.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    evs = read_locomo(path, "victim")
    turns = [e for e in evs if isinstance(e, TurnRecorded)]
    assert len(turns) == 369
    async with lifespan(settings, roles=set()) as engine:  # streams only: the CLI folds
        for i, ev in enumerate(turns[:20]):
            theirs = msgspec.structs.replace(ev, tenant_id="mallory", content=[TextBlock(text=f"mallory {i}")])
            data = encode(theirs)
            header = (str(ev.event_id) if i % 3 == 0  # the old rule
                      else msg_id("mallory", ev.event_id, data) if i % 3 == 1  # the rule, own tenant
                      # forged: the victim's exact id, as if its dedup key had leaked (issue #26 item 2: from public
                      # data alone it can no longer be computed, tests/integration/security/test_forged_dedup.py)
                      else msg_id("victim", ev.event_id, encode(ev),
                                  key=tenant_dedup_key(engine.dedup_secret, "victim")))
            ack = await engine.js.publish(engine.subjects.fact("mallory", ev.thread_id, "TurnRecorded"), data,
                                          headers={"Nats-Msg-Id": header})
            assert not ack.duplicate

        proc = await asyncio.to_thread(run, settings, "ingest", str(path), "--tenant", "victim", "--json")
        ing = json.loads(proc.stdout)
        assert ing["events"] == ing["published"] == len(evs)
        assert ing["duplicates"] == 0 and ing["reclaimed"] == 6  # the 6 forged keys were detected and re-published
        assert ing["dead_lettered"] == ing["conflicts"] == 0
        # turns folded per tenant (``messages`` itself is pruned behind the summaries by the enricher)
        counts = {r["tenant_id"]: r["message_count"] for r in await engine.pool.fetch(
            "SELECT tenant_id, message_count FROM thread_activity WHERE thread_id = 'locomo-30'")}
        assert counts == {"victim": 369, "mallory": 20}
        assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") == 0
        shared = await engine.pool.fetchval(
            "SELECT count(*) FROM applied_events m JOIN applied_events v ON v.projector = m.projector"
            " AND v.event_id = m.event_id AND v.tenant_id = 'victim'"
            " WHERE m.projector = 'core' AND m.tenant_id = 'mallory'")
        assert shared == 20  # both tenants' events applied under the shared ids

        # a re-run is reported as such: the forged keys are detected again and lead to the reclaimed copies (issue
        # #26 item 2: engine.client.publishing's deterministic reclaim chain), so every event is a duplicate and
        # nothing is stored twice
        again = json.loads((await asyncio.to_thread(run, settings, "ingest", str(path), "--tenant", "victim",
                                                    "--json")).stdout)
        assert again["duplicates"] == len(evs) and again["published"] == 0 and again["reclaimed"] == 6
        assert again["dead_lettered"] == 0
        assert await engine.pool.fetchval(
            "SELECT message_count FROM thread_activity WHERE tenant_id = 'victim'") == 369
        ver = json.loads((await asyncio.to_thread(run, settings, "verify", "--json")).stdout)
        assert ver["ok"], ver["differing"]


async def test_a_reused_id_with_other_content_is_dead_lettered_and_a_repeat_is_not(
        engine: Engine, settings: Settings, make_db) -> None:  # type: ignore[no-untyped-def]
    """Within a tenant: a byte-identical repeat (inside the dedup window: the server drops it; after it: the
    projectors skip it), and the same event re-encoded from its v1 form, change nothing and dead-letter nothing; the
    same id with other content is dead-lettered with the reason. Another tenant's event under that id is applied."""
    eid = uuid.uuid4()
    at = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
    v1 = msgspec.json.encode({"type": "TurnRecorded", "v": 1, "event_id": str(eid), "tenant_id": "acme",
                              "thread_id": "t", "occurred_at": "2025-05-01T12:00:00Z", "role": "user",
                              "text": "I live in Lisbon"})
    subject = engine.subjects.fact("acme", "t", "TurnRecorded")
    first = await engine.js.publish(subject, v1, headers={"Nats-Msg-Id": msg_id("acme", eid, v1)})
    again = await engine.js.publish(subject, v1, headers={"Nats-Msg-Id": msg_id("acme", eid, v1)})
    assert again.duplicate and again.seq == first.seq  # inside the window

    acme = engine.client("acme")
    current = decode(v1)  # the v2 re-encoding: other bytes, other message id, the same event
    assert encode(current) != v1 and current.occurred_at == at
    reencoded = await acme.publish(current)
    late = await engine.js.publish(subject, v1, headers={"Nats-Msg-Id": "after-the-window"})
    other = await acme.publish(msgspec.structs.replace(current, content=[TextBlock(text="I live in Porto")]))
    globex = await engine.client("globex").publish(msgspec.structs.replace(current, tenant_id="globex"))
    assert not (reencoded.duplicate or late.duplicate or other.duplicate or globex.duplicate)

    await wait_until(lambda: _facts_folded(engine, globex.seq), timeout=30)
    rows = await engine.pool.fetch("SELECT consumer, stream_seq, event_id, error FROM dead_letters ORDER BY consumer")
    assert {r["stream_seq"] for r in rows} == {other.seq}, rows  # only the other content
    assert {r["consumer"] for r in rows} == {"core", "recall"} and all(r["event_id"] == str(eid) for r in rows)
    assert all(r["error"].startswith(CONFLICT) and f"seq {first.seq}" in r["error"] for r in rows)
    texts = {(r["tenant_id"], r["text"]) for r in await engine.pool.fetch("SELECT tenant_id, text FROM messages")}
    assert texts == {("acme", "I live in Lisbon"), ("globex", "I live in Lisbon")}
    applied = await engine.pool.fetch(
        "SELECT projector, tenant_id, seq FROM applied_events WHERE event_id = $1 ORDER BY 1, 2", eid)
    assert [tuple(r) for r in applied] == [("core", "acme", first.seq), ("core", "globex", globex.seq),
                                           ("recall", "acme", first.seq), ("recall", "globex", globex.seq)]
    await _same_as_clean_fold(engine, settings, make_db)


async def test_derived_events_of_two_tenants_sharing_a_fact_id_both_exist(engine: Engine) -> None:
    """Derived ids are deterministic from their sources: two tenants' "remember" facts under one id derive one
    memory item each (the derived stream's message id and the derived projector's dedupe carry the tenant)."""
    eid = uuid.uuid4()
    a = await engine.client("acme").remember("The office wifi password rotates monthly", event_id=eid)
    b = await engine.client("globex").remember("The office wifi password rotates monthly", event_id=eid)
    assert not b.duplicate and a.seq != b.seq

    async def both() -> bool:
        return await engine.pool.fetchval("SELECT count(DISTINCT tenant_id) FROM memory_items") == 2

    await wait_until(both, timeout=30)
    rows = await engine.pool.fetch("SELECT tenant_id, memory_id FROM memory_items ORDER BY tenant_id")
    assert [r["tenant_id"] for r in rows] == ["acme", "globex"]
    assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") == 0


def test_ingest_reports_a_changed_line_as_a_conflict(settings: Settings, tmp_path: Path) -> None:
    """Re-importing a JSONL file whose line 2 changed (same stable id, other text): the changed turn is not silently
    taken as "already stored"; it is dead-lettered as a conflict, reported, and the exit status is 1."""
    lines = [{"thread_id": "d", "occurred_at": f"2026-03-02T09:1{i}:00Z", "role": "user", "text": f"turn {i}"}
             for i in range(3)]
    f = tmp_path / "conv.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    first = json.loads(run(settings, "ingest", str(f), "--tenant", "acme", "--json").stdout)
    assert first["published"] == 3 and first["duplicates"] == first["dead_lettered"] == 0
    lines[1]["text"] = "turn 1, edited"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    proc = run(settings, "ingest", str(f), "--tenant", "acme", "--json", check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    second = json.loads(proc.stdout)
    assert second["published"] == 1 and second["duplicates"] == 2
    assert second["dead_lettered"] == second["conflicts"] == 1
    human = run(settings, "ingest", str(f), "--tenant", "acme", check=False)
    assert human.returncode == 1 and "same id" in human.stderr


_DOWNGRADE = """
ALTER TABLE applied_events DROP CONSTRAINT applied_events_pkey;
ALTER TABLE applied_events DROP COLUMN tenant_id, DROP COLUMN digest;
ALTER TABLE applied_events ADD PRIMARY KEY (projector, event_id);
ALTER TABLE messages DROP CONSTRAINT messages_tenant_event_id_key;
ALTER TABLE messages ADD CONSTRAINT messages_event_id_key UNIQUE (event_id);
DELETE FROM schema_migrations WHERE version = 12;
"""


async def test_an_upgraded_database_keeps_exactly_once_for_ids_applied_before(settings: Settings) -> None:
    """schema/0012 on a database folded by the previous engine: the tenant of an applied id is recovered through
    the read models where they hold it, and the rest stay applied for every tenant ('*'), so nothing applied before
    the upgrade is applied twice by a late repeat; a changed repeat of a recovered id is still a conflict."""
    from memengine.engine.adapters import postgres as db

    old = {"turn": uuid.uuid4()}
    async with lifespan(settings, roles={"projector"}) as engine:
        acme = engine.client("acme")
        turn = TurnRecorded(event_id=old["turn"], tenant_id="acme", thread_id="t", role="user",
                            occurred_at=datetime(2025, 1, 1, tzinfo=UTC), content=[TextBlock(text="v1 era")])
        await acme.publish(turn)
        lab = await acme.label_thread("t", "Old label")
        old["labelled"] = uuid.UUID(lab.event_id)
        await wait_until(lambda: _facts_folded(engine, lab.seq), timeout=30)
    conn = await asyncpg.connect(settings.database_url)
    try:
        await conn.execute(_DOWNGRADE)  # the tables as the previous engine left them, with its rows
        assert await db.migrate(conn) == [12]
        rows = {(r["event_id"], r["tenant_id"]) for r in await conn.fetch(
            "SELECT event_id, tenant_id FROM applied_events WHERE projector = 'core'")}
        assert rows == {(old["turn"], "acme"), (old["labelled"], "*")}  # a label is in no read model by id
    finally:
        await conn.close()
    async with lifespan(settings, roles={"projector"}) as engine:
        subject = engine.subjects.fact("acme", "t", "ThreadLabelled")
        label = (await engine.js.get_msg(engine.streams.facts, lab.seq)).data
        late = await engine.js.publish(subject, label, headers={"Nats-Msg-Id": "late-label"})
        other = await engine.client("acme").publish(
            msgspec.structs.replace(turn, content=[TextBlock(text="rewritten")]))
        await wait_until(lambda: _facts_folded(engine, other.seq), timeout=30)
        assert late.seq < other.seq
        errors = [r["error"] for r in await engine.pool.fetch("SELECT error FROM dead_letters WHERE consumer = 'core'")]
        assert len(errors) == 1 and errors[0].startswith(CONFLICT)
        assert await engine.pool.fetchval("SELECT label FROM thread_activity WHERE tenant_id = 'acme'") == "Old label"
        assert await engine.pool.fetchval("SELECT text FROM messages WHERE tenant_id = 'acme'") == "v1 era"
