"""The belief-update suite (issue #15 item 3) over ``tests/data/belief_updates.jsonl``, run against a live engine.

Each line is a case: a user, and steps run in order through the normal write paths:

- ``say`` (+ ``session``): a user turn (``record_turn``); ``llm`` is what the scripted model extracts from it;
- ``remember`` (+ ``type``, ``priority``): an explicit ``MemoryAsserted`` (the CLI's ``remember``);
- ``retract`` (a text the active item holds) + ``reason``; ``end_session``;
- ``expect`` on a memory-producing step: the merge decision the derived item must record (add, merge, replace =
  supersede, keep_both, ignore), ``target`` a text the item it acts on holds (a supersede is then checked in
  ``audit`` both ways: the new item lists the old under ``supersedes``, the old the new under ``superseded_by``);
- ``check``: the user's active beliefs at that point of the log (with ``as_of_days``: at now + that many days, for
  lifetimes): ``active`` texts that must each be held by an active item, ``stale`` texts no active item may hold,
  ``count`` {text: how many active items hold it}, ``profile_has`` / ``profile_lacks`` texts of MEMORY.md + USER.md.
  Each such point is asked twice: live when the run reaches it, and after the whole suite by time travel to the
  point's facts sequence (``--as-of-seq``: ``engine.ops.rebuild.as_of_pool``), so the superseded values stay
  answerable as they were.

``run_suite`` returns the figures: held = expected beliefs held / expected; stale = stale beliefs still active /
stale beliefs listed; decisions that matched; and every failure in words. ``script_llm`` turns the same file into the
answers of ``tests.integration.derive.test_llm_path.FakeLLM`` (extraction per turn, the decision per new memory text),
so the LLM deriver is run through the enricher's model path on the same cases.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memengine.engine.bootstrap import Engine
from memengine.engine.ops import rebuild as rb
from memengine.engine.read.memories import MemoryQueries
from memengine.engine.wire.requests import MemoriesRequest
from memengine.projections.registry import DERIVED_PROJECTIONS

DATA = Path(__file__).resolve().parents[1] / "data" / "belief_updates.jsonl"


async def derived_caught_up(engine: Engine, facts_seq: int, timeout: float = 120) -> None:
    """Wait until the enricher has passed ``facts_seq`` and every derived projection has folded all it published.

    In that order: the enricher publishes before it advances its checkpoint, so once the checkpoint is past the
    fact, the derived stream's end read *then* covers what the fact derived (reading the end first could miss an
    event published between the two reads, and return before it is folded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    names = [p.name for p in DERIVED_PROJECTIONS]
    while (await engine.pool.fetchval("SELECT last_seq FROM projection_checkpoints WHERE projection = 'enricher'")
           or 0) < facts_seq:
        assert loop.time() < deadline, f"enricher not past {facts_seq}"
        await asyncio.sleep(0.02)
    end = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
    while (await engine.pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints WHERE projection = ANY($1)",
                                      names) or 0) < end:
        assert loop.time() < deadline, f"derived projections not past {end}"
        await asyncio.sleep(0.02)


def load_cases(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Figures:
    expected: int = 0
    held: int = 0
    stale_listed: int = 0
    stale_active: int = 0
    decisions: int = 0
    decisions_matched: int = 0
    failures: list[str] = field(default_factory=list)
    #: (tenant, user, facts seq, check, where) of each point, asked again by time travel at the end
    points: list[tuple[str, str, int, dict[str, Any], str]] = field(default_factory=list)
    as_of_seq_checked: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"cases": None, "expected_beliefs": self.expected, "held": self.held,
                "held_fraction": round(self.held / max(1, self.expected), 3),
                "stale_listed": self.stale_listed, "stale_active": self.stale_active,
                "stale_fraction": round(self.stale_active / max(1, self.stale_listed), 3),
                "decisions": self.decisions, "decisions_matched": self.decisions_matched,
                "as_of_seq_points": self.as_of_seq_checked, "failures": self.failures}


def script_llm(llm: Any, cases: list[dict[str, Any]]) -> None:
    """Make ``FakeLLM`` answer as the file says: a turn's ``llm`` memory, and the ``expect`` / ``target`` decision
    for the memory text it is asked about (``replace`` answered as ``supersede`` with the target's id)."""
    extract: dict[str, list[dict[str, object]]] = {}
    decide: dict[str, tuple[str, str | None]] = {}
    for case in cases:
        for st in case["steps"]:
            if "say" in st and st.get("llm"):
                extract[st["say"]] = [{**st["llm"], "importance": 0.8, "confidence": 0.95, "priority": "PERMANENT"}]
            text = st["llm"]["text"] if "say" in st and st.get("llm") else st.get("remember")
            if text and "expect" in st:
                decide[text] = (st["expect"], st.get("target"))

    def extract_for(message: str) -> list[dict[str, object]]:
        return extract.get(message.split(": ", 1)[-1], [])

    def decide_for(body: dict[str, Any]) -> dict[str, object]:
        action, target = decide.get(body["new"]["text"], ("add", None))
        ids = [e["id"] for e in body["existing"] if target and target.lower() in e["text"].lower()]
        return {"action": "supersede" if action == "replace" else action, "target_ids": ids, "reason": "scripted"}

    llm.extract_for, llm.decide_for = extract_for, decide_for


async def _active(engine: Engine, tenant: str, user: str, as_of: datetime | None = None) -> list[dict[str, Any]]:
    got = await engine.client(tenant).memories(user=user, as_of=as_of)
    return [{"memory_id": m.memory_id, "text": m.text} for m in got.memories]


async def _decision(engine: Engine, tenant: str, event_id: str) -> tuple[str | None, str | None]:
    row = await engine.pool.fetchrow(
        "SELECT action, memory_id FROM memory_item_sources WHERE tenant_id = $1 AND source_event_id = $2::uuid"
        " ORDER BY memory_id LIMIT 1", tenant, event_id)
    return (row["action"], row["memory_id"]) if row else (None, None)


async def _check_supersede(engine: Engine, tenant: str, new_id: str, target: str, where: str, fig: Figures) -> None:
    client = engine.client(tenant)
    new = await client.audit(new_id)
    olds = [ln for ln in new.supersedes if target.lower() in (ln.text or "").lower()]
    if not olds:
        fig.failures.append(f"{where}: audit of {new_id} lists no superseded item holding {target!r}")
        return
    old = await client.audit(olds[0].memory_id)
    if old.memory.status != "superseded" or old.memory.invalid_at is None or old.memory.superseded_by != new_id:
        fig.failures.append(f"{where}: {olds[0].memory_id} is {old.memory.status}, superseded_by "
                            f"{old.memory.superseded_by}")
    if new_id not in [ln.memory_id for ln in old.superseded_by]:
        fig.failures.append(f"{where}: audit of {olds[0].memory_id} does not name {new_id} under superseded_by")


async def _check_as_of_seq(engine: Engine, point: tuple[str, str, int, dict[str, Any], str], fig: Figures) -> None:
    """A point's ``active`` / ``stale`` expectations against the log folded to its facts sequence."""
    tenant, user, seq, spec, where = point
    at = await rb.resolve_as_of(engine, seq=seq)
    async with rb.as_of_pool(engine, at) as pool:
        queries = MemoryQueries(pool)
        queries.clock = at.at  # validity judged at the point, as a reader then would have
        got = await queries.memories(MemoriesRequest(tenant=tenant, user=user))
    active = [m["text"].lower() for m in got["memories"]]
    fig.as_of_seq_checked += 1
    fig.failures.extend(f"{where} as of seq {seq}: {t!r} not held; active: {active}" for t in spec.get("active", [])
                        if not any(t.lower() in a for a in active))
    fig.failures.extend(f"{where} as of seq {seq}: stale {t!r} active: {active}" for t in spec.get("stale", [])
                        if any(t.lower() in a for a in active))


async def _check(engine: Engine, tenant: str, user: str, spec: dict[str, Any], where: str, fig: Figures) -> None:
    as_of = datetime.now(UTC) + timedelta(days=spec["as_of_days"]) if "as_of_days" in spec else None
    active = [m["text"].lower() for m in await _active(engine, tenant, user, as_of)]
    for text in spec.get("active", []):
        fig.expected += 1
        if any(text.lower() in a for a in active):
            fig.held += 1
        else:
            fig.failures.append(f"{where}: {text!r} not held; active: {active}")
    for text in spec.get("stale", []):
        fig.stale_listed += 1
        if any(text.lower() in a for a in active):
            fig.stale_active += 1
            fig.failures.append(f"{where}: stale {text!r} still active: {active}")
    for text, n in spec.get("count", {}).items():
        if sum(text.lower() in a for a in active) != n:
            fig.failures.append(f"{where}: {n} active item(s) should hold {text!r}: {active}")
    if "profile_has" in spec or "profile_lacks" in spec:
        files = (await engine.client(tenant).profile(user)).files
        profile = "\n".join(files.values()).lower()
        fig.failures.extend(f"{where}: profile lacks {t!r}" for t in spec.get("profile_has", [])
                            if t.lower() not in profile)
        fig.failures.extend(f"{where}: profile still says {t!r}" for t in spec.get("profile_lacks", [])
                            if t.lower() in profile)


async def run_case(engine: Engine, case: dict[str, Any], tenant: str, fig: Figures) -> None:
    client = engine.client(tenant)
    user, thread = case["user"], f"belief-{case['id']}"
    last_seq = 0
    for n, st in enumerate(case["steps"]):
        where = f"{case['id']} step {n}"
        if "check" in st:
            await _check(engine, tenant, user, st["check"], where, fig)
            if "as_of_days" not in st["check"] and last_seq:
                fig.points.append((tenant, user, last_seq, st["check"], where))
            continue
        if "say" in st:
            ack = await client.record_turn(thread, "user", st["say"], user_id=user, session_id=st.get("session"))
        elif "remember" in st:
            ack = await client.remember(st["remember"], user=user, memory_type=st.get("type", "FACT"),
                                        priority=st.get("priority"))
        elif "retract" in st:
            items = [m for m in await _active(engine, tenant, user) if st["retract"].lower() in m["text"].lower()]
            if len(items) != 1:
                fig.failures.append(f"{where}: {len(items)} active items hold {st['retract']!r}")
                continue
            ack = await client.retract(items[0]["memory_id"], reason=st.get("reason"), user=user)
            last_seq = ack.seq
            await derived_caught_up(engine, ack.seq)
            chain = await client.audit(items[0]["memory_id"])
            if chain.memory.status != "retracted" or not any(
                    d.action == "retract" and d.reason == st.get("reason") for d in chain.derived_events):
                fig.failures.append(f"{where}: audit shows no retraction with reason {st.get('reason')!r}")
            continue
        elif "end_session" in st:
            ack = await client.end_session(thread, st["end_session"], user_id=user)
        else:
            raise ValueError(f"{where}: unknown step {st}")
        last_seq = ack.seq
        await derived_caught_up(engine, ack.seq)
        if "expect" not in st:
            continue
        fig.decisions += 1
        action, memory_id = await _decision(engine, tenant, ack.event_id)
        if action == st["expect"]:
            fig.decisions_matched += 1
        else:
            fig.failures.append(f"{where}: decision {action}, expected {st['expect']}")
        if action == "replace" and memory_id and st.get("target"):
            await _check_supersede(engine, tenant, memory_id, st["target"], where, fig)


async def run_suite(engine: Engine, cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every case in its own tenant (so two cases may reuse a user name); the figures as ``Figures.as_dict``."""
    cases = cases if cases is not None else load_cases()
    fig = Figures()
    for i, case in enumerate(cases):
        await run_case(engine, case, f"belief{i}", fig)
    for point in fig.points:  # later cases wrote more facts since: each point is an earlier state of the log
        await _check_as_of_seq(engine, point, fig)
    return {**fig.as_dict(), "cases": len(cases)}
