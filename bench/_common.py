"""Shared set-up for the benchmarks: fresh embedded servers under a temporary home, synthetic turns."""

from __future__ import annotations

import asyncio
import atexit
import os
import platform
import shutil
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta

from memengine.engine.adapters.settings import Settings
from memengine.events import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, TurnRecorded, stable_event_id

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LOREM = ("memengine folds every turn into read models; the agent asks for context within its budget and "
         "gets the summary, the condensed middle and the verbatim recent turns. ")


def bench_settings(**overrides: object) -> Settings:
    """Settings on a fresh temporary home (embedded servers), unless NATS_URL / DATABASE_URL are set."""
    home = tempfile.mkdtemp(prefix="memengine-bench-")
    # a 1M-row load leaves gigabytes under the home: removed when the bench exits (after the lifespan stopped the
    # servers), unless MEMENGINE_BENCH_KEEP=1 keeps it for a look afterwards
    if os.environ.get("MEMENGINE_BENCH_KEEP") != "1":
        atexit.register(shutil.rmtree, home, True)
    ns = "b" + uuid.uuid4().hex[:8]
    # No background embedding unless a bench asks for it (recall.py): it would compete for the CPU being measured.
    overrides.setdefault("embedder", "none")
    # the benches drive one tenant back to back: the per-tenant rate limit (on by default since issue #17) would
    # measure the limiter, not the engine
    overrides.setdefault("rpc_rate", 0)
    return Settings.from_env(home=home, subject_root=ns, stream_prefix=ns.upper(), **overrides)


def synthetic_turns(n: int, *, threads: int, tenant: str = "bench", start: int = 0) -> list[TurnRecorded]:
    """``n`` turns over ``threads`` threads: user text, assistant thinking + text or tool call, tool output."""
    out = []
    for i in range(start, start + n):
        k = (i // threads) % 4  # position within its thread: each thread is a coherent conversation
        if k == 0:
            role, content = "user", [TextBlock(text=f"Question {i}: " + LOREM[: 60 + i % 120])]
        elif k == 1:
            role, content = "assistant", [ThinkingBlock(thinking=LOREM * 2), TextBlock(text=LOREM[: 80 + i % 60])]
        elif k == 2:
            role, content = "assistant", [ToolUseBlock(id=f"c{i}", name="run_sql", input={"q": f"select {i}"})]
        else:
            role, content = "tool", [ToolResultBlock(tool_use_id=f"c{i - threads}", content=LOREM * 3)]
        out.append(TurnRecorded(event_id=stable_event_id(tenant, "bench", str(i)), tenant_id=tenant,
                                thread_id=f"thread-{i % threads}", occurred_at=T0 + timedelta(milliseconds=i),
                                role=role, content=content, user_id="u1"))
    return out


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def machine() -> dict[str, object]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
            "p99": round(percentile(values, 99), 3), "mean": round(statistics.fmean(values), 3)}


async def raw_publish(js, payloads: list[tuple[str, bytes, str]], subject: str) -> float:  # type: ignore[no-untyped-def]
    """The raw yardstick of the ingest benches: plain nats-py ``publish_async`` of ``(subject suffix, bytes,
    Nats-Msg-Id)`` under ``subject``, 512 acks in flight, every ack awaited; messages/s. The stream must exist."""
    t0 = time.perf_counter()
    pending = []
    for subj, data, dedup_id in payloads:
        pending.append(await js.publish_async(subject + "." + subj, data, headers={"Nats-Msg-Id": dedup_id}))
        if len(pending) > 512:
            await pending.pop(0)
    for f in pending:
        await f
    return len(payloads) / (time.perf_counter() - t0)


async def raw_replay_rate(engine, n: int, *, stream: str | None = None,  # type: ignore[no-untyped-def]
                          subject: str | None = None) -> float:
    """The raw yardstick of the fold benches: a plain nats-py ordered consumer replaying the facts stream (or
    ``stream`` under ``subject``) from seq 1, messages received and nothing decoded; messages/s until ``n``
    arrived."""
    got = 0
    done = asyncio.Event()

    async def cb(msg) -> None:  # type: ignore[no-untyped-def]
        nonlocal got
        got += 1
        if got >= n:
            done.set()

    t0 = time.perf_counter()
    sub = await engine.js.subscribe(subject or engine.subjects.all_facts, stream=stream or engine.streams.facts,
                                    ordered_consumer=True, cb=cb, pending_msgs_limit=-1, pending_bytes_limit=-1)
    await asyncio.wait_for(done.wait(), timeout=600)
    rate = got / (time.perf_counter() - t0)
    await sub.unsubscribe()
    return rate


async def raw_request_reply_ms(nc, requests: int) -> list[float]:  # type: ignore[no-untyped-def]
    """The raw yardstick of the request/reply benches: ``requests`` plain core-NATS requests, one at a time, to an
    echo responder on the same connection, with a context-sized payload; milliseconds each."""

    async def respond(m):  # type: ignore[no-untyped-def]
        await m.respond(m.data)

    echo = await nc.subscribe("bench.echo", cb=respond)
    raw = []
    for _ in range(requests):
        t = time.perf_counter()
        await nc.request("bench.echo", b'{"tenant":"bench","thread":"thread-7"}', timeout=5)
        raw.append((time.perf_counter() - t) * 1000)
    await echo.unsubscribe()
    return raw
