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


def taste(sentence: str) -> tuple[str, str] | None:
    """``("likes" | "dislikes", thing)`` when ``sentence`` states a taste by one of the idioms above, the thing in
    the user's words; ``None`` otherwise (a person or a named group as the thing: a relationship, spaCy's entities
    where the ``nlp`` extra is installed)."""
    text = sentence.strip()
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
