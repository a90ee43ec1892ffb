"""Which shift the user works (issue #29 item 1): one attribute, however it is said — "I'm on the night shift", "I
work nights", "I moved onto days at the hospital", "I switched to the early shift" — so a new shift supersedes the
old one (seed 002 §2.2 "冲突的记忆 → 保留最新"), as the Chinese reading's 夜班 / 白班 (``zh``) does. Read from a
parsed clause of the user's (``parse_en``): a "shift" with a part of the day before it, or "days" / "nights" as
what the user works or is on. Pure."""

from __future__ import annotations

from typing import Any

#: parts of the day a shift is named by -> the value stored
PARTS = {"night": "night", "nights": "night", "graveyard": "night", "overnight": "night", "day": "day",
         "days": "day", "early": "early", "late": "late", "morning": "morning", "evening": "evening",
         "swing": "evening", "afternoon": "afternoon", "weekend": "weekend", "weekends": "weekend"}
#: verbs that put the user on a shift ("I'm on days", "moved onto nights", "switched to days", "work nights")
_ONTO = {"be", "move", "switch", "go", "change", "work", "transfer", "swap"}


def shift(tokens: list[Any]) -> dict[str, str]:
    """``{"shift": <part of the day>}`` when the clause of ``tokens`` (spaCy tokens) names the user's shift, else
    ``{}``."""
    for t in tokens:
        if t.lemma_.lower() == "shift":
            mods = [c.lower_ for c in t.children if c.dep_ in ("amod", "compound", "nmod") and c.lower_ in PARTS]
            if mods:
                return {"shift": PARTS[mods[0]]}
        if t.lower_ in ("days", "nights", "weekends") and (
                t.dep_ == "pobj" and t.head.lower_ in ("on", "onto", "to") and t.head.head.lemma_.lower() in _ONTO
                or t.dep_ in ("npadvmod", "dobj") and t.head.lemma_.lower() == "work"):
            return {"shift": PARTS[t.lower_]}
    return {}
