"""Soak (issue #6 item 6, issue #13 item 6): a steady turn rate through the whole pipeline on the embedded servers,
for minutes.

Publishes ``--rate`` turns/s (default 1,000) over ``--threads`` threads for ``--minutes``, paced in 10 ms ticks with
pipelined acknowledged publishes (a separate producer process), while in this process the core and recall
projectors fold them and the query handler answers a context request (random thread, over NATS) every 100 ms. This
process applies the collector settings of ``memengine up`` after start-up (``engine.runtime.gc_tuning``; ``--gc-gen0
0`` for the interpreter's defaults). ``--recall-process`` runs the recall projector in its own process instead, as a
deployment would (``memengine up --role projector`` on another machine or core). The enricher is off unless
``--enricher``: its offline derivations run at ~220 turns/s (bench/RESULTS.md). The recall embedder is off unless
``--embedder`` names one (``MEMENGINE_EMBEDDER`` is not read: before session 23 the soak ran no embedder whatever the
environment said, so its earlier "with ``minilm+use``" rows measured no embedding). Reported:

- ``lag_s``: per turn, publish -> committed in the context read models (``messages``), p50/p99/max, seconds (every
  turn measured, from an after-commit hook of the core projector, into 1 ms buckets: constant memory);
  ``lag_by_minute``: the same per minute of the run;
- ``loop_stall_s``: how late a 10 ms timer of this process's event loop fires (what blocked the loop: folds, GC);
  ``gc_pauses``: collections per generation, their total and longest pause;
- ``recall_lag_turns``: turns published but not yet in the recall rows, sampled each second (p99, max, at the end);
- ``embedding_backlog`` (with ``--embedder``): turns in the recall rows still waiting for a vector of the model
  (``engine.embedding.backlog``), every 10 s: p99, max, at the end of ingest, at the end of the drain (at most
  ``--drain-s``), whether it drained and the worker's texts/s;
- ``rss_mb``: resident memory of this process, nats-server, PostgreSQL (postmaster + children) and the recall
  process, sampled every 10 s (``series``, with the 1-minute load average); ``growth_pct`` compares the mean of the
  last minute with the first minute after ``--warmup``; ``slope_mb_per_min_last_N_min`` is the least-squares slope
  of the last ``--slope-minutes`` (growth that has plateaued has a slope near 0); each sample also splits this
  process's RSS into ``memengine_anon`` / ``memengine_file`` (heap and stacks / mapped files), with Python's
  allocated blocks (``py_blocks_k``, thousands) and glibc's heap (``malloc_*_mb``: ``mallinfo2``);
- ``malloc``: the allocator settings applied (``memengine up``'s, ``--malloc-trim-s`` / ``--arena-max``);
- ``errors``: publish failures, context request failures, dead letters, projector retries (and sampler misses);
- ``context_ms``: context request latency p50/p99;
- ``--tracemalloc FRAMES``: the allocation sites that grew most from the end of the warm-up to the end of the run.

Targets (issue #13): lag p99 <= 1 s, memengine RSS flat within 10 %, zero errors.

    python bench/soak.py --rate 1000 --minutes 10 [--threads 200] [--recall-process] [--gc-gen0 N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import shutil
import sys
import time
import tracemalloc
from pathlib import Path

from _common import bench_settings, machine, percentile, synthetic_turns

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.backlog import embedding_backlog
from memengine.engine.runtime import malloc_tuning
from memengine.engine.runtime.gc_tuning import restore, tune_after_startup
from memengine.events import encode, msg_id


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident set size of ``pid`` in MB (``/proc/<pid>/status`` VmRSS, or ``field``: RssAnon = heap and stacks,
    RssFile = mapped files such as the shared libraries' code); 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
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


class LagHistogram:
    """Latencies in 1 ms buckets (``{ms: count}``): constant memory however many turns are measured. A list of every
    lag grew by ~32 bytes per turn (19 MB over the 10-minute soak) in the very process whose RSS the soak reports."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0
        self.max = float("nan")

    def add(self, seconds: float) -> None:
        ms = int(seconds * 1000)
        self.counts[ms] = self.counts.get(ms, 0) + 1
        self.n += 1
        if not seconds <= self.max:  # also replaces the initial NaN
            self.max = seconds

    def merge(self, other: "LagHistogram") -> None:
        for ms, c in other.counts.items():
            self.counts[ms] = self.counts.get(ms, 0) + c
        self.n += other.n
        if other.n and not other.max <= self.max:
            self.max = other.max

    def percentile(self, p: float) -> float:
        """Upper edge of the bucket holding the ``p``-th percentile, seconds (NaN when empty)."""
        if not self.n:
            return float("nan")
        rank, seen = p / 100 * self.n, 0
        for ms in sorted(self.counts):
            seen += self.counts[ms]
            if seen >= rank:
                return (ms + 1) / 1000
        return self.max

    def summary(self) -> dict[str, float]:
        return {"p50": round(self.percentile(50), 3), "p99": round(self.percentile(99), 3),
                "max": round(self.max, 3), "measured": self.n}


class GcPauses:
    """Pause time of each collector generation (``gc.callbacks``): count, total and max, seconds."""

    def __init__(self) -> None:
        self.stats = {g: [0, 0.0, 0.0] for g in range(3)}
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
            return
        d = time.perf_counter() - self._t0
        s = self.stats[info["generation"]]
        s[0] += 1
        s[1] += d
        s[2] = max(s[2], d)

    def summary(self) -> dict[str, dict[str, float]]:
        return {f"gen{g}": {"count": c, "total_s": round(t, 3), "max_ms": round(m * 1000, 1)}
                for g, (c, t, m) in self.stats.items()}


def slope_mb_per_min(rss: list[dict[str, float]], key: str, minutes: float) -> float | None:
    """Least-squares slope of ``rss[key]`` over the last ``minutes`` of samples, MB per minute."""
    if not rss:
        return None
    pts = [(r["t"] / 60, r[key]) for r in rss if r["t"] >= rss[-1]["t"] - minutes * 60]
    if len(pts) < 3:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def top_growth(before: "tracemalloc.Snapshot", after: "tracemalloc.Snapshot", n: int = 25) -> list[dict[str, object]]:
    """The ``n`` allocation sites (by traceback) that grew most between two snapshots."""
    skip = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    diff = after.filter_traces(skip).compare_to(before.filter_traces(skip), "traceback")
    return [{"kib": round(d.size_diff / 1024, 1), "count": d.count_diff,
             "where": [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}" for f in d.traceback][-6:]}
            for d in diff[:n]]


async def recall_child(nats_url: str, dsn: str, root: str, prefix: str) -> None:
    """``--recall-child``: the recall projector in its own process (as a deployment would run it), on the parent's
    servers; the other projectors here only stand by (the parent holds their locks). Runs until killed."""
    configure_logging("warning")
    settings = Settings.from_env(nats_url=nats_url, database_url=dsn, subject_root=root, stream_prefix=prefix,
                                 embedder="none", rpc_rate=0)
    async with lifespan(settings, roles={"projector"}):
        await asyncio.Event().wait()


async def main(rate: int, minutes: float, threads: int, enricher: bool, *, trace_frames: int = 0,
               gc_gen0: int | None = None, recall_process: bool = False, slope_minutes: float = 3.0,
               warmup: float = 60.0, keep_home: bool = False, malloc_trim_s: float | None = None,
               arena_max: int | None = None, embedder: str = "none", drain_s: float = 120.0) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings(ryw_timeout=0.0, embedder=embedder)
    roles = {"projector", "query"} | ({"enricher"} if enricher else set())
    duration = minutes * 60
    lags, minute_lags = LagHistogram(), LagHistogram()
    lag_by_minute: list[dict[str, float]] = []
    stalls = LagHistogram()  # the event loop's oversleep of a 10 ms timer: how long it was blocked
    gc_pauses = GcPauses()
    errors = {"publish": 0, "context": 0, "sampler": 0}
    ctx_ms: list[float] = []
    rss: list[dict[str, float]] = []
    recall_lag: list[int] = []
    # turns recallable by their words but waiting for a vector (engine.embedding.backlog), every 10 s
    embed_wait: list[dict[str, float]] = []
    published = 0
    last_seq = 0
    snapshots: list[tracemalloc.Snapshot] = []
    child: asyncio.subprocess.Process | None = None

    async with lifespan(settings, roles=roles) as engine:
        async def on_commit(batch: list) -> None:  # after the core projector's commit
            now = time.time()
            for _, event in batch:
                t = (event.metadata or {}).get("sent")
                if isinstance(t, float):
                    minute_lags.add(now - t)

        engine.runner.after_commit.append(on_commit)
        client = engine.client("bench")
        home = settings.home_path
        stop = asyncio.Event()
        if recall_process:  # hand the recall projector (its lock) to a child process
            for task in [t for t in engine.tasks if t.get_name() == f"projector-{engine.recall.name}"]:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await engine.recall.stop()
            child = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--recall-child", engine.nats_url, engine.database_url,
                engine.subjects.root, settings.stream_prefix)
        # as `memengine up` does after start-up (engine.runtime.gc_tuning); --gc-gen0 0: the interpreter's defaults
        gc_before = tune_after_startup(settings.gc_gen0_threshold if gc_gen0 is None else gc_gen0)
        # and its allocator settings (engine.runtime.malloc_tuning); --malloc-trim-s 0 --arena-max 0: glibc's own
        malloc_tuning.cap_arenas(settings.malloc_arena_max if arena_max is None else arena_max)
        trimmer = asyncio.create_task(malloc_tuning.trim_periodically(
            settings.malloc_trim_s if malloc_trim_s is None else malloc_trim_s))
        gc.callbacks.append(gc_pauses)

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
                except Exception as exc:  # noqa: BLE001 - the soak counts every failure and keeps running
                    if "unknown_thread" not in repr(exc):  # the first ticks, before a thread exists
                        errors["context"] += 1
                await asyncio.sleep(0.1)

        async def probe() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.01)
                stalls.add(time.perf_counter() - t - 0.01)

        async def embed_sample(t: float) -> None:
            try:
                b = await embedding_backlog(engine.pool)
            except Exception:  # noqa: BLE001 - a slow sample (loaded machine) is a missing point, not a failure
                errors["sampler"] += 1
                return
            if b:
                embed_wait.append({"t": round(t), "waiting": b[0]["waiting"], "texts_per_s": b[0]["texts_per_s"]})

        async def sample() -> None:
            t0 = time.monotonic()
            next_rss = 0.0
            next_minute = 60.0
            while not stop.is_set():
                el = time.monotonic() - t0
                try:
                    end = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
                    recall_at = engine.recall.stats.last_seq if child is None else int(await engine.pool.fetchval(
                        "SELECT coalesce(min(last_seq), 0) FROM projection_checkpoints"
                        " WHERE projection = ANY($1::text[])", [p.name for p in engine.recall.projections]))
                    recall_lag.append(max(0, end - recall_at))
                except Exception:  # noqa: BLE001 - a slow sample (loaded machine) is a missing point, not a failure
                    errors["sampler"] += 1
                if el >= next_rss:
                    pids = server_pids(home)
                    rss.append({"t": round(el), "memengine": round(rss_mb(_pid()), 1),
                                "nats": round(sum(rss_mb(p) for p in pids["nats"]), 1),
                                "postgres": round(sum(rss_mb(p) for p in pids["postgres"]), 1),
                                **({"recall_process": round(rss_mb(child.pid), 1)} if child is not None else {}),
                                "memengine_anon": round(rss_mb(_pid(), "RssAnon"), 1),
                                "memengine_file": round(rss_mb(_pid(), "RssFile"), 1),
                                "py_blocks_k": round(sys.getallocatedblocks() / 1000, 1),
                                **{f"malloc_{k}_mb": round(v / 1e6, 1)
                                   for k, v in (malloc_tuning.stats() or {}).items()},
                                "load1": round(os.getloadavg()[0], 2)})
                    if engine.embedder is not None:
                        await embed_sample(el)
                    next_rss += 10
                if el >= next_minute:
                    lag_by_minute.append({"minute": round(next_minute / 60), **minute_lags.summary()})
                    lags.merge(minute_lags)
                    minute_lags.__init__()
                    next_minute += 60
                if trace_frames and not snapshots and el >= warmup:
                    snapshots.append(tracemalloc.take_snapshot())
                await asyncio.sleep(1.0)

        if trace_frames:
            tracemalloc.start(trace_frames)
        bg = [asyncio.create_task(query()), asyncio.create_task(sample()), asyncio.create_task(probe())]
        await produce()
        drain_start = time.monotonic()
        while engine.runner.stats.last_seq < last_seq and time.monotonic() - drain_start < 60:
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.gather(*bg)
        # the embedding backlog at the end of ingest, then how long the worker takes to drain it (--drain-s at most)
        embed_end: dict[str, object] | None = None
        if engine.embedder is not None:
            t_end = time.monotonic()
            await embed_sample(duration)
            at_publish_end = embed_wait[-1]["waiting"] if embed_wait else None
            while time.monotonic() - t_end < drain_s and embed_wait and embed_wait[-1]["waiting"] > 0:
                await asyncio.sleep(5.0)
                await embed_sample(duration + time.monotonic() - t_end)
            waits = [float(w["waiting"]) for w in embed_wait]
            rates = [float(w["texts_per_s"]) for w in embed_wait if w["texts_per_s"]]
            embed_end = {"model": engine.embedder.name, "waiting_p99": round(percentile(waits, 99)),
                         "waiting_max": round(max(waits, default=0)), "waiting_at_publish_end": at_publish_end,
                         "waiting_end": embed_wait[-1]["waiting"] if embed_wait else None,
                         "drained": bool(embed_wait) and embed_wait[-1]["waiting"] == 0,
                         "drain_s": round(time.monotonic() - t_end, 1), "drain_limit_s": drain_s,
                         "texts_per_s_mean": round(sum(rates) / len(rates), 1) if rates else None,
                         "series": embed_wait}
        trimmer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await trimmer
        lags.merge(minute_lags)
        gc.callbacks.remove(gc_pauses)
        gc_thresholds = gc.get_threshold()
        restore(gc_before)
        growth_sites = top_growth(snapshots[0], tracemalloc.take_snapshot()) if snapshots else None
        dead = await engine.pool.fetchval("SELECT count(*) FROM dead_letters")
        retries = engine.runner.stats.retries + engine.recall.stats.retries
        rows = await engine.pool.fetchval("SELECT count(*) FROM messages")
        if child is not None:
            child.terminate()
            await child.wait()
    if not keep_home:  # ~3 GB of log and read models after 10 minutes: a shared disk fills up after a few runs
        shutil.rmtree(home, ignore_errors=True)

    def growth(key: str) -> float | None:
        first = [r[key] for r in rss if warmup <= r["t"] < warmup + 60]
        last = [r[key] for r in rss if r["t"] >= rss[-1]["t"] - 60]
        if not first or not last:
            return None
        a, b = sum(first) / len(first), sum(last) / len(last)
        return round((b - a) / a * 100, 1) if a else None

    keys = ("memengine", "nats", "postgres") + (("recall_process",) if recall_process else ())
    loads = [r["load1"] for r in rss]
    return {
        "bench": "soak", "rate_target": rate, "minutes": minutes, "threads": threads, "enricher_running": enricher,
        "recall_process": recall_process, "gc_threshold": gc_thresholds,
        "malloc": {"trim_s": settings.malloc_trim_s if malloc_trim_s is None else malloc_trim_s,
                   "arena_max": settings.malloc_arena_max if arena_max is None else arena_max},
        "published": published, "rate_achieved": round(published / duration), "messages_rows": rows,
        "lag_s": lags.summary(), "lag_by_minute": lag_by_minute,
        "loop_stall_s": stalls.summary(), "gc_pauses": gc_pauses.summary(),
        "recall_lag_turns": {"p99": round(percentile([float(x) for x in recall_lag], 99)),
                             "max": max(recall_lag, default=0), "end": recall_lag[-1] if recall_lag else None},
        "context_ms": {"p50": round(percentile(ctx_ms, 50), 1), "p99": round(percentile(ctx_ms, 99), 1),
                       "requests": len(ctx_ms)},
        "rss_mb": {"first": rss[0] if rss else None, "last": rss[-1] if rss else None,
                   "growth_pct": {k: growth(k) for k in keys},
                   f"slope_mb_per_min_last_{slope_minutes:g}_min": {k: slope_mb_per_min(rss, k, slope_minutes)
                                                                     for k in keys},
                   "series": rss},
        "load_avg_1min": {"min": min(loads, default=None), "max": max(loads, default=None),
                          "mean": round(sum(loads) / len(loads), 2) if loads else None},
        "tracemalloc_top_growth": growth_sites,
        "errors": {**errors, "dead_letters": dead, "projector_retries": retries},
        "embedder": embedder, "embedding_backlog": embed_end,
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
        except Exception:  # noqa: BLE001 - the soak counts every failure and keeps running
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
            except Exception:  # noqa: BLE001 - the soak counts every failure and keeps running
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
    ap.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                    help="trace allocations (FRAMES deep); report the sites that grew most from the end of the "
                         "warm-up to the end (slows the process: use for finding growth, not for the figures)")
    ap.add_argument("--gc-gen0", type=int, default=None, metavar="N",
                    help="generation-0 threshold after start-up (default MEMENGINE_GC_GEN0, as `memengine up`; "
                         "0: the interpreter's defaults, no freeze)")
    ap.add_argument("--recall-process", action="store_true",
                    help="run the recall projector in its own process (as a deployment would)")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds before the RSS baseline (and snapshot)")
    ap.add_argument("--slope-minutes", type=float, default=3.0, help="RSS slope over the last N minutes")
    ap.add_argument("--malloc-trim-s", type=float, default=None, metavar="S",
                    help="seconds between malloc_trim(0) calls (default: memengine up's, MEMENGINE_MALLOC_TRIM_S);"
                         " 0: none")
    ap.add_argument("--arena-max", type=int, default=None, metavar="N",
                    help="glibc arena cap (default: memengine up's, MEMENGINE_MALLOC_ARENA_MAX); 0: glibc's default")
    ap.add_argument("--keep-home", action="store_true", help="keep the servers' temporary home (default: removed)")
    ap.add_argument("--embedder", default="none",
                    help="the recall embedder the engine runs (MEMENGINE_EMBEDDER's values: auto, minilm, use,"
                         " minilm+use, ...; default none: no background embedding). With one, the embedding backlog"
                         " (turns waiting for a vector) is sampled every 10 s and reported, with the time to drain")
    ap.add_argument("--drain-s", type=float, default=120.0,
                    help="after ingest, wait at most this long for the embedding backlog to drain (default 120)")
    ap.add_argument("--recall-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.recall_child:
        asyncio.run(recall_child(*args.recall_child))
        sys.exit(0)
    if args.producer:
        url, root, r, m, t = args.producer
        print(json.dumps(asyncio.run(producer(url, root, int(r), float(m), int(t)))))
        sys.exit(0)
    result = asyncio.run(main(args.rate, args.minutes, args.threads, args.enricher, trace_frames=args.tracemalloc,
                              gc_gen0=args.gc_gen0, recall_process=args.recall_process,
                              slope_minutes=args.slope_minutes, warmup=args.warmup,
                              keep_home=args.keep_home, malloc_trim_s=args.malloc_trim_s,
                              arena_max=args.arena_max, embedder=args.embedder, drain_s=args.drain_s))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    sys.exit(0)
