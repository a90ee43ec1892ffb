"""A change recognised from what two statements mean (issue #29 item 1: "a change is recognised from what the new
statement means and the item it contradicts, not from a list of verbs").

``revises(new, old)`` says whether a newer statement of the user restates the attribute an older item states, with
another value, when no named slot (``merge.attribute_slots``) or end (``parse_en.ends``) caught it. Both texts are
read by the English parser (``parse_en.parsed``; nothing without it) into:

* the **frame**: the lemmas of the content words both share (nouns, verbs, adjectives; "My dentist is Dr Patel" /
  "I changed dentists, I see Dr Okafor now" share ``dentist``), plus the meaning class of the predicate where the
  words differ but the attribute is one (``lexicon_en.FRAMES``: "I follow Arsenal" / "I root for Tottenham now" are
  both an allegiance); a frame needs a shared noun that is not a time word, two shared lemmas, or a shared class;
* the **values**: the content words each says and the other does not, by kind — a name (proper noun), a number, a
  common word. The two values must be of one kind: "my sister lives in Porto" / "my sister is a nurse now" share
  ``sister`` but a place is not a job, so nothing is revised;
* the **aspect** of the newer statement: it must present its value as the current one against an earlier one
  (``_CUE``: now, these days, any more, switched, a "new" X, "back to", "up to", ...), and it must not add to the
  older one (``_ADDITIVE``: also, too, as well, another, second, ...): "I'm allergic to latex as well" keeps the
  penicillin allergy, "we also got a kitten now" keeps the dog.

Without a shared word or class, what the values are decides (``kinds``: world knowledge from the offline MiniLM):
two values of one kind a person has one of at a time (a phone, a car, a club supported, an operating system, a
music taste) are one attribute; two languages or two pets are not. A frame shared only through a meaning class
(no shared word) asks more: both values are names, and when both
name the thing by a noun of the class, it is the same noun ("my new laptop is a Dell" keeps "my phone is an
iPhone"). Pure for a given pipeline; cached by text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import msgspec

from memengine.engine.derive.offline import parse_en, quantities
from memengine.engine.derive.offline.kinds import one_at_a_time, same_kind
from memengine.engine.derive.offline.lexicon_en import FRAME_SAME, FRAMES, REPLACE, ROLE, WHEN_WORDS
from memengine.engine.derive.offline.text import stem

#: words of the aspect "this is how it is now, unlike before" (a closed grammatical class: temporal adverbs of the
#: present against the past, "new"/"current" on a noun, verbs whose meaning is a change of value)
_CUE_WORDS = {"now", "nowadays", "anymore", "currently", "lately", "again", "instead", "finally", "latest"}
_CUE_PHRASES = ("these days", "any more", "no longer", "any longer", "at the moment", "from now on", "back to",
                "picked up a", "picked up an",
                "over to", "up to", "down to", "this year", "this month")
_CUE_LEMMAS = {"switch", "change", "swap", "replace", "move", "convert", "transfer", "upgrade", "downgrade", "become",
               "turn", "rid", "raise", "increase", "drop", "cut", "reduce", "promote",
               # acquiring a thing of a kind had one at a time ("picked up a used Tesla", "bought a Pixel"): only the
               # world-knowledge path (``kinds.one_at_a_time``) can take it for a change
               "buy", "purchase", "acquire", "lease",
               # disposing of a thing ("ditched apple and got a Pixel", "traded in the Golf"): the one got, or said
               # beside it, took its place — again only where the world-knowledge path finds one kind
               "ditch", "dump", "scrap", "sell", "trade", "bin", "junk", "retire", "offload"}
_CUE_AMODS = {"new", "current", "latest"}
#: what adds a value beside another instead of replacing it
_ADDITIVE = {"also", "too", "another", "second", "third", "both", "besides", "other", "extra", "additional"}
_ADDITIVE_PHRASES = ("as well", "in addition", "on top of", "one more", "more than one")
#: nouns of time: where or how often something happens, never what it is (a shared "morning" is no frame)
_TIME_NOUNS = {"morning", "evening", "night", "afternoon", "day", "week", "month", "year", "weekend", "today",
               "hour", "minute", "time", "while", "moment", "sunday", "monday", "tuesday", "wednesday", "thursday",
               "friday", "saturday", "season", "summer", "winter", "spring", "autumn", "fall", "weekday"}
#: verbs too light to name an attribute alone ("have", "get" a thing of any kind)
_LIGHT = {"be", "have", "get", "go", "do", "make", "take", "put", "let", "keep", "say", "tell", "see", "come",
          "give", "user", "thing", "way", "lot", "bit", "kind", "sort", "story"}
#: nouns of people a statement may be about instead of the user
_PEOPLE = {"sister", "brother", "partner", "wife", "husband", "son", "daughter", "kid", "child", "mum", "mom", "dad",
           "mother", "father", "friend", "boyfriend", "girlfriend", "roommate", "flatmate", "colleague", "cousin",
           "aunt", "uncle", "grandma", "grandpa", "parent", "neighbour", "neighbor", "boss", "manager"}
_CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "NUM")


def _set_to(t: Any) -> bool:
    """Whether ``t`` is an amount a verb sets "to" ("bumped my rent to $2050", "lowered the dose to 10 mg", "put it
    up to £1020"): the aspect of a changed value, whatever the verb (heldout_s17 / s18 dev: "jacked", "upped")."""
    if not (t.like_num or t.text[:1] in "$€£" and t.text[1:2].isdigit()):
        return False
    n = t.head if t.dep_ == "nummod" and t.head.dep_ == "pobj" else t
    to = n.head if n.dep_ == "pobj" else None
    return to is not None and (to.lower_ == "to" or any(c.lower_ == "to" for c in t.children)) and (
        to.head.pos_ == "VERB" or to.head.head.pos_ == "VERB")


@lru_cache(maxsize=4096)
def set_for_user(text: str) -> bool:
    """Whether ``text`` tells of someone setting an amount of the user's ("the landlord jacked it to $2100", "my
    boss bumped me up to 58k"; ``quantities.acted_on``): the statement is the user's, whoever its subject. ``False``
    without the parser."""
    doc = parse_en.parsed(text) if parse_en.available() else None
    for t in doc or ():
        if _set_to(t):
            n = t.head if t.dep_ == "nummod" and t.head.dep_ == "pobj" else t
            verb = n.head.head if n.head.head.pos_ == "VERB" else n.head.head.head
            if quantities.acted_on(verb, t) is not None:
                return True
    return False


_USER_POSS = re.compile(r"\bI's\b")
_USER = re.compile(r"\bUser\b")


class Reading(msgspec.Struct, frozen=True):
    """What ``revises`` reads of one statement: content lemmas with their kind (``name`` / ``number`` /
    ``common`` / ``verb``), the meaning classes of its words and its aspect."""

    lemmas: dict[str, str]
    classes: frozenset[str]
    cue: bool
    additive: bool
    #: runs of name / noun words as said ("Samsung Galaxy", "hip hop"), each with the keys of its words
    phrases: tuple[tuple[str, frozenset[str]], ...] = ()
    #: whose statement it is: "" the user's, else the person it is about ("sister" of "my sister drives a Tesla")
    owner: str = ""
    #: a verb of replacing one thing by another ("switched to", "swapped", "changed to", "moved over to")
    replacing: bool = False
    #: (noun, its modifier) pairs ("oat milk": ("milk", "oat")) and (verb, its object) pairs ("drink", "tea"): which
    #: of a thing, what a doing is of: a value of that thing or doing
    mods: frozenset[tuple[str, str]] = frozenset()


#: the same sets as the frame keys are written (stemmed: "morning" is "morn")
_TIME_KEYS = frozenset(_TIME_NOUNS | {stem(w) for w in _TIME_NOUNS})
_PEOPLE_KEYS = frozenset(_PEOPLE | {stem(w) for w in _PEOPLE})
#: the same, public: what ``fold`` leaves out of a shared topic noun (a time, a person, a light word)
TIME_KEYS, PEOPLE_KEYS, LIGHT = _TIME_KEYS, _PEOPLE_KEYS, frozenset(_LIGHT)


def _kind(t: Any) -> str:
    if t.like_num or t.text[:1].isdigit() or t.pos_ == "NUM":
        return "number"
    # a capitalised word inside the sentence is a name whatever the small tagger says ("is Vim" read as an adjective)
    if t.pos_ == "PROPN" or t.text[:1].isupper() and t.i > t.sent.start and t.text != "I":
        return "name"
    return "verb" if t.pos_ == "VERB" else "common"


def _key(t: Any) -> str:
    # a noun and its verb are one word of the frame ("my chess rating" / "I'm rated 1400 now")
    return str(t.lower_) if _kind(t) == "name" else stem(t.lemma_.lower())


_YEAR = re.compile(r"(?:19|20)\d\d")


@lru_cache(maxsize=4096)
def read(text: str, names: frozenset[str] = frozenset()) -> Reading | None:
    """The ``Reading`` of ``text`` (a stored item's "User ..." is read in the first person; ``names``, the user's
    own names in lower case, are the user too: "Caroline's ..." of an imported conversation); ``None`` without a
    parser."""
    if not parse_en.available():
        return None
    # a stored item's "User's phone is ..." / "User pays ..." in the first person, word for word (agreement is left:
    # the tagger reads "I pays" as a verb still)
    doc = parse_en.parsed(_USER_POSS.sub("my", _USER.sub("I", text)) if "User" in text else text)
    low = f" {doc.text.lower()} "
    lemmas: dict[str, str] = {}
    classes: set[str] = set()
    cue = any(p in low for p in _CUE_PHRASES)
    additive = any(f" {p} " in low or f" {p}," in low or f" {p}." in low for p in _ADDITIVE_PHRASES)
    run: list[tuple[str, str]] = []
    phrases: list[tuple[str, frozenset[str]]] = []
    # a date (a month, a weekday, "ago", "last ..."), not an amount of time ("30 minutes", "rated 1400")
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") and any(
        x.lower_ in WHEN_WORDS or x.pos_ == "PROPN" for x in e) for t in e}

    def close() -> None:
        if run:
            phrases.append((" ".join(w for w, _ in run), frozenset(k for _, k in run)))
            run.clear()

    for t in doc:
        lem = t.lemma_.lower()
        for name, words in FRAMES.items():
            if lem in words:
                classes.add(name)
        if t.lower_ in _CUE_WORDS or lem in _CUE_LEMMAS or t.lower_ == "since" and t.dep_ == "prep" or _set_to(t) or (
                t.lower_ in _CUE_AMODS and t.dep_ == "amod" and (any(
                    c.dep_ == "poss" or c.lower_ == "the" for c in t.head.children) or t.head.lemma_.lower() in ROLE)):
            cue = True  # "my new therapist", "a new landlord" replace one; "a new group", "some new offers" add
        if t.lower_ in _ADDITIVE and t.dep_ in ("advmod", "amod", "det", "preconj", "cc", "npadvmod", "nummod") and \
                not (t.i + 2 < len(doc) and doc[t.i + 1].text == "-" and doc[t.i + 2].lower_ == "hand") and \
                not (t.lower_ == "too" and t.head.pos_ in ("ADJ", "ADV") and t.i < t.head.i):
            additive = True  # (not second-hand; not the degree "too" of "too clunky", "too far")
        if t.is_stop and not t.like_num or t.pos_ not in _CONTENT_POS or lem in _LIGHT or t.lower_ in _CUE_WORDS \
                or t.lower_ in _CUE_AMODS or t.lower_ in ("i", "my", "we", "our", "me") or t.lower_ in names \
                or t.i in dated or _YEAR.fullmatch(t.text):
            close()  # (a date says when, never which: "on 10 July 2023" is no frame and no value)
            continue
        kind = _kind(t)
        if kind == "number" and t.lower_ == "one" and t.dep_ != "nummod":
            close()  # "like our last one": a pronoun, not an amount
            continue
        key = _key(t)
        lemmas.setdefault(key, kind)
        if kind in ("name", "common", "number") and lem not in _TIME_NOUNS and t.pos_ != "ADJ" or (
                run and kind == "number"):
            run.append((t.text, key))  # "iPhone 15", "Kia EV6": a number inside a name stays in it
        else:
            close()
    close()
    replacing = any(t.lemma_.lower() in REPLACE or t.lemma_.lower() == "move" and any(
        c.lower_ == "over" for c in t.children) for t in doc)
    mods = frozenset((_key(t.head), _key(t)) for t in doc if t.dep_ in ("amod", "compound", "nmod", "poss")
                     and t.head.pos_ == "NOUN" or t.dep_ == "dobj" and t.head.pos_ == "VERB"
                     and t.head.lemma_.lower() not in _LIGHT)
    return Reading(lemmas, frozenset(classes), cue, additive,
                   tuple(p for p in phrases if any(lemmas[k] != "number" for k in p[1])), _owner(doc, names),
                   replacing, mods)


def _owner(doc: Any, names: frozenset[str] = frozenset()) -> str:
    """Whom the main clause is about: "" for the user (I / we / User, or none), a person noun of the user's ("my
    sister drives a Tesla now": ``sister``), or a named subject of a verb other than "be" ("Alex drives a BMW")."""
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None:
        return ""
    subj = next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    if subj is None or subj.lower_ in ("i", "we", "user") or subj.lower_ in names or any(
            c.dep_ == "conj" and c.lower_ in ("i", "me") for c in subj.children):
        return ""
    if subj.pos_ == "NOUN" and subj.lemma_.lower() in _PEOPLE:
        return str(subj.lemma_.lower())
    if any(c.dep_ == "poss" and (c.lower_ in ("my", "our", "user") or c.lower_ in names) for c in subj.children):
        return ""  # "my Civic is making a noise", "User's Honda Civic ...": the user's thing, not a named someone
    return str(subj.lower_) if subj.pos_ == "PROPN" and root.lemma_.lower() != "be" else ""


def _frame(new: Reading, old: Reading) -> tuple[set[str], set[str]]:
    shared = new.lemmas.keys() & old.lemmas.keys()
    return shared, set(new.classes & old.classes)


def _names_of(phrase: str) -> str:
    """The name words of ``phrase`` ("hand Skoda Octavia" -> "Skoda Octavia", "iPhone 12 battery" -> "iPhone 12"):
    the name a modifier hid, or a part of the named thing followed (a word with a capital anywhere, "iPhone", and a
    number right after one, its model)."""
    words = phrase.split()
    kept = [w for i, w in enumerate(words) if any(ch.isupper() for ch in w) or w.isdigit() and i > 0 and any(
        ch.isupper() for ch in words[i - 1])]
    return " ".join(kept) or phrase


def revises(new: str, old: str, said: str | None = None, names: frozenset[str] = frozenset()) -> str | None:
    """Why statement ``new`` (the newer) revises the attribute item ``old`` states (see the module docstring), or
    ``None`` when it does not or cannot tell (no parser, no frame, values of other kinds, no change aspect, an
    additive word). ``said``: the sentence ``new`` was drawn from, when the memory text left out its time words
    ("I'm using a MacBook Air now" kept as "User uses a MacBook Air."): its aspect counts too. ``names``: the
    user's own names in lower case ("caroline"): the user, never a frame or a value. English only: a text
    with CJK characters is left to ``zh``."""
    a, b = read(new, names), read(old, names)
    src = read(said, names) if said and said != new else None
    if a is None or b is None or a.owner != b.owner:
        return None  # (another person's car is not the user's: "my sister drives a Tesla now")
    cue = a.cue or (src is not None and src.cue)
    if a.additive or src is not None and src.additive:
        return None
    shared, classes = _frame(a, b)
    # a person is whose the attribute is, not which ("my sister lives in Porto" / "my sister works at Google now")
    frame_nouns = {w for w in shared if "common" in (a.lemmas[w], b.lemmas[w])
                   and w not in _TIME_KEYS and w not in _PEOPLE_KEYS}
    rest = shared - _TIME_KEYS
    new_vals = {w: k for w, k in a.lemmas.items() if w not in b.lemmas and k != "verb" and w not in _TIME_KEYS}
    old_vals = {w: k for w, k in b.lemmas.items() if w not in a.lemmas and k != "verb" and w not in _TIME_KEYS}
    if not new_vals or not old_vals:
        return None
    kinds = set(new_vals.values()) & set(old_vals.values())
    if frame_nouns or rest and len(shared) >= 2:
        # a name or a number is the value when either side has one; else the common words are
        strong = {k for k in ("name", "number") if k in new_vals.values() or k in old_vals.values()}
        # an amount of the same thing is one at a time, said as a change or not ("my ride to work is 16 km")
        if strong and kinds & strong:
            if cue or strong == {"number"} and frame_nouns:
                return f"same {'/'.join(sorted(frame_nouns or rest))}, another value"
        elif not strong and cue and any((f, v) in a.mods for f in rest for v in new_vals) and any(
                (f, v) in b.mods for f in rest for v in old_vals):
            # common words are a value only as which of the shared thing ("oat milk" / "cow's milk"): two
            # statements sharing a noun in free talk ("a pottery class" / "a pottery workshop") are no change
            return f"same {'/'.join(sorted(rest))}, another kind of it"
        return None
    if not cue:
        return None
    heads_new = {FRAME_SAME.get(w, w) for c in classes for w in FRAMES[c] if a.lemmas.get(w) == "common"}
    heads_old = {FRAME_SAME.get(w, w) for c in classes for w in FRAMES[c] if b.lemmas.get(w) == "common"}
    if heads_new and heads_old and not heads_new & heads_old:
        return None  # "my new laptop is a Dell" beside "my phone is an iPhone": one class, two things
    if classes and "name" in kinds:
        return f"same {'/'.join(sorted(classes))}, another name"
    replacing = a.replacing or (src is not None and src.replacing)
    # no shared word or class: world knowledge of what the values are (``kinds``: an iPhone and a Pixel are both
    # phones, had one at a time; Spanish and Japanese both languages, had many)
    for phrase, keys in a.phrases:
        if keys <= b.lemmas.keys():
            continue
        for old_phrase, old_keys in b.phrases:
            if old_keys <= a.lemmas.keys():
                continue
            named = any(a.lemmas.get(k) == "name" for k in keys) and any(b.lemmas.get(k) == "name" for k in old_keys)
            kind = one_at_a_time(phrase, old_phrase, named) or (named and one_at_a_time(
                _names_of(phrase), _names_of(old_phrase), True)) or None  # "second-hand Skoda Octavia"
            if kind is None and replacing:
                # "I've switched to tea" after "I drink a lot of coffee": a replacing verb says the newer value
                # took the place of one of its kind, whatever the kind
                kind = same_kind(phrase, old_phrase)
            if kind is not None:
                return f"same kind ({kind}): {old_phrase} -> {phrase}"
    return None
