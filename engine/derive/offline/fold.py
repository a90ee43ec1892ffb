"""An unsure change kept in the user's own words (issue #29 item 1: "When the deriver is unsure, it keeps the user's
own words with their date instead of a lossy paraphrase, so a context never states an old value as current without
the newer statement beside it").

The slot rules (``merge.attribute_slots``), the ends (``parse_en.ends``) and ``revision.revises`` decide a change
only when they can name the attribute and its two values. When none of them does, a newer statement of the user's
that presents something as the current state of things (the aspect ``revision`` reads: "now", "these days",
"instead", "from now on", a "new" X, a verb of changing) about the topic of an older item of theirs is folded into
it: ``topic`` finds that item and ``decide_merge`` supersedes it (``replace``, ``MergeVerdict.fold``) with one item
holding the older text and the newer words as said, dated (``folded``: "User plays squash on Mondays. Later, on
2026-11-25, User said: “my wrist gave out so I took up yoga instead”"). Nothing is lost: if the two were
compatible after all, the one item still holds both values; if they were a change, the old value is never stated
as current without the newer statement beside it.

The topic is meaning, not a word list: the two texts' MiniLM vectors (``kinds.similarity``, the offline model the
merge already uses for kinds of values) at ``TOPIC_SIMILARITY`` or more, or a content noun both share
(``revision.read``'s frame). Measured on ``tests/data/statements_v2`` dev (old vs new statement of an update: median
0.55, 10th percentile 0.29; an old statement vs the everyday lines said beside the new one: 90th percentile 0.22).
Not folded: an additive statement ("as well", "too", "another", ``revision``'s ``_ADDITIVE``), another person's
("my brother is vegan now"), a hedged or quarantined candidate, Chinese text (left to ``zh``), a candidate that
states no attribute of the user (``ATTRIBUTE_TYPES``), an item whose amount the quantity slots key otherwise
(``merge.decide_merge`` leaves it out: a rent is not a salary, however near in meaning). Pure for given weights.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime

from memengine.engine.derive.offline import kinds, revision
from memengine.engine.derive.offline.structures import Candidate, ExistingItem
from memengine.engine.derive.offline.text import CJK, sentences

#: the least MiniLM cosine similarity of two statements on one topic (see the module docstring for the measurement)
TOPIC_SIMILARITY = 0.25
#: the longest stretch of the user's words a folded item keeps (characters): a turn longer than that keeps its
#: sentence instead (``words_of``), cut here at worst
MAX_WORDS_CHARS = 300
#: the most sentences of a turn a folded item keeps whole
MAX_WORDS_SENTENCES = 3
#: types that state an attribute of the user (``merge.ATTRIBUTE_TYPES``; repeated here: merge imports this module)
_ATTRIBUTE_TYPES = frozenset({"PROFILE", "PREFERENCE", "FACT", "SKILL"})
_LATER = re.compile(r"\s+Later, on \d{4}-\d{2}-\d{2}, .*$", re.S)


def _said(candidate: Candidate) -> str:
    said = candidate.data.get("sentence") if isinstance(candidate.data, dict) else None
    return said if isinstance(said, str) and said.strip() else candidate.text


#: a word of the speaker's ("my money", "for me", "our house"): the statement is the user's whatever its subject
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|we're|we've|our|us|user|user's)\b", re.I)


def users(reading: revision.Reading, text: str) -> bool:
    """Whether a statement read as ``reading`` is about the user: its subject is the user, or a thing (not a
    person: "my sister is vegan now" is hers) of a sentence that names the user ("Spotify gets my money now"), or
    someone sets an amount of the user's ("the landlord put it up to £1020": ``revision.set_for_user``)."""
    return not reading.owner or reading.owner not in revision.PEOPLE_KEYS and bool(FIRST_PERSON.search(text)) or \
        revision.set_for_user(text)  # "the landlord put it up to £1020": someone set the user's amount


def topic(candidate: Candidate, items: Collection[ExistingItem],
          names: frozenset[str]) -> tuple[ExistingItem, str] | None:
    """The item of ``items`` (the user's active items a change may close) whose topic ``candidate`` restates as
    the current one, with why; ``None`` when the candidate is no such statement or no item is near enough (see
    the module docstring). ``names``: the user's own names in lower case (the user, never a value)."""
    data = candidate.data if isinstance(candidate.data, dict) else {}
    if candidate.memory_type.upper() not in _ATTRIBUTE_TYPES or data.get("hedged") or data.get("quarantined"):
        return None
    said = _said(candidate)
    if CJK.search(candidate.text + said):
        return None
    a, src = revision.read(candidate.text, names), revision.read(said, names)
    if a is None or src is None or not (users(a, candidate.text) and users(src, said)) or a.additive \
            or src.additive or not (a.cue or src.cue):
        return None
    best: tuple[float, ExistingItem, str] | None = None
    for e in items:
        if e.memory_type.upper() not in _ATTRIBUTE_TYPES or CJK.search(e.text):
            continue
        b = revision.read(e.text, names)
        if b is None or b.owner:
            continue
        sim = max(kinds.similarity(said, e.text) or 0.0, kinds.similarity(candidate.text, e.text) or 0.0)
        nouns = sorted(w for w in a.lemmas.keys() & b.lemmas.keys()
                       if a.lemmas[w] == b.lemmas[w] == "common" and w not in revision.TIME_KEYS
                       and w not in revision.PEOPLE_KEYS and w not in revision.LIGHT)
        if sim < TOPIC_SIMILARITY and not nouns:
            continue
        why = f"same topic ({'shares ' + '/'.join(nouns) if nouns else f'similarity {sim:.2f}'})"
        if best is None or sim > best[0]:
            best = (sim, e, why)
    return (best[1], best[2]) if best else None


def words_of(said: str, turn_text: str) -> str:
    """The user's words a folded item keeps: the whole turn when it is short enough (the new value may sit in a
    clause beside the one the candidate was read from: "gave up the espresso. it's matcha every morning now"; at
    most ``MAX_WORDS_SENTENCES`` sentences and ``MAX_WORDS_CHARS``), else the sentence (a long turn brings its
    remarks and occasions along: "Woohoo Melanie! I passed the interviews! I'm so excited. This is a big move")."""
    turn = " ".join(turn_text.split())
    short = len(sentences(turn)) <= MAX_WORDS_SENTENCES
    return turn if turn and short and len(turn) <= MAX_WORDS_CHARS else " ".join(said.split())


def base(text: str) -> str:
    """The statement of an item before any newer words ``folded`` into it (the whole text when none were)."""
    return _LATER.sub("", text.strip()).strip()


def folded(old_text: str | list[str], subject: str, words: str, when: datetime) -> str:
    """``old_text`` (less any earlier "Later, on ..." it carried: the original statement and the newest words are
    kept, not a chain; several items' texts, each so, one after the other: one change of an attribute two items
    stated, ``same_slot``) followed by ``Later, on <date>, <subject> said: “<words>”``; ``words`` cut to
    ``MAX_WORDS_CHARS``. ``when``: the newer statement's time (timezone-aware; its UTC date is written)."""
    said = " ".join(words.split())
    if len(said) > MAX_WORDS_CHARS:
        said = said[:MAX_WORDS_CHARS - 1].rstrip() + "…"
    older = " ".join(dict.fromkeys(base(t) for t in ([old_text] if isinstance(old_text, str) else old_text)))
    return f"{older} Later, on {when.date().isoformat()}, {subject} said: \u201c{said}\u201d"
