"""The CLI as a user runs it: a subprocess per command, against the test's servers, with --json output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memengine.engine.adapters.settings import Settings
from tests.conftest import LOCOMO_DIR

pytestmark = pytest.mark.integration


def run(settings: Settings, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home}
    proc = subprocess.run([sys.executable, "-m", "memengine.engine.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"memengine {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def test_demo_json(settings: Settings) -> None:
    out = json.loads(run(settings, "demo", "--json").stdout)
    assert out["ingest"]["published"] == out["ingest"]["events"] > 40
    assert out["threads"]["threads"][0]["thread"] == "demo-maya"
    ctx = out["context"]
    assert ctx["mode"] == "tiered" and ctx["tokens"]["total"] <= ctx["budget"]["total"]
    assert {m["tier"] for m in ctx["messages"]} == {1, 2, 3}  # Tier 1: the summary made after 30 messages
    # run twice: nothing new is published
    again = json.loads(run(settings, "demo", "--json").stdout)
    assert again["ingest"]["published"] == 0


def test_demo_human_output(settings: Settings) -> None:
    proc = run(settings, "demo")
    assert "token accounting" in proc.stdout and "Tier 3 verbatim" in proc.stdout
    assert "memengine ingest ../shared/data/locomo-dev/26.json" in proc.stdout


def test_ingest_context_history_threads_status(settings: Settings) -> None:
    path = LOCOMO_DIR / "30.json"
    if not path.exists():
        pytest.skip("LoCoMo dev data missing")
    ing = json.loads(run(settings, "ingest", str(path), "--tenant", "eval", "--json").stdout)
    assert ing["threads"] == ["locomo-30"] and ing["applied_seq"] >= ing["last_seq"]
    ctx = json.loads(run(settings, "context", "locomo-30", "--tenant", "eval", "--window", "8000", "--json").stdout)
    assert ctx["messages"][-1]["session_id"] == "s19"
    hist = json.loads(run(settings, "history", "locomo-30", "--tenant", "eval", "-n", "3", "--json").stdout)
    assert [m["content"][0]["text"][:10] for m in hist["messages"]] and len(hist["messages"]) == 3
    thr = json.loads(run(settings, "threads", "--tenant", "eval", "--json").stdout)
    assert [t["thread"] for t in thr["threads"]] == ["locomo-30"]
    st = json.loads(run(settings, "status", "--json").stdout)
    facts = st["streams"][f"{settings.stream_prefix}_FACTS"]
    assert facts["last_seq"] == ing["last_seq"]
    lags = {c["projection"]: c["lag"] for c in st["checkpoints"]}
    assert {"thread_activity", "messages", "enricher", "memory_items", "summaries", "episodes"} <= set(lags)
    assert set(lags.values()) == {0}, lags
    rec = json.loads(run(settings, "recall", "dance studio", "--thread", "locomo-30", "--tenant", "eval", "--k", "3",
                         "--json").stdout)
    assert len(rec["hits"]) == 3 and all("dance" in h["text"].lower() for h in rec["hits"][:1])
    assert rec["mode"] in ("hybrid", "fulltext") and rec["hits"][0]["source_event_ids"]


def test_errors_are_clear(settings: Settings) -> None:
    proc = run(settings, "context", "no-such-thread", check=False)
    assert proc.returncode == 1 and "unknown_thread" in proc.stderr
    proc = run(settings, "context", "bad.thread", check=False)
    assert proc.returncode == 1 and "invalid_token" in proc.stderr
    proc = run(settings, "ingest", "/nonexistent.json", check=False)
    assert proc.returncode == 2
    env_bad = run(settings, "threads", check=False)  # sanity: works with the right env
    assert env_bad.returncode == 0
