"""Every lint or type suppression in the repository says why (issue #31 item 3).

A ``# noqa: CODE`` must be followed by `` - reason``; a ``# type: ignore[code]`` in the three type-checked packages
(``engine``, ``events``, ``projections``) must name its code and be followed by ``# reason``. Unused ``noqa``
markers are ruff's RUF100 (selected in pyproject.toml) and unused ignores mypy's (strict); this test covers what
neither checks: that each one says why.
"""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", ".git", "clients", ".typecheck", "node_modules"}
NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)", re.I)
NOQA_OK = re.compile(r"^: [A-Z]+\d+(?:,\s*[A-Z]+\d+)* - \S")
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)")
IGNORE_OK = re.compile(r"^\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\S")
TYPED = ("engine", "events", "projections")


def _comments(path: Path) -> list[tuple[int, str]]:
    with path.open("rb") as f:
        return [(t.start[0], t.string) for t in tokenize.tokenize(f.readline) if t.type == tokenize.COMMENT]


def _python_files() -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if not SKIP.intersection(p.relative_to(ROOT).parts)]


def test_every_noqa_says_why() -> None:
    bad = [f"{p.relative_to(ROOT)}:{n}: {c}" for p in _python_files() for n, c in _comments(p)
           if (m := NOQA.search(c)) and not NOQA_OK.match(m["rest"])]
    assert not bad, "a noqa needs its codes and ' - reason':\n" + "\n".join(bad)



def test_every_type_ignore_in_the_typed_packages_says_why() -> None:
    bad = [f"{p.relative_to(ROOT)}:{n}: {c}" for p in _python_files() if p.relative_to(ROOT).parts[0] in TYPED
           for n, c in _comments(p) if (m := IGNORE.search(c)) and not IGNORE_OK.match(m["rest"])]
    assert not bad, "a type: ignore needs its [code] and '# reason':\n" + "\n".join(bad)
