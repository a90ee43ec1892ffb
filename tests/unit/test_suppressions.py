"""Every lint or type suppression in the repository says why (issue #31 item 3).

A ``# noqa: CODE`` must be followed by `` - reason``. Unused ``noqa`` markers are ruff's RUF100 (selected in
pyproject.toml); this test covers what ruff does not check: that each one says why.
"""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", ".git", "clients", ".typecheck", "node_modules"}
NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)", re.I)
NOQA_OK = re.compile(r"^: [A-Z]+\d+(?:,\s*[A-Z]+\d+)* - \S")


def _comments(path: Path) -> list[tuple[int, str]]:
    with path.open("rb") as f:
        return [(t.start[0], t.string) for t in tokenize.tokenize(f.readline) if t.type == tokenize.COMMENT]


def _python_files() -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if not SKIP.intersection(p.relative_to(ROOT).parts)]


def test_every_noqa_says_why() -> None:
    bad = [f"{p.relative_to(ROOT)}:{n}: {c}" for p in _python_files() for n, c in _comments(p)
           if (m := NOQA.search(c)) and not NOQA_OK.match(m["rest"])]
    assert not bad, "a noqa needs its codes and ' - reason':\n" + "\n".join(bad)

