"""Scoring of the self-statement set (``tests/data/self_statements.jsonl``, issue #18 item 5) over the pure offline
extractor; used by ``tests/unit/engine/derive/offline/test_selfstatements.py`` and ``bench/extraction.py``.

A row is *covered* when one candidate that ``extract_memories`` draws from its text, after the inbound gate
(``safety.gate``, as the enricher applies it), is active (not quarantined, so confidence >= 0.8 and no poisoning
finding), has the row's expected memory type, holds the row's key word, and reads as a third-person sentence
(starts with the subject, ends with a full stop, no first-person pronoun, no doubled word). Hedged rows
(``"hedged": true``) are scored the other way round: *held back* when no active candidate holds the key word.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memengine.engine.derive.offline import Candidate, Turn, extract_memories, gate

DATA = Path(__file__).resolve().parents[1] / "data" / "self_statements.jsonl"
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|me|mine|myself)\b")
_DOUBLED = re.compile(r"\b(\w+) \1\b", re.I)


def load_rows(path: Path = DATA) -> list[dict[str, Any]]:
    """The rows of the set: ``text``, ``class``, ``type`` (expected memory type), ``key`` (must be in the text)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def candidates(text: str, user_id: str = "u-self") -> list[Candidate]:
    """What the offline extractor makes of one user turn ``text``, gated as the enricher gates it."""
    turn = Turn(event_id="ev-1", seq=1, role="user", user_id=user_id, text=text,
                occurred_at=datetime(2026, 1, 15, 12, 0, tzinfo=UTC))
    return [gate(c, role="user", turn_text=text) for c in extract_memories([turn])]


def readable(text: str, subject: str = "User") -> bool:
    """A third-person sentence about ``subject``: no "I"/"my", no "to to", ends with a full stop, <= 200 chars."""
    return (text.startswith(subject) and text.endswith(".") and len(text) <= 200
            and not _FIRST_PERSON.search(text) and not _DOUBLED.search(text))


def covered(row: dict[str, Any]) -> bool:
    """The row became a correctly typed, readable, active memory holding its key word."""
    key = str(row["key"]).lower()
    return any(c.memory_type == row["type"] and not c.data.get("quarantined") and key in c.text.lower()
               and readable(c.text) for c in candidates(str(row["text"])))


def held_back(row: dict[str, Any]) -> bool:
    """A hedged row: no active memory holds its key word (it waits in quarantine, or nothing was drawn)."""
    key = str(row["key"]).lower()
    return not any(not c.data.get("quarantined") and key in c.text.lower() for c in candidates(str(row["text"])))


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"classes": {class: {"n", "covered", "coverage"}}, "overall": {...}, "hedged": {"n", "held_back"},
    "misses": [text, ...]}``; coverage is a fraction 0..1 rounded to 3 places."""
    classes: dict[str, dict[str, Any]] = {}
    misses: list[str] = []
    hedged_n = hedged_ok = 0
    for row in rows:
        if row.get("hedged"):
            hedged_n += 1
            hedged_ok += held_back(row)
            continue
        c = classes.setdefault(str(row["class"]), {"n": 0, "covered": 0})
        c["n"] += 1
        if covered(row):
            c["covered"] += 1
        else:
            misses.append(str(row["text"]))
    for c in classes.values():
        c["coverage"] = round(c["covered"] / c["n"], 3)
    n = sum(c["n"] for c in classes.values())
    cov = sum(c["covered"] for c in classes.values())
    return {"classes": classes, "overall": {"n": n, "covered": cov, "coverage": round(cov / max(1, n), 3)},
            "hedged": {"n": hedged_n, "held_back": hedged_ok}, "misses": misses}
