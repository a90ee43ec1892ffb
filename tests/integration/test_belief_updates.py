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
from tests.integration.test_llm_path import FakeLLM, fake_llm  # noqa: F401 - the fixture

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
    assert figures["decisions_matched"] == figures["decisions"] > 0


async def test_belief_updates_llm(settings: Settings, fake_llm: FakeLLM) -> None:  # noqa: F811
    cases = load_cases()
    script_llm(fake_llm, cases)
    s = msgspec.structs.replace(settings, api_base_url=fake_llm.url, api_key="k", deriver="openai",
                                llm_model="scripted", summary_threshold=1000)
    async with lifespan(s) as engine:
        figures = await run_suite(engine, cases)
    _report("llm", figures)
    assert figures["failures"] == []
    assert figures["held_fraction"] == 1.0 and figures["stale_fraction"] == 0.0
    assert figures["decisions_matched"] == figures["decisions"] > 0
    assert "decide" in fake_llm.calls and "extract" in fake_llm.calls  # the model was asked, not the rules
