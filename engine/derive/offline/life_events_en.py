"""What an event of the user's life ends (issue #29 item 1: "a state ended by an event (an engagement ends 'single',
surgery ends 'glasses')"; heldout_s17 / s18 dev: a wedding left "boyfriend" current, a birth "pregnant", a
graduation "the second year of a nursing degree", laser surgery "contact lenses").

A closed class of world knowledge, not phrasings: each event is a set of lemmas (the parser's, so "married",
"marrying", "wedding" are one), each with the states it ends, said as the words an item of the state holds (every
word of one, stop words aside: ``merge._ended`` matches them). ``life_ends`` reads a candidate's text (the third
person the extraction writes, "User and Tom got married") and gives the states to end when the event is the user's:
its subject is the user, alone or with someone ("Tom and User"), or for a wedding, an engagement or a birth, the
user's own spouse or child ("User's wife Ana ...", "User's son Leo was born"). Another person's event ends nothing of
the user's ("User's sister got married"); and another person's ending ends no person of the user's
(``people_kept``: "User's brother and his girlfriend split up" is no end of the user's girlfriend). Pure.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en

_CHILD = frozenset({"son", "daughter", "baby", "twins", "twin", "boy", "girl"})
#: (lemmas of the event, who besides the user may be its subject, the states it ends)
_EVENTS: tuple[tuple[frozenset[str], frozenset[str], tuple[str, ...]], ...] = (
    (frozenset({"marry", "married", "wed", "wedding", "honeymoon", "newlywed", "husband", "wife"}),
     frozenset({"husband", "wife", "spouse"}),
     ("boyfriend", "girlfriend", "fiancé", "fiancée", "fiance", "fiancee", "engaged", "single")),
    (frozenset({"engage", "engaged", "engagement", "propose", "fiancé", "fiancée", "fiance", "fiancee"}),
     frozenset({"fiancé", "fiancée", "fiance", "fiancee"}), ("boyfriend", "girlfriend", "single")),
    (frozenset({"graduate", "graduation"}), frozenset(),
     ("student", "studying", "year degree", "semester", "undergrad", "undergraduate")),
    (frozenset({"birth", "newborn", "deliver"}), _CHILD, ("pregnant", "expecting")),
    (frozenset({"laser", "lasik", "lasek", "smile"}), frozenset(), ("glasses", "contacts", "contact lenses", "specs")),
)
#: nouns of people: another person's ending of one is theirs ("my brother and his girlfriend split up")
_PEOPLE = frozenset({"boyfriend", "girlfriend", "partner", "husband", "wife", "fiancé", "fiancée", "fiance", "fiancee",
                     "brother", "sister", "mum", "mom", "dad", "mother", "father", "friend", "son", "daughter",
                     "cousin", "aunt", "uncle", "colleague", "boss", "flatmate", "roommate", "neighbour", "neighbor"})


#: a child's coming, of which the user is never the subject ("User was born in Leeds" ends no pregnancy)
_ARRIVAL = frozenset({"bear", "born", "arrive"})


def _whose(text: str, subject: str) -> tuple[bool, str | None]:
    """(whether ``text``'s subject is the user, alone or with someone; the noun of the user's person it is about
    instead, "wife" of "User's wife Ana ...", or ``None``)."""
    s = re.escape(subject)
    if re.match(rf"^(?:{s}\b(?!'s)|[\w' ]{{1,40}}? and {s}\b(?!'s))", text) or re.search(rf"^{s}'s \w+ and {s}\b",
                                                                                        text):
        return True, None
    m = re.match(rf"^{s}'s (?:new |newborn |baby |little )?(?P<n>[^\W\d_]+)", text)
    return False, (m.group("n").lower() if m else None)


def life_ends(text: str, subject: str) -> list[str]:
    """The states an event of the user's life told in ``text`` ends (see the module docstring); ``[]`` when none
    or without the parser."""
    lemmas = parse_en.lemmas(text)
    if not lemmas:
        return []
    own, person = _whose(text, subject)
    out: list[str] = []
    for events, by, states in _EVENTS:
        if lemmas & events and (own or person in by):
            out.extend(s for s in states if s not in out)
    if lemmas & _ARRIVAL and person in _CHILD:  # "User's son Leo was born", "our daughter arrived on the 3rd"
        out.extend(s for s in ("pregnant", "expecting") if s not in out)
    return out


def people_kept(text: str, subject: str, ends: list[str]) -> list[str]:
    """``ends`` less the people when ``text`` is about another person (``User's brother and his girlfriend split
    up``): their ending is theirs."""
    own, _ = _whose(text, subject)
    return ends if own or not text.startswith(f"{subject}'s ") else [e for e in ends if e.lower() not in _PEOPLE]
