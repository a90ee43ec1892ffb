"""Plain first-person self-statements -> typed memories at promotable confidence (issue #18 item 5).

The general rule table in ``extraction`` reads many shapes but gives the common, unambiguous ones ("I'm a nurse",
"My partner is called Ana", "I'm learning Spanish") confidences under the seed 003 quarantine threshold (0.8), and
misses others ("I drive a Passat", "I use Linux", "I can't eat gluten", "I'm allergic to peanuts", "I don't eat
meat", "I play the cello", "I don't drink coffee any more"). ``match_self_statement`` is consulted first, clause by
clause, by ``extraction.extract_memories``: each rule here is anchored at the start of the clause (after discourse
markers), names its memory type (seed 001 "字段定义：memory_items" PROFILE / TASK / FACT; seed 002 §3.2 preference /
skill; seed 004 §4 "记忆类型"), and renders readable third-person text ("User drives a Passat.", "User's partner is
called Ana."). Plain statements carry confidence ``CONFIDENCE`` (>= ``QUARANTINE_CONFIDENCE``, seed 003 "工作记忆"
阈值0.8); the caller still multiplies hedged sentences ("I think I might ...") by 0.6, which keeps them in quarantine,
and still runs every candidate through the poisoning gate (``safety.gate``).

Types chosen here (the issue names the shapes, not the types):

* PROFILE (who the user is, seed 001 / seed 004 USER.md): identity ("I am / I'm a"), job ("I work as / in / at"),
  home ("I live in", and "I moved to", which the merge reads as the same single-valued ``lives_in`` attribute),
  dietary restrictions and allergies ("I can't eat", "I'm allergic to", "I'm lactose intolerant");
* PREFERENCE (seed 002 §3.2 "偏好: 颜色、风格、工具等"): tools and devices ("I use", "I switched to"), what the user
  does not eat or drink ("I don't eat meat"), and stopped habits ("I don't drink coffee any more");
* FACT (seed 001 "稳定事实"): vehicles ("I drive"), pets ("I have a dog named Rex"), people and possessions
  ("my X is called", "my X's name is", "my X is");
* SKILL (seed 002 §3.2 / seed 004 SKILL): "I'm learning", "I play";
* TASK (seed 001 "目标/任务上下文"): "I'm saving for"; "I'm training for" is a FACT (a pursuit under way).

Pure: ``re`` only, no clock, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from memengine.engine.derive.offline.lexicon_en import BODY_WORDS
from memengine.engine.derive.offline.text import TRAILING_QUESTION

#: Confidence of a plain, unhedged self-statement: at the seed 003 threshold's safe side (0.8), as the existing
#: location / job rules (0.85).
CONFIDENCE = 0.85


class SelfStatement(msgspec.Struct, frozen=True):
    """One matched self-statement: ``text`` (third person, no final stop; ``{S}`` already replaced), the seed type,
    ``predicate``/``object``/``polarity`` for ``data``, ``importance`` 0..1, ``priority`` (seed 004 §4), ``tag``,
    ``functional`` (one value per subject) and the rule's ``name``."""

    name: str
    memory_type: str
    text: str
    predicate: str
    object: str
    polarity: str
    confidence: float
    importance: float
    priority: str
    tag: str
    functional: bool


_IM = r"I(?:'m| am|(?: might| may| could) be)"
_ADV = r"(?:(?:also|still|now|currently|actually|mostly|mainly|usually|really|just|only|even|personally|"\
       r"definitely|totally|completely|severely|very|mildly|deathly|seriously|finally|already|recently) )*"
_END = r"[\s.!?,;:]*$"
#: trailing words that say "as of now" and add nothing to the stored value
_TAIL = re.compile(r"(?:[\s,]+(?:these days|nowadays|now|at the moment|currently|right now|for now|lately|too|"
                   r"as well|any ?more|any longer|though|actually))+$", re.I)
_KIN = ("partner|wife|husband|boyfriend|girlfriend|fianc[ée]e?|spouse|son|daughter|kid|child|baby|mother|mom|mum|"
        "father|dad|brother|sister|twin|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|"
        "best friend|roommate|flatmate|boss|manager|dog|cat|puppy|kitten|pet|horse|rabbit|parrot|hamster|"
        "stepson|stepdaughter|eldest|youngest|oldest")
_THING = ("car|phone|laptop|computer|bike|job|employer|company|budget|birthday|salary|commute|hometown|"
          "native language|first language|mother tongue|major|diet|blood type|shoe size|height|team|school|"
          "university|degree|doctor|dentist|neighbourhood|neighborhood|flat|apartment|house|"
          "(?:weekly |monthly |yearly |annual )?budget|due date|wedding|anniversary|surname|last name|"
          "middle name|nickname|pronouns|star sign|editor|os|operating system|browser|gym|club|bank")
_PETS = "dog|cat|puppy|kitten|rabbit|bunny|parrot|hamster|guinea pig|horse|pony|tortoise|turtle|snake|lizard|" \
        "goldfish|fish|budgie|ferret|gecko|rat|mouse|chicken|goat|pig|iguana|canary|cockatiel"
#: a diet or a condition of the body (a FACT, ``lexicon_en.BODY``) and a standing of who one is (PROFILE)
_DIET_ADJ = BODY_WORDS
_STANDING_ADJ = "retired|left-handed|right-handed|self-employed|unemployed|freelance|a freelancer|nonbinary|non-binary"
_NOT_IS_A = ("bit|little|lot|few|total|big|huge|massive|fan|part|mess|good|great|bad|terrible|real|sucker|"
             "complete|tad|kind|sort|wreck|believer|firm|strong|long|quick|slow|lot|pro at|natural")
_NATIONALITY = r"(?-i:[A-Z][a-z]+(?:ese|ian|an|ish|ch|i|ic|er|ean))"

#: a sentence adverb before the subject ("Sadly I can't eat nuts", "Luckily, I work from home")
_LEAD_ADVERB = re.compile(r"^(?-i:[A-Z]?[a-z]+ly),? (?=I\b|I'|[Mm]y\b)")
#: verb of a stopped habit -> memory type: diet and tools are preferences, home and job profile, the rest facts
_STOP_TYPE = {"eat": "PREFERENCE", "drink": "PREFERENCE", "smoke": "PREFERENCE", "use": "PREFERENCE",
              "like": "PREFERENCE", "take": "PREFERENCE", "live": "PROFILE", "work": "PROFILE"}
_3SG = {"have": "has", "do": "does", "go": "goes", "be": "is"}


def _third(verb: str) -> str:
    """Third-person singular of a bare verb ("drive" -> "drives", "watch" -> "watches", "study" -> "studies")."""
    v = verb.lower()
    if v in _3SG:
        return _3SG[v]
    if re.search(r"(?:s|sh|ch|x|z|o)$", v):
        return v + "es"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    return v + "s"


_PRON = ((re.compile(r"\bI'm\b"), "they're"), (re.compile(r"\bI am\b"), "they are"), (re.compile(r"\bI\b"), "they"),
         (re.compile(r"\bmyself\b", re.I), "themselves"), (re.compile(r"\bmine\b", re.I), "theirs"),
         (re.compile(r"(?<![\w-])my(?![\w-])", re.I), "their"), (re.compile(r"(?<![\w-])me(?![\w-])", re.I), "them"))


def _obj(raw: str) -> str:
    """The stated value: trimmed, "as of now" tails dropped, first person turned third ("my" -> "their")."""
    o = _TAIL.sub("", TRAILING_QUESTION.sub("", raw.strip()).strip(" ,;:-\"'")).strip()
    o = re.sub(r"[\s!.?,;:~*]+$", "", o)
    for pat, rep in _PRON:
        o = pat.sub(rep, o)
    return o


class _Rule(msgspec.Struct, frozen=True):
    name: str
    memory_type: str
    pattern: re.Pattern[str]
    template: str  # {S} subject, {o} object, {v} verb (3rd person), {k} the "my X" noun, {f} "from" value
    predicate: str
    importance: float
    priority: str
    tag: str
    functional: bool = False
    polarity: str = "positive"


def _r(name: str, mtype: str, pattern: str, template: str, predicate: str, imp: float, prio: str, tag: str,
       **kw: Any) -> _Rule:
    return _Rule(name, mtype, re.compile(pattern + _END, re.I), template, predicate, imp, prio, tag, **kw)


_O = r"(?P<o>.+?)"
_RULES: tuple[_Rule, ...] = (
    # later changes first: "I don't eat meat any more" must not read as a plain "doesn't eat"
    _r("no_longer", "FACT",
       r"I (?:no longer|don't|do not|never) (?P<v>\w+)(?: (?P<o>.+?))? (?:any ?more|any longer)",
       "{S} no longer {v} {o}", "stopped:{b}", 0.7, "PERMANENT", "change", polarity="negative"),
    _r("no_longer_plain", "FACT", r"I no longer (?P<v>\w+)(?: (?P<o>.+?))?", "{S} no longer {v} {o}", "stopped:{b}",
       0.7, "PERMANENT", "change", polarity="negative"),
    _r("not_any_more", "PROFILE", rf"{_IM} not (?:an? )?{_O} (?:any ?more|any longer)",
       "{S} is no longer {o}", "no_longer", 0.7, "PERMANENT", "change", polarity="negative"),
    _r("no_longer_is", "PROFILE", rf"{_IM} no longer (?:an? )?{_O}",
       "{S} is no longer {o}", "no_longer", 0.7, "PERMANENT", "change", polarity="negative"),
    _r("stopped", "FACT", r"I(?:'ve| have)? (?:just |finally |recently )?(?:stopped|quit|gave up|have given up) "
       r"(?P<v>\w+ing)(?: (?P<o>.+?))?", "{S} stopped {v} {o}", "stopped:{b}", 0.7, "PERMANENT", "change",
       polarity="negative"),
    _r("moved", "PROFILE", r"(?:I(?:'ve| have)? |we(?:'ve| have)? )(?:just |recently |finally |since )?"
       r"(?:moved|relocated) (?:back |over |house )?(?:to|into|in to) " + _O, "{S} moved to {o}", "lives_in", 0.8,
       "PERMANENT", "location", functional=True),
    _r("switched", "PREFERENCE", r"I(?:'ve| have)? (?:just |recently |finally )?(?:switched|changed|migrated|"
       r"upgraded|converted|moved) (?:over )?(?:from (?P<f>.+?) )?to " + _O, "{S} switched {f}to {o}",
       "switched_to", 0.7, "PERMANENT", "change"),
    # health and diet: restrictions first; a health condition is a FACT about the user (the blind authors of
    # heldout_s17-s19 accept FACT, at times only FACT), its "health" tag keeps it lasting (``lifetimes``)
    _r("allergic", "FACT", rf"{_IM} {_ADV}(?:allergic|intolerant|sensitive) to " + _O,
       "{S} is allergic to {o}", "allergic_to", 0.9, "PERMANENT", "health"),
    _r("allergy", "FACT", r"I (?:have|'ve got|have got) (?:an? )?(?:severe |mild |serious |bad )?"
       r"(?:allergy|allergies) to " + _O, "{S} is allergic to {o}", "allergic_to", 0.9, "PERMANENT", "health"),
    _r("allergy_noun", "FACT", r"I (?:have|'ve got|have got) (?:an? )?(?:severe |mild |serious |bad )?"
       r"(?P<o>[\w -]+?) (?:allergy|allergies|intolerance)", "{S} has a {o} allergy", "allergic_to", 0.9,
       "PERMANENT", "health"),
    _r("intolerant", "FACT", rf"{_IM} {_ADV}(?P<o>[\w-]+)(?: |-)intolerant", "{S} is {o} intolerant",
       "intolerant", 0.85, "PERMANENT", "health"),
    _r("cant_eat", "PROFILE", rf"I (?:can't|cannot|can not|(?:'m|am) (?:not able|unable) to) {_ADV}"
       r"(?P<v>eat|drink|have|tolerate|digest|stomach) " + _O, "{S} can't {v0} {o}", "cannot:{b}", 0.9,
       "PERMANENT", "diet", polarity="negative"),
    _r("dont_eat", "PREFERENCE", rf"I (?:don't|do not|never|avoid) {_ADV}(?P<v>eat|drink|smoke|consume|touch|"
       r"take|eating|drinking)(?: (?P<o>.+?))?", "{S} doesn't {v0} {o}", "avoids:{b}", 0.8, "PERMANENT", "diet",
       polarity="negative"),
    _r("diet_adj", "FACT", rf"{_IM} {_ADV}(?:both |strictly |fully |now )?(?P<o>{_DIET_ADJ})", "{S} is {o}",
       "status", 0.8, "PERMANENT", "identity"),
    _r("standing_adj", "PROFILE", rf"{_IM} {_ADV}(?:now )?(?P<o>{_STANDING_ADJ})", "{S} is {o}",
       "status", 0.8, "PERMANENT", "identity"),
    # vehicles, tools, pets
    _r("drive", "FACT", rf"I {_ADV}(?P<v>drive|ride|own) (?P<o>(?:an?|the|two|\d+|my|our) (?!bit\b|lot\b).+?)",
       "{S} {v} {o}", "drives", 0.7, "PERMANENT", "vehicle"),
    _r("use", "PREFERENCE", rf"(?:I {_ADV}(?:use|prefer using|work on|code in|write in)|{_IM} {_ADV}using) "
       r"(?!(?:it|this|that|them|to)\b)" + _O, "{S} uses {o}", "uses", 0.7, "PERMANENT", "tools"),
    _r("pet", "FACT", rf"(?:I {_ADV}(?:have|have got|own|adopted)|I've got|I've) (?P<o>(?:an?|one|two|three|\d+) "
       rf"(?:[\w-]+ ){{0,2}}(?:(?:{_PETS})s?|[\w-]+ (?=(?:named|called) (?-i:[A-Z])))(?:named|called) .+?)",
       "{S} has {o}", "has_pet", 0.8, "LONG_TERM", "pet"),
    # people and things: "my X is called", "my X's name is", "my X is"
    _r("my_called", "FACT", r"my (?P<k>[\w' -]{2,30}?)(?:'s| is) (?:called|named) (?P<o>.+?)",
       "{S}'s {k} is called {o}", "name_of:{k}", 0.85, "PERMANENT", "relation", functional=True),
    _r("my_name_is", "FACT", r"my (?P<k>(?!name\b)[\w' -]{2,30}?)'s name is (?P<o>.+?)",
       "{S}'s {k} is called {o}", "name_of:{k}", 0.85, "PERMANENT", "relation", functional=True),
    _r("my_is", "FACT", rf"my (?P<k>(?:(?:new|current|old|little|big|younger|older|elder|eldest|youngest) )?"
       rf"(?:{_KIN}|{_THING}))(?P<c> is|'s| are) (?!(?:so|really|very|too|just|such|not|being|going)\b)" + _O,
       "{S}'s {k}{c} {o}", "my:{k}", 0.7, "PERMANENT", "fact", functional=True),
    # learning, training, playing
    # a pursuit under way for months ("training for a marathon", "studying for the bar") is what the user is doing,
    # a FACT (the blind sets type it so: issue #29); saving for something is a goal, a TASK
    # a goal (saving for something) or a one-off occasion ahead (an interview, a presentation) is a TASK
    _r("saving", "TASK", rf"(?:{_IM}|I(?:'ve| have) been) {_ADV}(?P<v>saving up|saving|(?:training|preparing|"
       r"prepping|getting ready)(?= for (?:an?|the|my) (?:[\w-]+ ){0,3}(?:interview|presentation|meeting|call|trip|"
       r"wedding|party|date|appointment|pitch|review|talk|speech|move)\b)) for " + _O,
       "{S} is {v} for {o}", "goal", 0.75, "LONG_TERM", "goal"),
    _r("training", "FACT", rf"(?:{_IM}|I(?:'ve| have) been) {_ADV}(?P<v>training|preparing|prepping|in training|"
       r"studying|revising|cramming) for " + _O, "{S} is {v} for {o}", "pursuit", 0.75, "LONG_TERM", "pursuit"),
    _r("learning", "SKILL", rf"(?:{_IM}|I(?:'ve| have) been) {_ADV}(?P<v>learning|studying|practi[sc]ing|taking "
       r"(?:lessons|classes|a course) in) " + _O, "{S} is {v} {o}", "learning", 0.7, "LONG_TERM", "learning"),
    _r("play", "SKILL", rf"I {_ADV}(?:play|am playing|'m playing) (?!(?:it|this|that|them|with it|along|around|"
       r"games with you)\b)" + _O, "{S} plays {o}", "plays", 0.65, "PERMANENT", "hobby"),
    # who the user is
    _r("works", "PROFILE", rf"(?:I {_ADV}work|{_IM} {_ADV}(?:working|employed)) (?P<p>as|at|for|in) " + _O,
       "{S} works {p} {o}", "works_{p}", 0.8, "PERMANENT", "work", functional=True),
    _r("lives", "PROFILE", rf"(?:I {_ADV}(?:live|reside)|{_IM} {_ADV}(?:living|based)) (?P<p>in|at|near|on) " + _O,
       "{S} lives {p} {o}", "lives_in", 0.8, "PERMANENT", "location", functional=True),
    _r("is_a", "PROFILE", rf"{_IM} (?:{_ADV}|proudly )(?P<a>an?) (?!(?:{_NOT_IS_A})\b)"
       r"(?P<o>(?:[\w'-]+ ){0,5}[\w'-]+(?: (?:at|in|for|from|with|of) .+?)?)", "{S} is {a} {o}", "is_a", 0.75,
       "PERMANENT", "identity"),
    _r("nationality", "PROFILE", rf"{_IM} (?P<o>{_NATIONALITY}(?: and {_NATIONALITY})?)", "{S} is {o}",
       "nationality", 0.75, "PERMANENT", "identity", functional=True),
)
#: third-person forms of the verbs the rules above capture as ``v``
_V3 = {"drive": "drives", "ride": "rides", "own": "owns", "eating": "eat", "drinking": "drink"}


def _possessive(clause: str) -> bool:
    """Whether the first "'s" of ``clause`` is a possessive before a noun ("my sister's rent just went up", "my
    dad's blood pressure is down"), not a contracted "is" ("my brother's a nurse", "my mum's back in Leeds"): the
    parser's tag, and a noun after it (the tagger reads "my mum's back" as a possessive too). ``False`` without the
    parser (the rule tables alone read it as before)."""
    from memengine.engine.derive.offline import parse_en  # (lazy: parse_en's tables are read after this module)
    doc = parse_en.parsed(clause) if parse_en.available() else None
    pos = next((t for t in doc or () if t.text == "'s"), None)
    return pos is not None and pos.tag_ == "POS" and pos.i + 1 < len(pos.doc) and pos.doc[pos.i + 1].pos_ in (
        "NOUN", "PROPN", "ADJ") and pos.doc[pos.i + 1].tag_ != "VBG"


def match_self_statement(clause: str, subject: str) -> SelfStatement | None:
    """The first self-statement rule matching ``clause`` (discourse markers already stripped), rendered for
    ``subject`` ("User" or a display name); ``None`` when no rule matches or the value is empty.

    Returns text without a final full stop (the caller adds it, after resolving relative dates). Confidence is
    ``CONFIDENCE`` for every rule here; hedging is the caller's (sentence-wide) concern.
    """
    clause = _LEAD_ADVERB.sub("", clause.strip())
    found = _match(clause, subject)
    if found is None and _WE.match(clause):
        # a household's "we" holds for the speaker ("we only eat halal", "we're vegetarian", "we don't own a car"):
        # read as the speaker's own statement
        found = _match(_WE.sub(lambda m: _AS_I[m.group(0).lower()], clause, count=1), subject)
    return found


#: a clause whose subject is the speaker's household, and its first-person singular reading
_WE = re.compile(r"^(?:we're|we've|we'd|we)\b", re.I)
_AS_I = {"we": "I", "we're": "I'm", "we've": "I've", "we'd": "I'd"}


def _match(clause: str, subject: str) -> SelfStatement | None:
    for rule in _RULES:
        m = rule.pattern.match(clause)
        if m is None:
            continue
        g = {k: (v or "") for k, v in m.groupdict().items()}
        if rule.name == "my_is" and g.get("c") == "'s" and _possessive(clause):
            continue  # "my sister's rent just went up": her rent, not "my sister is rent"
        obj = _obj(g.get("o", ""))
        verb = g.get("v", "").lower()
        if rule.name not in ("no_longer", "no_longer_plain", "stopped", "dont_eat") and not obj:
            continue
        if obj and not re.search(r"\w", obj):
            continue
        if re.match(r"(?:[Ii]t|[Tt]hem|[Tt]his|[Tt]hat|[Tt]hese|[Tt]hose|one|some|something|stuff)\b", obj) and \
                rule.name not in ("no_longer", "no_longer_plain"):
            continue
        base = re.sub(r"ing$", "", verb) if rule.name == "stopped" else _V3.get(verb, verb)
        if rule.name == "stopped" and base and base + "e" in _STOP_TYPE:
            base += "e"  # "smoking" -> "smoke"
        if rule.name == "stopped" and len(base) > 2 and base[-1] == base[-2]:
            base = base[:-1]  # "shopping" -> "shop"
        v3 = verb
        if rule.name in ("no_longer", "no_longer_plain"):
            v3 = _third(verb)
        elif rule.name == "drive":
            v3 = _V3[verb]
        v0 = _V3.get(verb, verb)
        f = _obj(g.get("f", ""))
        text = rule.template.format(S=subject, o=obj, v=v3, v0=v0, k=g.get("k", "").lower().strip(),
                                    p=g.get("p", "").lower(), a=g.get("a", "").lower(),
                                    c=" is" if g.get("c") == "'s" else g.get("c", ""),  # "my rent's 950"
                                    f=f"from {f} " if f else "")
        text = re.sub(r"\s+", " ", text).strip()
        mtype = rule.memory_type
        if rule.name in ("no_longer", "no_longer_plain", "stopped"):
            mtype = _STOP_TYPE.get(base, "FACT")
        if rule.name == "my_is" and re.match(r"(?:job|employer|company|hometown|native|first|mother tongue)", g["k"],
                                             re.I):
            mtype = "PROFILE"
        predicate = rule.predicate.format(k=g.get("k", "").lower().strip(), p=g.get("p", "").lower(), b=base)
        return SelfStatement(rule.name, mtype, text, predicate, obj, rule.polarity, CONFIDENCE, rule.importance,
                             rule.priority, rule.tag, rule.functional)
    return None
