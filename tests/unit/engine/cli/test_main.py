"""The ``memengine`` app as composed by engine/cli/main.py (issue #10): every command and sub-app is registered, in
the order ``memengine --help`` listed them before the CLI was split into modules, and the command modules share
only the public names of engine/cli/options.py."""

from __future__ import annotations

import ast

import typer.main

from memengine.engine.cli.main import app
from tests.paths import ROOT

CLI = ROOT / "engine" / "cli"


def test_commands_in_help_order() -> None:
    group = typer.main.get_command(app)
    assert list(group.list_commands(None)) == [  # type: ignore[attr-defined,arg-type]
        "up", "ingest", "context", "history", "threads", "status", "demo", "summary", "episodes", "profile",
        "audit", "served", "recall", "rebuild", "verify", "forget-thread", "forget-user", "operations", "remember",
        "retract",
        "consolidate", "scratchpad", "mcp", "memories", "eval", "dlq"]
    sub = {name: list(group.commands[name].list_commands(None))  # type: ignore[attr-defined]
           for name in ("memories", "eval", "dlq")}
    assert sub == {"memories": ["promote"], "eval": ["locomo", "recall-set"], "dlq": ["list", "show", "retry", "drop"]}


def test_cli_modules_import_no_private_names() -> None:
    for path in CLI.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memengine."):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"
