"""``memengine eval locomo``: evidence recall@k of the recall path an agent uses, on LoCoMo files (issue #3 §5).

recall@k of a question = |evidence dia_ids among the first k DISTINCT source turns of the ranked hits| / |evidence|
(a hit built from several turns contributes all of them, in order, so a bigger document buys no recall), averaged
over the questions of categories 1-4 with non-empty evidence, overall and per category.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from memengine.engine.derive.offline.structures import Turn
from memengine.engine.ops.eval_client import ASKED_VIA, InProcessClient
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.events import TurnRecorded
from memengine.projections.content import message_tokens, plain_text

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def split_evidence(evidence: Iterable[str]) -> list[str]:
    """``["D8:6; D9:17", "D1:3"]`` -> ``["D8:6", "D9:17", "D1:3"]`` (distinct, in order)."""
    out: list[str] = []
    for item in evidence:
        for part in str(item).split(";"):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def distinct_sources(hits: Sequence[Sequence[str]]) -> list[str]:
    """The source turns of ranked hits, flattened in rank order, first occurrence only."""
    seen: list[str] = []
    for sources in hits:
        for s in sources:
            if s not in seen:
                seen.append(s)
    return seen


def recall_at(hits: Sequence[Sequence[str]], evidence: Sequence[str], k: int) -> float:
    """|evidence among the first k distinct source turns| / |evidence| (``evidence`` already split)."""
    ev = set(evidence)
    if not ev:
        raise ValueError("no evidence")
    top = set(distinct_sources(hits)[:k])
    return len(ev & top) / len(ev)


def percentile(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] if s else 0.0


def questions(conv: dict[str, Any]) -> list[tuple[int, str, list[str]]]:
    """``[(category, question, evidence)]`` of categories 1-4 with non-empty evidence."""
    out = []
    for q in conv.get("qa", []):
        cat = q.get("category")
        ev = split_evidence(q.get("evidence") or [])
        if cat in CATEGORIES and ev and q.get("question"):
            out.append((int(cat), str(q["question"]), ev))
    return out


def summarize(per_q: list[tuple[int, dict[int, float]]], ks: Sequence[int], latencies: list[float]) -> dict[str, Any]:
    def avg(rows: list[dict[int, float]]) -> dict[str, float]:
        return {str(k): round(sum(r[k] for r in rows) / len(rows), 4) if rows else 0.0 for k in ks}

    by_cat = {}
    for cat, name in CATEGORIES.items():
        rows = [r for c, r in per_q if c == cat]
        by_cat[name] = {"questions": len(rows), "recall_at": avg(rows)}
    return {"questions": len(per_q), "recall_at": avg([r for _, r in per_q]), "by_category": by_cat,
            "latency_ms": {"p50": round(statistics.median(latencies), 2) if latencies else 0.0,
                           "p95": round(percentile(latencies, 95), 2)}}


def engine_path(engine: Any) -> str:
    """What the eval's engine runs, for its output (issue #27 item 0: ``memengine eval`` measures the path users run,
    and an ablation says it is one)."""
    if "enricher" in engine.roles and engine.enricher.active:
        return ("as `memengine up` runs it: core, recall and derived projectors and the enricher (summaries, topics,"
                f" memories, pruning past MEMORY_MAX_MESSAGES_PER_THREAD={engine.settings.max_messages_per_thread})")
    return ("ablation: core and recall projectors only, no enricher (no summaries, memories or pruning): not the"
            " path users run")


async def eval_tenant(engine: Any, path: Path) -> str:
    """The tenant an eval of ``path`` ingests into: ``eval-<stem>-<first 8 hex digits of the file's sha256>``, or
    with ``-2``, ``-3``, ... when a run on these servers already holds turns under that name (each run starts from an
    empty tenant).

    Why not a random suffix (issue #27): every id of the run follows from the tenant (the turns' UUIDv5,
    ``read_locomo``; the memories' ids, derived from them), and the Tier-1 text shows 8-hex prefixes of them (the
    user-memory part's ``(memory 5d000355)``), which take 3 to 6 tokens: with a random tenant the Tier-1 fit, and
    with it Tier 2's room, moved by a few tokens run to run (LoCoMo 30, no query, 4K: evidence 0.325 or 0.353 for
    the same code and input). Named from the content, the same file gives the same figures on fresh servers."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    base = f"eval-{path.stem}-{digest}"
    n = 1
    while await engine.pool.fetchval("SELECT 1 FROM thread_activity WHERE tenant_id = $1 LIMIT 1",
                                     base if n == 1 else f"{base}-{n}"):
        n += 1
    return base if n == 1 else f"{base}-{n}"


async def run_eval(engine: Any, files: Sequence[Path], ks: Sequence[int], *, quiet: bool = True,
                   limit_turns: int | None = None, limit_questions: int | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   ingest_hook: Callable[[], Any] | None = None, as_of_end: bool = False,
                   contexts: Sequence[int] = (), context_query: str | Sequence[str] = "question") -> dict[str, Any]:
    """Ingest each file into a fresh tenant, wait for projections + embeddings, ask every question through
    ``MemoryClient.recall`` scoped to ``locomo-<stem>``. ``limit_turns`` / ``limit_questions`` take a slice (tests):
    questions whose evidence is not among the ingested turns are skipped then. ``as_of_end``: recall's time decay
    (seed 002 §4.1) counted from one day after the conversation's last turn instead of now (LoCoMo is from 2023,
    so from now every turn has decayed to ~0 and the re-scoring cannot change the order). ``contexts``: windows
    (tokens) for the evidence-in-context measure (``engine.ops.eval_context``, issue #14), reported as
    ``context_evidence``; ``context_query`` what the context is asked with (``eval_context.QUERY_MODES``).

    Deterministic for the same input (issue #27): the read models are current, derivation included (beside a running
    ``up``, its enricher's work is waited for), before the first question; and the eval's own answers are not
    recorded on the access trail (``engine.service.trail`` is off for the run): folded (by ``up``, or any access
    projector on the same servers), the items one question's context placed would count as just accessed and rank
    higher in the next question's user memory (``engine.read.recall``: recency from ``last_accessed_at``), so the
    measured requests would feed what they measure."""
    trail, engine.service.trail = engine.service.trail, None
    try:
        return await _run_eval(engine, files, ks, quiet=quiet, limit_turns=limit_turns,
                               limit_questions=limit_questions, progress=progress, as_of_end=as_of_end,
                               contexts=contexts, context_query=context_query)
    finally:
        engine.service.trail = trail


async def _run_eval(engine: Any, files: Sequence[Path], ks: Sequence[int], *, quiet: bool,
                    limit_turns: int | None, limit_questions: int | None,
                    progress: Callable[[int, int], None] | None, as_of_end: bool,
                    contexts: Sequence[int], context_query: str | Sequence[str]) -> dict[str, Any]:
    """``run_eval``'s body, with the access trail off."""
    kmax = max(ks)
    per_q: list[tuple[int, dict[int, float]]] = []
    lat: list[float] = []
    plan: list[tuple[str, str, list[tuple[int, str, list[str]]], Any, list[tuple[str, str, int]], list[Turn]]] = []
    for path in files:
        tenant = await eval_tenant(engine, Path(path))
        evs = read_locomo(path, tenant)
        if limit_turns is not None:
            turns = [e for e in evs if isinstance(e, TurnRecorded)][:limit_turns]
            keep = {e.event_id for e in turns}
            evs = [e for e in evs if not isinstance(e, TurnRecorded) or e.event_id in keep]
        summary = await publish_all(engine, evs, tenant, quiet=True)
        # derived: beside a running `up` its enricher derives; the contexts wait for it (issue #27: deterministic)
        await ensure_current(engine, quiet=quiet, target=summary["last_seq"], embed=True, derived=True)
        conv = json.loads(Path(path).read_text())
        dias = {str(e.metadata.get("dia_id")) for e in evs if isinstance(e, TurnRecorded)}
        qs = [q for q in questions(conv) if limit_turns is None or set(q[2]) <= dias]
        if limit_questions is not None:
            qs = qs[:limit_questions]
        end = max(e.occurred_at for e in evs if isinstance(e, TurnRecorded))
        # (event id, dia_id, tokens) of every turn, oldest first: pruned turns leave ``messages`` (issue #27)
        index = [(str(e.event_id), str(e.metadata.get("dia_id")), message_tokens(e.content))
                 for e in evs if isinstance(e, TurnRecorded)]
        # what a Tier-1 summary may quote of each turn (eval_context.quotable), pruned turns included
        said = [Turn(str(e.event_id), i, e.role, e.user_id, plain_text(e.content), e.occurred_at)
                for i, e in enumerate(ev for ev in evs if isinstance(ev, TurnRecorded))]
        plan.append((tenant, f"locomo-{Path(path).stem}", qs, end + timedelta(days=1) if as_of_end else None, index,
                     said))
    total = sum(len(p[2]) for p in plan)
    done = 0
    for tenant, thread, qs, as_of, index, _ in plan:
        client = InProcessClient(engine, tenant)  # not over NATS: the edge's rate limit is for others (issue #27)
        dia_of = {e: d for e, d, _ in index}  # pruned turns included (they left ``messages``, not recall)
        for cat, question, ev in qs:
            t0 = time.perf_counter()
            res = await client.recall(question, thread=thread, k=kmax, as_of=as_of)
            lat.append((time.perf_counter() - t0) * 1000)
            hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in res.hits]
            per_q.append((cat, {k: recall_at(hits, ev, k) for k in ks}))
            done += 1
            if progress is not None:
                progress(done, total)
    out = summarize(per_q, ks, lat)
    out["asked_via"] = ASKED_VIA
    out["engine_path"] = engine_path(engine)
    if contexts:
        from memengine.engine.ops.eval_context import context_evidence, quotable

        plan_q = [(*p[:5], quotable(p[5])) for p in plan]
        out["context_evidence"] = await context_evidence(engine, plan_q, contexts, query_mode=context_query)
    return out
