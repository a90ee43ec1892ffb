"""What type of memory a user's English clause is (seed 004 §4 types; issue #29 item 1): a liking, a diet or a
condition of the body, a practice (a skill verb, a language used, an instrument played, who practises it), who the
user is, or a plain fact (``type_of``). Split from ``statements_en`` (module size); pure for a given pipeline
(``kinds`` loads the offline MiniLM once, for a language named by a common word)."""

from __future__ import annotations

import re
from typing import Any

from memengine.engine.derive.offline import kinds, parse_en
from memengine.engine.derive.offline.lexicon_en import BODY, OCCUPATIONS, PREF_VERBS, SKILL_VERBS, anothers
from memengine.engine.derive.offline.parse_en import Clause, span_text, subject_of

#: adverbs that name where a movement goes ("cycle home", "bike everywhere", "swim there and back")
#: places people go to every day that the small parser may read as a verb after "to" ("cycle to work")
_PLACES = {"work", "school", "class", "college", "uni", "church", "office", "town", "practice"}
_WHERE_TO = {"home", "everywhere", "there", "back", "in", "out", "over", "across", "around", "downtown", "uptown"}


def _goes_somewhere(head: Any) -> bool:
    """Whether the clause headed by ``head`` says where a movement goes (a goal after to / into / towards / from /
    across, or "home", "everywhere"): "I cycle to the office" is how the user gets there, a routine, not the practice
    of cycling (issue #29 defect 2); "I cycle on weekends" says nothing of a destination."""
    for c in head.children:
        if c.dep_ == "prep" and c.lower_ in ("to", "into", "towards", "toward", "from", "across", "through") and any(
                g.dep_ == "pobj" for g in c.children):
            return True
        if c.dep_ in ("advmod", "prt", "npadvmod") and c.lower_ in _WHERE_TO:
            return True
        if c.dep_ in ("xcomp", "advcl") and c.lemma_.lower() in _PLACES and any(a.lower_ == "to" for a in c.children):
            return True  # "cycle to work": the small parser reads a place as an infinitive
    return False


#: verbs of using a language (spoken, signed, written as code): a named object of theirs is a language the user has
_LANGUAGE_USE = {"speak", "sign", "write", "code", "program", "converse", "script"}
#: agent nouns of a practice that are a trade, not a pastime ("a personal trainer", "a team player")
_NOT_PRACTICE = {"trainer", "team", "player"}


def _practice_agent(tok: Any) -> bool:
    """Whether noun ``tok`` names who practises something (``SKILL_VERBS`` plus diving, by the agent ending: "diver",
    "climber", "swimmer", "cyclist"; "chess player"; an instrument's player by its kind, "pianist"), not an
    occupation (``OCCUPATIONS``: "painter", "programmer")."""
    lemma = tok.lemma_.lower()
    if tok.pos_ != "NOUN" or lemma in OCCUPATIONS:
        return False
    stems = {lemma[:-1], lemma[:-2], lemma[:-3], lemma[:-3] + "e"} if lemma.endswith(("er", "ist")) else set()
    if lemma == "player":  # who plays what: a named game or sport before it ("chess player"), not "a team player"
        return any(c.dep_ in ("compound", "amod") and c.lower_ not in _NOT_PRACTICE for c in tok.children)
    return bool(stems & (SKILL_VERBS | {"dive"})) or lemma.endswith("ist") and kinds.kind_of(lemma) == "instrument"


def practised(head: Any) -> bool:
    """Whether the clause headed by ``head`` states a practice of the user's (heldout_s17-s20: SKILL, at times only):
    a skill verb or a language used (``_LANGUAGE_USE`` with a named object or one of the language kind), said by
    the head or by a participle under it ("grew up speaking Portuguese", "started playing cello"), or who practises
    it ("I'm a scuba diver", "a keen climber", ``_practice_agent``). A way of getting somewhere is none."""
    verbs = [head, *(c for c in head.children if c.dep_ in ("xcomp", "advcl") and c.tag_ == "VBG")]
    for v in verbs:
        lemma = v.lemma_.lower()
        if v is not head and lemma in SKILL_VERBS and not _goes_somewhere(v):
            return True
        if lemma in _LANGUAGE_USE and any(c.dep_ == "dobj" and (c.pos_ == "PROPN" or kinds.kind_of(
                c.text, name=False) == "language") for c in v.children):
            return True
    return head.lemma_.lower() == "be" and any(c.dep_ == "attr" and _practice_agent(c) for c in head.children)


#: what a person runs or owns as their work: a trade's premises and firms ("a bakery", "a coffee shop", "a practice");
#: a noun in -ery names one too ("brewery", "nursery", "eatery")
_BUSINESS = {"shop", "store", "cafe", "café", "restaurant", "bar", "pub", "business", "company", "firm", "agency",
             "startup", "start-up", "practice", "salon", "studio", "clinic", "farm", "garage", "hotel", "bistro",
             "boutique", "consultancy", "charity", "nonprofit", "franchise", "deli", "gallery", "workshop", "stall",
             "label", "daycare", "gym", "b&b", "bnb", "guesthouse", "kennel", "kennels", "surgery", "pharmacy"}
#: verbs of keeping a business ("I run a small bakery", "we own a coffee shop", "she founded ..." is another's)
_KEEP_BUSINESS = {"run", "own", "manage", "found", "co-found", "cofound", "open", "start"}
#: verbs of a choice kept to ("I only drink red wine", "I only ever fly economy"): with "only", a liking
_CHOOSE = {"drink", "eat", "wear", "use", "buy", "order", "fly", "read", "watch", "listen", "book", "shop", "play",
           "drive", "stay", "pick", "choose"}
#: adjectives that after a noun say the user loves it ("Liverpool mad", "football crazy", "horse mad")
_MAD = {"mad", "crazy", "nuts", "daft", "potty", "obsessed"}


def _runs_business(head: Any) -> bool:
    """Whether ``head`` keeps a business (``_KEEP_BUSINESS`` with an object of ``_BUSINESS`` or in -ery): the
    user's work, who they are (heldout_s20: PROFILE)."""
    return head.lemma_.lower() in _KEEP_BUSINESS and any(
        c.dep_ == "dobj" and (c.lemma_.lower() in _BUSINESS or c.lemma_.lower().endswith("ery") and len(c.lemma_) > 5)
        for c in head.children)


def ruling(head: Any) -> str | None:
    """The type a clause's structure gives over a rule table's plain reading of it (FACT or PROFILE): SKILL for a
    practice (``practised``: "I grew up speaking Portuguese" read by a rule of the past), PROFILE for a business
    kept (``_runs_business``: "I own a bakery" read as a thing owned); ``None`` when the structure says neither."""
    return "SKILL" if practised(head) else "PROFILE" if _runs_business(head) else None


def _keeps_to(doc: Any, head: Any, tokens: list[int]) -> bool:
    """Whether the clause says a liking without a verb of liking: a choice kept to ("I only drink red wine",
    ``_CHOOSE`` with "only") or a noun one is mad about ("we're both Liverpool mad", ``_MAD`` right after a
    noun that is no subject)."""
    if head.lemma_.lower() in _CHOOSE and any(c.lower_ == "only" for c in head.children):
        return True
    return any(doc[i].lower_ in _MAD and i > 0 and doc[i - 1].pos_ in ("NOUN", "PROPN") and
               doc[i - 1].dep_ not in ("nsubj", "nsubjpass") and i - 1 in tokens for i in tokens)


def type_of(text: str, clause: Clause) -> str:
    """The seed 004 memory type of a user's clause: PREFERENCE for likes and dislikes, SKILL for what they learn
    or practise (not a way of getting somewhere, ``_goes_somewhere``), PROFILE for who they are (a copula, a slot
    of who they are, health), else FACT."""
    doc = parse_en.parsed(text)
    head = doc[clause.head]
    lemma = head.lemma_.lower()
    low = span_text(doc, clause.tokens).lower()
    liking = re.search(r"\b(?:fans?|supporters?|obsessed with|favou?rite|my thing|prefer)\b", low) or any(
        doc[i].lemma_.lower() == "person" and any(c.dep_ == "compound" for c in doc[i].children)
        for i in clause.tokens)  # "a dog person", "more of a tea person": a liking
    if lemma in PREF_VERBS and anothers(subject_of(head)):
        return "FACT"  # another's liking ("my wife Priya loves South Indian food"): a fact of the user's life
    if lemma in PREF_VERBS or liking or _keeps_to(doc, head, clause.tokens) or any(
            doc[i].lower_ == "into" and (doc[i].head.lemma_.lower() == "be" or doc[i].head.lemma_.lower() == "get"
                                         and not any(g.dep_ == "pobj" and any(d.dep_ == "det" for d in g.children)
                                                     for g in doc[i].children)) for i in clause.tokens):
        # "I'm into jazz", "got into bouldering"; not "take the train into the city", "got into an accident"
        return "PREFERENCE"
    if re.search(r"\b(?:allerg\w*|intoleran\w*|diabet\w*|coeliac|celiac|asthma\w*|migraines?|(?:\w+'s )?disease|"
                 r"syndrome|disorder|gluten|dairy)\b", low) or "diet" in clause.slots or BODY.search(" ".join(
                     t.lower_ for p in (head, *head.children) if p is head or p.dep_ in ("acomp", "attr", "oprd")
                     for t in (p, *p.children) if t is p or t.dep_ in ("amod", "npadvmod", "compound"))):
        # a condition or a diet the user is (``BODY``, said by the predicate: "my deaf coworkers" is none of theirs):
        # a fact about the user (the blind authors accept FACT, at times only)
        return "FACT"
    if re.search(r"\b(?:diet|alcohol)\b", low):
        return "PROFILE"
    if _runs_business(head):
        return "PROFILE"
    native = re.search(r"\b(?:natives?|natively|mother tongue|first language)\b", low)
    if (lemma in SKILL_VERBS or any(t.lemma_.lower() in ("learn", "study", "practise", "practice")
                                    for t in head.children)) and not _goes_somewhere(head) or practised(head) and \
            not native:  # a native language is who the user is (below)
        return "SKILL"
    if clause.slots.keys() & {"lives_in", "works_at", "job", "age", "marital", "diet", "chronotype", "politics"}:
        return "PROFILE"
    subj = subject_of(head)
    if subj is not None and subj.lower_ not in ("i", "we", "user") and clause.ref < 0:
        return "FACT"  # a thing of the user's ("my birthday is March 3rd", "my art is about ..."), not who they are
    if lemma == "speak" and not native and \
            not any(c.dep_ == "prep" and c.lower_ in ("to", "with", "at", "about") for c in head.children):
        return "SKILL"  # a language spoken is an ability, however well; a native one is who they are
    if lemma == "speak" or lemma == "go" and any(c.lower_ == "by" for c in head.children) or any(
            c.dep_ in ("attr", "acomp") and c.pos_ in ("NOUN", "PROPN", "ADJ", "NUM") for c in head.children):
        return "PROFILE"  # who they are ("I'm a nurse", "I go by Dee"); "I usually go running" is what they do
    return "FACT"
