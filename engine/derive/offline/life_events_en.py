"""What an event of the user's life ends (issue #29 item 1: "a state ended by an event (an engagement ends 'single',
surgery ends 'glasses')"; heldout_s17 / s18 dev: a wedding left "boyfriend" current, a birth "pregnant", a
graduation "the second year of a nursing degree", laser surgery "contact lenses"; heldout_s20: a retirement "teaches
high school chemistry").

A closed class of world knowledge, not phrasings: each event is a set of lemmas (the parser's, so "married",
"marrying", "wedding" are one), each with the states it ends, said as the words an item of the state holds (every
word of one, stop words aside: ``merge._ended`` matches them). ``life_ends`` reads a candidate's text (the third
person the extraction writes, "User and Tom got married") and gives the states to end when the event is the user's:
its subject is the user, alone or with someone ("Tom and User"), or for a wedding, an engagement or a birth, the
user's own spouse or child ("User's wife Ana ...", "User's son Leo was born"). A retirement ends the user's work
only once it has happened (``_happened``: not "hoping to retire", "will retire next year"). Another person's event
ends nothing of the user's ("User's sister got married"); and another person's ending ends no person of the user's
(``people_kept``: "User's brother and his girlfriend split up" is no end of the user's girlfriend). Pure.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import parse_en

#: a retirement; "User's retirement party was on Friday" is the user's too (its subject noun is "retirement")
_RETIRE = frozenset({"retire", "retired", "retirement", "retiree", "pension", "pensioner"})
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
    # a retirement ends the user's work, whichever way the item says it: the job slots ("is a postman", "works at
    # Siemens", "works as an engineer") and the verbs that name a profession by its work ("teaches year 6")
    (_RETIRE, frozenset({"retirement"}),
     ("slot:job", "slot:works_at", "slot:works_as", "teach", "lecture", "tutor")),
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
    quote = re.match(rf'^{s} said: "(?P<q>.+)"\.?$', text, re.S)
    if quote is not None:  # the user's words kept as said: whose event it is, is read from them ("My dad retired")
        said = re.sub(r"^(?:I|we)\b", subject, quote.group("q"), flags=re.I)
        return _whose(re.sub(r"^(?:my|our)\b", f"{subject}'s", said, flags=re.I), subject)
    if re.match(rf"^(?:{s}\b(?!'s)|[\w' ]{{1,40}}? and {s}\b(?!'s))", text) or re.search(rf"^{s}'s \w+ and {s}\b",
                                                                                        text):
        return True, None
    m = re.match(rf"^{s}'s (?:new |newborn |baby |little )?(?P<n>[^\W\d_]+)", text)
    return False, (m.group("n").lower() if m else None)


#: what makes an event one still to come or only wished for ("I'll retire next summer", "hoping to retire")
_NOT_YET_AUX = frozenset({"will", "shall", "would", "could", "might", "may", "should", "can", "must"})
_NOT_YET_HEAD = frozenset({"plan", "hope", "want", "wish", "intend", "think", "consider", "go", "aim", "try", "need",
                           "like", "love", "dream", "expect", "afford",
                           # the forms read as they are where the small model lemmatises wrongly ("hoping" -> "hop")
                           "hoping", "planning", "wanting", "thinking", "going", "aiming", "trying"})
_NOT_YET_TIME = frozenset({"next", "soon", "someday", "eventually", "upcoming", "later"})


def _happened(text: str, events: frozenset[str]) -> bool:
    """Whether an event of ``events`` told in ``text`` has happened: its word has no modal ("will retire"), is not
    the object of an intention ("hoping to retire", "going to retire", "thinking about retiring") and is not dated
    ahead ("retire next summer", "retiring soon")."""
    doc = parse_en.parsed(text)
    if doc is None:
        return False
    for tok in doc:
        if tok.lemma_.lower() not in events and tok.lower_ not in events:
            continue
        near = [tok, *tok.children, *(c for c in tok.children for c in c.children)]
        if any(c.dep_ in ("aux", "auxpass") and c.lemma_.lower() in _NOT_YET_AUX for c in tok.children):
            return False
        if any(w.lower_ in _NOT_YET_TIME for w in near):
            return False
        head = tok.head if tok.dep_ in ("xcomp", "pcomp", "pobj", "ccomp") else None
        while head is not None and head.dep_ in ("prep", "pcomp", "pobj"):
            head = head.head if head.head is not head else None
        if head is not None and {head.lemma_.lower(), head.lower_} & _NOT_YET_HEAD:
            return False
        return True
    return False


def life_ends(text: str, subject: str) -> list[str]:
    """The states an event of the user's life told in ``text`` ends (see the module docstring); ``[]`` when none
    or without the parser."""
    lemmas = parse_en.lemmas(text)
    if not lemmas:
        return []
    own, person = _whose(text, subject)
    out: list[str] = []
    for events, by, states in _EVENTS:
        if lemmas & events and (own or person in by) and (events is not _RETIRE or _happened(text, events)):
            out.extend(s for s in states if s not in out)
    if lemmas & _ARRIVAL and person in _CHILD:  # "User's son Leo was born", "our daughter arrived on the 3rd"
        out.extend(s for s in ("pregnant", "expecting") if s not in out)
    return out


def people_kept(text: str, subject: str, ends: list[str]) -> list[str]:
    """``ends`` less the people when ``text`` is about another person (``User's brother and his girlfriend split
    up``): their ending is theirs."""
    own, _ = _whose(text, subject)
    return ends if own or not text.startswith(f"{subject}'s ") else [e for e in ends if e.lower() not in _PEOPLE]
