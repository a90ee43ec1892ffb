"""``memengine eval recall-set``: evidence recall@k of the recall path on a multilingual recall set (issue #28 item 4).

A recall set is a directory with one sub-directory per split (``dev/``, ``test/``), each holding conversations in
LoCoMo's file shape (``engine.ops.ingest.read_locomo``: ``speaker_a``, ``speaker_b``, ``session_N``,
``session_N_date_time``) whose ``qa`` entries carry ``question``, ``evidence`` (dia_ids) and the languages:
``question_lang`` (``zh`` | ``en`` | ``mixed``: a code-switched question), ``evidence_lang`` and ``cross_lingual``
(the question's language is not the evidence's). The set shipped with the repository is ``tests/data/zh_recall``
(12 Chinese and mixed Chinese/English conversations, 215 questions, written before any tuning; see its README).

recall@k is LoCoMo's (``eval_locomo.recall_at``: share of the evidence turns among the first k distinct source
turns), averaged per split over all questions, the same-language ones and the cross-lingual ones, and per question
language. Questions are asked as of one day after the conversation's last turn (an agent asking right after it;
otherwise the time decay from today flattens every turn of a 2024 conversation to the same recency).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from memengine.engine.ops.eval_locomo import eval_tenant, recall_at, split_evidence
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read import crosslingual
from memengine.events import TurnRecorded

SPLITS = ("dev", "test")


class RecallSetError(ValueError):
    """The path is not a recall set: no ``<split>/*.json`` files, or a question without evidence or language."""


def split_files(root: Path, split: str) -> list[Path]:
    """The conversation files of ``split`` under ``root`` (sorted). Raises ``RecallSetError`` when there are none."""
    files = sorted((Path(root) / split).glob("*.json"))
    if not files:
        raise RecallSetError(f"{root}: no {split}/*.json conversation files")
    return files


def set_questions(conv: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """``[{question, evidence, lang, cross}]`` of one conversation file; ``RecallSetError`` on a malformed entry."""
    out = []
    for i, q in enumerate(conv.get("qa", [])):
        ev = split_evidence(q.get("evidence") or [])
        if not q.get("question") or not ev or q.get("question_lang") not in ("zh", "en", "mixed") \
                or not isinstance(q.get("cross_lingual"), bool):
            raise RecallSetError(
                f"{path}: qa[{i}] needs question, evidence, question_lang (zh|en|mixed), cross_lingual")
        out.append({"question": str(q["question"]), "evidence": ev, "lang": q["question_lang"],
                    "cross": q["cross_lingual"]})
    return out


def summarize_set(rows: Sequence[tuple[dict[str, Any], dict[int, float]]], ks: Sequence[int]) -> dict[str, Any]:
    """Mean recall@k over all rows and the groups ``same_language``, ``cross_lingual``, ``question_zh``,
    ``question_en``, ``question_mixed``: ``{group: {"questions": n, "recall_at": {"3": r, ...}}}`` (``recall_at``
    empty when n = 0)."""
    groups: dict[str, Callable[[dict[str, Any]], bool]] = {
        "all": lambda q: True, "same_language": lambda q: not q["cross"], "cross_lingual": lambda q: q["cross"],
        "question_zh": lambda q: q["lang"] == "zh", "question_en": lambda q: q["lang"] == "en",
        "question_mixed": lambda q: q["lang"] == "mixed"}
    out: dict[str, Any] = {}
    for name, keep in groups.items():
        sel = [r for q, r in rows if keep(q)]
        out[name] = {"questions": len(sel),
                     "recall_at": {str(k): round(sum(r[k] for r in sel) / len(sel), 4) for k in ks} if sel else {}}
    return out


async def run_recall_set(engine: Any, root: Path, splits: Sequence[str], ks: Sequence[int], *, quiet: bool = True,
                         progress: Callable[[int, int], None] | None = None,
                         misses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Ingest each conversation of each split into a fresh tenant (``eval_tenant``: named from the file; thread
    ``locomo-<stem>``), wait for the read
    models and embeddings, ask every question through ``MemoryClient.recall`` and return ``{split: summarize_set}``.
    ``misses``, when given, receives ``{split, file, question, evidence, top}`` for every question whose evidence is
    not all in the top ``min(ks)`` (for error analysis on dev). Raises ``RecallSetError`` for a malformed set."""
    kmax = max(ks)
    plan = []
    for split in splits:
        for path in split_files(root, split):
            # named from the file, as ``eval locomo`` (issue #27): ids follow from the tenant, and recall breaks
            # ties by them, so a random name could move a question across the cut-off run to run
            tenant = await eval_tenant(engine, path)
            evs = read_locomo(path, tenant)
            summary = await publish_all(engine, evs, tenant, quiet=True)
            await ensure_current(engine, quiet=quiet, target=summary["last_seq"], embed=True)
            qs = set_questions(json.loads(path.read_text(encoding="utf-8")), path)
            end = max(e.occurred_at for e in evs if isinstance(e, TurnRecorded))
            plan.append((split, path, tenant, f"locomo-{path.stem}", qs, end + timedelta(days=1)))
    # every question with the dictionary bridge: recall would answer the first ones without it while it loads
    await asyncio.to_thread(crosslingual.prepare)
    total = sum(len(p[4]) for p in plan)
    done = 0
    rows: dict[str, list[tuple[dict[str, Any], dict[int, float]]]] = {s: [] for s in splits}
    for split, path, tenant, thread, qs, as_of in plan:
        client = engine.client(tenant)
        dia_of = {str(r["event_id"]): r["dia_id"] for r in await engine.pool.fetch(
            "SELECT event_id, metadata->>'dia_id' AS dia_id FROM messages WHERE tenant_id = $1", tenant)}
        for q in qs:
            res = await client.recall(q["question"], thread=thread, k=kmax, as_of=as_of)
            hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in res.hits]
            r = {k: recall_at(hits, q["evidence"], k) for k in ks}
            rows[split].append((q, r))
            if misses is not None and r[min(ks)] < 1.0:
                misses.append({"split": split, "file": path.name, "question": q["question"],
                               "evidence": q["evidence"], "top": [h.text for h in res.hits[:min(ks)]]})
            done += 1
            if progress is not None:
                progress(done, total)
    return {s: summarize_set(rows[s], ks) for s in splits}
