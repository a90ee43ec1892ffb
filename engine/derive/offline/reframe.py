"""Clefts said the plain way (issue #29 item 1): "Where I live now is Marseille", "The company I work for now is
PwC", "What I'm really into these days is techno", "Techno is what I'm into now" state what "I live in Marseille
now", "I work for PwC now", "I'm really into techno these days" do. The small parser reads the cleft's copula as
the statement (its subject a clause, the user nowhere in it), so neither the statement nor the attribute it fills
was kept and the old value stayed current; said plainly, the same clause reading (``parse_en``) and rule tables
(``selfstatements``) read it as they read any other statement, so the new value fills the same slot and supersedes
the old one (seed 002 §2.2 "冲突的记忆 → 保留最新").

A cleft is a grammatical construction, not a phrasing: a relative clause of the user's (``what`` / ``where`` /
``who``, or ``the / my / our <noun> (that|which|where)? I ...``) whose gap the copula's other side fills. Only a
gap at the end of the relative clause is filled (its last word a verb, a particle or a preposition, tagged by
the parser: "What I love about Rome is the food" has no gap there and is left alone). Time words and temporal
adjuncts of the relative clause ("now", "these days", "in the morning", "on Sundays") go to the end, where a
plain statement says them. Pure; without the parser the sentence is returned unchanged.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en

_COPULA = r"(?:is|are|was|'s|has become|have become|became)"
_ME = r"(?P<s>I|we)(?P<rest>(?:'m|'re|'ve|'d| )[^,;]+?)"
_CLEFT = re.compile(rf"^(?:(?P<wh>what|where|who) |(?:the|my|our) (?P<n>[\w-]+(?: [\w-]+)?) "
                    rf"(?:(?P<rel>that|which|where|who) )?){_ME} {_COPULA} (?P<x>[^,;]+?)(?P<end>[.!]*)$", re.I)
_REVERSED = re.compile(rf"^(?P<x>[^,;]+?) {_COPULA} (?P<wh>what|where) {_ME}(?P<end>[.!]*)$", re.I)
#: time words that date the statement: said last in the plain clause
_TIME = re.compile(r"\b(?:these days|nowadays|now|currently|at the moment|right now|lately|at present|"
                   r"in the (?:morning|afternoon|evening)s?|at night|at (?:the )?weekends?|"
                   r"on (?:weekends?|weekdays|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)|"
                   r"every (?:day|morning|evening|night|week|weekend)|for (?:breakfast|lunch|dinner)|"
                   r"(?:after|before) work)\b", re.I)
#: what may end a relative clause whose gap the value fills: a verb, a particle, a preposition
_GAP_POS = frozenset({"VERB", "AUX", "ADP", "PART"})


def _gap_at_end(sentence: str, rest_end: int) -> bool:
    """Whether the word that ends the relative clause (before character ``rest_end``) is a verb, a particle or a
    preposition, so the copula's other side fills the gap it leaves."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return False
    last = [t for t in doc if t.idx < rest_end and not t.is_punct]
    return bool(last) and (last[-1].pos_ in _GAP_POS or last[-1].lower_ in ("into", "from", "for", "to", "with"))


def _proper(sentence: str, word: str) -> bool:
    doc = parse_en.parsed(sentence)
    return doc is not None and any(t.text == word and t.pos_ == "PROPN" for t in doc)


def uncleft(sentence: str) -> str:
    """``sentence`` said plainly when it is a cleft of the user's (the module docstring), else unchanged."""
    m = _CLEFT.match(sentence) or _REVERSED.match(sentence)
    if m is None or not parse_en.available():
        return sentence
    rest = m.group("rest")
    times = [t.group(0) for t in _TIME.finditer(rest)]
    core = re.sub(r"\s+", " ", _TIME.sub("", rest)).rstrip()
    last = core.split()[-1] if core.split() else ""
    if not last or not _gap_at_end(sentence, m.start("rest") + rest.rfind(last) + len(last)):
        return sentence
    where = (m.groupdict().get("wh") or m.groupdict().get("rel") or "").lower() == "where"
    value = m.group("x").strip()
    first = value.split()[0]
    if first in ("A", "An") or m.re is _REVERSED and not _proper(sentence, first):
        value = value[:1].lower() + value[1:]  # it started the sentence; said after the verb it is lower case
    needs_prep = where and not re.search(r"\b(?:in|at|to|from|near|on)$", core, re.I)
    # one lives "in" a place and works or studies "at" one ("Where I work is Accenture": at Accenture)
    prep = " in" if re.search(r"\b(?:live|living|reside|stay|staying|based|settled|am|are|be)\b|'m$|'re$", core,
                              re.I) else " at"
    words = [m.group("s"), core.strip() if core.startswith("'") else " " + core.strip(),
             prep if needs_prep else "", " " + value, *(" " + t for t in times)]
    plain = "".join(words).replace(" '", "'")
    return plain + (m.group("end") or "")
