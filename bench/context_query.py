"""Context latency with and without a query against thread-scoped recall, same store, same run (issue #27 item 5).

Target: ``rpc.context`` with a query costs at most one thread-scoped recall more than without: p95 of the context
with the query <= p95 of recall for the same question + 5 ms, with the user-memory part of Tier 1 on.

The store (one tenant, ``bench``): LoCoMo 26 + 30 (``../shared/data/locomo-dev``) published and folded through the
engine's own path in tenant ``seed`` — core projections, recall rows with MiniLM vectors, the enricher's memory
items, summaries, topics and the seed-000 pruner (each thread keeps its newest ~200 turns in ``messages``; recall
rows keep every turn) — then copied server-side (``INSERT ... SELECT``) into ``copies`` pairs of threads
``locomo-26-<c>`` / ``locomo-30-<c>`` until ``--stored`` recall rows (stored turns) are reached: transcript rows,
recall rows, vectors, prune marks, thread activity, summaries and topics per copy, with the stream positions moved
by ``(c + 1) * 10,000,000`` and new event ids. The users' memory items (and their source links) are copied once:
each LoCoMo speaker is one user with a thread in every copy, so the user-memory part searches a user with up to
~500,000 turns in other threads. The full-text GIN indexes and the HNSW index are dropped before the copy and
built after it (timed), as ``bench/recall.py`` does; then ``ANALYZE``.

Measured, over NATS with the engine's own client, per request a dev question and a random copy of its
conversation's thread, the four kinds interleaved request by request (so the machine's load falls on all alike):

- ``recall``: ``rpc.recall(question, thread, k=10)``, the yardstick (as in bench/recall.py); ``recall_k100`` the same
  with k = 100, what the context's query part asks (``engine.read.context_query.CONTEXT_RECALL_K``);
- ``context_query``: ``rpc.context(thread, window, query=question)``;
- ``context_no_query``: ``rpc.context(thread, window, query="")`` (no query, live question off);
- ``context_live``: ``rpc.context(thread, window)`` (no query given: the thread's latest user turn is the query,
  issue #27 item 2).

``--profile`` also times, inside the query service, the parts of each context request (window statement, the query's
recall, the rows it names, content fetch, user-memory statement, the thread's Tier-1 parts), by wrapping those
methods in this process. ``loadavg``: the machine's 1-minute load average sampled every 50 requests (min / max).

    python bench/context_query.py [--stored 20000] [--requests 200] [--window 4000] [--profile] [--json]

With ``DATABASE_URL`` / ``NATS_URL`` of servers an earlier run left (``MEMENGINE_BENCH_KEEP=1`` keeps its home;
``bench/_servers.py HOME`` starts such servers and prints their URLs), the store found there is measured again,
after adding copies up to ``--stored`` (so a 100,000 store grows into the 1,000,000 one without reloading).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import bench_settings, machine, summary

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.models import MINILM_NAME, MiniLMEmbedder, table_for
from memengine.engine.ops.eval_locomo import questions
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
OFFSET = 10_000_000
#: copied for every copy of the threads (positions moved, event ids new); the users' memory once
PER_COPY = ("messages", "memory_vectors", "message_prune_marks", "thread_activity", "conversation_summaries",
            "memory_topics")
ONCE = ("memory_items", "memory_item_sources")
KINDS = ("recall", "recall_k100", "context_query", "context_no_query", "context_live")


async def _columns(conn: Any, table: str) -> list[tuple[str, str]]:
    return [(r["column_name"], r["data_type"]) for r in await conn.fetch(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position", table)]


def _select(cols: list[tuple[str, str]], *, per_copy: bool) -> str:
    """The SELECT list copying a row of tenant ``seed`` into tenant ``bench``, copy ``g`` (a generate_series)."""
    out = []
    for name, typ in cols:
        if name == "tenant_id":
            out.append("'bench'")
        elif per_copy and name == "thread_id":
            out.append("s.thread_id || '-' || g")
        elif name == "thread_id":
            out.append("s.thread_id || '-0'")
        elif per_copy and (name == "seq" or name.endswith("_seq")) and typ == "bigint":
            out.append(f"s.{name} + (g + 1)::bigint * {OFFSET}")
        elif per_copy and name == "event_id" and typ == "uuid":
            out.append("md5(s.event_id::text || g)::uuid")
        elif not per_copy and name == "source_event_id" and typ == "uuid":
            out.append("md5(s.source_event_id::text || 0)::uuid")  # the turn as copy 0 holds it
        else:
            out.append(f"s.{name}")
    return ", ".join(out)


async def build_store(engine: Any, stored: int) -> dict[str, Any]:
    """Seed tenant through the engine's path, then copies into tenant ``bench``; timings in seconds."""
    t: dict[str, Any] = {}
    t0 = time.perf_counter()
    pub: dict[str, Any] = {}
    table = table_for(MINILM_NAME)
    base = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'seed'")
    if base:  # servers of an earlier run (NATS_URL / DATABASE_URL): add copies up to --stored, if any are missing
        have = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'bench'") // base
        return await _copy(engine, table, base, have, max(have, stored // base), t)
    for f in ("26", "30"):
        pub = await publish_all(engine, read_locomo(DATA / f"{f}.json", "seed"), "seed", quiet=True)
    await ensure_current(engine, quiet=True, target=pub["last_seq"], embed=True)
    # the pruner's marks are facts published by the enricher: fold them too (a second pass until nothing moves)
    for _ in range(5):
        before = await engine.pool.fetchval("SELECT count(*) FROM message_prune_marks WHERE tenant_id = 'seed'")
        await ensure_current(engine, quiet=True, embed=True)
        if await engine.pool.fetchval("SELECT count(*) FROM message_prune_marks WHERE tenant_id = 'seed'") == before:
            break
    t["seed_s"] = round(time.perf_counter() - t0, 1)
    base = await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'seed'")
    print(f"seed: {base} recall rows in {t['seed_s']} s", file=sys.stderr, flush=True)
    return await _copy(engine, table, base, 0, max(1, stored // base), t)


async def _copy(engine: Any, table: str, base: int, have: int, copies: int, t: dict[str, Any]) -> dict[str, Any]:
    """Copies ``have .. copies - 1`` of tenant ``seed`` into tenant ``bench`` (the users' memory with the first)."""
    t["copies"] = copies
    t["copies_added"] = copies - have
    if copies == have:
        return t
    print(f"copying {have} .. {copies - 1}", file=sys.stderr, flush=True)
    async with engine.pool.acquire() as conn:
        idx = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('memory_vectors', $1)"
            " AND (indexdef ILIKE '%USING gin%' OR indexdef ILIKE '%USING hnsw%')", table)}
        for name in idx:
            await conn.execute(f"DROP INDEX {name}")
        t0 = time.perf_counter()
        for tbl in (*PER_COPY, table):
            cols = await _columns(conn, tbl)
            names = ", ".join(n for n, _ in cols)
            for lo in range(have, copies, 100):  # one statement per 100 copies: progress, and no huge transaction
                hi = min(copies, lo + 100)
                await conn.execute(f"INSERT INTO {tbl} ({names}) SELECT {_select(cols, per_copy=True)}"
                                   f" FROM {tbl} s, generate_series({lo}, {hi - 1}) g WHERE s.tenant_id = 'seed'")
            print(f"  copied {tbl} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        for tbl in ONCE if have == 0 else ():
            cols = await _columns(conn, tbl)
            names = ", ".join(n for n, _ in cols)
            await conn.execute(f"INSERT INTO {tbl} ({names}) SELECT {_select(cols, per_copy=False)}"
                               f" FROM {tbl} s WHERE s.tenant_id = 'seed'")
        t["copy_s"] = round(time.perf_counter() - t0, 1)
        await conn.execute("SET maintenance_work_mem = '2GB'")
        t0 = time.perf_counter()
        for name, ddl in idx.items():
            await conn.execute(ddl)
            t[f"index_{name}_s"] = round(time.perf_counter() - t0, 1)
        t["index_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        await conn.execute("ANALYZE")
        t["analyze_s"] = round(time.perf_counter() - t0, 1)
    return t


class Profile:
    """Wall time of the query service's parts per context request (``--profile``), by wrapping them here."""

    def __init__(self, engine: Any) -> None:
        import memengine.engine.read.service as service_mod

        self.ms: dict[str, list[float]] = defaultdict(list)
        svc = engine.service
        self._wrap(svc, "_window", "window_statement")
        self._wrap(svc, "_with_content", "content_fetch")
        self._wrap(svc, "_user_memory", "user_memory")
        self._wrap(svc.memory, "tier1_parts", "thread_tier1_parts")
        self._wrap(svc.recaller, "thread_ranked", "query_recall_and_rows")
        self._wrap(svc, "_pruned_through", "prune_mark")
        self._wrap(service_mod, "relevant_rows", "relevant_rows_total")
        self._wrap(service_mod, "pruned_tail", "pruned_tail")
        svc.pool = _TimedPool(svc.pool, self)  # the service's own statements (not recall's, not Tier 1's parts)
        self.active = False

    def _wrap(self, obj: Any, attr: str, label: str) -> None:
        inner = getattr(obj, attr)

        async def timed(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return await inner(*a, **kw)
            finally:
                if self.active:
                    self.ms[label].append((time.perf_counter() - t) * 1000)

        setattr(obj, attr, timed)


class _TimedPool:
    """The pool, its ``fetch`` timed per statement (keyed by the statement's first words) while ``prof.active``."""

    def __init__(self, pool: Any, prof: Profile) -> None:
        self._pool, self._prof = pool, prof

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    async def fetch(self, sql: str, *a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return await self._pool.fetch(sql, *a, **kw)
        finally:
            if self._prof.active:
                self._prof.ms["sql " + " ".join(sql.split())[:50]].append((time.perf_counter() - t) * 1000)


async def measure(engine: Any, copies: int, requests: int, window: int, profile: bool,
                  warm: bool = True) -> dict[str, Any]:
    qs = {f: questions(json.loads((DATA / f"{f}.json").read_text())) for f in ("26", "30")}
    plan = [(f, q) for f in ("26", "30") for _c, q, _e in qs[f]]
    client = engine.client("bench")
    rnd = random.Random(7)
    threads = [f"locomo-{f}-{c}" for c in range(copies) for f in ("26", "30")]
    t0 = time.perf_counter()
    for th in threads if warm else ():  # each thread's rows read once, as a served tenant's active threads are
        await client.context(th, window=window, query=plan[rnd.randrange(len(plan))][1])
    warm_s = round(time.perf_counter() - t0, 1)
    prof = Profile(engine) if profile else None
    lat: dict[str, list[float]] = {k: [] for k in KINDS}
    took: list[float] = []
    loads: list[float] = []
    shape: dict[str, Any] = {}
    for i in range(requests + 20):
        f, q = plan[i % len(plan)]
        th = f"locomo-{f}-{rnd.randrange(copies)}"
        order = list(KINDS)
        rnd.shuffle(order)  # no kind always first after the previous request's
        for kind in order:
            if prof is not None:
                prof.active = kind.startswith("context") and i >= 20
            t = time.perf_counter()
            if kind == "recall":
                res = await client.recall(q, thread=th, k=10)
            elif kind == "recall_k100":
                res = await client.recall(q, thread=th, k=100)
            elif kind == "context_query":
                res = await client.context(th, window=window, query=q)
            elif kind == "context_no_query":
                res = await client.context(th, window=window, query="")
            else:
                res = await client.context(th, window=window)
            ms = (time.perf_counter() - t) * 1000
            if prof is not None:
                prof.active = False
            if i >= 20:  # the first 20 rounds warm prepared statements and caches
                lat[kind].append(ms)
                if kind == "recall":
                    took.append(res.took_ms)
                if kind.startswith("context") and kind not in shape:
                    shape[kind] = {"messages": len(res.messages), "tokens": res.tokens, "mode": res.mode,
                                   "user_memory_lines": (len(res.user_memory.memory_ids)
                                                         + len(res.user_memory.event_ids)) if res.user_memory else 0}
        if i % 50 == 0:
            loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {"warm_s": warm_s, "requests_each": requests,
                           "loadavg_1m": {"min": round(min(loads), 2), "max": round(max(loads), 2),
                                          "samples": [round(x, 2) for x in loads]},
                           "latency_ms": {k: summary(v) for k, v in lat.items()},
                           "recall_service_ms": summary(took), "context_shape": shape}
    s = out["latency_ms"]
    out["context_query_p95_minus_recall_p95_ms"] = round(s["context_query"]["p95"] - s["recall"]["p95"], 2)
    out["context_query_p50_minus_recall_p50_ms"] = round(s["context_query"]["p50"] - s["recall"]["p50"], 2)
    out["target_met"] = out["context_query_p95_minus_recall_p95_ms"] <= 5.0
    if prof is not None:
        out["profile_ms_per_call"] = {k: summary(v) | {"calls": len(v)} for k, v in sorted(prof.ms.items())}
    return out


async def main(stored: int, requests: int, window: int, profile: bool, warm: bool = True) -> dict[str, Any]:
    configure_logging("warning")
    emb = MiniLMEmbedder()
    settings = bench_settings(embedder="minilm")
    load0 = os.getloadavg()[0]
    async with lifespan(settings, roles={"projector", "query", "enricher"}, run_projector=False,
                        embedder=emb) as engine:
        # servers kept from an earlier run (NATS_URL / DATABASE_URL) that hold the seed: no projector started here
        if not await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'seed'"):
            for part in (engine.runner, engine.recall, engine.derived):
                await part.try_start()
            await engine.enricher.try_start()
        t0 = time.perf_counter()
        load = await build_store(engine, stored)
        load["total_s"] = round(time.perf_counter() - t0, 1)
        counts = {tbl: await engine.pool.fetchval(f"SELECT count(*) FROM {tbl} WHERE tenant_id = 'bench'")
                  for tbl in ("memory_vectors", "messages", "memory_items", "message_prune_marks")}
        print("store", counts, load, file=sys.stderr, flush=True)
        res = await measure(engine, load["copies"], requests, window, profile, warm)
    return {"bench": "context_query", "stored_turns": counts["memory_vectors"], "store": counts, "load": load,
            "window": window, "user_memory": settings.context_user_memory,
            "live_query_default": settings.context_live_query, "loadavg_at_start": round(load0, 2), **res,
            "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stored", type=int, default=20_000,
                    help="recall rows (stored turns) in the tenant; 100000 and 1000000 for the issue's figures")
    ap.add_argument("--requests", type=int, default=200, help="requests of each kind (after 20 warm-up rounds)")
    ap.add_argument("--window", type=int, default=4000, help="context window in tokens")
    ap.add_argument("--profile", action="store_true", help="also time the query service's parts per context")
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the warm-up context on every thread (kept servers already read them)")
    ap.add_argument("--json", action="store_true", help="one line of JSON")
    a = ap.parse_args()
    result = asyncio.run(main(a.stored, a.requests, a.window, a.profile, not a.no_warm))
    print(json.dumps(result, indent=None if a.json else 2))
