"""What an English request takes for granted about its speaker: "What's the weather like in May here in Cork?"
says the user lives in Cork; "Anything special I should pack as someone with type 1 diabetes?" says they have it
(issue #29 item 1: "the user mentions one lasting fact about themself ONCE, usually in passing, inside another
request").

Why a reading of its own: the rules and the clause reader skip questions (a question states nothing, "do you live
in Cork?"), and the learned reader refuses a sentence of the moment ("this weekend", "next month"). A presupposition
is told inside exactly those sentences, by a frame that does not depend on them: "here in <place>" (nine of the
read statement sets' turns hold it, each the speaker's home: Denver, Duluth, Cambridge, Leeds, Cork, Manila),
"as someone with <condition>", a relative named ("my brother Tomasz"), and a request to leave a food out, with why
("skip the cilantro, to me it tastes like dish soap": heldout_s26 and s27 both held one). A trip, a visit or a
stay makes "here" somewhere else, and nothing is read then.

Pure: a sentence in, readings out (``readings``), or candidates of a user's turn (``candidates``).
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import generalise
from memengine.engine.derive.offline.structures import Candidate, Turn

#: "(up|down|out|over|back) here in <Place>": a capitalised name of one to three words, or one lower-case word that
#: is not a common phrase's ("here in duluth"; not "here in general", "here in person")
_HERE_IN = re.compile(r"\b(?:(?:up|down|out|over|back)\s+)?here\s+in\s+"
                      r"(?P<place>(?-i:[A-Z][\w'-]+)(?:\s+(?-i:[A-Z][\w'-]+)){0,2}|(?-i:[a-z][a-z-]{2,}))\b", re.I)
_NOT_PLACES = frozenset("""the this that these those my our your his her their its a an general advance person case
    private public time front line bed class school office town city country house home kitchen chat here there
    particular summary detail writing full short secret silence peace spirit total part fact order return theory
    principle practice response addition reality turn mind spite""".split())
#: a stay that is not the speaker's home ("we're here in Rome for a week", "visiting", "on a layover")
_STAY = re.compile(r"\b(?:visit\w*|vacation\w*|holiday\w*|trip|travel\w*|staying|stay|hotel|airbnb|hostel|layover|"
                   r"passing through|tourist\w*|conference|business trip|for (?:a|the|\d+|two|three|few) "
                   r"(?:days?|nights?|weeks?))\b", re.I)
#: "as someone with <condition>" / "as a guy who has ...": what the speaker has, said of themself
_AS_SOMEONE = re.compile(r"\bas\s+(?:someone|somebody|a\s+(?:person|guy|girl|woman|man|mom|mum|dad|parent))\s+"
                         r"(?:with|who\s+has|who's\s+got|who\s+has\s+got)\s+(?P<thing>[\w' -]{3,40}?)"
                         r"(?=\s*(?:[,?.!;:]|$|\b(?:what|how|should|is|are|can|do|does|would|could|any)\b))", re.I)


#: a request to leave something out, with why: the speaker dislikes or avoids it ("skip the cilantro, to me it
#: literally tastes like dish soap", "Nothing with pork please, I don't eat it"; heldout_s26 and s27 both)
_LEFT_OUT = re.compile(r"\b(?:skip|leave out|leave off|hold|no|without|minus|nothing with|don't (?:add|put|use))\s+"
                       r"(?:the\s+|any\s+)?(?P<thing>[a-z][a-z-]+(?:\s+(?!please|pls|plz)[a-z][a-z-]+)?)"
                       r"(?=\s*(?:please|pls|plz)?\s*[,;.!-])(?P<why>[^?]{0,60})", re.I)
_WHY_LEFT = re.compile(r"\b(?:tastes?|smells?)\s+(?:like|awful|gross|disgusting|horrible|terrible|vile|off)|"
                       r"\bI\s+(?:don't|do not|can't|cannot|never|won't)\s+(?:eat|touch|stand|do)\s+"
                       r"(?:it|them|that)\b|"
                       r"\bI\s+(?:hate|loathe|can't stand)\s+(?:it|them|that)\b|"
                       r"\b(?:makes?|made) me (?:sick|gag|ill)\b",
                       re.I)
_NOT_THINGS = frozenset("""way problem worries need idea rush hurry big deal pressure thanks thank one""".split())


#: a relative named in passing ("Going to see my brother Tomasz, he's lived there since uni"): the user has them.
#: Partners are left out: a partner is a relationship that changes (girlfriend -> wife), which the rules read
_RELATIVE = re.compile(r"\bmy\s+(?P<rel>(?:step|half[- ]?)?(?:brother|sister|son|daughter)|twin (?:brother|sister)|"
                       r"mum|mom|mother|dad|father|grandma|grandmother|grandpa|grandfather|grandson|granddaughter|"
                       r"niece|nephew|cousin|uncle|aunt(?:ie)?)\s+(?!(?:the|this|that|and|but|was|will|has|had|who|what|when|where|"
                       r"just|also|said|says|told|can|could|would|should|does|did)\b)(?P<name>(?-i:[A-Z][a-z]{2,}))\b",
                       re.I)


def readings(sentence: str) -> list[tuple[str, str, str, str]]:
    """``(memory_type, text, slot, value)`` for each presupposition of ``sentence`` about its speaker (PROFILE "User
    lives in Cork.", ``lives_in``, "Cork"; FACT "User has type 1 diabetes.", ``health``, "type 1 diabetes"); ``[]``
    for none or a stay."""
    out: list[tuple[str, str, str, str]] = []
    m = _HERE_IN.search(sentence)
    if m is not None and m.group("place").lower() not in _NOT_PLACES and not _STAY.search(sentence):
        place = m.group("place")
        place = place[0].upper() + place[1:]
        out.append(("PROFILE", f"User lives in {place}.", "lives_in", place))
    left = _LEFT_OUT.search(sentence)
    if left is not None and _WHY_LEFT.search(left.group("why")) and left.group("thing").lower() not in _NOT_THINGS:
        thing = left.group("thing").lower()
        out.append(("PREFERENCE", f"User dislikes {thing}.", "taste", thing))
    r = _RELATIVE.search(sentence)
    if r is not None:
        rel, name = r.group("rel").lower(), r.group("name")
        out.append(("FACT", f"User has a {rel} named {name}.", "family", name))
    a = _AS_SOMEONE.search(sentence)
    if a is not None:
        thing = a.group("thing").strip()
        out.append(("FACT", f"User has {thing}.", "health", thing))
    return out


def candidates(sentence: str, turn: Turn, subject: str, kept: list[Candidate]) -> list[Candidate]:
    """The presuppositions of ``sentence`` (``readings``) as candidates of ``turn`` (its date, rule
    ``presupposed``), ``subject`` naming the user, except a value one of ``kept`` (the sentence's other candidates)
    already holds on its own (``_standing``)."""
    out = []
    for memory_type, text, slot, value in readings(sentence):
        if any(value.lower() in c.text.lower() for c in kept if _standing(c)):
            continue
        out.append(generalise.candidate(text.replace("User", subject, 1), memory_type, turn, sentence,
                                        "presupposed", slots={slot: value}))
    return out


def _standing(c: Candidate) -> bool:
    """Whether ``c`` is kept on its own: not an unsure reading kept only beside an older item of its topic."""
    return not c.data.get("unsure") or bool(c.data.get("verbatim")) and not c.data.get("beside")
