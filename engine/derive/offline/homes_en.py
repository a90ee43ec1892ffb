"""Where the user's home is, named in passing (issue #29 item 1): "the 38 bus from my flat in York took 50 minutes
today" says the user lives in York as surely as "I live in York" does, so "we got the keys to our place in Leeds"
supersedes it (seed 002 §2.2 "冲突的记忆 → 保留最新"). The parser's own-clause slots (``parse_en.slots``) only read
clauses whose subject is the user; this reads a dwelling of the user's anywhere in a sentence. Pure."""

from __future__ import annotations

from memengine.engine.derive.offline import parse_en
from memengine.engine.derive.offline.lexicon_en import DWELLING

#: a home that is not (or no longer) where the user lives: "my old flat in York", "our holiday flat in Spain"
_NOT_HOME = {"old", "former", "previous", "last", "first", "holiday", "summer", "weekend", "vacation", "beach",
             "second", "childhood", "student", "future", "new"}


def home_of(text: str) -> dict[str, str]:
    """``{"lives_in": <place>}`` when ``text`` names the user's home by where it is, in passing or not ("the bus
    from my flat in York took 50 minutes", "got the keys to our place in Leeds", "User's flat in York"): a dwelling
    noun (``lexicon_en.DWELLING``) of my / our / User's with "in" + a named place; ``{}`` for an old, holiday or new
    (not yet moved into) home, another's home, or without the parser. Read by ``merge.attribute_slots`` beside
    the slots of the user's own clauses, which win."""
    doc = parse_en.parsed(text)
    # a stored item's "User got the keys to their place" means the user's place (the extraction's third person)
    owners = {"my", "our", "user", "their"} if text.startswith("User") else {"my", "our", "user"}
    for t in doc if doc is not None else []:
        if t.lemma_.lower() not in DWELLING or t.pos_ != "NOUN":
            continue
        mine = any(c.dep_ == "poss" and c.lower_ in owners for c in t.children)
        if not mine or any(c.lower_ in _NOT_HOME for c in t.children if c.dep_ in ("amod", "compound")):
            continue
        for prep in (c for c in t.children if c.dep_ == "prep" and c.lower_ == "in"):
            place = [g for g in prep.children if g.dep_ == "pobj" and g.pos_ == "PROPN"]
            if place:
                words = [x.text for x in place[0].subtree if x.pos_ == "PROPN"]
                return {"lives_in": " ".join(words)}
    return {}
