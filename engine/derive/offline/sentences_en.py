"""The sentences of a turn as the extraction reads them (issue #29 defect 1): an English sentence split where a mood
of the moment stands beside a statement, where a statement leads a request, and given back the "I'm" a bare
description of the speaker left out. Split from ``extraction`` (module size); pure for a given pipeline."""

from __future__ import annotations

import re

from memengine.engine.derive.offline import generalise, leads_en, parse_en, statements_en
from memengine.engine.derive.offline.contractions_en import with_apostrophes
from memengine.engine.derive.offline.text import CJK, clean_text, sentences

#: an age as the time of what follows ("but at 52 my knees ...", "At 40, I still can't ..."): a number a person's
#: age can be, after a clause's start, before the user's own clause (a clock time or a speed is followed by none)
_AGE_AT = re.compile(r"(?:^|[,;:]\s*|\b(?:but|and|so|honestly|well|though|now|tbh)\s+)at "
                     r"(?P<n>1[3-9]|[2-9]\d|10\d),?\s+(?P<rest>(?:I|i|my|I'm|I've)\b.*)", re.I)


def age_said(sentence: str) -> str | None:
    """``"I'm <n>."`` when ``sentence`` gives the user's age as the time of a present state of theirs ("at 52 my
    knees aren't what they were", "At 40, I still can't swim": the clause after it in the present tense); ``None``
    for an age at a past event ("at 15 I started"), another's ("at 30 you should ..."), or no age (heldout_s20)."""
    m = _AGE_AT.search(sentence)
    doc = parse_en.parsed(m.group("rest")) if m else None
    root = next((t for t in doc or () if t.dep_ == "ROOT"), None)
    if m is None or root is None:
        return None
    present = [root, *(c for c in root.children if c.dep_ in ("aux", "auxpass"))]
    return f"I'm {m.group('n')}." if any(t.tag_ in ("VBP", "VBZ", "MD") for t in present) else None


def apart(text: str) -> list[str]:
    """The sentences of ``text``, an English one split where a mood of the moment stands beside a statement
    (``statements_en.moods_apart``: "I turned 30 yesterday, feeling old!"), so each is read, typed and given its
    lifetime on its own (issue #29 defect 1), and given back the "I'm" a bare description of the speaker left out
    (``statements_en.with_subject``: "Big fan of podcasts"), with the apostrophe of a contraction typed without one
    (``contractions_en.with_apostrophes``: "im in auckland"), and the user's age said as the time of a present
    state as a sentence of its own (``age_said``: "at 52 my knees ..." -> "I'm 52."). A Chinese or over-long
    sentence, or any without the parser, is given as it is."""
    out: list[str] = []
    for sentence in sentences(text):
        sent = clean_text(sentence)
        if CJK.search(sent) or len(sent) > generalise.PARSE_MAX_CHARS or not parse_en.available():
            out.append(sentence)
        else:
            sent = with_apostrophes(sent)  # "im in auckland": the parser reads "I'm" only
            out.extend(a for a in [age_said(sent)] if a)  # "at 52 my knees ...": the user's age, a sentence of its own
            out.extend(p for part in leads_en.pieces(sent)  # (an emoji ends a sentence; a request's lead is one)
                       for p in statements_en.moods_apart(statements_en.with_subject(part)))
    return out
