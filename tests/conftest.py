"""Shared fixtures.

Integration tests run against real servers: the embedded NATS JetStream and PostgreSQL + pgvector started once per
test run, or external ones given by ``NATS_URL`` / ``DATABASE_URL`` (the same assertions either way, like
FastStream's shared broker suites). Each test gets its own database and its own subject root and stream prefix, so
tests never see each other's events or rows.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import asyncpg
import hypothesis
import nats
import pytest

from memengine.engine.adapters.embedded import EmbeddedNats, EmbeddedPostgres
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan

LOCOMO_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
TEMPLATE_DB = "memengine_test_template"

# Speed is measured in bench/, never asserted in tests: hypothesis's default 200 ms deadline per example is a timing
# assertion, and on a loaded 2-core machine a first example that loads a dictionary or a model overran it (a flaky
# test_crosslingual in session 16). In CI the examples are derived from each test's name (``derandomize``), so a
# landing is judged on the same draws every time; a local run keeps exploring new ones.
hypothesis.settings.register_profile("memengine", deadline=None)
hypothesis.settings.register_profile("memengine-ci", deadline=None, derandomize=True, print_blob=True)
hypothesis.settings.load_profile("memengine-ci" if os.environ.get("CI") else "memengine")


@dataclass
class ServerInfo:
    nats_url: str
    admin_dsn: str  # maintenance database, used to create one database per test


def dsn_with_database(dsn: str, database: str) -> str:
    """``dsn`` pointing at ``database`` instead (works for TCP and Unix-socket URIs)."""
    u = urlparse(dsn)
    return urlunparse(u._replace(path="/" + database))


#: Seconds into a test after which every asyncio task's stack is written to stderr (shown with the test's failure):
#: a test stuck awaiting something leaves an idle event loop, whose thread stacks (faulthandler) say nothing.
STACKS_AFTER_S = float(os.environ.get("MEMENGINE_TEST_STACKS_AFTER", "240"))


@pytest.fixture(autouse=True)
async def _task_stacks_when_stuck() -> AsyncIterator[None]:
    from memengine.engine.adapters.tasks import task_stacks

    def dump() -> None:
        print(f"\n--- asyncio tasks after {STACKS_AFTER_S:.0f} s ---", *task_stacks(limit=25), sep="\n",
              file=sys.stderr, flush=True)

    handle = asyncio.get_running_loop().call_later(STACKS_AFTER_S, dump)
    yield
    handle.cancel()


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerInfo]:
    home = Path(os.environ.get("MEMENGINE_TEST_HOME") or tmp_path_factory.mktemp("memengine-home"))
    started: list[EmbeddedNats | EmbeddedPostgres] = []
    nats_url = os.environ.get("NATS_URL")
    admin = os.environ.get("DATABASE_URL")
    try:
        if not nats_url:
            n = EmbeddedNats(home)
            nats_url = n.start()
            started.append(n)
        if not admin:
            pg = EmbeddedPostgres(home)
            pg.start()
            started.append(pg)
            admin = pg.admin_dsn()
        yield ServerInfo(nats_url=nats_url, admin_dsn=admin)
    finally:
        for s in reversed(started):
            s.stop()


@pytest.fixture(scope="session", autouse=True)
def onnx_query_model() -> None:
    """Export MiniLM's ONNX query graph once per machine before any test (8 s the first time, then a file in the
    user cache): an engine serves recall through torch while the export runs, which on a loaded CI machine could
    push a first recall past the client's timeout."""
    from memengine.engine.embedding.models import _onnx_query_session, minilm_available

    if minilm_available():
        _onnx_query_session()


@pytest.fixture(scope="session")
async def template_db(servers: ServerInfo) -> str:
    """A migrated database used as the template of every test database (CREATE DATABASE ... TEMPLATE is ~10 ms)."""
    from memengine.engine.adapters import postgres as db

    conn = await asyncpg.connect(servers.admin_dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{TEMPLATE_DB}"')
    finally:
        await conn.close()
    pool = await db.create_pool(dsn_with_database(servers.admin_dsn, TEMPLATE_DB))
    await pool.close()
    return TEMPLATE_DB


@pytest.fixture
async def make_db(servers: ServerInfo, template_db: str) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """Factory of new migrated databases for this test (DSNs), all dropped afterwards."""
    names: list[str] = []

    async def make() -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        conn = await asyncpg.connect(servers.admin_dsn)
        try:
            await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
        finally:
            await conn.close()
        names.append(name)
        return dsn_with_database(servers.admin_dsn, name)

    yield make
    conn = await asyncpg.connect(servers.admin_dsn)
    try:
        for name in names:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture
async def fresh_db(make_db: Callable[[], Awaitable[str]]) -> str:
    """DSN of a new database for this test, dropped afterwards."""
    return await make_db()


@pytest.fixture
async def settings(servers: ServerInfo, fresh_db: str, tmp_path: Path) -> AsyncIterator[Settings]:
    """Settings isolated for one test: own database, own subject root and stream prefix."""
    ns = "t" + uuid.uuid4().hex[:10]
    s = Settings.from_env(env={}, nats_url=servers.nats_url, database_url=fresh_db, subject_root=ns,
                          stream_prefix=ns.upper(), home=str(tmp_path), ryw_timeout=5.0,
                          embedder="none")  # recall tests pass their own embedder to lifespan()
    yield s
    nc = await nats.connect(servers.nats_url)
    try:
        js = nc.jetstream()
        for suffix in ("FACTS", "DERIVED", "DLQ", "SERVED"):
            try:
                await js.delete_stream(f"{s.stream_prefix}_{suffix}")
            except Exception:  # noqa: BLE001 - the test may not have created it
                pass
    finally:
        await nc.close()


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[Engine]:
    """The whole engine (projector + query handler) on the test's namespace."""
    async with lifespan(settings) as e:
        yield e
    assert not e.stalled, f"teardown steps overran: {e.stalled} (the log line has every task's stack)"


@pytest.fixture
async def kv_cleanup(settings: Settings) -> AsyncIterator[None]:
    """Deletes the test's working-memory KV bucket afterwards (``engine.derive.working_memory``)."""
    yield
    from memengine.engine.derive import working_memory

    nc = await nats.connect(settings.nats_url)
    try:
        try:
            await nc.jetstream().delete_key_value(working_memory.bucket_name(settings.stream_prefix))
        except Exception:  # noqa: BLE001 - the test may not have created it
            pass
    finally:
        await nc.close()


async def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02):  # type: ignore[no-untyped-def]
    """Poll an async predicate until it returns a truthy value; fail the test after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)
