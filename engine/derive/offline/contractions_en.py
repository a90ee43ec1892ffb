"""A noun's "'s" written out where it is "is" or "has" (issue #29: "my rent's 950 now", "my daughter's allergic to
eggs"), so that the small English parser reads a statement, not a possessive (``parse_en.parsed`` parses the
returned text). Pure.
"""

from __future__ import annotations

import re
from typing import Any

#: a noun's "'s" that cannot be a possessive: before an article, a participle, an adverb or a number that ends the
#: clause ("my rent's 950 now", "my sister's a teacher", "the Golf's gone"); the small parser reads them as
#: possessives and loses the statement
_CONTRACTED_IS = re.compile(r"(?<=[A-Za-z])'s(?= (?:a|an|the|not|now|so|very|really|just|still|also|always|never|"
                            r"only|about|around|nearly|almost|over|under)\b"
                            r"| [$€£]?\d[\d.,]*[k%]?(?: ?(?:now|these days|"
                            r"already|today|again|a (?:month|week|year)))?[.,!;]?(?: |$))")
_CONTRACTED_HAS = re.compile(r"(?<=[A-Za-z])'s(?= (?:been|gone|got|had|become|changed|moved|left|started|stopped)\b)")


def expand_contractions(text: str) -> str:
    """``text`` with a noun's "'s" written out where it is "is" or "has" (``_CONTRACTED_IS`` / ``_HAS``), so the
    parser reads a statement, not a possessive. Same length is not kept; callers parse the returned text."""
    return _CONTRACTED_HAS.sub(" has", _CONTRACTED_IS.sub(" is", text))


def is_after_parse(doc: Any) -> list[int]:
    """Character offsets (in the parsed text) of each "'s" the parser took for a possessive where it is "is": the
    word after it an adjective or a participle ("my daughter's allergic", "my son's obsessed with"), the owner it
    marks no possessor of a noun after it ("my sister's new car": "sister" owns "car", a possessive that stays)."""
    out = []
    for t in doc:
        if t.lower_ != "'s" or t.dep_ != "case" or t.i == 0 or t.i + 1 >= len(doc):
            continue
        owner, after = doc[t.i - 1], doc[t.i + 1]
        owns = owner.dep_ == "poss" and owner.head.i > t.i and owner.head.pos_ in ("NOUN", "PROPN")
        # (a possessed noun heads no adverbial clause: "my husband's diabetic, so I cook ..." misread as one)
        clause = owns and owner.head.i == after.i and after.dep_ in ("advcl", "ccomp")
        if clause or not owns and (after.pos_ == "ADJ" or after.tag_ == "VBN"):
            out.append(t.idx)
    return out


def written_out(text: str, at: list[int]) -> str:
    """``text`` with the "'s" at each offset of ``at`` written out as " is"."""
    for i in sorted(at, reverse=True):
        text = f"{text[:i]} is{text[i + 2:]}"
    return text
