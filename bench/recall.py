"""Recall latency at scale (query embedding included) and embedding throughput, same run (issue #3 §7).

1. Ingest LoCoMo 26 + 30 (788 turns) through the normal path, fold + embed them with MiniLM (the real windows).
2. Synthetic scale-up to ``--chunks`` rows in tenant ``bench``: copies of those turns into threads ``copy-N`` (same
   texts, so full-text sees realistic term statistics, but every lexeme is ~N/788 times commoner than in real data),
   vectors = the real ones + uniform noise of +-0.01 per dimension (numpy, not the model), loaded with binary
   ``COPY``. The GIN and HNSW indexes are dropped before the load and built after it (timed), as a bulk import
   would; then ``ANALYZE`` and the tenant's term statistics (``refresh_term_stats``, timed).
3. Recall latency end to end over NATS (``MemoryClient.recall``: ONNX query embedding + SQL + reply), dev
   questions in turn, k = 10: scoped to one thread (the agent case: ~790 turns among N), first with the buffers as
   the load left them (cold), then again after one recall on every thread (warm: the read model in
   ``shared_buffers``, which the embedded server sizes to a quarter of RAM), and tenant-wide (no thread filter: the
   statistics path, HNSW with ``hnsw.iterative_scan``).
4. Embedding throughput on 256 window texts (what the worker embeds): sentence-transformers' default
   ``model.encode(texts)`` against the engine's ``MiniLMEmbedder.embed`` and the variants named in the output,
   alternated, best of 3 each; plus the query path (one short text) torch vs ONNX Runtime.

    python bench/recall.py [--chunks 100000] [--requests 200] [--json] [--skip-throughput] [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import struct
import sys
import time
import uuid
from pathlib import Path

import numpy as np
from _common import bench_settings, machine

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.models import MiniLMEmbedder, _load_minilm
from memengine.engine.ops.eval_locomo import percentile, questions
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read.recall import refresh_term_stats

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
COLS = ("tenant_id", "thread_id", "seq", "event_id", "user_id", "session_id", "session_key", "speaker",
        "occurred_at", "date_label", "piece", "turn_text", "win_text", "emb_text", "emb_sha", "changed_seq",
        "prev_seq", "next_seq")
TSV = ("piece_tsv", "turn_tsv", "win_tsv")


def pct(xs: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(xs), 2), "p95": round(percentile(xs, 95), 2)}


async def scale_up(engine, table: str, copies: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """COPY ``copies`` jittered copies of tenant ``seed`` into tenant ``bench``; returns timings in seconds."""
    vecs = {r["seq"]: np.array(json.loads(r["emb"]), dtype=np.float32) for r in await engine.pool.fetch(
        f"SELECT seq, emb::text AS emb FROM {table} WHERE tenant_id = 'seed'")}
    rng = np.random.default_rng(7)
    t: dict[str, float] = {}
    async with engine.pool.acquire() as conn:
        await conn.set_type_codec("vector", schema="public", encoder=lambda b: b, decoder=lambda b: b,
                                  format="binary")
        # the folded full-text columns (schema 0034) travel as PostgreSQL's own binary form, copied as they are
        await conn.set_type_codec("tsvector", schema="pg_catalog", encoder=lambda b: b, decoder=lambda b: b,
                                  format="binary")
        seed = await conn.fetch(f"SELECT {', '.join(COLS + TSV)} FROM memory_vectors WHERE tenant_id = 'seed'"
                                " ORDER BY seq")
        base = np.stack([vecs[r["seq"]] for r in seed])
        dim = base.shape[1]
        t0 = time.perf_counter()
        await conn.execute("DROP INDEX IF EXISTS memory_vectors_turn_tsv, memory_vectors_win_tsv,"
                           f" {table}_hnsw")
        for c in range(copies):
            off = (c + 1) * 10_000_000
            thread = f"copy-{c}"
            rows = [("bench", thread, r["seq"] + off, uuid.uuid4(), *[r[k] for k in COLS[4:15]], 0,
                     r["prev_seq"] + off if r["prev_seq"] else None, r["next_seq"] + off if r["next_seq"] else None,
                     *[r[k] for k in TSV])
                    for r in seed]
            await conn.copy_records_to_table("memory_vectors", records=rows, columns=COLS + TSV)
            jit = (base + rng.uniform(-0.01, 0.01, base.shape).astype(np.float32)).astype(">f4")
            head = struct.pack(">HH", dim, 0)
            await conn.copy_records_to_table(table, columns=("tenant_id", "thread_id", "seq", "emb_sha", "emb"),
                                             records=[("bench", thread, r["seq"] + off, r["emb_sha"],
                                                       head + jit[i].tobytes()) for i, r in enumerate(seed)])
            if c % 100 == 99:
                print(f"  copied {c + 1}/{copies} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        t["copy_s"] = round(time.perf_counter() - t0, 1)
        await conn.execute("SET maintenance_work_mem = '6GB'; SET max_parallel_maintenance_workers = 1")
        t0 = time.perf_counter()
        await conn.execute("CREATE INDEX memory_vectors_turn_tsv ON memory_vectors USING gin (turn_tsv);"
                           "CREATE INDEX memory_vectors_win_tsv ON memory_vectors USING gin (win_tsv)")
        t["gin_build_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        await conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (emb vector_cosine_ops)")
        t["hnsw_build_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        await conn.execute(f"ANALYZE memory_vectors; ANALYZE {table}")
        t["analyze_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    await refresh_term_stats(engine.pool, "bench")
    t["term_stats_s"] = round(time.perf_counter() - t0, 1)
    return t


async def latencies(engine, qs, copies: int, requests: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Thread-scoped recall twice: ``thread`` with the buffers as the load left them (most threads' pages only in
    the kernel's page cache: a cold read model), ``thread_warm`` after one recall on every thread (the steady state
    of a server whose read models fit its ``shared_buffers``); then tenant-wide. Same questions and threads in both
    thread-scoped passes."""
    client = engine.client("bench")
    await client.recall("warm up", thread="copy-0")
    await client.recall("warm up tenant wide")
    results: dict[str, object] = {}

    async def measure(label: str, scoped: bool) -> None:
        rnd = random.Random(7)
        lat, svc = [], []
        for i in range(requests):
            _cat, q, _ev = qs[i % len(qs)]
            t = time.perf_counter()
            res = await client.recall(q, thread=f"copy-{rnd.randrange(copies)}" if scoped else None, k=10)
            lat.append((time.perf_counter() - t) * 1000)
            svc.append(res.took_ms)
            assert res.mode == "hybrid" and res.hits, (q, res.mode)
        results[label] = {"requests": requests, "latency_ms": pct(lat), "service_ms": pct(svc)}
        print(label, results[label], file=sys.stderr, flush=True)

    await measure("thread", True)
    t0 = time.perf_counter()
    for c in range(copies):
        await client.recall(qs[c % len(qs)][1], thread=f"copy-{c}", k=10)
    results["warm_up_s"] = round(time.perf_counter() - t0, 1)
    await measure("thread_warm", True)
    await measure("tenant", False)
    return results


async def query_embedding(emb: MiniLMEmbedder, qs) -> dict[str, object]:  # type: ignore[no-untyped-def]
    out = {}
    for label, fn in (("torch_encode", lambda q: emb.embed([q])), ("onnx_runtime", emb.embed_query)):
        lat = []
        for i in range(100):
            t = time.perf_counter()
            await fn(qs[i % len(qs)][1])
            lat.append((time.perf_counter() - t) * 1000)
        out[label] = pct(lat[5:])
    return out


async def throughput(emb: MiniLMEmbedder, texts: list[str]) -> dict[str, object]:
    """texts/s of each option, alternated, best of 3. All produce normalised MiniLM vectors of the same model;
    ``min_cos`` = the worst cosine against the default's vectors (1.0 = same vectors)."""
    import torch

    model = _load_minilm()
    ref = model.encode(texts, normalize_embeddings=True)

    def st(**kw):  # type: ignore[no-untyped-def]
        return lambda: model.encode(texts, normalize_embeddings=True, **kw)

    def seq128():  # type: ignore[no-untyped-def]
        old = model.max_seq_length
        model.max_seq_length = 128
        try:
            return model.encode(texts, normalize_embeddings=True)
        finally:
            model.max_seq_length = old

    def inference_mode_b64():  # type: ignore[no-untyped-def]
        with torch.inference_mode():
            return model.encode(texts, normalize_embeddings=True, batch_size=64)

    options = {
        "st_default_encode": lambda: model.encode(texts),
        "memengine_embed": lambda: asyncio.run_coroutine_threadsafe(emb.embed(texts), loop).result(),
        "st_batch_16": st(batch_size=16),
        "st_batch_64_inference_mode": inference_mode_b64,
        "st_batch_128": st(batch_size=128),
        "st_max_seq_length_128": seq128,
    }
    loop = asyncio.get_running_loop()
    best: dict[str, float] = {}
    cos: dict[str, float] = {}
    for _round in range(3):
        for name, fn in options.items():
            t = time.perf_counter()
            out = await asyncio.to_thread(fn)
            best[name] = max(best.get(name, 0.0), round(len(texts) / (time.perf_counter() - t), 1))
            v = np.asarray(out, dtype=np.float32)
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
            cos[name] = round(float((v * ref).sum(1).min()), 4)
    base = best["st_default_encode"]
    return {"texts": len(texts), "threads": torch.get_num_threads(),
            "texts_per_s": best, "ratio_vs_default": {k: round(v / base, 2) for k, v in best.items()},
            "min_cos_vs_default": cos}


async def main(chunks: int, requests: int, skip_throughput: bool, reuse: bool) -> dict[str, object]:
    configure_logging("warning")
    emb = MiniLMEmbedder()
    settings = bench_settings(embedder="minilm")
    files = [DATA / "26.json", DATA / "30.json"]
    qs = [q for f in files for q in questions(json.loads(f.read_text()))]
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False, embedder=emb) as engine:
        await engine.runner.try_start()
        await engine.recall.try_start()
        base = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'seed'")
        have = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'bench'")
        seed_s, load = 0.0, {}
        if reuse and have:  # DATABASE_URL of an earlier run: measure again, load nothing
            copies = have // base
        else:
            for f in files:
                pub = await publish_all(engine, read_locomo(f, "seed"), "seed", quiet=True)
            t0 = time.perf_counter()
            await ensure_current(engine, quiet=True, target=pub["last_seq"], embed=True)
            seed_s = time.perf_counter() - t0
            base = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'seed'")
            copies = max(1, chunks // base)
            load = await scale_up(engine, engine.embed_worker.table, copies)
        print("load", load, file=sys.stderr, flush=True)
        stored = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors")
        shared_buffers = await engine.pool.fetchval("SHOW shared_buffers")
        results = await latencies(engine, qs, copies, requests)
        qemb = await query_embedding(emb, qs)
        texts = [r["emb_text"] for r in await engine.pool.fetch(
            "SELECT emb_text FROM memory_vectors WHERE tenant_id = 'seed' ORDER BY seq LIMIT 256")]
        tp = None if skip_throughput else await throughput(emb, texts)
    return {"machine": machine(), "stored_chunks": stored, "copies": copies, "seed_turns": base,
            "seed_fold_embed_s": round(seed_s, 1), "load": load,
            "shared_buffers": shared_buffers,
            "recall_thread_scoped": results["thread"], "recall_thread_scoped_warm": results["thread_warm"],
            "warm_up_s": results["warm_up_s"], "recall_tenant_wide": results["tenant"],
            "query_embedding_ms": qemb, "embedding_throughput": tp}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="with DATABASE_URL / NATS_URL of an earlier run: re-measure "
                    "the latencies on the rows it loaded")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = asyncio.run(main(a.chunks, a.requests, a.skip_throughput, a.reuse))
    print(json.dumps(out, indent=None if a.json else 2))
