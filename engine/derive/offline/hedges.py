"""Hedges: whether a statement is said with doubt, and so waits in quarantine (seed 003 "工作记忆": confidence under
0.8 waits; the extractor multiplies a hedged statement's confidence by 0.6).

A hedge counts in the clause it is in, before it ("I think I'm allergic to X, so ..."), or as a bare tag after it
("I'm allergic to peanuts, I think"); a hedge in a later clause about something else ("I'm allergic to shellfish,
so warn me about dishes that might contain it") is doubt about the dish, not about the user's statement.

Pure: ``re`` only.
"""

from __future__ import annotations

import re

_HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|i think(?! (?:in|of|about)\b)|i guess|i suppose|i believe|"
    r"not sure|kind of|kinda|sort of|"
    r"i feel like|seems|i'm thinking|thinking about|considering|someday|one day)\b", re.I
)


def hedged_text(text: str) -> bool:
    """Whether ``text`` holds a hedge word anywhere (a sentence read as one statement)."""
    return _HEDGE.search(text) is not None


_HEDGE_TAG = re.compile(r"^(?:I think|I guess|I believe|I suppose|maybe|probably|perhaps|not sure|I'm not sure|"
                        r"kind of|sort of|or so)\W*$", re.I)


def hedged_clause(sentence: str, parts: list[tuple[str, bool]], i: int) -> bool:
    """Whether clause ``i`` of ``sentence`` is hedged: a hedge in it or before it ("I think I'm allergic to X, so
    ..."), or a later clause that is only a hedge ("I'm allergic to peanuts, I think"); a hedge in a later clause
    about something else ("I'm allergic to shellfish, so warn me about dishes that might contain it") is not the
    user's doubt about this statement."""
    clause = parts[i][0]
    start = sentence.find(clause)
    if _HEDGE.search(clause) or (start > 0 and _HEDGE.search(sentence[:start])):
        return True
    return any(_HEDGE_TAG.match(later) for later, _ in parts[i + 1:])
