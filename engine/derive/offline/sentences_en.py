"""The sentences of a turn as the extraction reads them (issue #29 defect 1): an English sentence split where a mood
of the moment stands beside a statement, where a statement leads a request, and given back the "I'm" a bare
description of the speaker left out. Split from ``extraction`` (module size); pure for a given pipeline."""

from __future__ import annotations

from memengine.engine.derive.offline import generalise, leads_en, parse_en, statements_en
from memengine.engine.derive.offline.contractions_en import with_apostrophes
from memengine.engine.derive.offline.text import CJK, clean_text, sentences


def apart(text: str) -> list[str]:
    """The sentences of ``text``, an English one split where a mood of the moment stands beside a statement
    (``statements_en.moods_apart``: "I turned 30 yesterday, feeling old!"), so each is read, typed and given its
    lifetime on its own (issue #29 defect 1), and given back the "I'm" a bare description of the speaker left out
    (``statements_en.with_subject``: "Big fan of podcasts"), with the apostrophe of a contraction typed without one
    (``contractions_en.with_apostrophes``: "im in auckland"). A Chinese or over-long sentence, or any without the
    parser, is given as it is."""
    out: list[str] = []
    for sentence in sentences(text):
        sent = clean_text(sentence)
        if CJK.search(sent) or len(sent) > generalise.PARSE_MAX_CHARS or not parse_en.available():
            out.append(sentence)
        else:
            sent = with_apostrophes(sent)  # "im in auckland": the parser reads "I'm" only
            out.extend(p for part in leads_en.pieces(sent)  # (an emoji ends a sentence; a request's lead is one)
                       for p in statements_en.moods_apart(statements_en.with_subject(part)))
    return out
