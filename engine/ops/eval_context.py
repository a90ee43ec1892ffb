"""Evidence in context (issue #14 item 1): does the context an agent receives hold the turns that answer its question?

For each window W and question: the share of the question's evidence turns present in what the model would read
within W, for three assemblies at the same budget (``plan_budget(W).total``, seed 000 §4.1: W minus the 10 % margin
and the output reserve):

- ``memengine``: ``rpc.context(thread, window=W, query=<question>)`` through the client, as an agent calls it. A
  turn counts when it is a Tier-2/3 message (verbatim or condensed), named by the provenance of the Tier-1
  user-memory part (its ``event_ids``, or the source turns of its ``memory_ids`` in ``memory_item_sources``), or
  quoted by the Tier-1 message: one of its sentences, as the rolling summary quotes it
  (``engine.derive.offline.summaries.turn_sentences``: relative dates resolved) and of at least ``MIN_WORDS`` words,
  appears there verbatim (issue #27: the summary shows old turns, and only what the text really shows is credited;
  a model's abstractive summary is credited nothing).
- ``recent_only``: the newest turns of the transcript whose ``tokens_full`` sum fits the budget (a plain chat history).
- ``recall_packed``: the thread's recall hits (k = ``PACK_K``) in rank order, each turn's ``tokens_full`` packed
  greedily into the budget (a hit that does not fit is skipped, the next tried).

Reported per W as ``{"memengine": {"all", "by_category", "tokens_used", "latency_ms", "latency_ms_no_query"},
"recent_only": {...}, "recall_packed": {...}}`` (``latency_ms_no_query``: the same context request without a query,
timed right after it, for the cost of the query); fractions are means over questions (each question's |evidence in
context| / |evidence|).
"""

from __future__ import annotations

import contextlib
import re
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.summaries import turn_sentences
from memengine.engine.ops.eval_client import InProcessClient
from memengine.engine.read.context import plan_budget
from memengine.events import TurnsWithdrawn, new_event_id

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: recall hits fetched for ``recall_packed`` (the RPC's maximum): more than any window up to 8K can hold of LoCoMo
PACK_K = 100
#: what ``memengine`` is asked with: the question, no query (``query=""``), the question recorded as the thread's
#: latest user turn and no query given (``live``: the server's default, issue #27 item 2), or the thread's last user
#: turn as the query
QUERY_MODES = ("question", "none", "live", "last-user")
DEFAULT_MODES = ("question", "none", "live")
#: A turn is credited for a quoted sentence of at least this many words (or ``MIN_CJK`` CJK characters): "Thanks
#: so much!" appears in many turns, and quoting it shows none of them
MIN_WORDS = 5
MIN_CJK = 10
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def quotable(turns: Iterable[Turn]) -> dict[str, list[str]]:
    """Per turn (event id), its sentences as a summary would quote them (``turn_sentences``) that are long enough to
    tell the turn by (``MIN_WORDS``); turns with none are left out."""
    out: dict[str, list[str]] = {}
    for t in turns:
        said = [x for x in turn_sentences(t)
                if len(re.findall(r"\w+", x)) >= MIN_WORDS or len(_CJK.findall(x)) >= MIN_CJK]
        if said:
            out[t.event_id] = said
    return out


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


async def context_evidence(engine: Any, plan: Sequence[tuple[Any, ...]],
                           windows: Sequence[int], *, query_mode: str | Sequence[str] = DEFAULT_MODES,
                           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """``plan``: ``[(tenant, thread, [(category, question, evidence dia_ids)], as_of[, turns])]`` already ingested
    and projected; ``turns``: every turn's ``(event id, dia_id, tokens_full)`` oldest first (pruned turns are no longer
    in ``messages``; without it the transcript is read). Returns
    ``{"<W>": {"memengine": ..., "memengine_<mode>": ..., "recent_only": ..., "recall_packed": ...}}`` (module
    docstring), a ``memengine`` entry per mode of ``query_mode`` (``QUERY_MODES``; one name or several, ``question``
    reported as ``memengine``). ``ValueError`` for an unknown mode."""
    modes = [query_mode] if isinstance(query_mode, str) else list(query_mode)
    if not modes or any(m not in QUERY_MODES for m in modes):
        raise ValueError(f"query modes must be among {QUERY_MODES}, got {modes!r}")
    keys = {m: mode_key(m) for m in modes}
    res: dict[str, dict[str, list[tuple[int, float, int]]]] = {
        str(w): {"recent_only": [], "recall_packed": [], **{k: [] for k in keys.values()}} for w in windows}
    lat: dict[str, dict[str, list[float]]] = {str(w): {k: [] for k in keys.values()} for w in windows}
    lat0: dict[str, list[float]] = {str(w): [] for w in windows}  # the question's request again without a query
    total = sum(len(p[2]) for p in plan) * len(windows) * len(modes)
    done = 0
    for tenant, thread, qs, as_of, *given in plan:  # given: the turns' (event id, dia_id, tokens), optional
        client = InProcessClient(engine, tenant)  # not over NATS: no edge rate limit (engine.ops.eval_client)
        recs = await engine.pool.fetch(
            "SELECT seq, event_id::text AS event_id, metadata->>'dia_id' AS dia_id, tokens_full, role, user_id, text,"
            " occurred_at FROM messages WHERE tenant_id = $1 AND thread_id = $2 ORDER BY seq", tenant, thread)
        # the sentences the Tier-1 text may quote, per turn: from the plan (every turn, pruned ones too), else the
        # transcript
        said: dict[str, list[str]] = given[1] if len(given) > 1 else quotable(
            Turn(r["event_id"], r["seq"], r["role"], r["user_id"], r["text"] or "", r["occurred_at"]) for r in recs)
        # the conversation's turns oldest first, (event id, dia_id, tokens): from the ingested events when the plan
        # has them (pruned turns left ``messages``, issue #27), else from the transcript
        turns: list[tuple[str, str, int]] = (list(given[0]) if given else
                                             [(r["event_id"], r["dia_id"], int(r["tokens_full"])) for r in recs])
        dia_of = {e: d for e, d, _ in turns}
        tokens_of = {e: t for e, _, t in turns}
        newest_first = [(d, t) for _, d, t in reversed(turns)]  # a plain chat history: no pruner
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
                for mode in modes:
                    if mode == "live":
                        continue  # below: the question becomes the thread's latest user turn
                    # "none": query="" (no query at all); a query of None is the live question (issue #27 item 2)
                    query = {"question": question, "none": "", "last-user": last_user or ""}[mode]
                    t0 = time.perf_counter()
                    ctx = await client.context(thread, window=w, query=query)
                    lat[str(w)][keys[mode]].append((time.perf_counter() - t0) * 1000)
                    res[str(w)][keys[mode]].append((cat, fraction(present_in(ctx, dia_of, sources, said), ev),
                                                    ctx.tokens["total"]))
                    if mode == "question":
                        t0 = time.perf_counter()
                        await client.context(thread, window=w, query="")
                        lat0[str(w)].append((time.perf_counter() - t0) * 1000)
                    done += 1
                    if progress is not None:
                        progress(done, total)
        if "live" in modes:
            for cat, question, ev in qs:
                async with live_question(engine, client, tenant, thread, question) as seq:
                    for w in windows:
                        t0 = time.perf_counter()
                        ctx = await client.context(thread, window=w, after_seq=seq)
                        lat[str(w)][keys["live"]].append((time.perf_counter() - t0) * 1000)
                        res[str(w)][keys["live"]].append((cat, fraction(present_in(ctx, dia_of, sources, said), ev),
                                                          ctx.tokens["total"]))
                        done += 1
                        if progress is not None:
                            progress(done, total)
    out: dict[str, Any] = {}
    for key, r in res.items():
        row: dict[str, Any] = {}
        for name, rows in r.items():
            row[name] = summarize(rows, lat[key].get(name))
        if lat0[key] and "memengine" in row:
            row["memengine"]["latency_ms_no_query"] = summarize([(0, 0.0, 0)], lat0[key])["latency_ms"]
        out[key] = row
    return out


def present_in(ctx: Any, dia_of: dict[str, str], sources: dict[str, list[str]],
               said: dict[str, list[str]] | None = None) -> set[str]:
    """The dia_ids a context holds: its Tier-2/3 messages, the provenance of its user-memory part, and the turns
    (event id -> sentences, ``quotable``) one of whose sentences its Tier-1 message shows verbatim."""
    present = {dia_of.get(m.event_id, m.event_id) for m in ctx.messages if m.event_id}
    if ctx.user_memory is not None:
        present |= {dia_of.get(e, e) for e in ctx.user_memory.event_ids}
        present |= {d for m in ctx.user_memory.memory_ids for d in sources.get(m, [])}
    text = "\n".join(b.get("text", "") for m in ctx.messages if m.tier == 1 for b in m.content
                     if isinstance(b, dict))
    if said and text:
        present |= {dia_of.get(e, e) for e, xs in said.items() if any(x in text for x in xs)}
    return present


def mode_key(mode: str) -> str:
    """The result key of a query mode: ``memengine`` for ``question``, else ``memengine_<mode>`` (``-`` as ``_``)."""
    return "memengine" if mode == "question" else "memengine_" + mode.replace("-", "_")


@contextlib.asynccontextmanager
async def live_question(engine: Any, client: Any, tenant: str, thread: str, question: str) -> AsyncIterator[int]:
    """The question recorded as the thread's latest user turn for the duration (issue #27 item 2, "live" mode):
    yields its stream sequence, then withdraws it (``TurnsWithdrawn``) and folds the withdrawal, so the next
    question finds the thread as it was. Only the core read models fold it (``engine.runner.catch_up``): the recall
    rows and the enricher never see these turns (a running engine would add a recall row for it, which the context
    skips anyway: the turn is in Tier 3), so later questions are not asked of earlier ones."""
    # no user id: the thread's user (its Tier-1 user memory) stays the conversation's latest speaker, as with a query
    ack = await client.record_turn(thread, "user", question)
    try:
        await engine.runner.catch_up()
        yield ack.seq
    finally:
        await client.publish(TurnsWithdrawn(
            event_id=new_event_id(), tenant_id=tenant, thread_id=thread, occurred_at=datetime.now(UTC),
            producer="memengine-eval", event_ids=[uuid.UUID(ack.event_id)], reason="eval live question"))
        await engine.runner.catch_up()
