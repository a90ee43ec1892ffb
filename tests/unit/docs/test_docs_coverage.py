"""The documentation names every CLI command and every HTTP route (issue #31: "every CLI command and every HTTP
route appears in the docs (a test compares the docs with `memengine --help` and `/openapi.json`)").

The commands are read from the typer app itself (the click group ``memengine --help`` prints, walked down to every
sub-command), the routes from the FastAPI app's OpenAPI document, built in process with no engine behind it (the
route table needs none). A command is documented when ``memengine <command path>`` appears in README.md or a page
under docs/; a route when ``<METHOD> <path template>`` does, spelled as ``/openapi.json`` spells it."""

from __future__ import annotations

import re
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer.main

ROOT = Path(__file__).resolve().parents[3]


def docs_text() -> str:
    """README.md and every Markdown page under docs/, joined."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in pages)


def cli_commands() -> list[str]:
    """Every command path of the ``memengine`` app, groups and their sub-commands included: ``["up", ...,
    "dlq", "dlq list", ...]``."""
    from memengine.engine.cli.main import app

    out: list[str] = []

    # typer ships its own click (typer._click): a group is recognised by its ``commands``, not by click's classes
    def walk(cmd: Any, prefix: str) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            if not sub.hidden:
                path = f"{prefix} {name}".strip()
                out.append(path)
                walk(sub, path)

    walk(typer.main.get_command(app), "")
    return out


def http_routes() -> list[str]:
    """Every operation of the HTTP API's OpenAPI document as ``"<METHOD> <path>"``."""
    from memengine.engine.adapters.settings import Settings
    from memengine.engine.http.auth import KeyRing
    from memengine.engine.http.server import build_app

    # build_app reads only the gateway's settings while composing the routes; nothing is served here
    app = build_app(types.SimpleNamespace(settings=Settings.from_env({})), KeyRing([]))  # type: ignore[arg-type]
    return [f"{method.upper()} {path}" for path, ops in app.openapi()["paths"].items() for method in ops]


def missing_commands(commands: Iterable[str], text: str) -> list[str]:
    """The commands ``text`` never names as ``memengine <command>`` (a longer command, ``forget-thread`` for
    ``forget``, does not count)."""
    return [c for c in commands if not re.search(rf"memengine {re.escape(c)}(?![\w-])", text)]


def missing_routes(routes: Iterable[str], text: str) -> list[str]:
    """The routes ``text`` never names as ``<METHOD> <path>`` (a longer path does not count)."""
    return [r for r in routes if not re.search(rf"{re.escape(r)}(?![\w/{{-])", text)]


def test_every_cli_command_is_documented() -> None:
    commands = cli_commands()
    assert "dlq retry" in commands and "memories promote" in commands  # the walk reaches the sub-commands
    assert missing_commands(commands, docs_text()) == []


def test_every_http_route_is_documented() -> None:
    routes = http_routes()
    assert "POST /v1/threads/{thread}/turns" in routes
    assert missing_routes(routes, docs_text()) == []


def test_the_checks_see_what_is_missing() -> None:
    text = "run `memengine forget-thread T` and `memengine dlq list`; `GET /v1/threads/{thread}/history`"
    assert missing_commands(["forget-thread", "forget", "dlq list", "dlq show"], text) == ["forget", "dlq show"]
    assert missing_routes(["GET /v1/threads/{thread}/history", "GET /v1/threads"], text) == ["GET /v1/threads"]


def test_readme_links_resolve() -> None:
    """README.md's relative links (into docs/, mostly) name files that exist: mkdocs checks the pages' links, not
    the README's, which is read on the repository's front page."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into docs/"
    assert [t for t in local if not (ROOT / t).exists()] == []
