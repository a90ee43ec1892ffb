"""Clauses about the user whose grammatical subject is someone else (issue #29 item 1: whose statement it is follows
what it means): the user put somewhere by another ("They moved me to the Berlin office"), and the person who manages
the user's group ("Dev runs the team now"). Read from a spaCy clause head by ``parse_en``; pure."""

from __future__ import annotations

from typing import Any

from memengine.engine.derive.offline.lexicon_en import THINK_VERBS


def _subject(tok: Any) -> Any:
    """The subject of the clause headed by ``tok`` (a conjoined verb's is its head's), as ``parse_en.subject_of``."""
    for c in tok.children:
        if c.dep_ in ("nsubj", "nsubjpass", "expl"):
            return c
    if tok.dep_ == "conj" and tok.head.pos_ in ("VERB", "AUX"):
        return _subject(tok.head)
    return None


#: verbs of managing a group; the nouns of a group of people the user belongs to
_MANAGE = {"manage", "run", "lead", "head", "supervise"}
_GROUP = {"team", "department", "group", "squad", "unit", "division", "office", "lab"}


def places_user(head: Any) -> bool:
    """Whether the clause headed by ``head`` says where someone or something put the user, with the user as the
    verb's object and the place after it ("They put me on the late shift", "they moved me to the Berlin office",
    "it takes me 55 minutes to get in", "it's all hip hop for me"): a statement about the user whose grammatical
    subject is another (issue #29: the change is in what it means, not in who is the subject)."""
    subj = _subject(head)
    if subj is None or subj.lower_ in ("you", "i", "we") or head.lemma_.lower() in THINK_VERBS:
        return False
    me = [c for c in head.children if c.dep_ in ("dobj", "dative") and c.lower_ in ("me", "us")]
    if me:
        places = [g for c in head.children if c.dep_ == "prep" and c.lower_ in ("to", "on", "onto", "into", "at")
                  for g in c.children if g.dep_ == "pobj" and g.pos_ in ("NOUN", "PROPN")]
        took = head.lemma_.lower() == "take" and any(
            c.dep_ == "dobj" and any(x.like_num for x in c.children) for c in head.children)
        return bool(places) or took
    return head.lemma_.lower() == "be" and subj.lower_ == "it" and any(
        c.dep_ == "attr" for c in head.children) and any(
        g.lower_ in ("me", "us") for t in head.subtree if t.dep_ == "prep" and t.lower_ == "for" for g in t.children)


def role_holder(head: Any) -> Any:
    """The person a clause says manages the user's group ("Dev runs the team now", "Marco manages our team"): a
    named subject of a managing verb whose object is a group (the user's, or "the"); ``None`` otherwise."""
    subj = _subject(head)
    if subj is None or subj.pos_ != "PROPN" or head.lemma_.lower() not in _MANAGE:
        return None
    group = [c for c in head.children if c.dep_ == "dobj" and c.lemma_.lower() in _GROUP and all(
        x.lower_ in ("my", "our", "the", "user") for x in c.children if x.dep_ in ("poss", "det"))]
    return subj if group else None
