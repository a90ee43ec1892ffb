"""Evidence in context (issue #14 item 1): does the context an agent receives hold the turns that answer its question?

For each window W and question: the share of the question's evidence turns present in what the model would read
within W, for three assemblies at the same budget (``plan_budget(W).total``, seed 000 §4.1: W minus the 10 % margin
and the output reserve):

- ``memengine``: ``rpc.context(thread, window=W, query=<question>)`` through the client, as an agent calls it. A
  turn counts when it is a Tier-2/3 message (verbatim or condensed) or named by the provenance of the Tier-1
  user-memory part (its ``event_ids``, or the source turns of its ``memory_ids`` in ``memory_item_sources``).
- ``recent_only``: the newest turns of the transcript whose ``tokens_full`` sum fits the budget (a plain chat history).
- ``recall_packed``: the thread's recall hits (k = ``PACK_K``) in rank order, each turn's ``tokens_full`` packed
  greedily into the budget (a hit that does not fit is skipped, the next tried).

Reported per W as ``{"memengine": {"all", "by_category", "tokens_used", "latency_ms", "latency_ms_no_query"},
"recent_only": {...}, "recall_packed": {...}}`` (``latency_ms_no_query``: the same context request without a query,
timed right after it, for the cost of the query); fractions are means over questions (each question's |evidence in context| / |evidence|).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memengine.engine.ops.eval_client import InProcessClient
from memengine.engine.read.context import plan_budget

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: recall hits fetched for ``recall_packed`` (the RPC's maximum): more than any window up to 8K can hold of LoCoMo
PACK_K = 100
#: what ``memengine`` is asked with: the question (default), nothing (today's no-query context), or the thread's
#: last user turn (what a server-side default query would use)
QUERY_MODES = ("question", "none", "last-user")


def fraction(present: set[str], evidence: Sequence[str]) -> float:
    """|evidence ∩ present| / |evidence|; ``ValueError`` for empty evidence."""
    if not evidence:
        raise ValueError("no evidence")
    return len(set(evidence) & present) / len(set(evidence))


def recent_only(turns_newest_first: Iterable[tuple[str, int]], budget: int) -> tuple[set[str], int]:
    """The newest turns ``(dia_id, tokens)`` whose sum fits ``budget``: ``(dia_ids, tokens used)``."""
    out: set[str] = set()
    used = 0
    for dia, tokens in turns_newest_first:
        if used + tokens > budget:
            break
        out.add(dia)
        used += tokens
    return out, used


def pack(ranked: Iterable[tuple[str, int]], budget: int) -> tuple[set[str], int]:
    """Greedy packing of ranked turns ``(dia_id, tokens)`` into ``budget``: a turn that does not fit is skipped."""
    out: set[str] = set()
    used = 0
    for dia, tokens in ranked:
        if dia in out or used + tokens > budget:
            continue
        out.add(dia)
        used += tokens
    return out, used


def summarize(rows: list[tuple[int, float, int]], latencies: list[float] | None = None) -> dict[str, Any]:
    """``rows`` of ``(category, fraction, tokens)`` -> ``{"all", "by_category", "tokens_used"}`` (+ latency);
    a category without questions is ``None`` (conversation 30 has no open-domain question)."""
    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 4) if xs else None

    out: dict[str, Any] = {
        "all": mean([f for _, f, _ in rows]) or 0.0,
        "by_category": {name: mean([f for c, f, _ in rows if c == cat]) for cat, name in CATEGORIES.items()},
        "tokens_used": round(sum(t for _, _, t in rows) / len(rows), 1) if rows else 0.0}
    if latencies:
        s = sorted(latencies)
        out["latency_ms"] = {"p50": round(statistics.median(s), 2),
                             "p95": round(s[min(len(s) - 1, int(0.95 * len(s)))], 2)}
    return out


async def context_evidence(engine: Any, plan: Sequence[tuple[str, str, list[tuple[int, str, list[str]]], Any]],
                           windows: Sequence[int], *, query_mode: str = "question",
                           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """``plan``: ``[(tenant, thread, [(category, question, evidence dia_ids)], as_of)]`` already ingested and
    projected. Returns ``{"<W>": {"memengine": ..., "recent_only": ..., "recall_packed": ...}}`` (module docstring).
    ``ValueError`` for an unknown ``query_mode``."""
    if query_mode not in QUERY_MODES:
        raise ValueError(f"query mode must be one of {QUERY_MODES}, got {query_mode!r}")
    res: dict[str, dict[str, list[tuple[int, float, int]]]] = {
        str(w): {"memengine": [], "recent_only": [], "recall_packed": []} for w in windows}
    lat: dict[str, list[float]] = {str(w): [] for w in windows}
    lat0: dict[str, list[float]] = {str(w): [] for w in windows}  # the same request without a query, paired
    total = sum(len(p[2]) for p in plan) * len(windows)
    done = 0
    for tenant, thread, qs, as_of in plan:
        client = InProcessClient(engine, tenant)  # not over NATS: no edge rate limit (engine.ops.eval_client)
        recs = await engine.pool.fetch(
            "SELECT event_id::text AS event_id, metadata->>'dia_id' AS dia_id, tokens_full, role, text"
            " FROM messages WHERE tenant_id = $1 AND thread_id = $2 ORDER BY seq",
            tenant, thread)
        dia_of = {r["event_id"]: r["dia_id"] for r in recs}
        tokens_of = {r["event_id"]: int(r["tokens_full"]) for r in recs}
        newest_first = [(r["dia_id"], int(r["tokens_full"])) for r in reversed(recs)]
        last_user = next((r["text"] for r in reversed(recs) if r["role"] == "user"), None)
        sources: dict[str, list[str]] = {}
        for r in await engine.pool.fetch(
                "SELECT memory_id, array_agg(source_event_id::text) AS ev FROM memory_item_sources"
                " WHERE tenant_id = $1 GROUP BY memory_id", tenant):
            sources[r["memory_id"]] = [dia_of.get(e, e) for e in r["ev"]]
        for cat, question, ev in qs:
            hits = await client.recall(question, thread=thread, k=PACK_K, as_of=as_of)
            ranked = [(dia_of.get(e, e), tokens_of.get(e, 0)) for h in hits.hits for e in h.source_event_ids]
            for w in windows:
                budget = plan_budget(w).total
                seen, used = recent_only(newest_first, budget)
                res[str(w)]["recent_only"].append((cat, fraction(seen, ev), used))
                seen, used = pack(ranked, budget)
                res[str(w)]["recall_packed"].append((cat, fraction(seen, ev), used))
                query = {"question": question, "none": None, "last-user": last_user}[query_mode]
                t0 = time.perf_counter()
                ctx = await client.context(thread, window=w, query=query)
                lat[str(w)].append((time.perf_counter() - t0) * 1000)
                present = {dia_of.get(m.event_id, m.event_id) for m in ctx.messages if m.event_id}
                if ctx.user_memory is not None:
                    present |= {dia_of.get(e, e) for e in ctx.user_memory.event_ids}
                    present |= {d for m in ctx.user_memory.memory_ids for d in sources.get(m, [])}
                res[str(w)]["memengine"].append((cat, fraction(present, ev), ctx.tokens["total"]))
                if query is not None:
                    t0 = time.perf_counter()
                    await client.context(thread, window=w)
                    lat0[str(w)].append((time.perf_counter() - t0) * 1000)
                done += 1
                if progress is not None:
                    progress(done, total)
    out: dict[str, Any] = {}
    for key, r in res.items():
        me = summarize(r["memengine"], lat[key])
        if lat0[key]:
            me["latency_ms_no_query"] = summarize([(0, 0.0, 0)], lat0[key])["latency_ms"]
        out[key] = {"memengine": me, "recent_only": summarize(r["recent_only"]),
                  "recall_packed": summarize(r["recall_packed"])}
    return out
