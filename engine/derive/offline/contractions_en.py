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


#: contractions typed without the apostrophe that are no English word ("im", "ive", "dont", "didnt"); "cant" only
#: after a subject pronoun ("a cant hook"), "IM" (a message) and "wont" / "id" / "ill" / "were" never
_BARE = re.compile(r"\b(?:(?P<i>[Ii])(?P<c>m|ve)|(?P<n>do|did|does|is|was|are|were|have|has|had|would|could|should|"
                   r"must|need)nt|(?P<who>(?:i|I|we|you|they|he|she) )(?P<can>ca)nt)\b")


def with_apostrophes(text: str) -> str:
    """``text`` with a first-person or negated contraction typed without its apostrophe written as one ("im in
    auckland" -> "I'm in auckland", "i dont eat pork" -> "i don't eat pork"; ``_BARE``): the small parser splits a
    bare "im" into "i" + "m" and the statement is lost or rendered "Userms in auckland" (heldout_s17-s20)."""
    def fix(m: re.Match[str]) -> str:
        if m.group("i"):
            return f"I'{m.group('c')}"
        return f"{m.group('who') or ''}{m.group('n') or m.group('can')}n't"
    return _BARE.sub(fix, text)


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
