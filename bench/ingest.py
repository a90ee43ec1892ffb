"""Ingest throughput: turns published -> projected into ``messages`` (turns/s), with the raw yardstick.

Yardstick, same run, same servers: plain nats-py ``publish_async`` of the same payloads to a bare JetStream stream
(acks awaited, nothing else). memengine: the same number of turns published through the same pipeline the CLI uses
(``engine.ops.publish.publish_all``) while the core projector folds them (query handler up, enricher off unless
``--enricher``); the clock stops when the ``messages`` checkpoint reaches the last sequence. With ``--enricher`` it
also reports the offline derivation throughput (turns/s until the enricher has processed the last turn).

``--publisher process`` (the default) publishes from a separate process, both the yardstick and memengine's
pipeline, as agents do in a deployment: the engine's projectors never share a process (or a GIL) with the agents
publishing to them. ``--publisher inline`` publishes from the projectors' own process (the figure of the earlier
runs in bench/RESULTS.md: one Python process does everything, on one core).

``cpu`` (process mode): CPU seconds per process group and per turn over each phase (``bench/_cpu.py`` ``per_unit``): on
2 cores the publisher, nats-server, PostgreSQL and the engine share the cores, so their sum per turn bounds the rate.
``--core-only`` stops the recall rows' projector (diagnostic: the core fold's own cost).

    python bench/ingest.py --turns 50000 [--publisher process|inline] [--enricher] [--core-only] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from _common import bench_settings, machine, raw_publish, synthetic_turns
from _cpu import CpuSplit, per_unit
from nats.js.api import StreamConfig

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.publish import publish_all
from memengine.events import encode, msg_id

THREADS = 50


async def raw_publish_rate(js, payloads: list[tuple[str, bytes, str]], stream: str, subject: str) -> float:  # type: ignore[no-untyped-def]
    await js.add_stream(StreamConfig(name=stream, subjects=[subject + ".>"], duplicate_window=86400))
    rate = await raw_publish(js, payloads, subject)
    await js.delete_stream(stream)
    return rate


def raw_payloads(n: int) -> list[tuple[str, bytes, str]]:
    return [(f"t{i % THREADS}", d, msg_id(t.tenant_id, t.event_id, d))
            for i, t in enumerate(synthetic_turns(n, threads=THREADS)) for d in (encode(t),)]


async def child(kind: str, n: int, settings: Settings) -> dict[str, object]:
    """The publishing process: ``raw`` (the yardstick) or ``memengine`` (``publish_all``), on the parent's servers.
    Reports wall-clock start/end (``time.time()``: the parent's clock is the same machine's)."""
    async with lifespan(settings, roles=set()) as engine:
        if kind == "raw":
            payloads = raw_payloads(n)
            start = time.time()
            rate = await raw_publish_rate(engine.js, payloads, "RAWBENCH", "rawbench")
            return {"rate": rate, "start": start}
        turns = synthetic_turns(n, threads=THREADS)
        start = time.time()
        pub = await publish_all(engine, turns, "bench", quiet=True)
        return {"start": start, "end": time.time(), "last_seq": pub["last_seq"]}


def run_child(kind: str, n: int, engine) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    s = engine.settings
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--turns", str(n), "--child-settings",
         json.dumps({"nats_url": engine.nats_url, "database_url": engine.database_url,
                     "subject_root": s.subject_root, "stream_prefix": s.stream_prefix})],
        stdout=subprocess.PIPE, text=True)


def child_result(proc: subprocess.Popen) -> dict[str, object]:  # type: ignore[type-arg]
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"publisher process failed with {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def stop_recall(engine) -> None:  # type: ignore[no-untyped-def]
    """Diagnostic (``--core-only``): stop the recall rows' projector, so the run shows what the core fold alone
    costs; the recall rows would catch up when it runs again."""
    for task in engine.tasks:
        if task.get_name() == f"projector-{engine.recall.name}":
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    await engine.recall.stop()


async def main(n: int, batch: int, enricher: bool, publisher: str, core_only: bool = False) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(batch_size=batch)
    roles = {"projector", "query"} | ({"enricher"} if enricher else set())
    async with lifespan(settings, roles=roles) as engine:
        if core_only:
            await stop_recall(engine)
        if publisher == "process":
            proc = run_child("raw", n, engine)
            async with CpuSplit(engine) as cpu_raw:
                while proc.poll() is None:
                    await asyncio.sleep(0.05)
            raw = float(child_result(proc)["rate"])  # type: ignore[arg-type]
            proc = run_child("memengine", n, engine)
            reached: list[tuple[float, int]] = []  # (wall time, checkpoint) each time the checkpoint moves
            async with CpuSplit(engine) as cpu_mem:
                while proc.poll() is None:
                    last = engine.runner.stats.last_seq
                    if not reached or reached[-1][1] != last:
                        reached.append((time.time(), last))
                    await asyncio.sleep(0.005)
                done = child_result(proc)
                target, t0 = int(done["last_seq"]), float(done["start"])  # type: ignore[arg-type]
                while engine.runner.stats.last_seq < target:
                    await asyncio.sleep(0.005)
                reached.append((time.time(), engine.runner.stats.last_seq))
            # publisher start-up (imports, building the turns) is inside the split: reported, not hidden; the
            # publisher exits inside the phase, so up to the sampler's 0.5 s of its tail is missing
            cpu = {"raw_publish": per_unit(cpu_raw.result(), n, children="publisher"),
                   "memengine": per_unit(cpu_mem.result(), n, children="publisher")}
            t_end = next(t for t, seq in reached if seq >= target)
            t_pub, t_all = float(done["end"]) - t0, t_end - t0  # type: ignore[arg-type]
        else:
            turns = synthetic_turns(n, threads=THREADS)
            raw = await raw_publish_rate(
                engine.js, [(f"t{i % THREADS}", d, msg_id(t.tenant_id, t.event_id, d))
                            for i, t in enumerate(turns) for d in (encode(t),)], "RAWBENCH", "rawbench")
            t0 = time.perf_counter()
            pub = await publish_all(engine, turns, "bench", quiet=True)
            t_pub = time.perf_counter() - t0
            while engine.runner.stats.last_seq < pub["last_seq"]:
                await asyncio.sleep(0.005)
            t_all = time.perf_counter() - t0
            target = pub["last_seq"]
            cpu = None
        rows = await engine.pool.fetchval("SELECT count(*) FROM messages")
        # mean batch per projector while the core caught up (live folds cost per batch: a recall batch of 20 turns
        # costs ~10x per turn what a batch of 1,000 does, RESULTS.md session 8)
        batches = {r.name: {"batches": r.stats.batches, "events": r.stats.events}
                   for r in (engine.runner, engine.recall)}
        derive_rate = None
        if enricher:  # derivation throughput: turns/s until the enricher has seen the last turn
            while engine.enricher.checkpoint < target:
                await asyncio.sleep(0.01)
            derive_rate = round(n / t_all)
    assert rows == n, rows
    rate = n / t_all
    return {"bench": "ingest", "turns": n, "batch_size": batch, "publisher": publisher, "enricher_running": enricher,
            "recall_rows_running": not core_only,
            "derived_per_s": derive_rate, "raw_publish_per_s": round(raw),
            "memengine_publish_per_s": round(n / t_pub), "memengine_projected_per_s": round(rate),
            "ratio_to_raw": round(rate / raw, 3), "batches": batches, "cpu": cpu, "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--publisher", choices=("process", "inline"), default="process",
                    help="publish from a separate process (as agents do; default) or from the projectors' process")
    ap.add_argument("--enricher", action="store_true", help="also run the enricher (offline derivations)")
    ap.add_argument("--core-only", action="store_true",
                    help="diagnostic: stop the recall rows' projector, to see what the core fold alone costs")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=("raw", "memengine"), help=argparse.SUPPRESS)
    ap.add_argument("--child-settings", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        configure_logging("warning")
        conf = json.loads(args.child_settings)
        out = asyncio.run(child(args.child, args.turns, Settings.from_env(embedder="none", rpc_rate=0, **conf)))
        print(json.dumps(out))
        sys.exit(0)
    result = asyncio.run(main(args.turns, args.batch, args.enricher, args.publisher, args.core_only))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    sys.exit(0)
