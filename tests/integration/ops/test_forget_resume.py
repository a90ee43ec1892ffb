"""An interrupted forgetting is finished by running it again (issue #17 defect 8), on the real servers.

The probe killed ``memengine forget-thread`` 1 s in: the re-run answered "no thread" (exit 1) while the forgotten
events' ids stayed in ``applied_events`` and the scrub of dead letters (which hold the original payloads), of the DLQ
stream and of working memory never ran; ``operations`` showed the killed run as ``started`` forever. Here:

- a real ``python -m memengine.engine.cli forget-thread`` subprocess is SIGKILLed after the log was purged (its
  ``forget_runs`` row says so) and before the scrub; ``operations`` shows it ``interrupted``; the re-run resumes and
  finishes: nothing of the thread is left in any table or stream, the run row keeps counts only, ``verify`` passes;
- in-process, a crash after each step (and before the first) of a thread and of a user forgetting: the re-run finishes.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import forget as fg
from memengine.engine.ops import operations
from memengine.engine.ops import rebuild as rb
from memengine.events import TurnRecorded
from tests.conftest import wait_until
from tests.integration.ops.test_forget import _events, _ingest, _streams_containing, _tables_containing
from tests.integration.procs import engine_env

pytestmark = pytest.mark.integration

NEEDLE = "the-dead-letter-needle-17"
PAD = "scratchpad-needle-17"


async def _prepare(engine: Engine, n: int) -> tuple[list, list[str]]:
    """Ingest ``n`` facts of LoCoMo 26 (thread locomo-26) and 30 of LoCoMo 30, a dead letter and a working-memory
    key on locomo-26. Returns the forgotten facts and the needles that must be gone afterwards."""
    gone, kept = _events("26", n), _events("30", 30)
    await _ingest(engine, gone + kept)
    bad = msgspec.json.encode({"type": "TurnRecorded", "v": 2, "tenant_id": "default", "thread_id": "locomo-26",
                               "secret": NEEDLE})
    ack = await engine.js.publish(engine.subjects.fact("default", "locomo-26", "TurnRecorded"), bad,
                                  stream=engine.streams.facts)
    await engine.client().scratchpad_put("locomo-26", "focus", PAD)
    assert PAD in json.dumps(msgspec.to_builtins(await engine.client().scratchpad("locomo-26")))

    async def dead_lettered() -> bool:  # by the core and the recall projector: every facts consumer past it
        low = await engine.pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints WHERE stream = $1",
                                         engine.streams.facts)
        return (low or 0) >= ack.seq
    await wait_until(dead_lettered, timeout=60)
    assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") >= 1
    turns = [e for e in gone if isinstance(e, TurnRecorded)]
    texts = [b.text for e in turns[3:40:4] for b in e.content if len(getattr(b, "text", "")) > 25]
    needles = texts + [str(e.event_id) for e in turns[:20]] + [NEEDLE]
    assert await _tables_containing(engine, texts[:1]) and await _streams_containing(engine, [NEEDLE])
    return gone, needles


async def _assert_forgotten(engine: Engine, gone: list, needles: list[str]) -> None:
    assert await _tables_containing(engine, needles) == []
    assert await _streams_containing(engine, needles) == []
    ids = [e.event_id for e in gone]
    assert await engine.pool.fetchval("SELECT count(*) FROM applied_events WHERE event_id = ANY($1::uuid[])",
                                      ids) == 0
    assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters WHERE subject LIKE '%.locomo-26.%'") == 0
    assert PAD not in json.dumps(msgspec.to_builtins(await engine.client().scratchpad("locomo-26")))
    run = await engine.pool.fetchrow("SELECT * FROM forget_runs WHERE scope_id = 'locomo-26'")
    assert run["finished_at"] is not None and list(run["steps"]) == list(fg.STEPS)
    assert not run["event_ids"] and not run["emb_shas"]  # ids and hashes go once the run is done
    assert (await rb.verify(engine)).ok


async def test_forget_thread_killed_then_resumed(engine: Engine, tmp_path: Path) -> None:
    gone, needles = await _prepare(engine, 120)
    env = engine_env(engine.settings, MEMENGINE_HOME=str(tmp_path))
    cmd = [sys.executable, "-m", "memengine.engine.cli", "forget-thread", "locomo-26", "--yes", "--json"]
    log = tmp_path / "forget.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh)
    try:
        # kill it once the log is purged, while it rebuilds (before the scrub)
        async def purged() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            steps = await engine.pool.fetchval("SELECT steps FROM forget_runs WHERE scope_id = 'locomo-26'")
            return bool(steps) and "purged" in steps
        await wait_until(purged, timeout=180, interval=0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    steps = await engine.pool.fetchval("SELECT steps FROM forget_runs WHERE scope_id = 'locomo-26'")
    assert "scrubbed" not in steps
    # what the probe found: the forgotten ids and the dead letter's payload are still there
    assert await engine.pool.fetchval("SELECT count(*) FROM applied_events WHERE event_id = ANY($1::uuid[])",
                                      [e.event_id for e in gone]) > 0

    # operations: the killed run is not "started" forever: its process is gone, so it reads as interrupted
    async def interrupted() -> bool:
        [op] = await operations.recent(engine.pool, kind="forget-thread")
        return op["status"] == "interrupted"
    await wait_until(interrupted, timeout=30)
    [op] = await operations.recent(engine.pool, kind="forget-thread")
    assert op["owner_pid"] == proc.pid and op["owner_host"]

    # the re-run resumes (it used to answer "no thread", exit 1) and finishes every step
    again = await asyncio.to_thread(subprocess.run, cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                    text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    report = json.loads(again.stdout)
    assert report["facts_removed"] >= len(gone) and report["dead_letters_removed"] >= 1
    assert report["kv_keys_removed"] >= 1
    await _assert_forgotten(engine, gone, needles)
    ops = await operations.recent(engine.pool, kind="forget-thread")
    assert [o["status"] for o in ops] == ["ok", "interrupted"]
    assert ops[0]["detail"]["resumed_run"] and "purged" in ops[0]["detail"]["steps_done_before"]

    # done means done: a third run has nothing to forget
    third = await asyncio.to_thread(subprocess.run, cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                    text=True, timeout=300)
    assert third.returncode == 1 and json.loads(third.stdout)["error"]["code"] == "unknown_thread"


class _Crash(BaseException):
    """Stands for the process dying (not an ``Exception``: nothing may catch it on the way out)."""


@pytest.mark.parametrize("after", ["created", *fg.STEPS[:-1]])
async def test_forget_thread_resumes_after_a_crash_at_any_step(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                                               after: str) -> None:
    gone, needles = await _prepare(engine, 40)
    real_done, real_publish = fg._done, fg._publish_tombstone

    async def crash_publish(engine_: Engine, run: fg._Run) -> int:
        raise _Crash()

    async def crash_after(engine_: Engine, run: fg._Run, step: str) -> None:
        await real_done(engine_, run, step)
        if step == after:
            raise _Crash()

    if after == "created":
        monkeypatch.setattr(fg, "_publish_tombstone", crash_publish)
    else:
        monkeypatch.setattr(fg, "_done", crash_after)
    with pytest.raises(_Crash):
        await fg.forget_thread(engine, "default", "locomo-26")
    monkeypatch.setattr(fg, "_done", real_done)
    monkeypatch.setattr(fg, "_publish_tombstone", real_publish)

    report = await fg.forget_thread(engine, "default", "locomo-26")
    assert report.facts_removed >= len(gone) and report.tombstone_seq > 0
    await _assert_forgotten(engine, gone, needles)
    # one deletion fact, however many attempts
    tombs = await engine.pool.fetchval("SELECT count(*) FROM tombstones WHERE scope_id = 'locomo-26'")
    assert tombs == 1
    with pytest.raises(fg.NothingToForget):
        await fg.forget_thread(engine, "default", "locomo-26")


async def test_forget_user_resumes_after_a_crash(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    evs = _events("26", 60)
    await _ingest(engine, evs)
    caroline = [e for e in evs if isinstance(e, TurnRecorded) and e.user_id == "Caroline"]
    texts = [b.text for e in caroline[2:30:4] for b in e.content if len(getattr(b, "text", "")) > 25]
    needles = texts + [str(e.event_id) for e in caroline[:10]]
    real_done = fg._done

    async def crash_after_purge(engine_: Engine, run: fg._Run, step: str) -> None:
        await real_done(engine_, run, step)
        if step == "purged":
            raise _Crash()

    monkeypatch.setattr(fg, "_done", crash_after_purge)
    with pytest.raises(_Crash):
        await fg.forget_user(engine, "default", "Caroline")
    monkeypatch.setattr(fg, "_done", real_done)
    report = await fg.forget_user(engine, "default", "Caroline")
    assert report.facts_removed == len(caroline)
    assert await _tables_containing(engine, needles) == []
    assert await _streams_containing(engine, needles) == []
    assert await engine.pool.fetchval("SELECT count(*) FROM applied_events WHERE event_id = ANY($1::uuid[])",
                                      [e.event_id for e in caroline]) == 0
    assert (await rb.verify(engine)).ok
    with pytest.raises(fg.NothingToForget):
        await fg.forget_user(engine, "default", "Caroline")


async def test_a_forgetting_in_progress_is_busy_not_resumed_twice(engine: Engine) -> None:
    from memengine.engine.adapters.locks import AdvisoryLock

    other = AdvisoryLock(engine.pool, "memengine-forget:default:thread:x")  # as another process would hold it
    assert await other.acquire()
    try:
        with pytest.raises(fg.ForgetBusy):
            await fg.forget_thread(engine, "default", "x")
    finally:
        await other.release()
