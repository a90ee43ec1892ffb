"""``memengine ingest`` and a dead ``memengine up`` or a stopped PostgreSQL (issue #17 defect 11), on real servers.

- ``up`` holds the projector locks when ingest starts, then dies: ingest takes the fold over as soon as PostgreSQL
  releases the dead session's locks (it used to wait up to 600 s), and exits 0 with the projections current;
- PostgreSQL stops while ingest waits for the projections: one line ``error unavailable: ...``, exit 75, no
  traceback; the events are in the log, and a re-run once PostgreSQL is back publishes nothing new and folds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import msgspec
import nats
import pytest

from memengine.engine.adapters.locks import lock_key
from memengine.engine.adapters.settings import Settings
from memengine.engine.cli.options import EXIT_UNAVAILABLE
from memengine.engine.ops.ingest import read_locomo
from tests.conftest import LOCOMO_DIR, wait_until
from tests.integration.procs import engine_env
from tests.integration.runtime.test_faults import CrashablePostgres

pytestmark = pytest.mark.integration

LOCOMO = LOCOMO_DIR / "26.json"
#: the locks a running `memengine up` holds (engine/bootstrap.py projector names, engine/derive/enricher.py NAME)
UP_LOCKS = ("core", "recall", "derived", "enricher")


async def _hold_up_locks(dsn: str) -> asyncpg.Connection:
    """A session holding every lock of a live ``memengine up``; closing it is ``up`` dying."""
    conn = await asyncpg.connect(dsn)
    for name in UP_LOCKS:
        assert await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(name))
    return conn


async def _facts_in_log(settings: Settings) -> int:
    nc = await nats.connect(settings.nats_url)
    try:
        info = await nc.jetstream().stream_info(f"{settings.stream_prefix}_FACTS")
        return info.state.messages
    except Exception:  # noqa: BLE001 - not created yet
        return 0
    finally:
        await nc.close()


def _ingest(settings: Settings, tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memengine.engine.cli", "ingest", str(LOCOMO), "--json"],
                            env=engine_env(settings, MEMENGINE_HOME=str(tmp_path), **env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def n_events() -> int:
    if not LOCOMO.exists():
        pytest.skip("LoCoMo dev data missing")
    return len(read_locomo(LOCOMO, "default"))


async def test_ingest_takes_over_from_a_dead_up(settings: Settings, tmp_path: Path, n_events: int) -> None:
    # the schema first (as `up` would have made it), then "up" takes its locks
    await _run_cli(settings, tmp_path, "status", "--json")
    up = await _hold_up_locks(settings.database_url or "")
    proc = _ingest(settings, tmp_path)
    try:
        # everything is published and ingest waits for "up" to fold it
        await wait_until(lambda: _published(settings, n_events, proc), timeout=120, interval=0.1)
        await up.close()
        out, errs = await asyncio.to_thread(proc.communicate, timeout=180)  # it used to wait 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, errs[-3000:]
    summary = json.loads(out)
    assert summary["published"] == n_events and summary["applied_seq"] >= summary["last_seq"]
    conn = await asyncpg.connect(settings.database_url)
    try:
        cps = {r["projection"]: r["last_seq"] for r in await conn.fetch(
            "SELECT projection, last_seq FROM projection_checkpoints")}
        turns = await conn.fetchval("SELECT count(*) FROM messages")
    finally:
        await conn.close()
    assert cps["messages"] >= summary["last_seq"] and cps["vectors"] >= summary["last_seq"]
    assert cps["enricher"] >= summary["last_seq"]  # derivation ran here too
    assert turns > 0


async def _published(settings: Settings, n: int, proc: subprocess.Popen[str]) -> bool:
    assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else ""
    return await _facts_in_log(settings) >= n


async def _run_cli(settings: Settings, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    res = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "memengine.engine.cli", *args],
                                  env=engine_env(settings, MEMENGINE_HOME=str(tmp_path)), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


async def test_ingest_when_postgres_stops(settings: Settings, tmp_path: Path, n_events: int) -> None:
    pg = CrashablePostgres(tmp_path / "pg-home")
    dsn = await asyncio.to_thread(pg.start)
    try:
        settings = msgspec.structs.replace(settings, database_url=dsn)
        await _run_cli(settings, tmp_path, "status", "--json")  # migrations
        up = await _hold_up_locks(dsn)  # a live `up` folds: ingest waits for it, reading checkpoints
        proc = _ingest(settings, tmp_path)
        try:
            await wait_until(lambda: _published(settings, n_events, proc), timeout=120, interval=0.1)
            await asyncio.to_thread(pg.crash)
            out, errs = await asyncio.to_thread(proc.communicate, timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            up.terminate()  # the server is gone with its session
        assert proc.returncode == EXIT_UNAVAILABLE, errs[-3000:]
        assert "Traceback" not in errs, errs[-6000:]
        lines = [ln for ln in errs.splitlines() if ln.strip() and not ln.lstrip().startswith("20")]  # log lines
        assert lines and lines[-1].startswith("error unavailable: "), errs[-3000:]
        assert f"{n_events} events are stored in the log" in lines[-1]
        assert out == ""
        # no data lost: the events are in the log, and a re-run once PostgreSQL is back folds them
        assert await _facts_in_log(settings) == n_events
        await asyncio.to_thread(pg.restart)
        again = _ingest(settings, tmp_path)
        out, errs = await asyncio.to_thread(again.communicate, timeout=300)
        assert again.returncode == 0, errs[-3000:]
        summary = json.loads(out)
        assert summary["published"] == 0 and summary["duplicates"] == n_events
        assert summary["applied_seq"] >= summary["last_seq"]
    finally:
        with contextlib.suppress(Exception):  # already down when the test failed before the restart
            await asyncio.to_thread(pg.stop)
