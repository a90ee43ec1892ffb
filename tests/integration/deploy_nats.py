"""Boot the NATS configurations shipped in deploy/nats/ on loopback, for the security and deploy tests.

The shipped files are copied verbatim into a scratch directory (``include`` paths are relative to the including
file) with one edit, the JetStream ``store_dir`` (``/data/jetstream`` in the files); ports are given on the command
line (``-a 127.0.0.1 -p P -m M``), which the server lets override ``listen`` / ``http``.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from memengine.engine.adapters.embedded import nats_server_binary

DEPLOY_NATS = Path(__file__).resolve().parents[2] / "deploy" / "nats"

#: Passwords for the variables accounts.conf names (the server refuses to start if one is missing).
PASSWORDS = {
    "MEMENGINE_NATS_PASSWORD": "engine-pw-7c1e",
    "AGENT_ACME_NATS_PASSWORD": "acme-pw-52ab",
    "AGENT_GLOBEX_NATS_PASSWORD": "globex-pw-9d04",
    "NATS_SYS_PASSWORD": "sys-pw-e6f3",
}


#: ports handed out by ``free_port`` in this process: none is handed out twice (a node's cluster port is chosen before
#: the node binds it, and the next ``free_port`` would otherwise find it free)
_HANDED_OUT: set[int] = set()
#: below Linux's ephemeral range (32768-60999, ``ip_local_port_range``), where every outgoing connection (Postgres,
#: NATS clients) takes its local port: a port found free there can be taken by a connection before the server binds
#: it, which failed a CI rehearsal once ("nats-server exited 1", the cluster test)
_PORTS = range(20000, 32000)


def free_port() -> int:
    """A loopback TCP port that is free now, below the ephemeral range and never handed out before in this process."""
    rng = random.Random()
    for _ in range(200):
        port = rng.choice(_PORTS)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError("no free loopback port in 20000-31999")


@dataclass
class NatsProc:
    proc: subprocess.Popen[bytes]
    port: int
    monitor_port: int
    log: Path

    def url(self, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user else ""
        return f"nats://{auth}127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def stage(conf: str, workdir: Path, store: Path) -> Path:
    """Copy deploy/nats/* into ``workdir`` with ``store_dir`` pointing at ``store``; returns the copy of ``conf``."""
    workdir.mkdir(parents=True, exist_ok=True)
    for f in DEPLOY_NATS.glob("*.conf"):
        shutil.copy(f, workdir / f.name)
    target = workdir / conf
    text = target.read_text()
    assert "/data/jetstream" in text, f"{conf} no longer stores under /data/jetstream; update this helper"
    target.write_text(text.replace("/data/jetstream", str(store)))
    return target


def start(conf: Path, env: dict[str, str], *, extra: list[str] | None = None, port: int | None = None,
          timeout: float = 10.0, health: str = "/healthz") -> NatsProc:
    """Start ``nats-server -c conf`` on loopback and wait until ``health`` answers 200 (a cluster node: pass
    ``/healthz?js-enabled-only=true``, since full health waits for the other nodes)."""
    port = port or free_port()
    mport = free_port()
    log = conf.with_suffix(f".{port}.log")
    cmd = [nats_server_binary(), "-c", str(conf), "-a", "127.0.0.1", "-p", str(port), "-m", str(mport),
           "-l", str(log), *(extra or [])]
    errfile = conf.with_suffix(f".{port}.stderr")
    with open(errfile, "wb") as err:  # config errors are printed before the log file is opened
        proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            logged = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"nats-server exited {proc.returncode}: {errfile.read_text()[-2000:]}{logged}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}{health}", timeout=1) as r:
                if r.status == 200:
                    return NatsProc(proc, port, mport, log)
        except OSError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"nats-server did not become healthy in {timeout}s; see {log}")
