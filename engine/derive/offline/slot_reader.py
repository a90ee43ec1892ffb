"""A learned reader of which attribute of the user a statement is about (its slot: home, work, vehicle, diet, ...),
for recognising a change "from what the new statement means and the item it contradicts, not from a list of verbs"
(issue #29 item 1; seed 002 §2.2 "冲突的记忆 → 保留最新").

Why: a change people tell in passing names neither the attribute nor the old value: "opened my own food truck last
month" after "line cook at Olive Garden for 3 yrs", "picked up my first car, a used Mazda 3" after "I take the 42
bus everywhere", "passed the DELE B2" after "total beginner". The slot rules (``merge.attribute_slots``) name a few
attributes in fixed frames, and the pair reader (``change_reader``), trained on pairs, links under half of the
changes at the precision it needs (leave one set out, twelve sets: recall en 0.46, zh 0.46 at 0.8). A reader that
says, for one statement at a time, which of ``SLOTS`` it is about learns from every labelled statement of every set
at once, and two statements of one single-valued slot are two values of one attribute, however unlike their words.

Model: the statement's multilingual USE vector (``use_vectors``, 512 floats; English, Chinese and mixed alike) ->
multinomial logistic regression over ``SLOTS``. A stored item is read in the speaker's voice (``view``: "User's car is
..." as "my car is ...", 用户 as 我, the words kept as said unwrapped), as the training sentences were said. Weights:
``engine/data/slot_reader.json``, written by ``bench/derive_research/train_slot_reader.py`` from the sets we have read
and one slot label per case (``tests/data/slot_labels``), pinned by sha256 (``WEIGHTS_SHA256``): a file that does not
match is not read (no reading, logged once). Without the ``embed-multilingual`` extra there is no reading either. Leave
one set out over thirteen sets (the training script's table): the slot right 0.83 (en) / 0.79 (zh) of statements; at
``THRESHOLD`` for the newer statement and ``ITEM`` for the older, single-valued slots, an update's two statements put in
one slot 0.56 / 0.57, two statements of two different slots 0.015 / 0.021. Deterministic for given weights; cached per
text.
"""

from __future__ import annotations

import math
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import msgspec

from memengine.engine.derive.offline import fold, hanzi, kept_words, pinned, revision, use_vectors, zh
from memengine.engine.derive.offline.structures import Candidate
from memengine.engine.derive.offline.text import CJK, stem

#: the attributes a statement may be about (the annotators' list; ``other`` for anything else)
SLOTS = ("name", "age", "home", "origin", "work", "work_detail", "education", "relationship", "children", "family",
         "pets", "vehicle", "devices", "diet", "allergy", "health", "medication", "fitness", "habit", "hobby",
         "language", "skill", "taste", "finance", "rule_language", "rule_style", "other")
#: the slots a person holds one value of at a time, as the labelled sets use them (more updates than keeps, and
#: the annotators' "one value at a time" for most cases): a second value of one of these is a change. Not here: the
#: slots people hold several values of (pets, allergies, languages, hobbies, tastes, relatives, medicines, skills,
#: conditions), and the mixed ones whose statements are several attributes (work_detail: a shift, a salary, a team;
#: finance: rent, savings, debts)
SINGLE = frozenset({"name", "age", "home", "origin", "work", "education", "relationship", "children", "vehicle",
                    "devices", "diet", "fitness", "habit"})
WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "slot_reader.json"
WEIGHTS_SHA256 = "895fdcd5b57438959e79d908bde8dc0e80891ca6c49c1bedfed273c6725f679d"
#: the least probability of the slot two statements share, each (session 26: the geometric mean of the two at 0.45
#: linked as many updates, but let a confident statement link a vague one: an imported conversation's remarks kept
#: as said, "I painted this after I visited a LGBTQ center", work 0.23, were folded into one career item)
THRESHOLD = 0.3
#: the least probability of the slot for the older item a newer statement changes (``same_slot``): an item only
#: loosely about it became a sink every later statement of the slot folded into, each fold keeping the newest words
#: alone (LoCoMo conv 26: "And here's one of the adoption agencies I'm looking into", work 0.41, took in and lost
#: every statement of Caroline's counseling career)
ITEM = 0.5

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}
_USER_POSS = re.compile(r"\bUser's\b")
_USER = re.compile(r"\bUser\b")


def _weights() -> dict[str, Any] | None:
    with _LOCK:
        if "w" not in _STATE:
            _STATE["w"] = pinned.load(WEIGHTS, WEIGHTS_SHA256, "slot_reader")
        return cast("dict[str, Any] | None", _STATE["w"])


def available() -> bool:
    """Whether the reader can read here: its pinned weights and the USE model are both present."""
    return _weights() is not None and use_vectors.available()


def view(text: str) -> str:
    """``text`` (a stored item or a candidate) in its speaker's voice: the words kept as said unwrapped, an older
    statement's newer words (``fold``) left out, "User's" as "my", "User" as "I", 用户 as 我."""
    text = fold.base(text)
    text = kept_words.words(text) or text
    return _USER.sub("I", _USER_POSS.sub("my", text)).replace("用户", "我")


_LATER_WORDS = re.compile(r"\s+Later, on \d{4}-\d{2}-\d{2}, [\w' -]{1,40} said: \u201c(?P<w>.+)\u201d\s*$", re.S)
_SAID_ON = re.compile(r"（\d{4}-\d{2}-\d{2}）$")


def views(text: str) -> list[str]:
    """Each statement a stored item holds, newest first, in its speaker's voice (``view``): a folded English item's
    newer words, then the statement they were folded into (``fold.folded``); a combined Chinese item's newer words,
    then each older statement after ``zh.EARLIER`` (``zh_revision.combined``); ``[view(text)]`` for a plain item."""
    out: list[str] = []
    if m := _LATER_WORDS.search(text):
        out.append(m.group("w"))
        text = text[:m.start()]
    newest, _, older = text.partition(zh.EARLIER)
    parts = [newest, *older.rstrip("。").split("；")] if older else [newest]
    return out + [view(_SAID_ON.sub("", p.strip())) for p in parts if p.strip()]


@lru_cache(maxsize=8192)
def reads(text: str) -> dict[str, float] | None:
    """``{slot: probability}`` over ``SLOTS`` for ``text`` as said (a sentence or a ``view``); ``None`` without
    weights or model."""
    w = _weights()
    if w is None:
        return None
    vec = use_vectors.vector(text)
    if vec is None:
        return None
    z = [sum(a * b for a, b in zip(row, vec, strict=True)) + b0 for row, b0 in zip(w["w"], w["b"], strict=True)]
    top = max(z)
    e = [math.exp(v - top) for v in z]
    total = sum(e)
    return {slot: v / total for slot, v in zip(w["slots"], e, strict=True)}


#: the least probability of a single-valued slot for a sentence read less surely to be kept beside an older value
#: (``generalise.learned``): news of a change names its attribute clearly ("Divorce was finalized yesterday":
#: relationship 0.84; "They gave me the senior title at my review today": work 0.81), a remark of the day does not
#: ("Stuck on the A1 for an hour this morning": work 0.46, "Nadia's hilarious!": relationship 0.41)
NEWS = 0.6


def single(text: str, at: float = NEWS) -> str | None:
    """The single-valued slot (``SINGLE``) ``text`` (as said) is about with probability ``at`` or more; ``None`` when
    none is, or without a reading."""
    p = reads(text)
    if p is None:
        return None
    slot = max((s for s in p if s in SINGLE), key=p.__getitem__, default=None)
    return slot if slot is not None and p[slot] >= at else None


def shared(a: str, b: str, *, least_a: float = THRESHOLD) -> tuple[str, float] | None:
    """The single-valued slot (``SINGLE``) statements ``a`` and ``b`` (as said, or a ``view``) are both about, ``a``
    at ``least_a`` or more and ``b`` at ``THRESHOLD`` or more, with the lesser of their two probabilities; ``None``
    else or without a reading."""
    pa, pb = reads(a), reads(b)
    if pa is None or pb is None:
        return None
    slot, p = max(((s, min(pa[s], pb.get(s, 0.0))) for s in pa if s in SINGLE and pa[s] >= least_a),
                  key=lambda x: x[1], default=("", 0.0))
    return (slot, p) if p >= THRESHOLD else None


#: the memory type of a slot's statements (seed 004 §4 types as the blind sets' brief gives them: PROFILE identity,
#: home, job, age, family status; PREFERENCE likes, dislikes, diet; SKILL languages and abilities; FACT possessions,
#: health, pets, relatives, events), for the slots whose statements the labelled sets type one way (work PROFILE 121
#: of 124 cases, taste PREFERENCE 99 of 99, language SKILL 36 of 39, hobby SKILL 34 of 43), and diet PREFERENCE (the
#: blind sets' authors accept PREFERENCE for 26 of 29 diets over heldout_s17-s26, FACT for 17; until session 27 a
#: diet stayed a FACT, as the statements v2 suite has it); the rest stay FACT
TYPE_OF = {"name": "PROFILE", "age": "PROFILE", "home": "PROFILE", "origin": "PROFILE", "work": "PROFILE",
           "education": "PROFILE", "relationship": "PROFILE", "taste": "PREFERENCE", "diet": "PREFERENCE",
           "language": "SKILL", "skill": "SKILL", "hobby": "SKILL"}
#: the type of a slot's statements whatever a rule or reader first typed them, for the slots whose statements the
#: labelled sets' authors accept one type for (95% of cases or more; PREFERENCE, PROFILE or SKILL of the user's own
#: is retyped by it: "can't do shellfish at all, ER trip last year" -> FACT, "huge horror nerd" -> PREFERENCE).
#: Home and relationship (91% PROFILE) go with them; a hobby does not (PREFERENCE 62%, SKILL 59%)
FIRM = {"name": "PROFILE", "age": "PROFILE", "home": "PROFILE", "work": "PROFILE", "relationship": "PROFILE",
        "taste": "PREFERENCE", "diet": "PREFERENCE", "language": "SKILL", "skill": "SKILL", "health": "FACT",
        "allergy": "FACT", "medication": "FACT", "pets": "FACT", "vehicle": "FACT", "family": "FACT",
        "finance": "FACT"}
#: the least probability of the slot a FACT is retyped by
TYPED = 0.7


def retyped(candidate: Candidate) -> Candidate:
    """``candidate`` with its slot's type (``TYPE_OF``; for a PROFILE, PREFERENCE or SKILL whose type was guessed,
    ``_GUESSED``, the firm slot's, ``FIRM``) when it is a lasting or month-long FACT of the user's own (not
    "User's son loves South Indian food": his liking is a fact of the user's, ``_anothers``) (the rules' and the
    readers' type when nothing names another) whose sentence (``data["sentence"]``, else its ``view``; a rule's
    reading: the surer of the sentence and its own ``view``) the reader reads as one slot at ``TYPED`` or more
    ("User moved to glasgow in the summer" -> PROFILE, "User been doing keto for like 2 years" -> PREFERENCE);
    unchanged otherwise (a plan, an event of a day, another type, no reading).
    Heldout_s21-s25: 39 of 72 statement misses were a FACT where the case's author typed PROFILE, SKILL or
    PREFERENCE."""
    if candidate.memory_type not in ("FACT", "PROFILE", "PREFERENCE", "SKILL") or \
            candidate.priority not in ("LONG_TERM", "PERMANENT") or _anothers(candidate.text):
        return candidate
    said = candidate.data.get("sentence") if isinstance(candidate.data, dict) else None
    if said and _FORMER.search(str(said)):
        return candidate  # what the user used to do ("以前天天一杯牛奶") is no attribute of theirs now
    p = reads(hanzi.simplified(said if isinstance(said, str) and said.strip() else view(candidate.text)))
    if p is None:
        return candidate
    slot = max(p, key=p.__getitem__)
    if kept_words.words(candidate.text) is None and (q := reads(hanzi.simplified(view(candidate.text)))) is not None \
            and q[(top := max(q, key=q.__getitem__))] > p[slot]:
        # a rule's reading holds the statement without the rest of its sentence ("I mostly listen to jazz but my
        # partner wants 'something with words'" -> "User mostly listens to jazz.", taste 0.93): the surer of the two
        p, slot = q, top
    # a rule's type is the rule's (written for what its phrasing says: "I can't eat dairy" PROFILE, "不喜欢人多的地方"
    # PREFERENCE); a type guessed for words kept as said (``_GUESSED``) is the slot's when the slot is firm
    to = TYPE_OF.get(slot) if candidate.memory_type == "FACT" else \
        FIRM.get(slot) if candidate.data.get("rule") in _GUESSED else None
    if p[slot] < TYPED or to is None or to == candidate.memory_type or slot == "diet" and _CONDITION.search(
            candidate.text):
        return candidate  # (a diet kept for a condition of the body is the condition's: "I'm coeliac" is a FACT)
    return msgspec.structs.replace(candidate, memory_type=to,
                                   data={**candidate.data, "typed_by": f"slot_reader:{slot}"})


#: the rules whose type is a guess: words kept as said because no rule typed them
_GUESSED = frozenset({"learned:statement", "zh:statement", "parse:verbatim", "parse:unsure"})
#: a state said to be over ("以前天天一杯牛奶", "I used to be vegan")
_FORMER = re.compile(r"以前|之前|过去|曾经|\bused to\b|\bformerly\b|\bback when\b", re.I)
#: a condition of the body
_CONDITION = re.compile(r"\b(?:coeliac|celiac|intoleran\w*|allerg\w*|diabet\w*|epilep\w*|crohn\w*|ibs|gout)\b|"
                        r"过敏|不耐|糖尿病|痛风|乳糜泻", re.I)
_POSSESSED = re.compile(r"\s*(?:User|[\w-]+)'s\s+(\w+)(?:\s+(\w+))?")


def _anothers(text: str) -> bool:
    """Whether a candidate's ``text`` states someone else's attribute: "User's son ...", "User's wife Priya ...",
    用户老婆是湖南人."""
    if CJK.search(text):
        return zh.about_another(hanzi.simplified(view(text)))
    m = _POSSESSED.match(text)
    return m is not None and any(w and stem(w.lower()) in revision.PEOPLE_KEYS for w in m.groups())
