"""The user's daily schedule (issue #29 item 1): which shift they work, when they go to bed, when they get up, how
long their commute takes. Each is one attribute, however it is said — "I'm on the night shift", "I work nights",
"I switched to the early shift"; "I go to bed around midnight", "I'm asleep by ten these days"; "I usually wake up
at 7", "I'm up at 5:30 now"; "my commute is 20 minutes", "it takes me 55 minutes to get in" — so a new value
supersedes the old one (seed 002 §2.2 "冲突的记忆 → 保留最新"), as the Chinese reading's 夜班 / 白班 (``zh``) does.
Read from a parsed clause of the user's (``parse_en``). Pure."""

from __future__ import annotations

import re
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


#: prepositions that put a time on a doing ("at 7", "by ten", "around midnight", "before six")
_AT = {"at", "by", "around", "about", "before", "after", "till", "until"}
_TIME = re.compile(r"^(?:\d{1,2}(?:[:.]\d{2})?(?:am|pm)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                   r"twelve|midnight|noon|half|quarter|dawn)$", re.I)
#: ways to get from home to work: "it takes me 55 minutes to get in / to get to work / to cycle in"
_TRAVEL = {"get", "commute", "travel", "drive", "cycle", "walk", "ride"}


def clock(t: Any) -> bool:
    """Whether token ``t`` is a time of day after "at" / "by" / "around" ... ("at 7", "by ten"): no quantity or age."""
    return _TIME.match(t.text) is not None and (t.dep_ == "pobj" and t.head.lower_ in _AT or t.dep_ in (
        "dobj", "npadvmod") and t.head.pos_ == "VERB" and any(  # "turn in around 11": "around" an advmod
        c.dep_ in ("advmod", "quantmod") and c.lower_ in ("around", "at", "by") for c in t.children))


def daily(tokens: list[Any]) -> dict[str, str]:
    """``{"bedtime" | "wake": <time as said>}`` when the clause of ``tokens`` puts a clock time on going to bed /
    being asleep, or on waking / getting / being up; ``{"qty:commute": <number>}`` for "it takes me N minutes to get
    in"; else ``{}``. The clause's own shift (``shift``) is read beside it."""
    lemmas = {t.lemma_.lower() for t in tokens}
    out = shift(tokens)
    for t in tokens:
        if not clock(t):
            continue
        verb = t.head.head if t.dep_ == "pobj" else t.head
        if verb.tag_ in ("VBD", "VBN") or verb.head.lemma_.lower() == "use":
            continue  # "I went to bed at 2 last night", "I used to get up at 5": one night, or no longer
        near = {c.lemma_.lower() for c in verb.children} | {verb.lemma_.lower()}
        if near & {"bed", "asleep", "sleep", "sack", "hay"} or "bed" in lemmas and verb.lemma_.lower() in (
                "go", "be", "get") or verb.lemma_.lower() == "turn" and "in" in near:  # "turn in around 11"
            out["bedtime"] = t.text.lower()
        elif near & {"wake", "awake", "rise"} or "up" in near and verb.lemma_.lower() in ("get", "be"):
            out["wake"] = t.text.lower()
    for t in tokens:
        if t.lemma_.lower() == "take" and any(c.lower_ == "me" for c in t.children):
            spans = [c for c in t.children if c.dep_ in ("dobj", "npadvmod") and c.lemma_.lower() in ("minute", "hour")]
            goes = [c for c in t.children if c.dep_ == "xcomp" and c.lemma_.lower() in _TRAVEL]
            nums = [n for s in spans for n in s.children if n.dep_ == "nummod"]
            if nums and goes:
                out["qty:commute"] = nums[0].text
    return out
