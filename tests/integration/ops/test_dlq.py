"""Dead-letter tooling (issue #5 §6) on the real servers: poison events are listed and shown with the original event,
the consumer, the error and the attempt count; a retry goes back through the normal path (fixed data reaches the
read models, an unchanged failure counts another attempt on the same row); nothing is dropped without a command,
and a drop removes the DLQ stream message; every action is in the operations table; the CLI's --json shapes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import uuid
from pathlib import Path

import msgspec
import pytest
from nats.js.errors import NotFoundError

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine
from memengine.engine.ops import dead_letters as dlq
from memengine.engine.ops import operations
from tests.conftest import wait_until
from tests.integration.poison import UNAPPLIABLE, refuse_in_folds

pytestmark = pytest.mark.integration

BAD_JSON = b"{not json \x1b[31mred"  # an ANSI escape: shown escaped, never interpreted by a terminal


async def _core(engine: Engine, status: str = "all") -> list[dict]:
    return await dlq.list_dead_letters(engine.pool, consumer="core", status=status)


async def _texts(engine: Engine, thread: str) -> list[str]:
    hist = await engine.client().history(thread)
    return [m.content[0]["text"] for m in hist.messages]


def _turn(thread: str, text: str, event_id: str | None = None) -> bytes:
    return msgspec.json.encode({
        "type": "TurnRecorded", "v": 2, "event_id": event_id or str(uuid.uuid4()), "tenant_id": "default",
        "thread_id": thread, "occurred_at": "2026-01-01T00:00:00Z", "role": "user",
        "content": [{"type": "text", "text": text}]})


async def _poison(engine: Engine, thread: str) -> tuple[int, int]:
    """Publish a malformed event and one that fails to apply (``UNAPPLIABLE``, refused by a trigger) between
    two good turns; wait until every consumer of the facts stream is past them (the core projector dead-letters
    both, the recall projector too, each in its own time: waiting for the core one alone listed a partial set, CI
    issue #17 defect 13). Returns their stream seqs."""
    js, subj, client = engine.js, engine.subjects, engine.client()
    await refuse_in_folds(engine)
    await client.record_turn(thread, "user", "before")
    bad = await js.publish(subj.fact("default", thread, "TurnRecorded"), BAD_JSON,
                           headers={"Nats-Msg-Id": f"bad-{thread}"})
    nul = await client.record_turn(thread, "user", UNAPPLIABLE)
    last = await client.record_turn(thread, "user", "after")
    await client.context(thread, after_seq=last.seq)
    await wait_until(lambda: _facts_consumers_past(engine, last.seq), timeout=30)
    assert await _has(engine, 2)
    return bad.seq, nul.seq


async def _facts_consumers_past(engine: Engine, seq: int) -> bool:
    """Every checkpoint on the facts stream (core and recall projections, the enricher) is at ``seq`` or later; a
    dead letter is recorded in the same transaction as the checkpoint that passes it."""
    rows = {r["projection"]: r["last_seq"] for r in await engine.pool.fetch(
        "SELECT projection, last_seq FROM projection_checkpoints WHERE stream = $1", engine.streams.facts)}
    # the rows appear when each runner starts: all three must be there, not only the first one started
    return {"messages", "vectors", "enricher"} <= set(rows) and min(rows.values()) >= seq


async def _has(engine: Engine, n: int) -> bool:
    return len(await _core(engine)) >= n


async def _dlq_msg_exists(engine: Engine, seq: int) -> bool:
    try:
        await engine.js.get_msg(engine.streams.dlq, seq)
        return True
    except NotFoundError:
        return False


async def test_list_show_and_retry_through_the_normal_path(engine: Engine) -> None:
    bad_seq, nul_seq = await _poison(engine, "th")

    # listed: the consumer, the error, the attempt count, the original position
    bad, nul = await _core(engine, "open")
    assert (bad["stream_seq"], nul["stream_seq"]) == (bad_seq, nul_seq)
    assert bad["error"].startswith("decode:") and nul["error"].startswith("apply:")
    assert bad["attempts"] == nul["attempts"] == 1 and bad["event_id"] is None and nul["event_id"]
    assert bad["subject"] == engine.subjects.fact("default", "th", "TurnRecorded")

    # shown: the malformed one as safe raw bytes, the other decoded
    shown = await dlq.show(engine, bad["id"])
    assert shown["event"] is None and shown["decode_error"]
    assert shown["payload"]["text"] == BAD_JSON.decode() and base64.b64decode(shown["payload"]["base64"]) == BAD_JSON
    assert "\\x1b" in dlq.printable(shown["payload"]["text"]) and "\x1b" not in dlq.printable(shown["payload"]["text"])
    shown_nul = await dlq.show(engine, nul["id"])
    assert shown_nul["event"]["content"][0]["text"] == UNAPPLIABLE
    assert shown_nul["event"]["event_id"] == nul["event_id"] and shown_nul["decode_error"] is None
    first_dlq = shown_nul["dead_letter"]["dlq_seqs"]
    assert len(first_dlq) == 1 and await _dlq_msg_exists(engine, first_dlq[0])

    # retried unchanged: it goes back to the facts stream, fails again, and counts on the SAME row
    facts_before = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
    res = await dlq.retry(engine, [nul["id"]])
    (r,) = res["retried"]
    assert r["original_seq"] == nul_seq and r["retry_seq"] > facts_before and not r["corrected"]
    assert r["msg_id"] == f"retry:{nul['id']}:1"
    # the recall projector rejected the same message: its dead letter is retried with it (one republish)
    assert nul["id"] in r["ids"] and r["dlq_messages_deleted"] == len(r["ids"])
    assert not await _dlq_msg_exists(engine, first_dlq[0])  # the DLQ stream holds open dead letters only

    async def failed_again() -> dict | None:
        row = next(x for x in await _core(engine) if x["id"] == nul["id"])
        return row if row["attempts"] == 2 else None

    row = await wait_until(failed_again)
    assert row["status"] == "open" and row["last_seq"] == r["retry_seq"] and row["retries"] == 1
    assert len(await _core(engine)) == 2  # no new row for the new stream seq
    again = (await dlq.show(engine, nul["id"]))["dead_letter"]["dlq_seqs"]
    assert len(again) == 1 and await _dlq_msg_exists(engine, again[0])

    # a corrected payload that does not decode is refused before anything is published or recorded
    with pytest.raises(dlq.DeadLetterError) as info:
        await dlq.retry(engine, [bad["id"]], payload=b"{still not json")
    assert info.value.code == "invalid_payload"
    assert (await engine.js.stream_info(engine.streams.facts)).state.last_seq == r["retry_seq"]

    # retried with the data fixed: the read model gains the events; the projectors that applied them skip them
    fixed_nul = msgspec.json.encode({**shown_nul["event"], "content": [{"type": "text", "text": "nul fixed"}]})
    fixed_bad = _turn("th", "was malformed")
    r_nul = (await dlq.retry(engine, [nul["id"]], payload=fixed_nul, payload_source="fix.json"))["retried"][0]
    r_bad = (await dlq.retry(engine, [bad["id"]], payload=fixed_bad))["retried"][0]
    assert r_nul["corrected"] and r_nul["msg_id"] == f"retry:{nul['id']}:2"
    await engine.client().context("th", after_seq=r_bad["retry_seq"])
    assert await _texts(engine, "th") == ["before", "after", "nul fixed", "was malformed"]
    rows = {x["id"]: x for x in await _core(engine)}
    assert rows[nul["id"]]["status"] == rows[bad["id"]]["status"] == "retried"
    assert rows[nul["id"]]["attempts"] == 2 and rows[bad["id"]]["attempts"] == 1  # the fixes did not fail
    assert rows[bad["id"]]["corrected"] and len(rows) == 2
    final = await dlq.show(engine, bad["id"])
    assert final["payload"]["text"] == BAD_JSON.decode()  # the producer's bytes are kept for audit
    assert final["corrected"]["event"]["content"][0]["text"] == "was malformed"
    assert [o["kind"] for o in final["operations"]] == ["dlq-retry"]

    # every retry is in the operations table: who, what (ids), the corrected payload's fingerprint, no content
    ops = await operations.recent(engine.pool, kind="dlq-retry")
    assert [o["status"] for o in ops] == ["ok", "ok", "ok"]
    assert ops[1]["scope"]["ids"] == [nul["id"]] and ops[1]["detail"]["corrected_payload"]["source"] == "fix.json"
    assert ops[1]["detail"]["retry_seqs"] == [r_nul["retry_seq"]] and "corrected_payload" not in ops[2]["detail"]
    assert "nul fixed" not in json.dumps(ops)


async def test_retry_all_groups_consumers_and_is_idempotent(engine: Engine) -> None:
    """``--all`` retries every open one once per stream message; a dead letter of another consumer for the same
    message goes with it (it receives the republished event anyway)."""
    bad_seq, _ = await _poison(engine, "grp")
    every = await dlq.list_dead_letters(engine.pool, status="open")
    res = await dlq.retry(engine, all_open=True)
    retried_ids = sorted(i for r in res["retried"] for i in r["ids"])
    assert retried_ids == sorted(x["id"] for x in every)
    assert len(res["retried"]) == len({(x["stream"], x["stream_seq"]) for x in every})
    # the malformed one fails again for every consumer that rejected it: attempts 2, same rows
    await wait_until(lambda: _all_attempts(engine, bad_seq, 2))
    assert sorted(x["id"] for x in await dlq.list_dead_letters(engine.pool, status="all")) == \
        sorted(x["id"] for x in every)
    with pytest.raises(dlq.DeadLetterError):
        await dlq.retry(engine)  # neither ids nor all_open
    with pytest.raises(dlq.DeadLetterError) as info:
        await dlq.retry(engine, [10**9])
    assert info.value.code == "not_found"


async def _all_attempts(engine: Engine, seq: int, n: int) -> bool:
    rows = [x for x in await dlq.list_dead_letters(engine.pool, status="all") if x["stream_seq"] == seq]
    return bool(rows) and all(x["attempts"] == n and x["status"] == "open" for x in rows)


async def test_drop_needs_the_command_and_removes_the_dlq_message(engine: Engine) -> None:
    await _poison(engine, "dr")
    bad, nul = await _core(engine, "open")
    bad_dlq = (await dlq.show(engine, bad["id"]))["dead_letter"]["dlq_seqs"]
    nul_dlq = (await dlq.show(engine, nul["id"]))["dead_letter"]["dlq_seqs"]
    dlq_before = (await engine.js.stream_info(engine.streams.dlq)).state.messages

    res = await dlq.drop(engine, [bad["id"]])
    assert res["dropped"] == [bad["id"]] and res["dlq_messages_deleted"] == 1 and res["skipped"] == []
    assert not await _dlq_msg_exists(engine, bad_dlq[0])
    assert await _dlq_msg_exists(engine, nul_dlq[0])  # only what was named
    assert (await engine.js.stream_info(engine.streams.dlq)).state.messages == dlq_before - 1
    rows = {x["id"]: x for x in await _core(engine)}
    assert rows[bad["id"]]["status"] == "dropped" and rows[nul["id"]]["status"] == "open"
    assert (await dlq.show(engine, bad["id"]))["payload"]["text"] == BAD_JSON.decode()  # kept for audit

    again = await dlq.drop(engine, [bad["id"]])
    assert again["dropped"] == [] and again["skipped"] == [{"id": bad["id"], "reason": "status dropped"}]
    assert (await dlq.retry(engine, [bad["id"]]))["skipped"] == [{"id": bad["id"], "reason": "status dropped"}]
    ops = await operations.recent(engine.pool, kind="dlq-drop")
    assert [o["scope"]["ids"] for o in ops] == [[], [bad["id"]]]

    # a row written before migration 0009 does not know its DLQ message: found by the runner's headers instead
    await engine.pool.execute("UPDATE dead_letters SET dlq_seqs = '{}' WHERE id = $1", nul["id"])
    assert (await dlq.drop(engine, all_open=True, consumer="core"))["dlq_messages_deleted"] == 1
    assert not await _dlq_msg_exists(engine, nul_dlq[0])


async def _cli(settings: Settings, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memengine.engine.cli", "dlq", *args, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode or 0, out.decode(), err.decode()


async def _cli_json(settings: Settings, *args: str) -> dict:
    rc, out, err = await _cli(settings, *args, "--json")
    assert rc == 0, err[-3000:]
    return json.loads(out)


async def test_cli_json_shapes_and_refusals(engine: Engine, settings: Settings, tmp_path: Path) -> None:
    await _poison(engine, "cli")
    bad, nul = await _core(engine, "open")

    listed = await _cli_json(settings, "list", "--consumer", "core")
    assert listed["count"] == 2 and listed["status"] == "open" and listed["consumer"] == "core"
    assert set(listed["dead_letters"][0]) == {
        "id", "consumer", "stream", "stream_seq", "last_seq", "subject", "event_id", "error", "attempts", "retries",
        "status", "retried_seq", "created_at", "updated_at", "payload_bytes", "corrected"}
    assert [d["id"] for d in listed["dead_letters"]] == [bad["id"], nul["id"]]

    shown = await _cli_json(settings, "show", str(nul["id"]))
    assert set(shown) == {"dead_letter", "event", "decode_error", "payload", "corrected", "operations"}
    assert shown["event"]["content"][0]["text"] == UNAPPLIABLE and shown["dead_letter"]["attempts"] == 1
    assert set(shown["payload"]) == {"bytes", "sha256", "text", "base64"}

    rc, out, _ = await _cli(settings, "show", str(bad["id"]))  # human: the raw payload, escape sequence defused
    assert rc == 0 and "\\x1b" in out and "\x1b[31m" not in out and "decode" in out

    # nothing is dropped without an explicit, confirmed command
    rc, _, err = await _cli(settings, "drop", str(bad["id"]))
    assert rc == 2 and "--yes" in err
    assert (await _core(engine, "open"))[0]["id"] == bad["id"]
    rc, _, _ = await _cli(settings, "retry")
    assert rc == 2
    rc, _, err = await _cli(settings, "show", "999999999")
    assert rc == 1 and "not_found" in err

    fix = tmp_path / "fixed.json"
    fix.write_bytes(_turn("cli", "fixed by the operator"))
    res = await _cli_json(settings, "retry", str(bad["id"]), "--payload-file", str(fix))
    assert set(res) == {"operation_id", "retried", "skipped"}
    assert set(res["retried"][0]) == {"ids", "stream", "original_seq", "subject", "retry_seq", "msg_id", "duplicate",
                                      "corrected", "dlq_messages_deleted"}
    assert bad["id"] in res["retried"][0]["ids"] and res["retried"][0]["corrected"]
    await engine.client().context("cli", after_seq=res["retried"][0]["retry_seq"])
    assert (await _texts(engine, "cli"))[-1] == "fixed by the operator"

    dropped = await _cli_json(settings, "drop", str(nul["id"]), "--yes")
    assert dropped["dropped"] == [nul["id"]] and dropped["dlq_messages_deleted"] == 1
    assert set(dropped) == {"operation_id", "dropped", "dlq_messages_deleted", "skipped"}
    assert await _cli_json(settings, "list", "--consumer", "core") == {
        "dead_letters": [], "count": 0, "status": "open", "consumer": "core"}
    rc, _, _ = await _cli(settings, "retry", str(nul["id"]))  # a dropped one stays dropped
    assert rc == 1
