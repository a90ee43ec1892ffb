"""Soak (issue #6 item 6): a steady turn rate through the whole pipeline on the embedded servers, for minutes.

Publishes ``--rate`` turns/s (default 1,000) over ``--threads`` threads for ``--minutes``, paced in 10 ms ticks with
pipelined acknowledged publishes, while in this process the core and recall projectors fold them and the query
handler answers a context request (random thread, over NATS) every 100 ms. The enricher is off unless
``--enricher``: its offline derivations run at ~220 turns/s (bench/RESULTS.md), so at 1,000 turns/s it would only
fall further behind. Reported:

- ``lag_s``: per turn, publish -> committed in the context read models (``messages``), p50/p99/max, seconds
  (every turn measured, from an after-commit hook of the core projector);
- ``recall_lag_turns``: turns published but not yet in the recall rows, sampled each second (p99, max);
- ``rss_mb``: resident memory of this process, nats-server and PostgreSQL (postmaster + children), sampled every
  10 s; ``growth`` compares the mean of the last minute with the first minute after a 1-minute warm-up;
- ``errors``: publish failures, context request failures, dead letters, projector retries;
- ``context_ms``: context request latency p50/p99.

Targets (issue #6): lag p99 < 1 s, RSS flat within 10 %, zero errors.

    python bench/soak.py --rate 1000 --minutes 10 [--threads 200] [--enricher] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

from _common import bench_settings, machine, percentile, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.events import encode, msg_id


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MB (``/proc/<pid>/status`` VmRSS); 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def server_pids(home: Path) -> dict[str, list[int]]:
    """nats-server and PostgreSQL processes of the embedded servers under ``home``."""
    pids: dict[str, list[int]] = {"nats": [], "postgres": []}
    try:
        pids["nats"] = [json.loads((home / "nats" / "server.json").read_text())["pid"]]
    except (OSError, ValueError, KeyError):
        pass
    try:
        post = int((home / "pg" / "postmaster.pid").read_text().split()[0])
        pids["postgres"] = [post, *children(post)]
    except (OSError, ValueError, IndexError):
        pass
    return pids


async def main(rate: int, minutes: float, threads: int, enricher: bool) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(ryw_timeout=0.0)
    roles = {"projector", "query"} | ({"enricher"} if enricher else set())
    duration = minutes * 60
    lags: list[float] = []
    errors = {"publish": 0, "context": 0}
    ctx_ms: list[float] = []
    rss: list[dict[str, float]] = []
    recall_lag: list[int] = []
    published = 0
    last_seq = 0

    async with lifespan(settings, roles=roles) as engine:
        async def on_commit(batch: list) -> None:  # after the core projector's commit
            now = time.time()
            for _, event in batch:
                t = (event.metadata or {}).get("sent")
                if isinstance(t, float):
                    lags.append(now - t)

        engine.runner.after_commit.append(on_commit)
        client = engine.client("bench")
        home = settings.home_path
        stop = asyncio.Event()

        async def produce() -> None:
            nonlocal published, last_seq
            # The load generator is its own process, like the agents it stands for: in this one it would compete
            # with the projectors for the event loop and inflate the lag it measures.
            proc = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--producer", engine.nats_url, engine.subjects.root, str(rate),
                str(minutes), str(threads), stdout=asyncio.subprocess.PIPE)
            out, _ = await proc.communicate()
            res = json.loads(out.decode().strip().splitlines()[-1])
            published, last_seq, errors["publish"] = res["published"], res["last_seq"], res["errors"]

        async def query() -> None:
            rnd = random.Random(1)
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    await client.context(f"thread-{rnd.randrange(threads)}", window=32_000)
                    ctx_ms.append((time.perf_counter() - t) * 1000)
                except Exception as exc:  # noqa: BLE001
                    if "unknown_thread" not in repr(exc):  # the first ticks, before a thread exists
                        errors["context"] += 1
                await asyncio.sleep(0.1)

        async def sample() -> None:
            t0 = time.monotonic()
            next_rss = 0.0
            while not stop.is_set():
                el = time.monotonic() - t0
                end = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
                recall_lag.append(max(0, end - engine.recall.stats.last_seq))
                if el >= next_rss:
                    pids = server_pids(home)
                    rss.append({"t": round(el), "memengine": rss_mb(_pid()),
                                "nats": sum(rss_mb(p) for p in pids["nats"]),
                                "postgres": sum(rss_mb(p) for p in pids["postgres"])})
                    next_rss += 10
                await asyncio.sleep(1.0)

        bg = [asyncio.create_task(query()), asyncio.create_task(sample())]
        await produce()
        drain_start = time.monotonic()
        while engine.runner.stats.last_seq < last_seq and time.monotonic() - drain_start < 60:
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.gather(*bg)
        dead = await engine.pool.fetchval("SELECT count(*) FROM dead_letters")
        retries = engine.runner.stats.retries + engine.recall.stats.retries
        rows = await engine.pool.fetchval("SELECT count(*) FROM messages")

    def growth(key: str) -> float | None:
        first = [r[key] for r in rss if 60 <= r["t"] < 120]
        last = [r[key] for r in rss if r["t"] >= rss[-1]["t"] - 60]
        if not first or not last:
            return None
        a, b = sum(first) / len(first), sum(last) / len(last)
        return round((b - a) / a * 100, 1) if a else None

    return {
        "bench": "soak", "rate_target": rate, "minutes": minutes, "threads": threads, "enricher_running": enricher,
        "published": published, "rate_achieved": round(published / duration), "messages_rows": rows,
        "lag_s": {"p50": round(percentile(lags, 50), 3), "p99": round(percentile(lags, 99), 3),
                  "max": round(max(lags, default=float("nan")), 3), "measured": len(lags)},
        "recall_lag_turns": {"p99": round(percentile([float(x) for x in recall_lag], 99)),
                             "max": max(recall_lag, default=0)},
        "context_ms": {"p50": round(percentile(ctx_ms, 50), 1), "p99": round(percentile(ctx_ms, 99), 1),
                       "requests": len(ctx_ms)},
        "rss_mb": {"first": rss[0] if rss else None, "last": rss[-1] if rss else None,
                   "growth_pct": {k: growth(k) for k in ("memengine", "nats", "postgres")}},
        "errors": {**errors, "dead_letters": dead, "projector_retries": retries},
        "machine": machine(),
    }


async def producer(nats_url: str, root: str, rate: int, minutes: float, threads: int) -> dict[str, int]:
    """``--producer``: publish ``rate`` turns/s for ``minutes`` (10 ms ticks, pipelined acknowledged publishes), each
    stamped with its wall-clock send time in ``metadata.sent`` (the lag hook reads it)."""
    import msgspec
    import nats

    from memengine.events.subjects import Subjects

    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    subjects = Subjects(root)
    published = errors = last_seq = 0
    pending: list[asyncio.Future] = []

    async def settle(fut: asyncio.Future) -> None:
        nonlocal published, errors, last_seq
        try:
            ack = await fut
            published += 1
            last_seq = max(last_seq, ack.seq)
        except Exception:  # noqa: BLE001
            errors += 1

    duration = minutes * 60
    t0 = time.monotonic()
    tick, k, i = 0.01, 0, 0
    turns = iter(())
    while (elapsed := time.monotonic() - t0) < duration:
        for _ in range(int(elapsed * rate) - i):  # the turns due by now
            ev = next(turns, None)
            if ev is None:
                turns = iter(synthetic_turns(rate, threads=threads, start=i))
                ev = next(turns)
            ev = msgspec.structs.replace(ev, metadata={"sent": time.time()})
            subject = subjects.fact(ev.tenant_id, ev.thread_id, type(ev).__name__)
            try:
                data = encode(ev)
                pending.append(await js.publish_async(subject, data,
                                                      headers={"Nats-Msg-Id": msg_id(ev.tenant_id, ev.event_id, data)}))
            except Exception:  # noqa: BLE001
                errors += 1
            i += 1
        while pending and (pending[0].done() or len(pending) > 2000):
            await settle(pending.pop(0))
        k += 1
        await asyncio.sleep(max(0.0, t0 + k * tick - time.monotonic()))
    for fut in pending:
        await settle(fut)
    await nc.close()
    return {"published": published, "errors": errors, "last_seq": last_seq}


def _pid() -> int:
    return os.getpid()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=1000, help="turns/s")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=200)
    ap.add_argument("--enricher", action="store_true", help="also run the enricher (offline derivations)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--producer", nargs=5, metavar=("NATS_URL", "ROOT", "RATE", "MINUTES", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.producer:
        url, root, r, m, t = args.producer
        print(json.dumps(asyncio.run(producer(url, root, int(r), float(m), int(t)))))
        sys.exit(0)
    result = asyncio.run(main(args.rate, args.minutes, args.threads, args.enricher))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    sys.exit(0)
