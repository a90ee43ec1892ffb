"""Episodes: what one stretch of conversation was about and how it ended (seed 004 §4 "情节记忆").

``episode`` gives an extractive summary of the turns, the goal (the first request), the outcome (the last
resolution), the entities named and the tools used, with the stretch's first and last times.
"""

from __future__ import annotations

import re
from collections import Counter

from memengine.engine.derive.offline.structures import Episode, Turn
from memengine.engine.derive.offline.summaries import summarize
from memengine.engine.derive.offline.text import (
    MAX_KEYWORD_CHARS,
    MONTHS,
    WEEKDAYS,
    by_seq,
    clean_text,
    name_of,
    sentences,
)

#: Token budget of the summary inside an episode.
EPISODE_SUMMARY_TOKENS = 200


_GOAL = re.compile(
    r"^(?:(?:please|hey|hi|so|ok|okay)[, ]+)*(?:(?:can|could|would|will) you|help me|i need|i want to|i'd like|"
    r"i would like|i'm trying to|i am trying to|how (?:do|can|should) i|let's|my goal|i'm looking for|"
    r"write|create|make|build|fix|find|explain|generate|summari[sz]e|add|update|implement|debug|show me|tell me|"
    r"plan|draft|translate|compare|analy[sz]e|set up|install|configure|refactor|review|check|book|schedule|remind)\b",
    re.I,
)
_OUTCOME = re.compile(
    r"\b(?:done|finished|completed|complete|fixed|resolved|created|saved|updated|deployed|installed|booked|sent|"
    r"scheduled|passed|succeeded|success(?:ful(?:ly)?)?|works now|working now|failed|failure|error|couldn't|could not|"
    r"unable|not possible|gave up|decided|agreed|i've (?:added|written|created|updated|fixed))\b",
    re.I,
)
_HERE_IS = re.compile(r"^(?:here is|here's|here are)\b", re.I)
_NOT_ENTITY = frozenset(
    [d.capitalize() for d in WEEKDAYS] + list(MONTHS) +
    "I I'm I've I'll I'd The A An And But So Then This That These Those It It's Its He She We They You Your My Our "
    "Hey Hi Hello Wow Oh Yeah Yes No Ok Okay Thanks Thank Sure Well Also Just Really Haha Lol Aw Awww Omg Btw Please "
    "What Why How Where When Who Which If Is Are Was Were Do Does Did Can Could Would Will Should Have Has Had Not "
    "Nice Great Cool Awesome Amazing Good Glad Congrats Sounds Totally Definitely Absolutely There Here Let Let's "
    "Me Mine Their Them His Her Him Not Maybe Sorry Bye Take".split()
)


def _entities(turns: list[Turn]) -> list[str]:
    """Proper names and acronyms: capitalised words seen mid-sentence (or all-caps), in order of first mention."""
    mid: Counter[str] = Counter()
    order: dict[str, int] = {}
    for t in turns:
        if t.role not in ("user", "assistant"):
            continue
        for sentence in sentences(t.text):
            for m in re.finditer(r"\b[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*", clean_text(sentence)):
                phrase = m.group(0).removesuffix("'s")
                words = [w for w in phrase.split() if w not in _NOT_ENTITY]
                if not words:
                    continue
                phrase = " ".join(words)
                if len(phrase) > 2 * MAX_KEYWORD_CHARS:  # a run of capitalised words, not a name (a ShortText)
                    continue
                acronym = bool(re.fullmatch(r"[A-Z]{2,}[\w+]*", phrase))
                if m.start() > 0 or acronym:
                    mid[phrase] += 1
                order.setdefault(phrase, len(order))
    return sorted(mid, key=lambda p: order[p])


def episode(turns: list[Turn]) -> Episode:
    """Seed 004 §4 Episode of ``turns``: summary, goal, outcome, entities, tools_used, started_at, ended_at.

    ``summary`` = ``summarize(turns, EPISODE_SUMMARY_TOKENS)``. ``goal`` = the first user sentence that reads like a
    request or intention ("Can you ...", "I need ...", "Fix ...", "I'm trying to ..."), else ``None``. ``outcome`` =
    the last assistant/tool sentence with a completion or failure cue ("done", "fixed", "failed", "here is"), else the
    last such user sentence, else ``None``. ``entities`` = proper names and acronyms, first mention first, plus the
    speakers; ``tools_used`` = the turns' ``tools`` in order of first use. Raises ``ValueError`` on no turns.
    """
    ordered = by_seq(turns)
    if not ordered:
        raise ValueError("episode() needs at least one turn")
    goal: str | None = None
    for t in ordered:
        if t.role != "user":
            continue
        for sentence in sentences(t.text):
            s = clean_text(sentence)
            if _GOAL.match(s) and len(s.split()) >= 3:
                goal = s[:300]
                break
        if goal:
            break
    outcome: str | None = None
    for roles in (("assistant", "tool"), ("user",)):
        for t in reversed(ordered):
            if t.role not in roles:
                continue
            for sentence in reversed(sentences(t.text)):
                s = clean_text(sentence)
                if (_OUTCOME.search(s) or (t.role != "user" and _HERE_IS.match(s))) and not s.endswith("?"):
                    outcome = s[:300]
                    break
            if outcome:
                break
        if outcome:
            break
    speakers = [n for n in dict.fromkeys(name_of(t) for t in ordered if t.role == "user") if n != "User"]
    entities = list(dict.fromkeys([*speakers, *_entities(ordered)]))[:30]
    tools = list(dict.fromkeys(tool for t in ordered for tool in t.tools))
    return Episode(
        summary=summarize(ordered, EPISODE_SUMMARY_TOKENS),
        goal=goal,
        outcome=outcome,
        entities=entities,
        tools_used=tools,
        started_at=min(t.occurred_at for t in ordered),
        ended_at=max(t.occurred_at for t in ordered),
        source_event_ids=[t.event_id for t in ordered],
    )
