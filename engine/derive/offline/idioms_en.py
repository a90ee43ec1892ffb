"""Taste told by an idiom instead of a first-person verb (issue #29 item 1): "Nothing beats a strong black coffee in
the morning", "There's nothing like a cold beer after a hike", "You can't beat fresh bread", "Spicy food and I don't
get along", "Dairy doesn't agree with me", "Horror films and I are not friends". The parser sees no clause whose
subject is the user, so these gave no memory; each is a fixed expression whose meaning is a like or a dislike, read
here as ``("likes" | "dislikes", what)``. Pure; English only (the Chinese reading is ``zh``)."""

from __future__ import annotations

import re

from memengine.engine.derive.offline import kinds, parse_en

_THING = r"(?P<x>[^,.;!?]{2,60}?)"
_END = r"\s*(?:[,.;!?]|$|\b(?:though|honestly|tbh|really|to be honest)\b)"
#: (polarity, pattern): the thing liked / disliked is group ``x``
_IDIOMS = [(p, re.compile(rx, re.I)) for p, rx in (
    ("likes", r"^(?:(?:honestly|seriously|man|oh|god|ah|yeah)\W+)*(?:nothing|nothing else)\s+(?:beats|tops|"
              r"compares to|comes close to)\s+" + _THING + _END),
    ("likes", r"^(?:(?:honestly|seriously|man|oh|god|ah|yeah)\W+)*there(?:'s| is)\s+nothing\s+(?:quite\s+)?(?:like|"
              r"better than)\s+" + _THING + _END),
    ("likes", r"^(?:(?:honestly|seriously|man|oh|god|ah|yeah)\W+)*(?:you\s+)?can(?:'t|not)\s+beat\s+" + _THING + _END),
    ("dislikes", r"^" + _THING + r"\s+and\s+(?:I|me)\s+(?:don't|do not|never|just don't)\s+(?:get along|get on|mix|"
                 r"agree)\b"),
    ("dislikes", r"^" + _THING + r"\s+and\s+(?:I|me)\s+(?:are not|aren't|are never|have never been|will never be|"
                 r"won't ever be|could never be)\s+(?:friends|a good match|a match)\b"),
    ("dislikes", r"^" + _THING + r"\s+(?:doesn't|does not|don't|do not|never)\s+agree(?:s)?\s+with\s+me\b"),
)]
#: a thing that is a person or a pronoun is no taste ("My sister and I don't get along": a relationship)
_PERSON = re.compile(r"^(?:my|our|his|her|their)\s+(?:\w+\s+)?(?:sister|brother|mum|mom|dad|mother|father|boss|"
                     r"manager|partner|wife|husband|girlfriend|boyfriend|friend|flatmate|roommate|neighbour|neighbor|"
                     r"colleague|son|daughter|kid|kids|family|parents|in-laws|cousin|aunt|uncle)\b|"
                     r"^(?:he|she|they|it|this|that|we|you)$", re.I)


#: "no X" in a request ("and NO cilantro", "pls no horror", "no mushrooms please"): the thing refused is group ``x``
_REFUSAL = re.compile(r"(?:^|[,.;:!?]\s*|\s[-\u2013\u2014]\s*|\b(?:and|but|also|oh|pls|plz|please|just|so|ok|okay)\s+)"
                      r"no\s+(?P<x>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3}?)\s*(?=[,.;:!?]|\s[-\u2013\u2014]|\s+(?:"
                      r"please|pls|plz|ever|thanks|thank you)\b|$)", re.I)
#: what follows "no" in a reply, not a thing refused ("no problem", "no worries", "no idea")
_NOT_THING = {"problem", "problems", "worries", "worry", "thanks", "way", "idea", "need", "rush", "offense", "offence",
              "doubt", "clue", "wonder", "joke", "kidding", "chance", "biggie", "pressure", "matter", "one", "longer",
              "more", "reason", "luck", "big deal", "thank you", "pun intended", "judgement", "judgment", "shame"}
#: the user's standing aversion, said beside the refusal: "ever", a first-person dislike ("I genuinely can't stand
#: it", "I hate them", "never have liked it"), or what the thing does to them ("tastes like soap to me", "makes me
#: gag", "gives me nightmares")
_AVERSE = re.compile(
    r"\bI\s+(?:\w+ly\s+|just\s+|really\s+)*(?:can't|cannot|can not|couldn't|could never)\s+(?:stand|"
    r"stomach|handle|bear|abide|tolerate)\b|\bI\s+(?:\w+ly\s+|just\s+|really\s+)*(?:hate|loathe|detest|despise|dislike)"
    r"\b|\b(?:never|don't|do not)\s+(?:have\s+|ever\s+)?(?:liked?|enjoyed?)\b|\b(?:tastes?|smells?|sounds?|looks?|"
    r"feels?)\s+(?:like\s+)?[\w-]+\s+(?:to|for)\s+me\b|\b(?:makes?|made)\s+me\s+(?:gag|sick|ill|retch|queasy|"
    r"nauseous|puke|heave)\b|\bgives?\s+me\s+(?:nightmares|the creeps|headaches|a headache|heartburn|hives|"
    r"migraines)\b", re.I)
_AVERSION = re.compile(r"^\W*ever\b|" + _AVERSE.pattern, re.I)


def averse(sentence: str) -> bool:
    """Whether ``sentence`` says the user's own standing aversion (``_AVERSE``: "it tastes like soap to me", "I
    genuinely can't stand it", "it makes me gag"): a dislike, whatever it is of."""
    return _AVERSE.search(sentence) is not None


def refused(sentence: str, before: str = "") -> str | None:
    """The thing the user refuses for good in ``sentence`` ("and NO cilantro, tastes like soap to me", "please no
    horror, I genuinely can't stand it"), or in the last sentence of ``before`` (what the user said just before,
    "No olives.") when ``sentence`` gives the standing aversion ("I hate them"): an aversion of their own after the
    refusal (``_AVERSION``). ``None`` for a refusal of the moment ("no onions in this one"), another's aversion ("my
    sister hates it") or a reply ("no problem").

    Source: heldout_s17-s20 (three blind authors: a refusal with "to me" or "can't stand it" is a PREFERENCE)."""
    for text, why_in in ((sentence, None), (before.strip().rsplit(". ", 1)[-1], sentence)):
        hits = list(_REFUSAL.finditer(text))
        m = hits[-1] if hits else None  # the last refusal: the one the reason follows
        if m is None or m.group("x").lower() in _NOT_THING or m.group("x").split()[0].lower() in _NOT_THING:
            continue
        why = text[m.end():] if why_in is None else why_in
        if why_in is not None and text[m.end():].strip(" .!") or not _AVERSION.search(why):
            continue  # (the refusal ends the sentence before: its reason is the next one)
        return m.group("x").strip()
    return None


def taste(sentence: str, before: str = "") -> tuple[str, str] | None:
    """``("likes" | "dislikes", thing)`` when ``sentence`` states a taste by one of the idioms above, or refuses a
    thing for good (``refused``, ``before`` the user's words before it), the thing in the user's words; ``None``
    otherwise (a person or a named group as the thing: a relationship, spaCy's entities where the ``nlp`` extra is
    installed)."""
    text = sentence.strip()
    if (thing := refused(text, before)) is not None:
        return "dislikes", thing
    for polarity, rx in _IDIOMS:
        m = rx.search(text)
        if m is None:
            continue
        thing = m.group("x").strip()
        start = m.start("x") + len(m.group("x")) - len(m.group("x").lstrip())
        doc = parse_en.parsed(text)
        # the small model tags a capitalised first word as a PERSON ("Garlic doesn't agree with me"): a thing whose
        # kind is known (``kinds``: garlic a food) is no person
        bare = re.sub(r"^(?:a|an|the)\s+", "", thing, flags=re.I)
        named = (re.fullmatch(r"[A-Z][a-z]+", thing) is not None or doc is not None and any(
            e.label_ in ("PERSON", "ORG") and e.text == bare for e in doc.ents)) and \
            kinds.kind_of(thing) in (None, "person")
        if _PERSON.search(thing) or named:
            return None  # "My sister and I don't get along", "Sam and I aren't friends": a relationship
        if start == 0 and thing[:1].isupper() and thing[1:2].islower():
            thing = thing[0].lower() + thing[1:]  # "Spicy food and I ...": capitalised as the sentence's start
        return polarity, thing
    return None
