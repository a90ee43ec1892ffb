"""The belief-update suite (issue #15 item 3, ``tests/integration/belief_suite.py``) with the offline deriver and
with the LLM deriver against a scripted OpenAI-compatible server: every expected belief held, no stale belief active,
every merge decision as the file expects, supersedes visible in ``audit`` both ways, the profile saying the new value
only. ``BELIEF_REPORT=<path>`` writes the figures of each run there (JSON lines)."""

from __future__ import annotations

import json
import os

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from tests.integration.belief_suite import load_cases, run_suite, script_llm
from tests.integration.derive.test_llm_path import FakeLLM, fake_llm  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


def _report(deriver: str, figures: dict[str, object]) -> None:
    path = os.environ.get("BELIEF_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"deriver": deriver, **figures}) + "\n")


async def test_belief_updates_offline(engine: Engine) -> None:
    figures = await run_suite(engine)
    _report("offline", figures)
    assert figures["failures"] == []
    assert figures["held_fraction"] == 1.0 and figures["stale_fraction"] == 0.0
    assert figures["decisions_matched"] == figures["decisions"] > 0 and figures["as_of_seq_points"] > 10


async def test_belief_updates_llm(settings: Settings, fake_llm: FakeLLM) -> None:  # noqa: F811 - the parameter is the imported fixture
    cases = load_cases()
    script_llm(fake_llm, cases)
    s = msgspec.structs.replace(settings, api_base_url=fake_llm.url, api_key="k", deriver="openai",
                                llm_model="scripted", summary_threshold=1000)
    async with lifespan(s) as engine:
        figures = await run_suite(engine, cases)
    _report("llm", figures)
    assert figures["failures"] == []
    assert figures["held_fraction"] == 1.0 and figures["stale_fraction"] == 0.0
    assert figures["decisions_matched"] == figures["decisions"] > 0 and figures["as_of_seq_points"] > 10
    assert "decide" in fake_llm.calls and "extract" in fake_llm.calls  # the model was asked, not the rules


def test_cli_remember_supersedes_and_audit_shows_both_ways(settings: Settings) -> None:
    """Issue #15 done-when, as a new user types it: two ``remember`` calls leave one active item (window) and one
    superseded (aisle); ``profile maya`` says window only; ``audit`` of either names the other; a retraction's
    ``--reason`` is in its audit."""
    from tests.integration.ops.test_cli import run

    s = msgspec.structs.replace(settings, embedder="none")
    aisle = json.loads(run(s, "remember", "Maya prefers aisle seats", "--user", "maya", "--json").stdout)
    window = json.loads(run(s, "remember", "Maya prefers window seats", "--user", "maya", "--json").stdout)
    assert (aisle["decision"], window["decision"]) == ("add", "replace")
    items = json.loads(run(s, "memories", "--user", "maya", "--status", "all", "--json").stdout)["memories"]
    # no --type: the CLI infers PREFERENCE from "prefers" (the "one active PREFERENCE, one superseded")
    assert {(m["text"], m["type"], m["status"]) for m in items} == {
        ("Maya prefers window seats", "PREFERENCE", "active"), ("Maya prefers aisle seats", "PREFERENCE", "superseded")}
    listed = run(s, "memories", "--user", "maya", "--status", "all").stdout  # piped: TSV with a status column
    rows = [ln.split("\t") for ln in listed.splitlines()]
    assert rows[0][:4] == ["memory_id", "user", "type", "status"]
    assert {(r[3], r[4]) for r in rows[1:]} == {("active", "Maya prefers window seats"),
                                                ("superseded", "Maya prefers aisle seats")}
    profile = run(s, "profile", "maya").stdout
    assert "window seats" in profile and "aisle" not in profile
    old = " ".join(run(s, "audit", aisle["memory_id"]).stdout.split())  # tables wrap at the terminal width
    assert f"superseded by (supersedes) {window['memory_id']}" in old and "prefers:seat changed" in old
    new = json.loads(run(s, "audit", window["memory_id"], "--json").stdout)
    assert [ln["memory_id"] for ln in new["supersedes"]] == [aisle["memory_id"]]
    run(s, "retract", window["memory_id"], "--reason", "flies business now", "--json")
    assert "decision retract: flies business now" in " ".join(run(s, "audit", window["memory_id"]).stdout.split())
