"""mkdocs hook: a ``\\|`` inside a code span of a table row renders as ``|`` on the site, as it does on GitHub.

The pages are read in both places. GitHub's tables split a row on every unescaped pipe, code spans included, so the
pages write ``\\|`` there (``--format locomo\\|jsonl``); Python-Markdown's tables keep a pipe inside backticks
whole but would print the backslash. Outside code spans ``\\|`` is an ordinary escape and is left alone."""

from __future__ import annotations

import re
from typing import Any

CODE_SPAN = re.compile(r"`[^`\n]*`")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The page with ``\\|`` turned into ``|`` inside the code spans of table rows (lines starting with ``|``)."""
    return "\n".join(
        CODE_SPAN.sub(lambda m: m.group(0).replace("\\|", "|"), line) if line.lstrip().startswith("|") else line
        for line in markdown.split("\n"))
