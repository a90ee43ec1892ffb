"""Issue #30's done-when on the real servers, as a user runs it (a subprocess per command): after ``memengine demo``
and one ``memengine context`` call, ``audit <id>`` of a placed memory shows ``access_count`` >= 1 and
``last_accessed_at``, ``served <thread> --json`` lists the answer with the ids placed (and ``--seq`` shows them with
their provenance), ``rebuild access`` reproduces the access read models exactly, and forgetting the thread removes
its served records."""

from __future__ import annotations

import json

import asyncpg
import pytest

from memengine.engine.adapters.settings import Settings
from tests.integration.ops.test_cli import run

pytestmark = pytest.mark.integration


async def _access_rows(settings: Settings) -> dict[str, list[str]]:
    conn = await asyncpg.connect(settings.database_url)
    try:
        return {t: sorted(r["x"] for r in await conn.fetch(f"SELECT x::text AS x FROM {t} x"))
                for t in ("served_answers", "memory_access", "turn_access")}
    finally:
        await conn.close()


async def test_demo_context_audit_served_rebuild_forget(settings: Settings) -> None:
    run(settings, "demo", "--json")
    ctx = json.loads(run(settings, "context", "demo-maya", "--query", "Lisbon trip", "--json").stdout)
    placed_memories = ctx["user_memory"]["memory_ids"] if ctx.get("user_memory") else []
    placed_turns = [m["event_id"] for m in ctx["messages"] if m["event_id"]]
    assert placed_turns

    listing = json.loads(run(settings, "served", "demo-maya", "--json").stdout)
    answers = listing["answers"]
    assert len(answers) == 2 and {a["kind"] for a in answers} == {"context"}  # the demo's and this one
    newest = answers[0]
    assert newest["query"] == "Lisbon trip" and newest["items"] == len(placed_memories) + len(placed_turns)
    one = json.loads(run(settings, "served", "demo-maya", "--seq", str(newest["seq"]), "--json").stdout)["answer"]
    ids = [(i["kind"], i["id"]) for i in one["items"]]
    assert {i for k, i in ids if k == "turn"} >= set(placed_turns)
    assert all(i["provenance"] is not None for i in one["items"])

    assert placed_memories  # Maya's memory items, in Tier 1's user-memory part
    assert {i for k, i in ids if k == "memory"} >= set(placed_memories)
    memory = placed_memories[0]
    audit = json.loads(run(settings, "audit", memory, "--json").stdout)
    assert audit["access"]["access_count"] >= 1 and audit["access"]["last_accessed_at"]

    # seed 002 §6.2 / §7 for the user: hot memories by access_count, answers served
    user = json.loads(run(settings, "status", "--user", "maya", "--json").stdout)["user"]
    assert user["answers_served"] >= 2 and user["total_memories"] >= 1
    assert memory in {h["memory_id"] for h in user["hot_memories"]}

    before = await _access_rows(settings)
    assert before["memory_access"] and before["turn_access"]
    run(settings, "rebuild", "access", "--json")
    assert await _access_rows(settings) == before
    assert json.loads(run(settings, "verify", "access", "--json").stdout)["ok"]

    run(settings, "forget-thread", "demo-maya", "--yes", "--json")
    assert json.loads(run(settings, "served", "demo-maya", "--json").stdout)["answers"] == []
    after = await _access_rows(settings)
    assert not any(t in " ".join(after["turn_access"]) for t in placed_turns)
