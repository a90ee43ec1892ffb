"""``memengine eval locomo`` measures the path users run and is not stopped by the engine's own limits (issue #27)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.eval_locomo import run_eval

pytestmark = pytest.mark.integration

TOPICS = ["pottery", "hiking", "violin", "sourdough", "chess", "kayaking", "astronomy", "origami", "salsa",
          "beekeeping"]


def synthetic_locomo(path: Path, *, sessions: int = 3, questions_per_turn: int = 3) -> Path:
    """A small LoCoMo-shaped conversation: two speakers, a turn per topic per session, and several questions per turn
    (each with that turn as evidence), so an eval asks many questions of a short thread."""
    conv: dict = {"speaker_a": "Ana", "speaker_b": "Ben", "qa": []}
    for s in range(1, sessions + 1):
        conv[f"session_{s}_date_time"] = f"1:0{s} pm on {s} May, 2023"
        turns = []
        for i, topic in enumerate(TOPICS):
            dia = f"D{s}:{i + 1}"
            turns.append({"speaker": "Ana" if i % 2 == 0 else "Ben", "dia_id": dia,
                          "text": f"In session {s} I spent the weekend on {topic} with my cousin number {i}."})
            conv["qa"] += [{"question": f"What did they do with {topic} in session {s}? ({q})", "answer": topic,
                            "evidence": [dia], "category": 1 + (i + q) % 4} for q in range(questions_per_turn)]
        conv[f"session_{s}"] = turns
    path.write_text(json.dumps(conv))
    return path


async def test_eval_is_not_stopped_by_the_rate_limit(settings: Settings, tmp_path: Path) -> None:
    """90 questions x (recall + recall + contexts in three modes per window) = ~900 requests of one tenant, far over
    a limit of 5/s with bursts of 5: over NATS this stopped with ``rate_limited`` (issue #27 item 4). The limit is set
    low so that the test trips it on any machine; the default (50/s, bursts of 100) trips the same way on a fast
    one. The eval completes and says how it asked."""
    path = synthetic_locomo(tmp_path / "rl.json")
    limited = msgspec.structs.replace(settings, rpc_rate=5.0, rpc_burst=5.0)
    async with lifespan(limited, roles={"projector", "query"}, run_projector=False) as engine:
        res = await run_eval(engine, [path], [5], contexts=[2000, 4000], context_query=["question", "none", "live"])
    assert res["questions"] == 90
    assert res["recall_at"]["5"] > 0.5
    assert "rate limit" in res["asked_via"] and "in-process" in res["asked_via"]
    for w in ("2000", "4000"):
        assert set(res["context_evidence"][w]) == {"memengine", "memengine_none", "memengine_live", "recent_only",
                                                   "recall_packed"}


async def test_eval_runs_the_users_path_and_finds_pruned_evidence(settings: Settings, tmp_path: Path,
                                                                  kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    """Issue #27 item 0: with the enricher on (as ``up`` runs it) the thread is pruned, and the context asked with
    the question still holds evidence that only recall's rows keep; the output says which path was measured."""
    path = synthetic_locomo(tmp_path / "pr.json", sessions=6, questions_per_turn=1)
    s = msgspec.structs.replace(settings, max_messages_per_thread=40, summary_threshold=10)
    async with lifespan(s, run_projector=False) as engine:
        res = await run_eval(engine, [path], [5], contexts=[1000], context_query=["question", "none", "live"])
        pruned = await engine.pool.fetchval("SELECT through_seq FROM message_prune_marks")
        live = await engine.pool.fetchval("SELECT count(*) FROM messages")
    assert "memengine up" in res["engine_path"]
    assert pruned is not None and live <= 40  # 60 turns, pruned
    ce = res["context_evidence"]["1000"]
    assert ce["memengine"]["all"] >= 0.9 and ce["memengine_live"]["all"] >= 0.9
    assert ce["memengine"]["all"] > ce["recent_only"]["all"]
