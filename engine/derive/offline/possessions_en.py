"""A named thing the user calls theirs inside a question (issue #29 item 1: "first-person statements ... become typed
items"; heldout_s17 / s18 dev: "best chain lube for my Ducati Monster?", "how often should I change the oil on my
Honda Civic?", "my greyhound Biscuit won't stop shaking ..., is that normal??").

The extraction skips questions, and people tell what they have mostly while asking about it; a later change ("the
Ducati stays though", "sold the Civic") then had nothing to keep or close. ``owned`` reads the parse for a noun
phrase the user possesses ("my" / "our") whose head is a name (a proper noun, not a date, not a kin word said as a
name, "my Mum"): the thing is the user's, whatever the question asks. A common noun before the name is what it is
("my greyhound Biscuit" -> "a greyhound named Biscuit"); names before it make one name ("my Honda Civic" -> "a
Honda Civic"). A noun headed phrase ("my Amazon order"), another's thing ("my sister's boyfriend Dan") and a name
inside a preposition ("my flight to Rome") say nothing the user has. ``mine`` reads a sentence led by "mine" as
about the last named thing said before it in the turn ("What tire pressure should a 2014 Subaru Outback run? Mine's
been pulling left": the user has one; both heldout_s17 and s18 told a car so). Pure; ``[]`` without the parser.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en

#: kin words people capitalise as a name ("my Mum", "my Dad"): a person, not a thing the user has
_KIN = frozenset({"mum", "mom", "mam", "dad", "mummy", "mommy", "daddy", "nan", "nana", "gran", "granny", "grandma",
                  "grandpa", "grandad", "auntie", "aunt", "uncle", "sis", "bro", "babe", "hubby", "wifey"})


def owned(sentence: str, subject: str) -> list[str]:
    """Statements of the named things ``sentence`` says the user has (``"User has a Honda Civic"``), in order; see
    the module docstring."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return []
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e}
    out: list[str] = []
    for head in doc:
        if head.pos_ != "PROPN" or head.i in dated or head.lower_ in _KIN or head.dep_ == "compound":
            continue
        if not any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in head.children):
            continue
        mods = [c for c in head.children if c.dep_ in ("compound", "nummod") and c.i < head.i]
        if any(c.dep_ == "case" for m in mods for c in m.children):
            continue  # "my sister's boyfriend Dan": hers
        nouns = [m for m in mods if m.pos_ == "NOUN"]
        names = [m for m in mods if m.pos_ in ("PROPN", "NUM") and (not nouns or m.i > nouns[-1].i)]
        if nouns:
            kind = " ".join(t.text for t in doc[min(t.i for t in nouns[0].subtree):nouns[-1].i + 1])
            name = " ".join(t.text for t in doc[(names[0].i if names else head.i):head.i + 1])
            thing = f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} named {name}"
        else:
            start = mods[0].i if mods else head.i
            name = " ".join(t.text for t in doc[start:head.i + 1])
            if any(t.i in dated for t in doc[start:head.i + 1]):
                continue
            thing = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
        out.append(f"{subject} has {thing}.")
    return out


#: a sentence about "mine": the user's one of the thing just named
_MINE = re.compile(r"^\W*mine\b", re.I)


def mine(sentence: str, before: str, subject: str) -> list[str]:
    """``["User has a 2014 Subaru Outback."]`` when ``sentence`` is led by "mine" and ``before`` (the turn's words
    before it) names a thing last (a proper noun heading its phrase, with its names and numbers; a plural said as
    one: "Kindle Paperwhites" -> "a Kindle Paperwhite"); else ``[]``."""
    if not _MINE.match(sentence) or not before.strip():
        return []
    doc = parse_en.parsed(before)
    if doc is None:
        return []
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e}
    # the last run of names (and the numbers in it: "a 2014 Subaru Outback"), however the parser hangs it
    heads = [t for t in doc if t.pos_ == "PROPN" and (t.i + 1 == len(doc) or doc[t.i + 1].pos_ != "PROPN")
             and t.i not in dated and t.lower_ not in _KIN
             and (t.ent_type_ != "PERSON" or t.i > 0 and doc[t.i - 1].pos_ == "PROPN")]
    if not heads:  # (a lone first name is a person; the small model tags "Kindle Paperwhites" a person too)
        return []
    head = heads[-1]
    start = head.i
    while start > 0 and (doc[start - 1].pos_ == "PROPN" or doc[start - 1].like_num):
        start -= 1
    words = [t.text for t in doc[start:head.i]] + [head.lemma_ if head.tag_ == "NNPS" else head.text]
    name = " ".join(words)
    return [f"{subject} has {'an' if name[:1].lower() in 'aeiou' else 'a'} {name}."]
