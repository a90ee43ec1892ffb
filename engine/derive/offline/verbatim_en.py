"""The user's words kept as said when they state something lasting that no rule or clause reading typed (issue #29
item 1: "When the deriver is unsure, it keeps the user's own words with their date instead of a lossy paraphrase";
this session's brief: "keep the user's clause verbatim with its date as a FACT/PREFERENCE rather than dropping it").

People drop the subject in chat ("Been running every morning", "Mostly plant-based these days", "84kg!! 8 kilos down
since January"), put the value in a fragment after the statement ("We got a puppy! A beagle called Pepper"), or in a
clause whose subject is a pronoun ("gave up the espresso. it's matcha every morning now", "it's for my 2015 Kawasaki
Z800"). The small parser reads such sentences as no clause of the user's, so their value was dropped. ``lasting``
decides whether one such sentence is the user's statement of something lasting, from its structure:

* the user's: a subject of the user's (I / we / my or our thing), no subject at all (a dropped "I", a fragment), or
  "it" / "this" / "that" whose sentence or turn has a word of the user's; never a person's (``revision``'s owner:
  "my sister is vegan", "Dave is 40"), never an imperative or a question (the caller skips those);
* something to keep (an anchor): a name (a proper noun outside a date), an amount of something ("84kg", "£61k",
  "a 2015 Kawasaki"), or the aspect of how things are now or usually are (``revision``'s cue: "now", "these days",
  "instead"; a frequency: "every morning", "three times a week", "always", "usually");
* nothing of the moment: no day-bound time ("today", "tonight", "this morning", "tomorrow"; a plan or an event of
  the day), no mood (``lexicon_en.FEELINGS``), no wish or future (a modal, "going to", "gonna", "want", "need",
  "hope", "maybe"), no negation of the main verb ("I'm not vegan, my sister is"), nothing additive.

``words`` is what the kept item quotes: a verbless fragment or a pronoun's sentence leans on the turn's other
sentences, so the turn is kept when short (``fold.words_of``), else the sentence. Pure for a given pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memengine.engine.derive.offline import fold, idioms_en, parse_en, revision
from memengine.engine.derive.offline.lexicon_en import FEELINGS, PREF_VERBS, THINK_VERBS, anothers
from memengine.engine.derive.offline.quantities import INCOME
from memengine.engine.derive.offline.text import content_words, split_words

#: times that bind a sentence to one day: an event or a plan of the day, not a lasting state
_DAY_BOUND = re.compile(r"\b(?:today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening)|last night|"
                        r"right now|just now|later(?: on| today)?|this weekend|next weekend)\b", re.I)
#: a frequency: what the user does as a habit ("every morning", "three times a week", "daily", "most nights")
_FREQUENCY = re.compile(r"\b(?:every|each|most) (?:\w+ )?(?:day|morning|evening|night|week|weekend|month|year|"
                        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|"
                        r"\btimes? a (?:day|week|month)\b|"
                        r"\b(?:daily|weekly|nightly|always|usually|normally|mostly|all day|at this point|these days)\b|"
                        r"\bsince (?:the |last )?(?:(?-i:[A-Z])\w+|\d{4}|spring|summer|autumn|fall|winter|christmas|"
                        r"uni|school|college|the diagnosis|then)\b", re.I)
#: a wish, an intention, a supposition or a future: not how things are
_NOT_YET = re.compile(r"\b(?:might|may|maybe|perhaps|could|would|should|will|'ll|shall|gonna|going to|want|wanna|"
                      r"got to|gotta|has to|have to|must|"
                      r"need|hope|hoping|wish|planning|thinking (?:of|about)|who knows|someday|some day|at some point|"
                      r"if)\b", re.I)
#: what makes a value a past one ("my last day at Amazon", "my former boss", "the old flat")
_BYGONE = {"last", "final", "former", "previous", "old", "ex"}
#: verbs of how something affects the user now ("it's annoying me", "work is killing me")
_AFFECT = {"annoy", "bother", "stress", "frustrate", "kill", "drive", "bore", "worry", "upset", "irritate", "excite",
           "amaze", "exhaust", "drain", "wreck", "bug"}
#: thanks, greetings, apologies: what is said to the listener ("Thanks, Mel! That's really sweet.")
_CHATTER = re.compile(r"\b(?:thanks|thank you|thx|ty|cheers|hi|hey|hello|congrats|congratulations|sorry|bye|"
                      r"good (?:morning|night|luck)|you|your|you're)\b", re.I)
#: chat tokens that carry nothing and that the small parser reads as nouns
_CHAT = re.compile(r"\b(?:lol|lmao|rofl|ha(?:ha)+|hehe|tbh|ngl|omg|xd|fwiw|imo)\b", re.I)
#: pronouns a sentence may stand on when its turn says whose it is ("it's matcha every morning now")
_POINTING = {"it", "this", "that"}
#: units an amount may be written in, glued or apart ("84kg", "8 kilos", "£61k", "5k", "180cm")
_AMOUNT = re.compile(r"(?:[£$€]\s?\d[\d,.]*k?|\b\d[\d,.]*\s?(?:k|kg|kgs|kilos?|lbs?|pounds|stone|st|cm|m|km|miles?|"
                     r"mi|ft|hours?|hrs?|mins?|minutes?|years?(?: old)?|yo|%|grand)\b)", re.I)


def _subject(doc: Any) -> Any:
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None:
        return None, None
    # the subject nearest the verb: a misparse may give two ("Swimming lengths every morning, it's great")
    subj = max((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass", "expl") and c.i < root.i),
               key=lambda c: c.i, default=None)
    return root, subj


#: words before a name that make it the one spoken to ("Wow, Caroline!", "Yeah Mel, ...", "Thanks, Jo")
_CALLS = {"wow", "yes", "yeah", "yep", "yup", "oh", "ah", "aw", "aww", "hey", "hi", "hello", "thanks", "absolutely",
          "totally", "sure", "ok", "okay", "well", "no", "omg", "haha", "so", "right", "agreed", "true", "exactly",
          "congrats", "congratulations", "sorry", "dear", "bye", "cheers", "indeed", "definitely", "great", "nice",
          "same", "here", "too", "me", "and", "but", "love", "lol"}


def vocatives(doc: Any) -> set[int]:
    """Token indices of the names a sentence is said to (a name after a greeting or an exclamation at its start,
    "Wow, Caroline!", "Yeah Mel, ..."; or last after a comma, "..., Mel."): the listener, never a value."""
    out: set[int] = set()
    words = [t for t in doc if not t.is_punct]
    for t in doc:
        if t.pos_ != "PROPN":
            continue
        before = [w for w in words if w.i < t.i]
        nxt = doc[t.i + 1] if t.i + 1 < len(doc) else None
        closed = nxt is None or nxt.is_punct or nxt.pos_ == "PROPN"
        if closed and before and all(w.lower_ in _CALLS or w.pos_ == "INTJ" or w.pos_ == "PROPN" for w in before):
            out.add(t.i)
        elif closed and t.i > 0 and doc[t.i - 1].text == "," and all(w.i <= t.i for w in words):
            out.add(t.i)
        elif t.i == 0 and nxt is not None and nxt.text == ",":
            out.add(t.i)  # "Mel, you have to see this"
    return out


def _anchored(doc: Any, sentence: str, cue: bool) -> bool:
    """A name, an amount of something, or the aspect of a lasting state (see the module docstring)."""
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e} | vocatives(doc)
    if any(t.pos_ == "PROPN" and t.i not in dated and t.i > 0 and not t.is_stop for t in doc):
        return True  # (the first word is capitalised by position alone: "Been running" is no name)
    if any(t.pos_ == "PROPN" and t.i == 0 and t.ent_type_ in ("ORG", "GPE", "PRODUCT", "PERSON", "FAC", "LOC",
                                                              "NORP") for t in doc):
        return True
    if _AMOUNT.search(sentence) or any(t.like_num and t.i not in dated and t.head.pos_ in ("NOUN", "PROPN")
                                       for t in doc):
        return True
    return cue or bool(_FREQUENCY.search(sentence))


#: what only the speaker has among the things a turn talks of, said without "my" ("the salary goes up to £61k",
#: "new title is senior analyst", "rent's gone up to 1400"): income (``quantities.INCOME``), a home's cost, a weight
_ATTRIBUTES = INCOME | {"rent", "mortgage", "weight", "title", "commute", "role", "job", "position"}


def _attribute(subj: Any) -> bool:
    """Whether a subject noun without a possessor is the speaker's own attribute: one of ``_ATTRIBUTES`` with no
    determiner, "the", or "new" / "current" ("the salary", "new title"; not "her salary", "a title")."""
    return subj.lemma_.lower() in _ATTRIBUTES and all(
        c.lower_ in ("the", "new", "current") for c in subj.children if c.dep_ in ("det", "poss", "amod"))


def _names_a_thing(doc: Any, root: Any, mine: bool = False) -> bool:
    """Whether a pronoun's copula names a thing: "it's matcha now", "it's a Pixel 8", "it's for my Kawasaki"
    (a noun, a name or an amount, not a date; or a phrase after a preposition), not a quality or a doing."""
    if root.lemma_.lower() != "be":
        return False
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e}
    # (a drink or a dish after a frequency is read as an adjective at times: "it's matcha every morning now")
    often = mine and _FREQUENCY.search(doc.text) is not None  # (only in a turn that says whose it is)
    return any(c.dep_ == "attr" and c.pos_ in ("NOUN", "PROPN", "NUM") and c.i not in dated or c.dep_ == "prep"
               and any(g.dep_ == "pobj" and g.pos_ in ("NOUN", "PROPN") for g in c.children) or often and c.dep_ ==
               "acomp" and c.pos_ == "ADJ" and c.lower_ not in FEELINGS and not any(
                   x.dep_ == "advmod" for x in c.children) for c in root.children)


#: where a sentence joins clauses without a conjunction ("need a tyre guide, it's for my 2018 Skoda")
_JOINS = re.compile(r"\s*(?:[,;:]|\s[-–—]\s)\s*")


def of_the_moment(sentence: str, *, news: bool = False) -> bool:
    """Whether ``sentence`` is bound to the moment, whatever its structure: a day-bound time, a wish or a future, a
    chat filler, a mood (``_DAY_BOUND``, ``_NOT_YET``, ``_CHATTER``, ``lexicon_en.FEELINGS``). Plans and moods are
    short-lived (issue #29 item 1: "plans and moods are short"), so nothing of them is kept as said. ``news``: the
    day's news is not of the moment ("Divorce was finalized yesterday", "just got the keys": a change told as it
    happened, kept only beside the older value, ``generalise.learned``), nor is a request ("need a gift idea",
    "best desk chair under 300") anything but."""
    if news:
        return bool(_DAY_BOUND.search(_PAST_DAY.sub(" ", sentence)) or _NOT_YET.search(sentence)
                    or _CHATTER.search(sentence) or _EVALUATION.search(sentence)
                    or _NEEDS.search(sentence) or _REQUEST.match(sentence)) or any(
            w in FEELINGS for w in split_words(sentence.lower()))
    return bool(_DAY_BOUND.search(sentence) or _NOT_YET.search(sentence) or _CHATTER.search(sentence)
                or _EVALUATION.search(sentence) or _JUST_HAPPENED.search(sentence) or _NEEDS.search(sentence)) or any(
        w in FEELINGS for w in split_words(sentence.lower()))


#: a day gone by ("yesterday", "last weekend", "this morning", "on sunday"): the day of a piece of news, not of a plan
_PAST_DAY = re.compile(r"\b(?:today|yesterday|last (?:night|week|weekend|month|year|\w+day)|this (?:morning|afternoon)|"
                       r"earlier (?:today|this week)|\d+ (?:days?|weeks?|months?) ago|on (?:mon|tues|wednes|thurs|fri|"
                       r"satur|sun)day)\b", re.I)
#: a request said without a verb of asking ("need a gift idea", "best minivan for a family of four", "recommend some
#: jazz records", "make her have a dog named Pickles")
_REQUEST = re.compile(r"\s*(?:need|needs|best|recommend|suggest|make|give|find|write|help|easy|good|cheap|quick|"
                      r"gonna|going to|let's|lets|pls|please|i'll|i will|i'd like|want)\b", re.I)


#: an evaluation said with an intensifier ("my mentorship program is really rewarding", "the trip was so fun"): how
#: something strikes the speaker now, a remark rather than a fact
_EVALUATION = re.compile(r"\b(?:is|was|are|were|'s|'re|feels?|felt|been)\s+(?:really|so|super|very|quite|pretty|"
                         r"such|totally|absolutely|incredibly|extremely)\s+(?:a\s+)?\w+", re.I)
#: a need of a thing or a person ("the blue bicycle needs new brakes before spring"): a task, not how things are
_NEEDS = re.compile(r"\b(?:needs|needed|needing)\b", re.I)
#: what just happened ("my cat just knocked my coffee over", "just got back from the gym"): an event of the moment
_JUST_HAPPENED = re.compile(r"\bjust\s+(?:\w+ed|got|had|made|went|did|saw|came|ate|broke|lost|won|found|spilt)\b",
                            re.I)
#: nouns that name no thing of the speaker's: times and vague amounts ("I use it every day", "loads has happened")
_VAGUE_NOUNS = frozenset("""day days week weeks month months year years morning mornings night nights evening
evenings time times while moment bit lot lots loads load thing things stuff way ways kind sort""".split())


def anchored(sentence: str) -> bool:
    """Whether ``sentence`` names something to keep: a noun, a name or a number that is not a time or a vague amount
    (``_VAGUE_NOUNS``), or an adjective said of the speaker ("I'm left-handed"). ``True`` without a parser (no
    reading to refuse on)."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return True
    return any(t.pos_ in ("NOUN", "PROPN", "NUM", "ADJ") and t.lower_ not in _VAGUE_NOUNS for t in doc)


def lasting(sentence: str, turn_text: str = "", *, lost: bool = False) -> bool:
    """Whether ``sentence`` (one English sentence of a user's turn ``turn_text``, not a question) states something
    lasting of the user's that can be kept in their words (see the module docstring): the sentence read whole, or
    one of its comma-joined clauses ("need a tyre guide, it's for my 2018 Skoda Octavia": the request is of the
    moment, the car is lasting) when nothing in the sentence binds it to the day or a mood. ``False`` without a
    parser. ``lost``: a reading kept a clause of the user's from the sentence and lost a doing said before it
    ("swimming at the leisure centre after work, my back likes it way more"): the doing is the value, no other anchor
    is needed."""
    if _lasting(sentence, turn_text, lost):
        return True
    if _DAY_BOUND.search(sentence) or any(w in FEELINGS for w in split_words(sentence.lower())):
        return False
    # (a clause read apart must say whose it is: "strikes again" of "The trains are a mess now, strikes again" is not
    # the user's for having dropped its subject)
    parts = [p for p in _JOINS.split(sentence) if len(p.split()) >= 2 and fold.FIRST_PERSON.search(p)]
    return len(_JOINS.split(sentence)) > 1 and any(_lasting(p, turn_text, False) for p in parts)


def _lasting(sentence: str, turn_text: str, lost: bool) -> bool:
    sentence = " ".join(_CHAT.sub(" ", sentence).split())  # (the small parser takes a trailing "lol" for the root)
    doc = parse_en.parsed(sentence) if sentence else None
    if doc is None or len(content_words(sentence)) < 1:
        return False
    if _DAY_BOUND.search(sentence) or _NOT_YET.search(sentence) or _CHATTER.search(sentence):
        return False
    root, subj = _subject(doc)
    if root is None:
        return False
    said = sentence
    if subj is not None and (subj.lower_ in _POINTING or subj.dep_ == "expl") and not _names_a_thing(doc, root):
        # "Been rowing every morning, honestly it's great": a remark on a doing said before it, whose dropped
        # subject is the user's; the doing is what is read
        # (the small parser reads "Swimming lengths every morning, it's great" with two subjects: the first is it)
        lead = [c for c in root.children if c.dep_ not in ("advmod", "punct", "intj", "cc", "mark", "aux", "neg")
                and c.i < subj.i and c.i != subj.i
                and c.pos_ in ("VERB", "NOUN", "PROPN", "AUX")
                and not any(x.dep_ in ("nsubj", "nsubjpass", "expl") for x in c.children)]
        if lead:
            subj, said = None, doc[min(t.i for t in lead[0].subtree):max(t.i for t in lead[0].subtree) + 1].text
    if any(w in FEELINGS for w in split_words(said.lower())):
        return False  # a mood ("so drained", "exhausted"), or a doing told as one
    if root.tag_ == "VB" and subj is None and said == sentence and all(
            t.is_punct or t.pos_ in ("INTJ", "CCONJ") or t.lower_ in _CALLS | {"please", "just", "pls"}
            or t.i in vocatives(doc)
            for t in doc[:root.i]):
        return False  # an imperative ("Use the blue one", "And sure, check out this pic"), a request
    hung = any(t.dep_ in ("nsubj", "nsubjpass", "poss") and t.i < root.i and t.lower_ not in ("i", "we", "my", "our")
               for t in doc) or root.pos_ == "PROPN" and any(c.dep_ == "case" for c in root.children)
    if subj is None and said == sentence and hung:
        return False  # "Oliver's hilarious!", "Nadia's hilarious!": a subject the small parser hung elsewhere
    if any(c.dep_ == "neg" for c in root.children) or any(t.lower_ in ("not", "never", "no", "n't") and t.dep_ == "neg"
                                                          for t in doc if t.head.i == root.i):
        return False
    if root.lemma_.lower() in THINK_VERBS or re.search(r"\blet's\b|\blet us\b", sentence, re.I):
        return False  # an opinion ("I feel it's important ..."), a wish, a proposal ("let's spread love")
    r = revision.read(sentence)
    if r is None or r.additive or r.owner:
        return False  # a person's ("my sister is vegan", "Dave is 40"), or a value beside another
    own = fold.FIRST_PERSON.search(sentence) is not None
    if subj is None and said == sentence and (root.tag_ == "VBZ" or root.lemma_.lower() == "be" and root.tag_ in (
            "VBP", "VBD") and root.lower_ not in ("am", "'m")):
        # "With two kids under five the mornings are chaos", "..., strikes again": a subject misread or another's
        # dropped; a dropped "I" never takes "is", "are" or a verb in -s
        return False
    if any(t.lower_ in _BYGONE and t.dep_ == "amod" for t in doc) or any(
            t.lemma_.lower() in _AFFECT and any(c.dep_ == "dobj" and c.lower_ in ("me", "us") for c in t.children)
            for t in doc):
        return False  # "my last day at Amazon" ends a value; "the policy is annoying me" is a mood of the moment
    if subj is None and root.pos_ in ("NOUN", "PROPN") and not own and root.lemma_.lower() not in revision.TIME_KEYS \
            and any(
            c.dep_ == "det" and c.lower_ in ("the", "this", "that", "these", "those") for c in root.children):
        return False  # "the meeting overran by 40 minutes": a definite thing's doing, read as a fragment
    if subj is not None:
        low = subj.lower_
        if low in ("i", "we"):
            pass
        elif low in _POINTING or subj.dep_ == "expl":
            if not _names_a_thing(doc, root, bool(fold.FIRST_PERSON.search(turn_text))) or not (
                    own or r.cue or _FREQUENCY.search(sentence)):
                # "it's raining", "it's late now", "that was fun", "It's a true story about a trans girl": no thing
                # of the user's named, nor how things are now
                return False
        elif subj.pos_ == "PRON":
            return False  # he / she / they / you: someone else's
        elif not any(x.lower_ in ("my", "our") for x in subj.subtree) and not own and not _attribute(subj):
            return False  # "the meeting ran three hours", "Traffic was terrible": nothing of the user's
    if subj is None and not any(t.pos_ in ("VERB", "AUX") for t in doc) and not (
            fold.FIRST_PERSON.search(turn_text) or r.cue or _FREQUENCY.search(sentence) or _AMOUNT.search(sentence)):
        return False  # a verbless line in a turn that never says whose it is ("message number 7 about topic0")
    return _valued(doc) and (lost or _anchored(doc, sentence, r.cue))


def _valued(doc: Any) -> bool:
    """Whether the sentence names a value at all: a noun, a name, a number or an adjective that is not a time
    ("I use it every day" says nothing to keep)."""
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e} | vocatives(doc)
    return any(t.pos_ in ("NOUN", "PROPN", "NUM", "ADJ") and not t.is_stop and t.i not in dated
               and t.lemma_.lower() not in revision.TIME_KEYS for t in doc)


def liking(sentence: str) -> bool:
    """Whether the sentence says what the user likes ("my back loves it", "obsessed with ..."): a PREFERENCE; not
    another person's liking ("my son loves it", ``lexicon_en.anothers``); an aversion of the user's own senses ("it
    tastes like soap to me", ``idioms_en.averse``) is one."""
    doc = parse_en.parsed(sentence)
    return doc is not None and (any(t.lemma_.lower() in PREF_VERBS and t.pos_ == "VERB" and not anothers(next(
        (c for c in t.children if c.dep_ in ("nsubj", "nsubjpass")), None)) for t in doc)  # not "my son loves it"
        or idioms_en.averse(sentence))  # "it tastes like soap to me": a dislike


def fragment(sentence: str) -> bool:
    """Whether ``sentence`` has no finite verb of its own ("A beagle called Pepper", "84kg!!", "Junior designer at
    Figma"): what it says leans on the sentence before it."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return False
    root, subj = _subject(doc)
    return root is None or subj is None and root.pos_ not in ("VERB", "AUX") or (
        subj is not None and subj.lower_ in _POINTING)


def words(sentence: str, turn_text: str) -> str:
    """What a kept item quotes: the turn when short (``fold.words_of``) for a fragment or a pronoun's sentence,
    else the sentence."""
    return fold.words_of(sentence, turn_text) if fragment(sentence) else " ".join(sentence.split())


def new_name(sentence: str, clauses: Sequence[Any], ended: list[str]) -> bool:
    """Whether a sentence that ends something (``ended``) names, in a clause that neither ends nor negates
    anything, a thing the ends do not: the new value said beside the old one, however it is said ("sold the Golf,
    the Model 3 is so much quieter", "binned the Fitbit - the Garmin tracks way better"). A comparison or a remark
    is no clause of the user's, so without this the new value was lost and only "User sold the Golf" kept."""
    doc = parse_en.parsed(sentence)
    if doc is None or not ended:
        return False
    if not any(c.ends and getattr(parse_en.subject_of(doc[c.head]), "lower_", "i") in ("i", "we") for c in clauses):
        return False  # the end is the user's doing ("sold the Golf"), not a thing's ("Art gives me ...")
    gone = {w.lower() for e in ended for w in e.split()}
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e}
    for c in clauses:
        if c.ends or c.negated:
            continue
        if any(doc[i].pos_ == "PROPN" and doc[i].lower_ not in gone and doc[i].i not in dated and doc[i].i > 0
               for i in c.tokens):
            return True
    return False


def uncovered(sentence: str, texts: list[str]) -> bool:
    """Whether ``sentence`` names something (a proper noun outside a date, not its first word alone; a doing said
    before any subject) that none of ``texts`` (what was read from it) holds: a value the readings lost."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return False
    held = " ".join(texts).lower()
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") for t in e} | vocatives(doc)
    if any(t.pos_ == "PROPN" and t.i > 0 and t.i not in dated and not t.is_stop and t.lower_ not in held
           for t in doc):
        return True
    return lost_doing(sentence, texts)


def lost_doing(sentence: str, texts: list[str]) -> bool:
    """Whether ``sentence`` says a doing first with its subject dropped ("Been rowing most evenings now, my knees
    thank me"), then a clause with a subject of its own that the readings (``texts``) kept instead."""
    doc = parse_en.parsed(sentence)
    if doc is None:
        return False
    held = " ".join(texts).lower()
    first = next((t.i for t in doc if t.dep_ in ("nsubj", "nsubjpass", "expl")), len(doc))
    return any(t.tag_ in ("VBG", "VBN") and t.pos_ == "VERB" and t.lower_ not in held for t in doc[:first])
