"""The embedded PostgreSQL applies its tuning (issue #13 item 4): a server this process starts is restarted once
with the settings written by ALTER SYSTEM; the next start finds them in place and does not restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

PROBE = """
import asyncio, json, sys
from pathlib import Path
import asyncpg
from memengine.engine.adapters.embedded import EmbeddedPostgres

pg = EmbeddedPostgres(Path(sys.argv[1]), json.loads(sys.argv[2]))
dsn = pg.start()
async def show():
    c = await asyncpg.connect(dsn)
    try:
        print(await c.fetchval("SHOW shared_buffers"), await c.fetchval("SHOW io_method"),
              await c.fetchval("SELECT count(*) FROM pg_settings WHERE pending_restart"))
    finally:
        await c.close()
asyncio.run(show())
pg.stop()
"""


TUNING = {"shared_buffers": "160MB", "io_method": "sync"}


def _probe(home: Path, tuning: dict[str, str] = TUNING) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(home), json.dumps(tuning)], capture_output=True,
                         text=True, timeout=120, check=True)
    return out.stdout.strip().splitlines()[-1].split()  # the last line: the probe's (logs come before it)


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="an external server is not tuned by memengine")
def test_a_new_server_runs_with_its_tuning_and_keeps_it(tmp_path: Path) -> None:
    # PostgreSQL 18's defaults are 128MB and worker: both must change on the first start, without a pending restart
    assert _probe(tmp_path) == ["160MB", "sync", "0"]
    assert (tmp_path / "pg" / "postgresql.auto.conf").read_text().count("shared_buffers") == 1
    assert _probe(tmp_path) == ["160MB", "sync", "0"]


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="an external server is not tuned by memengine")
def test_a_tuning_the_server_cannot_start_with_falls_back_to_the_defaults(tmp_path: Path) -> None:
    # a library that does not exist: ALTER SYSTEM takes it, the server refuses to start with it (as it would refuse
    # shared memory it cannot map); every tuned setting goes, the server runs with PostgreSQL's defaults
    bad = {**TUNING, "shared_preload_libraries": "memengine_no_such_library"}
    assert _probe(tmp_path, bad) == ["128MB", "worker", "0"]
    conf = (tmp_path / "pg" / "postgresql.auto.conf").read_text()
    assert "shared_buffers" not in conf and "memengine_no_such_library" not in conf
