"""One CLI convention (issue #15 item 5): what ``memengine --help`` imports, one spelling of the result count and of
the tenant, tables as TSV when piped, progress as plain lines off a terminal, ``limit`` in tools and RPCs.

Top-level in tests/unit (cross-cutting, issue #31 item 5): the convention spans the CLI, the client's tools,
the wire requests and the progress lines."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import msgspec
import pytest
import typer.main
from typer.testing import CliRunner

from memengine.engine.cli import options
from memengine.engine.cli.main import app
from memengine.engine.client import tools
from memengine.engine.ops.progress_lines import ProgressLines, mode, said_if_slow
from memengine.engine.wire.requests import RecallRequest

#: What the engine needs and --help must not load (seconds of imports: issue #15 measured 1.6 s).
HEAVY = ("asyncpg", "nats", "faststream", "torch", "sentence_transformers", "transformers", "numpy", "openai",
         "structlog", "asyncio", "memengine.engine.bootstrap", "memengine.engine.ops.rebuild")


def loaded_after(code: str) -> list[str]:
    """The HEAVY modules in ``sys.modules`` of a fresh interpreter after running ``code``."""
    probe = (f"import sys\n{code}\n"
             f"print('HEAVY:', *(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.splitlines()[-1].split()
    assert last[0] == "HEAVY:", proc.stdout[-500:]
    return last[1:]


def test_importing_the_app_loads_no_engine() -> None:
    assert loaded_after("import memengine.engine.cli.main") == []


def test_help_loads_no_engine() -> None:
    code = ("from memengine.engine.cli.main import app\n"
            "for argv in (['--help'], ['recall', '--help'], ['dlq', '--help'], ['operations', '--help']):\n"
            "    try:\n        app(argv, prog_name='memengine')\n    except SystemExit as e:\n"
            "        assert e.code == 0, e.code")
    assert loaded_after(code) == []


def test_roles_match_the_engine() -> None:
    from memengine.engine.bootstrap import ROLES

    assert options.ROLES == ROLES


def _commands() -> dict[str, Any]:
    group: Any = typer.main.get_command(app)  # typer's vendored click: a Group has .commands
    found: dict[str, Any] = {}
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            if name == "memories":  # the sub-app's callback lists memories
                found[name] = cmd
            for sub, c in cmd.commands.items():
                found[f"{name} {sub}"] = c
        else:
            found[name] = cmd
    return found


def _option_names(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in getattr(p, "opts", [])}


#: Commands that read no tenant's data: whole-log folds (a read model is one fold of every tenant's events), the
#: servers, the evaluations (a fresh tenant per file) and dead letters (engine-wide, by consumer).
ENGINE_WIDE = {"up", "rebuild", "verify", "eval locomo", "eval recall-set", "dlq list", "dlq show", "dlq retry",
               "dlq drop"}


def test_every_command_that_reads_tenant_data_takes_tenant() -> None:
    cmds = _commands()
    missing = [n for n, c in cmds.items() if n not in ENGINE_WIDE and "--tenant" not in _option_names(c)]
    assert missing == []
    for name in ("status", "operations"):  # issue #15: these had none
        assert {"--tenant", "-t"} <= _option_names(cmds[name])


def test_result_count_is_limit_everywhere() -> None:
    for name, cmd in _commands().items():
        names = _option_names(cmd)
        assert "--top-k" not in names and "--top_k" not in names
        if "--limit" in names:
            assert "-n" in names, name
    recall = _commands()["recall"]
    assert {"--limit", "-n"} <= _option_names(recall)
    hidden = {o for p in recall.params if getattr(p, "hidden", False) for o in p.opts}
    assert hidden == {"--k"}  # the old spelling still parses, and is not advertised
    help_text = CliRunner().invoke(app, ["recall", "--help"], env={"COLUMNS": "200"}).output
    assert "--limit" in help_text and "--k " not in help_text
    for flag in ("--since", "--until", "--as-of", "--source", "--type", "--tag", "--status", "--include-expired"):
        assert flag in help_text, flag  # every filter of MemoryClient.recall


def test_limit_of_prefers_the_new_name() -> None:
    assert options.limit_of(3, None, 5) == 3
    assert options.limit_of(None, 7, 5) == 7
    assert options.limit_of(2, 7, 5) == 2
    assert options.limit_of(None, None, 5) == 5


def test_grid_piped_is_tsv_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    detail = json.dumps({"ok": False, "differing": ["memory_items"], "note": "x" * 300})
    g = options.Grid("operations", ("id", "kind", "detail"))
    g.add_row(7, "verify", detail)
    g.add_row(8, "tab\there", "line\nbreak [red]not markup[/red]")
    g.print()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "id\tkind\tdetail"
    assert lines[1].split("\t") == ["7", "verify", detail]  # nothing cut at 80 columns
    assert lines[2].split("\t") == ["8", "tab\\there", "line\\nbreak [red]not markup[/red]"]
    assert len(lines) == 3


def test_grid_titled_when_several_tables(capsys: pytest.CaptureFixture[str]) -> None:
    g = options.Grid("streams", ("stream", "messages"), titled=True)
    g.add_row("MEM_FACTS", None)
    g.print()
    assert capsys.readouterr().out == "# streams\nstream\tmessages\nMEM_FACTS\t\n"


def test_tsv_cell_escapes_losslessly() -> None:
    assert options.tsv_cell("a\\b\tc\nd\re") == "a\\\\b\\tc\\nd\\re"
    assert options.tsv_cell(None) == ""


def test_progress_lines_are_periodic() -> None:
    buf = io.StringIO()
    lines = ProgressLines("projecting", stream=buf, every=3600)
    for done in range(0, 1000, 10):
        lines.update(done, 1000)
    lines.finish(1000)
    out = buf.getvalue().splitlines()
    assert len(out) == 2  # the first update, then the end: not one line per update
    assert out[0].startswith("projecting: 0/1,000 events") and out[1].startswith("projecting: 1,000/1,000 events")
    assert out[1].endswith(" done")
    silent = io.StringIO()
    ProgressLines("x", enabled=False, stream=silent).finish(3)
    assert silent.getvalue() == ""


def test_progress_mode() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert mode(True, Tty()) == "off" and mode(True, io.StringIO()) == "off"
    assert mode(False, Tty()) == "bar" and mode(False, io.StringIO()) == "lines"


def test_model_loading_is_silenced_unless_the_user_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in options.QUIET_MODEL_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")
    options.quiet_model_loading()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"  # the "Loading weights" / download bars
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "info"  # set by the user: kept


def test_recall_request_limit_and_its_old_name() -> None:
    dec = msgspec.json.Decoder(RecallRequest)
    assert dec.decode(b'{"query": "q", "limit": 3}').limit == 3
    old = dec.decode(b'{"query": "q", "k": 4}')
    assert old.k == 4 and old.limit is None
    with pytest.raises(msgspec.ValidationError):
        dec.decode(b'{"query": "q", "limit": 101}')


def test_tools_name_the_count_limit() -> None:
    for tool in tools.TOOLS:
        props = tool["function"]["parameters"]["properties"]
        assert "top_k" not in props and "limit" in props, tool["function"]["name"]


async def test_a_slow_step_is_named_a_quick_one_is_not() -> None:
    import asyncio

    async def step(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "ok"

    quick, slow = io.StringIO(), io.StringIO()
    assert await said_if_slow(step(0), "deriving memory", enabled=True, after=5.0, stream=quick) == "ok"
    assert quick.getvalue() == ""  # a read command with nothing to derive stays silent
    assert await said_if_slow(step(0.05), "embedding turns", enabled=True, after=0.0, stream=slow) == "ok"
    first, last = slow.getvalue().splitlines()
    assert first == "embedding turns" and last.startswith("embedding turns: done in ")


#: Client parameters that are no filter (read-your-writes waits), and the CLI's singular spelling of list filters.
NOT_FILTERS = {"self", "after_seq", "wait", "k"}
SPELLING = {"types": "--type", "tags": "--tag", "sources": "--source", "status": "--status"}


@pytest.mark.parametrize("method", ["context", "history", "threads", "memories", "profile", "recall", "summary",
                                    "episodes"])
def test_every_client_filter_is_a_cli_option(method: str) -> None:
    import inspect

    from memengine.engine.client.memory_client import MemoryClient

    cmd = _commands()[method]
    names = _option_names(cmd) | {f"<{p.name}>" for p in cmd.params if not getattr(p, "opts", [""])[0].startswith("-")}
    for name, p in inspect.signature(getattr(MemoryClient, method)).parameters.items():
        if name in NOT_FILTERS or p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue  # positional: the command's argument (thread, query, user)
        flag = SPELLING.get(name, "--" + name.replace("_", "-"))
        assert flag in names, f"MemoryClient.{method}({name}=...) has no {flag} in `memengine {method}`"
