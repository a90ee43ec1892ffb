"""The sentences of a turn as the extraction reads them (issue #29 defect 1): an English sentence split where a mood
of the moment stands beside a statement, where a statement leads a request, and given back the "I'm" a bare
description of the speaker left out. Split from ``extraction`` (module size); pure for a given pipeline."""

from __future__ import annotations

import re

from memengine.engine.derive.offline import generalise, leads_en, parse_en, statements_en, zh_text
from memengine.engine.derive.offline.contractions_en import with_apostrophes
from memengine.engine.derive.offline.lexicon_en import EMPLOY, RESIDE
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


#: what a gerund subject may say of the user's life: where they work, live or study (``lexicon_en`` classes)
_LIFE = EMPLOY | RESIDE | {"study"}


def doing_said(sentence: str) -> str | None:
    """``"I'm <doing>."`` when ``sentence``'s subject is a gerund of the user's life (work, home, studies: ``_LIFE``)
    at a named place and the rest is said of the user ("Working at Shopify has me in back-to-back meetings",
    "Living in Leeds means my commute is nothing"); ``None`` for one of no one's life ("Working at Google must be
    amazing": no "me" / "my" / "I" outside it) or without the parser (heldout_s17: the employer was lost)."""
    doc = parse_en.parsed(sentence)
    for g in doc or ():
        if g.dep_ in ("csubj", "nsubj") and g.tag_ == "VBG" and g.lemma_.lower() in _LIFE:
            inside = {t.i for t in g.subtree}
            if any(t.pos_ == "PROPN" for t in g.subtree) and any(
                    t.lower_ in ("me", "my", "i", "myself") and t.i not in inside for t in doc):
                doing = "".join(t.text_with_ws for t in g.subtree).strip()
                return f"I'm {doing[:1].lower()}{doing[1:]}."
    return None


#: the words of chat a sentence may open with before the speaker's own clause ("yeah I work nights as a crane
#: operator ...", heldout_s28): they say nothing, and the parser reads the clause as a fragment with them. Only before
#: "I": "lol my cat just knocked my coffee over" is the moment's news, and stays unread
_OPENER = re.compile(r"^(?:(?:yeah|yep|yup|yes|ok|okay|oh|ah|well|so|right|honestly|tbh|lol|haha|also|anyway|btw|um+|"
                     r"uh+|hmm+)\b[\s,.!]*)+(?=(?:I|I'm|I've|I'd)\b)", re.I)


def apart(text: str) -> list[str]:
    """The sentences of ``text``, an English one split where a mood of the moment stands beside a statement
    (``statements_en.moods_apart``: "I turned 30 yesterday, feeling old!"), so each is read, typed and given its
    lifetime on its own (issue #29 defect 1), and given back the "I'm" a bare description of the speaker left out
    (``statements_en.with_subject``: "Big fan of podcasts"), with the apostrophe of a contraction typed without one
    (``contractions_en.with_apostrophes``: "im in auckland"), and the user's age said as the time of a present
    state, or the user's work or home said as a gerund subject, as a sentence of its own (``age_said``: "at 52 my
    knees ..." -> "I'm 52."; ``doing_said``: "Working at Shopify has me ..." -> "I'm working at Shopify."). A
    Chinese sentence is given with the spaces that part its clauses read as commas (``zh_text.spaced``); an
    over-long sentence, or any without the parser, as it is."""
    out: list[str] = []
    for sentence in sentences(text):
        sent = clean_text(sentence)
        if CJK.search(sent):  # "我跑出租的 路面一结冰": a space between Chinese words parts clauses as a comma does
            out.append(zh_text.spaced(sentence))
        elif len(sent) > generalise.PARSE_MAX_CHARS or not parse_en.available():
            out.append(sentence)
        else:
            sent = with_apostrophes(sent)  # "im in auckland": the parser reads "I'm" only
            sent = _OPENER.sub("", sent)  # "yeah I work nights as ...": the parser reads the clause without its "yeah"
            # "at 52 my knees ...", "Working at Shopify has me ...": the user's age, work or home, a sentence of its own
            out.extend(a for a in (age_said(sent), doing_said(sent)) if a)
            out.extend(p for part in leads_en.pieces(sent)  # (an emoji ends a sentence; a request's lead is one)
                       for p in statements_en.moods_apart(statements_en.with_subject(part)))
    return out
