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
    proc = subprocess.run([sys.executable, "-m", "memengine.engine.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
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
    rec = json.loads(run(settings, "recall", "dance studio", "--thread", "locomo-30", "--tenant", "eval", "-n", "3",
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


def test_a_bad_status_is_refused_on_the_live_and_the_time_travel_path(settings: Settings) -> None:
    """``memories --as-of ... --status bogus`` listed nothing (exit 0) after folding the log, where the live path
    answers ``invalid_request``: both refuse it now, before any work."""
    run(settings, "demo", "--json")
    for extra in ((), ("--as-of-seq", "5"), ("--as-of", "2099-01-01T00:00:00Z")):
        proc = run(settings, "memories", "--status", "bogus", "--json", *extra, check=False)
        assert proc.returncode == 1 and "invalid_request" in proc.stderr and "status" in proc.stderr, (extra, proc)
        assert proc.stdout == ""
    listed = json.loads(run(settings, "memories", "--status", "all", "--as-of-seq", "50", "--json").stdout)
    assert listed["memories"] and listed["as_of"]  # a valid status still answers on the time-travel path


def test_one_cli_convention(settings: Settings) -> None:
    """Issue #15 item 5, as a user piping the CLI runs it: tables are TSV in full, an unknown thread is the same
    error in every command, the result count is --limit/-n (old --k kept), recall has the client's filters,
    status and operations take --tenant, and an ingest says on stderr what it does."""
    from memengine.engine.ops.ingest import SAMPLE_CONVERSATION

    ing = run(settings, "ingest", str(SAMPLE_CONVERSATION))
    assert "publishing: " in ing.stderr and " done" in ing.stderr  # periodic plain lines, not a silent minute
    assert "Loading weights" not in ing.stderr and "\x1b[" not in ing.stderr  # no bars or control codes in a log

    rows = run(settings, "threads").stdout.splitlines()  # stdout is a pipe here
    assert rows[0] == "thread\tlabel\tmessages\tsessions\tlast active"
    assert rows[1].split("\t")[:2] == ["demo-maya", "Maya: Lisbon trip and data scripts"]
    assert not any(c in "".join(rows) for c in "┃│━─")  # no rich box

    for cmd in (["context"], ["history"], ["summary"], ["episodes"]):
        bad = run(settings, *cmd, "no-such-thread", check=False)
        assert bad.returncode == 1, (cmd, bad.stdout, bad.stderr)
        assert bad.stderr.startswith("error unknown_thread: no thread 'no-such-thread'"), (cmd, bad.stderr)
        assert bad.stdout == ""
    for cmd in (["profile", "nobody"], ["memories", "--user", "nobody"], ["recall", "Lisbon", "--user", "nobody"],
                ["forget-user", "nobody", "--yes"]):
        bad = run(settings, *cmd, check=False)
        assert bad.returncode == 1, (cmd, bad.stdout, bad.stderr)
        # the last line (forget-user logs its operation first, as structured log lines)
        assert bad.stderr.splitlines()[-1].startswith("error unknown_user: "), (cmd, bad.stderr)
    assert run(settings, "forget-thread", "no-such-thread", "--yes", check=False).stderr.splitlines()[-1].startswith(
        "error unknown_thread: no thread 'no-such-thread'")
    assert "maya" in run(settings, "profile", "maya").stdout  # a known user with memories is no error
    assert "  tools: search_flights" in run(settings, "episodes", "demo-maya").stdout

    new = json.loads(run(settings, "recall", "Lisbon aisle seat", "-n", "2", "--json").stdout)
    old = json.loads(run(settings, "recall", "Lisbon aisle seat", "--k", "2", "--json").stdout)
    assert len(new["hits"]) == 2 and [h["event_id"] for h in new["hits"]] == [h["event_id"] for h in old["hits"]]
    before = json.loads(run(settings, "recall", "Lisbon", "--until", "2000-01-01T00:00:00Z", "--json").stdout)
    since = json.loads(run(settings, "recall", "Lisbon", "--since", "2026-03-02", "-n", "3", "--json").stdout)
    assert before["hits"] == [] and len(since["hits"]) == 3  # event time: the sample happened in March 2026
    bad_time = run(settings, "recall", "Lisbon", "--since", "yesterday", check=False)
    assert bad_time.returncode == 2 and "--since must be an ISO 8601 time" in bad_time.stderr

    st = json.loads(run(settings, "status", "--tenant", "default", "--json").stdout)
    assert st["tenant"]["threads"] == 1 and st["tenant"]["messages"] > 40
    assert json.loads(run(settings, "status", "--json").stdout)["tenant"] is None
    assert run(settings, "status", "--tenant", "bad.tenant", check=False).returncode == 2

    verified = json.loads(run(settings, "verify", "messages", "--json").stdout)
    ops = run(settings, "operations", "--tenant", "default").stdout.splitlines()
    assert ops[0].split("\t") == ["id", "kind", "actor", "status", "started", "owner", "scope", "detail"]
    row = ops[1].split("\t")
    assert row[0] == str(verified["operation_id"]) and row[1] == "verify" and row[3] == "ok"
    detail = json.loads(row[7])  # the whole detail: a box cut at 80 columns made it unreadable
    assert detail["ok"] is True and detail["differing"] == [] and "seconds" in detail
    listed = json.loads(run(settings, "operations", "--tenant", "someone-else", "--json").stdout)["operations"]
    assert [o["kind"] for o in listed] == ["verify"]  # engine-wide operations concern every tenant


def test_demo_on_a_fresh_machine_exits_cleanly_while_the_onnx_export_runs(settings: Settings, tmp_path) -> None:
    """A fresh machine has no exported ONNX query graph: the first engine exports it in a background thread (~8 s)
    while the demo, shorter than that, ends. The process must wait for the export rather than be torn down inside
    torch (a CI rehearsal of README command 1 aborted: "terminate called without an active exception", exit 134),
    and leave the graph, not a half-written temporary file, in the user cache."""
    from memengine.engine.embedding.models import minilm_available

    if not minilm_available():
        pytest.skip("needs the offline MiniLM embedder (memengine[embed])")
    cache = tmp_path / "cache"
    env = {**os.environ, "NATS_URL": settings.nats_url or "", "DATABASE_URL": settings.database_url or "",
           "MEMENGINE_SUBJECT_ROOT": settings.subject_root, "MEMENGINE_STREAM_PREFIX": settings.stream_prefix,
           "MEMENGINE_HOME": settings.home, "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.run([sys.executable, "-m", "memengine.engine.cli", "demo", "--json"], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = sorted(p.name for p in (cache / "memengine" / "onnx").iterdir())
    assert left and all(n.endswith(".onnx") for n in left), left
