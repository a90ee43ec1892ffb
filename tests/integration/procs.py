"""Helpers of the scale-out and fault tests (issue #6): memengine processes, dedicated servers, a conversation with
per-thread order that matters, and a publisher that retries like an agent should.

Everything here starts real processes (``python -m memengine.engine.cli up``, ``nats-server``, ``postgres``); nothing is
mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nats.errors
from nats.js import JetStreamContext

from memengine.engine.adapters.embedded import nats_server_binary
from memengine.engine.adapters.settings import Settings
from memengine.events import (
    SessionEnded,
    TextBlock,
    ThinkingBlock,
    ThreadLabelled,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    encode,
    msg_id,
    stable_event_id,
)
from memengine.events.subjects import Subjects
from tests.integration.deploy_nats import free_port

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def conversation(n: int, *, threads: int = 24, tag: str = "scale", tenant: str = "default") -> list[Any]:
    """``n`` facts over ``threads`` threads in which per-thread order shows in the read models: turns (user,
    assistant with a tool call, tool result) in sessions of 9, a ``SessionEnded`` after each session, and a
    ``ThreadLabelled`` every 50 events (the last label of a thread wins). Deterministic ids (``stable_event_id``)."""
    out: list[Any] = []
    for i in range(n):
        th = f"th{i % threads}"
        k = i // threads  # position within the thread
        common = dict(event_id=stable_event_id(tag, str(i)), tenant_id=tenant, thread_id=th,
                      occurred_at=T0 + timedelta(seconds=i), session_id=f"s{k // 10}", user_id=f"u{i % 3}")
        if i % 50 == 49:
            out.append(ThreadLabelled(label=f"label {i}", **common))
        elif k % 10 == 9:
            out.append(SessionEnded(reason="done", **common))
        elif k % 3 == 0:
            out.append(TurnRecorded(role="user", content=[TextBlock(text=f"user {i} says " + "lorem " * (i % 13))],
                                    **common))
        elif k % 3 == 1:
            out.append(TurnRecorded(role="assistant", content=[ThinkingBlock(thinking="hmm " * (i % 7)),
                                                               ToolUseBlock(id=f"c{th}-{k}", name="t",
                                                                            input={"i": i})], **common))
        else:
            out.append(TurnRecorded(role="tool", content=[ToolResultBlock(tool_use_id=f"c{th}-{k - 1}",
                                                                          content="out " * (i % 40))], **common))
    return out




def engine_env(settings: Settings, **extra: str) -> dict[str, str]:
    """Environment of a ``memengine`` subprocess on the test's servers and namespace."""
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home, "MEMENGINE_EMBEDDER": "none", "MEMENGINE_LOG_LEVEL": "info",
           "MEMENGINE_PARTITIONS": str(settings.partitions),
           "MEMENGINE_DUPLICATE_WINDOW": str(settings.duplicate_window), "PYTHONUNBUFFERED": "1"}
    env.update(extra)
    return env


def memengine_up(settings: Settings, log: Path, *args: str, **env: str) -> subprocess.Popen[bytes]:
    """``python -m memengine.engine.cli up --json ARGS`` as a subprocess writing to ``log``."""
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "memengine.engine.cli", "up", "--json", *args],
                                env=engine_env(settings, **env), stdin=subprocess.DEVNULL, stdout=fh, stderr=fh)


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 20) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def publish_retrying(js: JetStreamContext, subjects: Subjects, events: Sequence[Any], *, rate: float = 0,
                           stats: dict[str, Any] | None = None, timeout: float = 2.0) -> dict[str, Any]:
    """Publish ``events`` one by one (at most ``rate``/s when > 0), each with ``Nats-Msg-Id`` = ``events.msg_id``, and
    retry an event until the server acknowledges it: what an agent does when NATS restarts or a cluster node dies
    (the retry of a publish that was stored but whose ack was lost is dropped by the server's dedup window).

    Returns (and keeps updating ``stats``) ``published`` (new), ``duplicates`` (acks flagged duplicate),
    ``retries``, ``last_seq``, ``seqs`` (event id -> stream sequence)."""
    st = stats if stats is not None else {}
    st.update(published=0, duplicates=0, retries=0, last_seq=0, seqs={}, sent=0)
    t0 = time.monotonic()
    for i, ev in enumerate(events):
        if rate > 0:
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        subject = subjects.fact(ev.tenant_id, ev.thread_id, type(ev).__name__)
        data = encode(ev)
        while True:
            try:
                ack = await js.publish(subject, data, headers={"Nats-Msg-Id": msg_id(ev.tenant_id, ev.event_id, data)},
                                       timeout=timeout)
                break
            except (TimeoutError, nats.errors.Error):
                # NATS down, a cluster electing a leader, a reconnect in progress: same event, same id, again.
                st["retries"] += 1
                await asyncio.sleep(0.05)
        st["duplicates" if ack.duplicate else "published"] += 1
        st["last_seq"] = max(st["last_seq"], ack.seq)
        st["seqs"][str(ev.event_id)] = ack.seq
        st["sent"] = i + 1
    return st


class NatsNode:
    """One ``nats-server -js`` process on fixed loopback ports (so that clients reconnect to it after a restart),
    optionally a member of a cluster (``routes``)."""

    def __init__(self, store: Path, *, name: str, port: int | None = None, cluster_port: int | None = None,
                 routes: Sequence[int] = (), cluster_name: str = "memc") -> None:
        self.store = store
        self.name = name
        self.port = port or free_port()
        self.cluster_port = cluster_port
        self.routes = list(routes)
        self.cluster_name = cluster_name
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = store / f"{name}.log"

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        cmd = [nats_server_binary(), "-js", "-sd", str(self.store / self.name), "-a", "127.0.0.1",
               "-p", str(self.port), "-n", self.name, "-l", str(self.log)]
        if self.cluster_port:
            cmd += ["--cluster_name", self.cluster_name, "--cluster", f"nats://127.0.0.1:{self.cluster_port}",
                    "--routes", ",".join(f"nats://127.0.0.1:{p}" for p in self.routes)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server {self.name} exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.02)
        raise RuntimeError(f"nats-server {self.name} did not listen on {self.port}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.proc = None


def hello(log: Path) -> dict[str, Any] | None:
    """The ``{"event": "up", ...}`` line a ``memengine up --json`` printed, if any yet."""
    with contextlib.suppress(OSError):
        for line in log.read_text().splitlines():
            if line.startswith('{"event":"up"'):
                with contextlib.suppress(ValueError):
                    return json.loads(line)
    return None
