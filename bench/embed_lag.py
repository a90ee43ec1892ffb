"""Vectors lag at a steady turn rate with a remote embedder (issue #13 item 5).

Starts a local OpenAI-compatible embeddings server in another process (bench/embed_server.py, ``--mode hash`` = a
cheap deterministic vector, so the engine's own ceiling shows, or ``minilm`` = the same MiniLM on CPU), points the
engine's ``OpenAIEmbedder`` at it (``MEMENGINE_EMBED_BATCH`` / ``_CONCURRENCY`` = ``--batch`` / ``--concurrency``),
and runs the core and recall projectors and the embedder worker in this process on fresh embedded servers while a
producer process publishes ``--rate`` turns/s for ``--seconds`` (short user/assistant text turns over ``--threads``
threads). Reported:

- ``lag_s``: per turn, publish -> its first vector row present (a trigger on the embeddings table stamps each
  first insert with the database clock), p50/p99/max, seconds, over every turn with a window text; split into
  ``recall_row_lag_s`` (publish -> its ``memory_vectors`` row: the recall rows fold, lexically recallable from here)
  and ``embed_lag_s`` (that row -> its first vector: the embedder worker's own lag);
- ``backlog``: each second, turns waiting for a vector, the oldest one's age and the worker's texts/s as
  ``memengine status`` shows them (engine.embedding.backlog), and the peak;
- ``catch_up_s``: from the producer's last publish to an empty backlog;
- ``worker``: texts embedded, embedding calls, rows stored. Each turn re-derives the +-2 windows of its
  neighbours, so up to ~3 texts per turn when the worker keeps up, fewer when it lags (a window changed again before
  it was embedded is embedded once, in its final form: load shed, not lost);
- ``raw_texts_per_s`` (yardstick, same run): the server called directly with the same client, batch size and
  concurrency; ``ratio`` = the engine's best 5-s texts/s over it.

    python bench/embed_lag.py --mode hash --rate 1000 --seconds 30 --json
    python bench/embed_lag.py --mode minilm --rate 1000 --seconds 10 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import bench_settings, machine, percentile

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.backlog import embedding_backlog
from memengine.engine.embedding.models import OpenAIEmbedder
from memengine.engine.embedding.worker import EmbedderWorker
from memengine.events import TextBlock, TurnRecorded, encode, msg_id, stable_event_id

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ("garden trip violin marathon recipe budget invoice meeting puppy novel camera river museum coffee train "
         "deadline weather concert doctor lesson").split()


def turn(i: int, threads: int) -> TurnRecorded:
    """Turn ``i``: a short user question or assistant answer (60-140 characters) in thread ``i % threads``."""
    w = [WORDS[(i * k + 3) % len(WORDS)] for k in (1, 3, 7, 11)]
    role = "user" if (i // threads) % 2 == 0 else "assistant"
    text = (f"Turn {i}: about the {w[0]} and the {w[1]}, what should I do before the {w[2]}?" if role == "user" else
            f"Turn {i}: for the {w[0]}, plan the {w[3]} first, then check the {w[1]} and the {w[2]} again.")
    return TurnRecorded(event_id=stable_event_id("bench", "embed", str(i)), tenant_id="bench",
                        thread_id=f"thread-{i % threads}", occurred_at=T0 + timedelta(milliseconds=i), role=role,
                        content=[TextBlock(text=text)], user_id="u1", session_id="s1")


def dist(values: list[float]) -> dict[str, float | None]:
    return {"p50": round(percentile(values, 50), 3), "p99": round(percentile(values, 99), 3),
            "max": round(max(values), 3) if values else None}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(mode: str) -> tuple[subprocess.Popen[bytes], str]:
    """bench/embed_server.py in its own process; returns it and its base URL once ``/health`` answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "embed_server.py"), "--mode", mode, "--port", str(port)],
                            env={**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1)})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url + "/v1"
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("embed_server.py exited") from None
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("embed_server.py did not start")


async def raw_rate(url: str, model: str, texts: list[str], batch: int, concurrency: int) -> float:
    """Texts/s of the server called directly: the engine's client (``OpenAIEmbedder``), ``batch`` texts per call,
    ``concurrency`` calls in flight."""
    emb = OpenAIEmbedder(model, url, "none")
    await emb.embed(["warm up"])
    gate = asyncio.Semaphore(concurrency)

    async def one(part: list[str]) -> None:
        async with gate:
            await emb.embed(part)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(texts[i:i + batch]) for i in range(0, len(texts), batch)))
    rate = len(texts) / (time.perf_counter() - t0)
    await emb.close()
    return rate


def window_texts(n: int, threads: int) -> list[str]:
    """``n`` texts shaped like the engine's +-2 windows of ``turn`` (five turns' texts), all distinct."""
    def text(i: int) -> str:
        block = turn(i, threads).content[0]
        assert isinstance(block, TextBlock)
        return block.text
    return ["[1 January 2026] " + " ".join(f"u1: {text(j)}" for j in range(i, i + 5)) for i in range(0, 5 * n, 5)]


async def producer(nats_url: str, root: str, rate: int, seconds: float, threads: int) -> dict[str, object]:
    """``--producer``: publish ``rate`` turns/s for ``seconds`` in 10 ms ticks (pipelined acknowledged publishes);
    returns the stream sequence and wall-clock send time of each turn."""
    import nats

    from memengine.events.subjects import Subjects

    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    subjects = Subjects(root)
    sent: list[tuple[int, float]] = []
    errors = 0
    pending: list[tuple[float, asyncio.Future]] = []  # type: ignore[type-arg]

    async def settle(at: float, fut: asyncio.Future) -> None:  # type: ignore[type-arg]
        nonlocal errors
        try:
            sent.append(((await fut).seq, at))
        except Exception:  # noqa: BLE001 - a failed publish is counted, not raised
            errors += 1

    t0 = time.monotonic()
    k = i = 0
    while (elapsed := time.monotonic() - t0) < seconds:
        for _ in range(int(elapsed * rate) - i):
            ev = turn(i, threads)
            data = encode(ev)
            at = time.time()
            pending.append((at, await js.publish_async(
                subjects.fact(ev.tenant_id, ev.thread_id, "TurnRecorded"), data,
                headers={"Nats-Msg-Id": msg_id(ev.tenant_id, ev.event_id, data)})))
            i += 1
        while pending and (pending[0][1].done() or len(pending) > 2000):
            await settle(*pending.pop(0))
        k += 1
        await asyncio.sleep(max(0.0, t0 + k * 0.01 - time.monotonic()))
    for at, fut in pending:
        await settle(at, fut)
    await nc.close()
    return {"published": len(sent), "errors": errors, "seconds": round(time.monotonic() - t0, 3), "sent": sent}


async def drain_rate(engine: Any, worker: EmbedderWorker, url: str, model: str, batch: int,
                     concurrency: int) -> dict[str, float]:
    """Texts/s of a fresh worker embedding the whole run again from nothing (its vectors and cache rows dropped),
    while the engine's own worker is held off by its lock: the worker's ceiling, cache/vector statement included."""
    async with worker._lock:  # keep the running worker out of the measured pass
        assert worker.table is not None
        await engine.pool.execute("DROP TRIGGER IF EXISTS bench_vec_at ON " + worker.table)
        await engine.pool.execute(f"DELETE FROM {worker.table}")
        await engine.pool.execute("DELETE FROM embedding_cache WHERE model = $1", model)
        emb = OpenAIEmbedder(model, url, "none")
        fresh = EmbedderWorker(engine.pool, emb, batch=batch, concurrency=concurrency)
        t0 = time.perf_counter()
        rows = await fresh.catch_up()
        elapsed = time.perf_counter() - t0
        await emb.close()
    return {"rows": rows, "texts": fresh.stats.embedded, "seconds": round(elapsed, 2),
            "texts_per_s": round(fresh.stats.embedded / elapsed, 1)}


async def main(mode: str, rate: int, seconds: float, threads: int, batch: int, concurrency: int,
               max_catch_up: float, raw_texts: int) -> dict[str, object]:
    configure_logging("warning")
    server, url = start_server(mode)
    try:
        model = f"bench-{mode}"
        raw = await raw_rate(url, model, window_texts(raw_texts, threads), batch, concurrency)
        settings = bench_settings(embedder="openai", embedding_base_url=url, embedding_model=model,
                                  embed_batch=batch, embed_concurrency=concurrency)
        async with lifespan(settings, roles={"projector"}, run_projector=True) as engine:
            worker = engine.embed_worker
            assert worker is not None and worker.table is not None
            await engine.pool.execute(f"""
                CREATE TABLE bench_vec_at (seq BIGINT, at FLOAT8);
                CREATE FUNCTION bench_vec_at_f() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN INSERT INTO bench_vec_at VALUES (NEW.seq, extract(epoch FROM clock_timestamp()));
                  RETURN NULL; END $$;
                CREATE TRIGGER bench_vec_at AFTER INSERT ON {worker.table}
                  FOR EACH ROW EXECUTE FUNCTION bench_vec_at_f();
                CREATE TABLE bench_row_at (seq BIGINT, at FLOAT8);
                CREATE FUNCTION bench_row_at_f() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN INSERT INTO bench_row_at VALUES (NEW.seq, extract(epoch FROM clock_timestamp()));
                  RETURN NULL; END $$;
                CREATE TRIGGER bench_row_at AFTER INSERT ON memory_vectors
                  FOR EACH ROW EXECUTE FUNCTION bench_row_at_f();""")
            prod = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--producer", engine.nats_url, settings.subject_root, str(rate),
                str(seconds), str(threads), stdout=asyncio.subprocess.PIPE)
            t_start = time.monotonic()
            samples: list[dict[str, object]] = []
            embedded_at: list[tuple[float, int]] = []
            done_at: float | None = None
            prod_out: bytes | None = None
            prod_task = asyncio.create_task(prod.communicate())
            t_prod_end: float | None = None
            while True:
                await asyncio.sleep(1.0)
                now = time.monotonic()
                b = (await embedding_backlog(engine.pool, engine.js, engine.streams.facts))[0]
                last = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
                folded = await engine.pool.fetchval(
                    "SELECT coalesce(max(last_seq), 0) FROM projection_checkpoints WHERE projection LIKE 'vectors%'")
                embedded_at.append((now, worker.stats.embedded))
                samples.append({"t": round(now - t_start, 1), "published": last, "recall_rows_behind": last - folded,
                                "waiting": b["waiting"], "oldest_age_s": b["oldest_age_s"],
                                "texts_per_s": b["texts_per_s"]})
                if prod_task.done() and t_prod_end is None:
                    prod_out = prod_task.result()[0]
                    t_prod_end = now
                if t_prod_end is not None and b["waiting"] == 0 and folded >= last:
                    done_at = now
                    break
                if t_prod_end is not None and now - t_prod_end > max_catch_up:
                    break
            assert prod_out is not None
            produced = json.loads(prod_out)
            sent = dict(produced["sent"])
            at = {r["seq"]: r["at"] for r in await engine.pool.fetch("SELECT seq, min(at) AS at FROM bench_vec_at"
                                                                      " GROUP BY seq")}
            row_at = {r["seq"]: r["at"] for r in await engine.pool.fetch("SELECT seq, min(at) AS at FROM bench_row_at"
                                                                          " GROUP BY seq")}
            with_text = [r["seq"] for r in await engine.pool.fetch(
                "SELECT seq FROM memory_vectors WHERE emb_text <> ''")]
            lags = [at[s] - sent[s] for s in with_text if s in at and s in sent]
            row_lags = [row_at[s] - sent[s] for s in with_text if s in row_at and s in sent]
            embed_lags = [at[s] - row_at[s] for s in with_text if s in at and s in row_at]
            stats = worker.stats
            drain = await drain_rate(engine, worker, url, model, batch, concurrency)
        raw_after = await raw_rate(url, model, window_texts(raw_texts, threads), batch, concurrency)
        best = 0.0  # the best 5-s window of texts embedded
        for (t1, n1), (t2, n2) in zip(embedded_at, embedded_at[5:], strict=False):
            best = max(best, (n2 - n1) / (t2 - t1))
        return {
            "bench": "embed_lag", "mode": mode, "rate": rate, "seconds": seconds, "threads": threads,
            "batch": batch, "concurrency": concurrency,
            "published": produced["published"], "publish_errors": produced["errors"],
            "rate_achieved": round(produced["published"] / produced["seconds"]),
            "lag_s": {"n": len(lags), "missing": len(with_text) - len(lags), **dist(lags)},
            "recall_row_lag_s": dist(row_lags),  # publish -> recall row (the vectors fold, before any embedding)
            "embed_lag_s": dist(embed_lags),  # recall row -> its first vector (the embedder worker's own lag)
            "catch_up_s": round(done_at - t_prod_end, 1) if done_at is not None and t_prod_end is not None else None,
            "backlog_peak": max(int(s["waiting"]) for s in samples),  # type: ignore[call-overload]
            "oldest_age_peak_s": max(float(s["oldest_age_s"] or 0) for s in samples),  # type: ignore[arg-type]
            "worker": {"texts_embedded": stats.embedded, "calls": stats.calls, "rows_stored": stats.stored,
                       "cached": stats.cached, "max_in_flight": stats.max_in_flight,
                       "texts_per_turn": round(stats.embedded / max(1, produced["published"]), 2)},
            "engine_best_5s_texts_per_s": round(best, 1),
            "raw_texts_per_s": round(raw, 1), "ratio": round(best / raw, 3) if raw else None,
            # the worker alone on a standing backlog (every vector and cache row of the run dropped, then one
            # catch_up), against the yardstick before and after it: what the worker can do when rows are waiting
            "drain": {**drain, "raw_after_texts_per_s": round(raw_after, 1),
                      "ratio": round(drain["texts_per_s"] / ((raw + raw_after) / 2), 3)},
            "backlog": samples, "machine": machine(),
        }
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--rate", type=int, default=1000, help="turns/s")
    ap.add_argument("--seconds", type=float, default=30.0, help="how long to publish")
    ap.add_argument("--threads", type=int, default=200)
    ap.add_argument("--batch", type=int, default=64, help="texts per embedding call (MEMENGINE_EMBED_BATCH)")
    ap.add_argument("--concurrency", type=int, default=4, help="calls in flight (MEMENGINE_EMBED_CONCURRENCY)")
    ap.add_argument("--max-catch-up", type=float, default=900.0, help="seconds to wait for the backlog to drain")
    ap.add_argument("--raw-texts", type=int, default=0, help="texts for the yardstick (default: 4000 hash, 400 minilm)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--producer", nargs=5, metavar=("NATS_URL", "ROOT", "RATE", "SECONDS", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.producer:
        url, root, r, s, t = args.producer
        print(json.dumps(asyncio.run(producer(url, root, int(r), float(s), int(t)))))
        sys.exit(0)
    raw_n = args.raw_texts or (4000 if args.mode == "hash" else 400)
    result = asyncio.run(main(args.mode, args.rate, args.seconds, args.threads, args.batch, args.concurrency,
                              args.max_catch_up, raw_n))
    if args.json:
        print(json.dumps(result))
    else:
        compact = {k: v for k, v in result.items() if k != "backlog"}
        print(json.dumps(compact, indent=2))
        for s in result["backlog"]:  # type: ignore[attr-defined]
            print(s)
    sys.exit(0)
