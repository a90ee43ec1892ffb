"""Who the user lives with (issue #29 item 1): one attribute, however it is said — "I live with my parents", "I'm
still at my mum and dad's", "I moved in with my girlfriend", "I share a flat with two friends", "I live alone",
"I got my own place in Camden", "I rent a studio in Leith now" — so a new household supersedes the old one (seed
002 §2.2 "冲突的记忆 → 保留最新") while where the user lives stays its own attribute. Read from a parsed clause of
the user's (``parse_en``). Pure."""

from __future__ import annotations

from typing import Any

#: verbs of living somewhere, and of sharing a home with someone
_LIVE = {"live", "move", "share", "room", "flat", "lodge"}  # not "stay" ("staying with friends this week")
#: homes of one's own ("my own place", "a studio"), and the ways to get one
_OWN_HOME = {"place", "flat", "apartment", "house", "home", "studio", "bedsit"}
_GET = {"get", "rent", "buy", "find", "have", "move", "sign"}
#: people a household is named by, as stored: "mum and dad" are the parents
_PARENTS = {"parent", "mum", "mom", "dad", "mother", "father", "folk", "mam"}


def _who(t: Any) -> str:
    words = {t.lemma_.lower(), *(c.lemma_.lower() for c in t.children if c.dep_ == "conj")}
    return "parents" if words & _PARENTS else t.lemma_.lower()


def household(tokens: list[Any]) -> dict[str, str]:
    """``{"household": <who>}`` — ``"alone"``, ``"own home"``, ``"parents"`` or the lemma of whom the user lives
    with — when the clause of ``tokens`` (spaCy tokens) says it, else ``{}``."""
    for t in tokens:
        lemma = t.lemma_.lower()
        head = t.head.lemma_.lower()
        if t.dep_ == "pobj" and head == "with" and t.head.head.lemma_.lower() in _LIVE and t.pos_ in ("NOUN", "PROPN"):
            return {"household": _who(t)}  # "live with my parents", "moved in with Sam", "share a flat with friends"
        if lemma in ("alone", "myself", "themselves", "themself") and t.head.lemma_.lower() in ("live", "by") or \
                lemma == "own" and t.dep_ == "pobj" and head == "on" and t.head.head.lemma_.lower() == "live":
            return {"household": "alone"}  # "I live alone", "live by myself", "live on my own"
        if lemma in _OWN_HOME and t.dep_ == "dobj" and head in _GET and (
                lemma == "studio" or any(c.lower_ == "own" for c in t.children)):
            return {"household": "own home"}  # "got my own place", "rent a studio": a home of the user's own
    return {}

