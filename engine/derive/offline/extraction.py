"""Rule-based extraction of typed memories from user turns (seeds 001, 002 §3.2, 004 §4).

``extract_memories`` matches first-person clauses ("I'm a nurse", "I love hiking", "I moved to Boston last year")
against an ordered table of rules, each naming a memory type, a third-person template, a confidence, an importance
and a priority; relative dates are resolved against the turn's time. Candidates under the seed 003 quarantine
threshold (``engine.derive.policy.QUARANTINE_CONFIDENCE``) are flagged ``data["quarantined"]``; the caller decides.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import msgspec

from memengine.engine.derive.offline import (
    directives,
    framing,
    generalise,
    presupposed_en,
    reframe,
    sentences_en,
    slot_reader,
)
from memengine.engine.derive.offline.hedges import hedged_clause, hedged_text
from memengine.engine.derive.offline.lexicon_en import BODY_WORDS
from memengine.engine.derive.offline.merge import dedupe_hash
from memengine.engine.derive.offline.selfstatements import match_self_statement
from memengine.engine.derive.offline.structures import Candidate, Turn
from memengine.engine.derive.offline.text import (
    CJK,
    MAX_KEYWORD_CHARS,
    NEG_PREF_VERBS,
    NUMBER_WORDS,
    REL_DATE,
    STOPWORDS,
    TRAILING_QUESTION,
    by_seq,
    clean_text,
    name_of,
    resolve_dates,
    split_words,
    stem,
)
from memengine.engine.derive.offline.topics import TOPIC_STOPWORDS
from memengine.engine.derive.policy import ERROR_DURATION, PRIORITY_DURATION, QUARANTINE_CONFIDENCE


class _Rule(msgspec.Struct, frozen=True):
    name: str
    memory_type: str
    pattern: re.Pattern[str]
    template: str
    predicate: str
    confidence: float
    importance: float
    priority: str
    tag: str
    functional: bool = False  # one value per subject: a different value contradicts (decide_merge -> replace)
    sentence_start: bool = False  # must start the sentence (imperatives)
    allow_question: bool = False  # "Can you remind me to ...?" is a request, not a question about the listener
    deictic_ok: bool = True  # False: "I love that/this/your ..." is a reaction, not a lasting preference


_IM = r"I(?:'m| am)"
_IVE = r"I(?:'ve| have)"


def _alt(words: str) -> str:
    """``"a|b c|d"`` written over several lines -> the regex group ``(?:a|b c|d)``."""
    return "(?:" + "|".join(w.strip() for w in words.split("|") if w.strip()) + ")"


_ADV = "(?:" + _alt("""really|absolutely|totally|just|also|truly|still|genuinely|personally|definitely|actually|do|so|
    very|now|currently|always|pretty|even|kinda|kind of|sort of""") + " )*"
_WHEN = _alt("""monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|next week|next month|
    end of (?:the )?(?:day|week|month)|\\d""")
_PAST_VERBS = _alt("""went|did|started|began|moved|passed|joined|visited|bought|finished|graduated|got|made|ran|took|
    won|met|adopted|signed up|attended|volunteered|completed|learned|painted|created|built|wrote|read|saw|watched|
    tried|received|celebrated|traveled|travelled|quit|left|applied|launched|founded|published|gave|had|lost|found|
    organized|hosted|spoke|talked|baked|cooked|played|performed|taught|studied|worked|lived|grew up|became|reached|
    raised|donated|hiked|camped|climbed|drove|flew|picked up|came|spent|decided|turned|switched|changed|
    transitioned|came out|registered|enrolled|booked|ordered|fixed|broke|sold|rented|married""")
_PARTICIPLES = _alt("""known|had|started|made|got|gotten|met|done|worked|lived|volunteered|visited|painted|finished|
    learned|joined|read|seen|tried|taken|become|decided|found|built|created|written|run|completed|adopted|moved""")
_BEEN_OK = _alt("""\\w+ing|to|in|at|on|with|part|a|an|the|through|married|together|sober|clean""")
_NOT_PROGRESSIVE = _alt("""going|planning|hoping|trying|thinking|feeling|doing|looking forward|getting|wondering|
    loving|having a|kidding|guessing|saying|telling|sorry|starting to feel""")
_NOT_MY_X = _alt("""goal|aim|dream|plan|mission|ambition|favou?rite|name|pleasure|bad|fault|god|gosh|goodness|heart|
    mind|bet|advice|guess|point|question|answer|thoughts?|feelings?|take""")
_STATUS = _alt("""single|married|divorced|engaged|widowed|separated|retired|transgender|
    trans|gay|lesbian|bisexual|queer|non-binary|nonbinary""")
_LIKE_VERBS = _alt("""love|like|enjoy|prefer|adore|hate|dislike|detest|can't stand|cannot stand|
    don't (?:really )?(?:like|love|enjoy|care for)|do not (?:really )?(?:like|love|enjoy)|dont like""")
_CHATTY_INTENT = _alt("""tell|show|say|ask|know|see|hear|thank|talk|let|share|check|give you|hug|chat|catch up|add|
    mention""")
_ERROR_SAYING = _alt("""(?:that|this|it|your (?:[\\w-]+ ){0,2}\\w+) (?:didn't|did not|doesn't|does not) work\\b.*|
    you (?:got (?:it|that) wrong|made a mistake|were wrong|broke)\\b.*|
    (?:that|this)(?:'s| is| was) (?:wrong|incorrect|not (?:right|correct|what I asked))\\b.*""")
_QUANTITY = _alt("""a|an|two|three|four|five|six|seven|eight|nine|ten|\\d+|several|many|my own|lots of|a lot of""")


def _r(name: str, mtype: str, pattern: str, template: str, predicate: str, conf: float, imp: float, prio: str,
       tag: str, **kw: Any) -> _Rule:
    compiled = re.compile(pattern + r"[\s.!?,;:]*$", re.I)
    return _Rule(name, mtype, compiled, template, predicate, conf, imp, prio, tag, **kw)


_O = r"(?P<o>.+)"
_NO_PATTERN = re.compile(r"(?!)")  # a self-statement's rule record: matched in ``selfstatements``, not here
#: First match wins, so the order matters: rules before profile, "fan of" before "I'm a ...", tasks with a deadline
#: before plain "I need to", facts last.
_RULES: tuple[_Rule, ...] = (
    # RULE: standing instructions (seed 004 §4 RULE, behaviour rules are PERMANENT)
    _r("rule_imperative", "RULE",
       r"(?:please )?(?P<v>always|never|from now on,?|make sure (?:to|you) always) "
       r"(?!been\b|was\b|had\b|were\b|mind\b)" + _O,
       "{S}'s rule: {v} {o}", "rule", 0.85, 0.8, "PERMANENT", "rule", sentence_start=True),
    _r("rule_want_you", "RULE", r"I(?: want| need| would like|'d like) you to (?P<v>always|never) " + _O,
       "{S}'s rule: {v} {o}", "rule", 0.85, 0.8, "PERMANENT", "rule"),
    # PROFILE: who the user is (seed 001 PROFILE, seed 004 USER.md)
    _r("name", "PROFILE", r"my name(?:'s| is) (?P<o>(?-i:[A-Z][\w'-]*)(?: (?-i:[A-Z][\w'-]*)){0,3})",
       "{S}'s name is {o}", "name", 0.95, 0.9, "PERMANENT", "name", functional=True),
    _r("call_me", "PROFILE", r"(?:please )?call me (?P<o>(?-i:[A-Z][\w'-]*))",
       "{S} wants to be called {o}", "name", 0.9, 0.8, "PERMANENT", "name", functional=True),
    _r("age", "PROFILE", _IM + r" (?P<o>\d{1,3}) (?:years? old|yo|y/o)\b.*", "{S} is {o} years old", "age",
       0.9, 0.7, "PERMANENT", "age", functional=True),
    _r("born", "PROFILE", r"I was born (?P<o>(?:in|on) .+)", "{S} was born {o}", "born", 0.9, 0.75, "PERMANENT",
       "bio", functional=True),
    _r("lives", "PROFILE",
       rf"(?:I {_ADV}(?:live|reside)|{_IM} {_ADV}(?:living|based)) (?P<p>in|at|near|on) " + _O,
       "{S} lives {p} {o}", "lives_in", 0.85, 0.8, "PERMANENT", "location", functional=True),
    _r("from", "PROFILE", rf"(?:{_IM} (?:originally )?from|I (?:originally )?come from) " + _O,
       "{S} is from {o}", "from", 0.85, 0.75, "PERMANENT", "origin", functional=True),
    _r("works", "PROFILE", rf"(?:I {_ADV}work|{_IM} {_ADV}(?:working|employed)) (?P<p>as|at|for) " + _O,
       "{S} works {p} {o}", "works_{p}", 0.85, 0.75, "PERMANENT", "work", functional=True),
    _r("studies", "PROFILE",
       rf"{_IM} {_ADV}(?P<v>studying|majoring in|enrolled in|a student at|a student of) " + _O,
       "{S} is {v} {o}", "studies", 0.85, 0.7, "PERMANENT", "education"),
    _r("identify", "PROFILE", r"I identify as " + _O, "{S} identifies as {o}", "identity", 0.9, 0.8, "PERMANENT",
       "identity"),
    _r("body", "FACT", rf"{_IM} (?:now |currently |also |strictly )?(?P<o>{BODY_WORDS})\b(?P<r>.*)", "{S} is {o}{r}",
       "status", 0.85, 0.75, "PERMANENT", "identity"),  # a diet or a condition of the body (``BODY_WORDS``)
    _r("status", "PROFILE", rf"{_IM} (?:now |currently |happily |also )?(?P<o>{_STATUS})\b(?P<r>.*)",
       "{S} is {o}{r}", "status", 0.85, 0.75, "PERMANENT", "identity"),
    # PREFERENCE (seed 002 preference, seed 004 PREFERENCE); before "I'm a ..." so "I'm a big fan of X" lands here
    _r("fan", "PREFERENCE", rf"{_IM} (?:also |such )?(?:a |an )?(?:big |huge |massive |real |die-hard )?fan of " + _O,
       "{S} is a fan of {o}", "likes", 0.85, 0.6, "PERMANENT", "preference", deictic_ok=False),
    _r("into", "PREFERENCE",
       rf"{_IM} {_ADV}(?P<v>into|passionate about|keen on|obsessed with|crazy about|interested in) " + _O,
       "{S} is {v} {o}", "likes", 0.8, 0.6, "PERMANENT", "preference", deictic_ok=False),
    _r("favorite", "PREFERENCE",
       r"my (?:all-time |absolute )?favou?rite (?P<k>[\w' -]{1,30}?) (?:is|are|was|has to be|would be) " + _O,
       "{S}'s favorite {k} is {o}", "favorite:{k}", 0.85, 0.65, "PERMANENT", "favorite", functional=True),
    _r("like", "PREFERENCE", rf"I {_ADV}(?P<v>{_LIKE_VERBS}) " + _O,
       "{S} {v} {o}", "likes", 0.85, 0.6, "PERMANENT", "preference", deictic_ok=False),
    # PROFILE "I'm a/an X"
    _r("is_a", "PROFILE",
       rf"{_IM} (?:also |now |actually |currently |proudly )?(?P<a>an?) "
       r"(?!(?:bit|little|lot|few|total|big|huge|fan|part|mess)\b)" + _O,
       "{S} is {a} {o}", "is_a", 0.75, 0.7, "PERMANENT", "identity"),
    _r("as_a", "PROFILE", r"as (?P<a>an?) (?P<o>(?:[\w-]+ ){0,3}[\w-]+), I\b.*", "{S} is {a} {o}", "is_a", 0.7, 0.65,
       "PERMANENT", "identity", sentence_start=True),
    # TASK: to-dos (SHORT_TERM) and goals (LONG_TERM) (seed 001 TASK "目标/任务上下文")
    _r("remind", "TASK",
       r"(?:(?:please|can you|could you|would you|will you) )?remind me (?P<p>to|about|that|of) " + _O,
       "{S} asked to be reminded {p} {o}", "todo", 0.9, 0.8, "SHORT_TERM", "reminder", allow_question=True),
    _r("dont_forget", "TASK",
       r"(?:(?:don't|do not) let me forget|I (?:must|mustn't|can't|cannot|shouldn't|must not|should not) forget) "
       r"(?:to |about )?" + _O,
       "{S} must not forget to {o}", "todo", 0.85, 0.75, "SHORT_TERM", "todo"),
    _r("will_by", "TASK",
       rf"(?P<v>I(?:'ll| will)|{_IM} going to|I {_ADV}(?:need|want|have|expect|hope|plan|promised|promise|should)) "
       rf"(?P<o>.+\b(?:by|until|before) (?:the end of )?{_WHEN}.*)",
       "{S} {v} {o}", "todo", 0.8, 0.7, "SHORT_TERM", "deadline"),
    _r("need", "TASK",
       rf"(?:I {_ADV}(?P<v>need to|have to|must|gotta|got to|have got to|should)|I've got to) " + _O,
       "{S} needs to {o}", "todo", 0.8, 0.65, "SHORT_TERM", "todo"),
    _r("deadline", "TASK",
       r"(?P<o>(?:my|the|our) (?:[\w-]+ ){0,3}(?:deadline|due date)\b.+|.+\bis due (?:on|by)\b.+)",
       "{S}'s deadline: {o}", "todo", 0.8, 0.75, "SHORT_TERM", "deadline"),
    _r("goal", "TASK",
       r"my (?:main |big |ultimate |long-term )?(?P<k>goal|aim|dream|plan|mission|ambition)s? "
       r"(?:is|are|was|has always been) (?P<to>to )?" + _O,
       "{S}'s {k} is {to}{o}", "goal", 0.85, 0.75, "LONG_TERM", "goal"),
    _r("plan", "TASK",
       rf"{_IM} {_ADV}(?P<v>planning|hoping|aiming|trying|going|preparing|saving up|determined|ready) to " + _O,
       "{S} is {v} to {o}", "goal", 0.75, 0.6, "LONG_TERM", "goal"),
    _r("intend", "TASK",
       rf"I {_ADV}(?P<v>plan|hope|intend|aim|want|wanna|would like|'d like|decided|have decided|'ve decided) to "
       rf"(?!{_CHATTY_INTENT}\b)(?![\w-]+ (?:something|anything)\b)" + _O,  # "set something up for ...": a lead-in
       "{S} {v} to {o}", "goal", 0.7, 0.6, "LONG_TERM", "goal"),
    # PATTERN: habits (seed 002 pattern "行为模式")
    _r("habit", "PATTERN",
       r"I (?P<a>usually|often|always|normally|typically|regularly|generally|frequently|mostly|tend to) (?!been\b)"
       + _O,
       "{S} {a} {o3}", "habit", 0.75, 0.55, "LONG_TERM", "habit"),
    _r("every", "PATTERN",
       r"every (?P<w>morning|day|night|evening|week|weekend|month|year|summer|winter|"
       r"monday|tuesday|wednesday|thursday|friday|saturday|sunday),? I " + _O,
       "Every {w}, {S} {o3}", "habit", 0.75, 0.55, "LONG_TERM", "habit"),
    # SKILL: abilities and learned know-how (seed 002 skill, seed 004 SKILL)
    _r("good_at", "SKILL",
       rf"{_IM} (?:{_ADV}|quite )?(?P<v>good|great|skilled|experienced|fluent|an expert) (?P<p>at|in|with) " + _O,
       "{S} is {v} {p} {o}", "skill", 0.8, 0.6, "PERMANENT", "skill"),
    _r("know_how", "SKILL",
       rf"I {_ADV}(?P<v>know how to|can speak|can play|can cook|learned (?:how )?to|taught myself (?:how )?to|"
       r"'ve learned (?:how )?to|have learned (?:how )?to) " + _O,
       "{S} {v} {o}", "skill", 0.8, 0.6, "PERMANENT", "skill"),
    # ERROR: the user reports a mistake (seed 004 ERROR, kept 7 days)
    _r("error", "ERROR", rf"(?P<o>{_ERROR_SAYING})",
       "{S} reported a mistake: {o}", "error", 0.7, 0.7, "LONG_TERM", "error"),
    # FACT: things that happened or hold (seed 001 FACT "稳定事实", seed 004 FACT)
    _r("have", "FACT", rf"I (?:also |still |now |already )?(?:have|'ve got|have got) (?P<o>{_QUANTITY} .+)",
       "{S} has {o}", "has", 0.8, 0.6, "LONG_TERM", "fact"),
    _r("past", "FACT",
       rf"I (?:{_ADV}|once |already |recently |finally |first )?(?!had to\b)(?P<v>{_PAST_VERBS}) (?P<o>.+)",
       "{S} {v} {o}", "did:{v}", 0.8, 0.55, "LONG_TERM", "event"),
    _r("perfect", "FACT",
       rf"{_IVE} (?:{_ADV}|already |recently |finally )?(?P<v>{_PARTICIPLES}\b|been (?={_BEEN_OK}\b))(?P<o>.+)",
       "{S} has {v} {o}", "has_done", 0.75, 0.55, "LONG_TERM", "fact"),
    _r("progressive", "FACT",
       rf"{_IM} (?:currently |now |still |also |actually )?(?P<v>(?!{_NOT_PROGRESSIVE}\b)\w+ing) " + _O,
       "{S} is {v} {o}", "doing", 0.7, 0.5, "LONG_TERM", "activity"),
    _r("used_to", "FACT", r"I used to " + _O, "{S} used to {o}", "used_to", 0.8, 0.5, "LONG_TERM", "past"),
    _r("my_x", "FACT",
       rf"my (?P<k>(?!{_NOT_MY_X}\b)[\w' -]{{2,30}}?) (?P<cop>is|are|was|were) (?!(?:so|really|very|too|just|such)\b)"
       + _O,
       "{S}'s {k} {cop} {o}", "my:{k}", 0.75, 0.55, "LONG_TERM", "fact", functional=True),
)

_LEAD = re.compile(
    r"^(?:(?:and|but|so|then|also|plus|since|because|cause|actually|honestly|well|yeah|yep|yes|oh|ah|aw+|now|"
    r"maybe|perhaps|probably|i think|i guess|i suppose|i believe|i feel like|to be honest|tbh|"
    r"recently|finally|anyway|anyways|btw|by the way|guess what|you know what|you know|lol|haha|hey|wow|ok|okay|um|"
    r"uh|fyi|just so you know|fun fact|update|good news|great news|news|right|sure|basically|lately|today|tonight|"
    r"yesterday|last (?:week|month|year|night|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"this (?:week|month|year|morning|weekend)|(?:[a-z]+ )?(?:days?|weeks?|months?|years?) ago)\b[,!.:]?\s+"
    r"|(?-i:[A-Z][a-z]+)[,!]\s+)+",
    re.I,
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:[;:]|\s-\s|\.\.\.|,(?=\s+(?:and|but|so|because|since|which|though|although|while|plus|then|"
    r"especially|I|I'm|I've|I'll|I'd|it|it's|we|we're|they|they're|this|that|he|she|there|my|now|too|even)\b)|"
    r"\s(?=(?:and|but|so|because|since|plus|while|whereas|though|although)\s+(?:I|I'm|I've|I'll|I'd|it|it's|we|"
    r"they|he|she|that|this|there|my|then|now|also)\b))\s*"
)
_QUESTION_START = re.compile(
    r"^(?:do|does|did|are|is|was|were|can|could|would|will|have|has|had|what|why|how|where|when|who|which|should|"
    r"shall|may|wanna|any)\b(?!')", re.I  # "Can't do eggs" is a statement, "Can you ..." a question
)
_EMPHASIS = re.compile(
    r"\b(?:important|remember|never forget|must|deadline|urgent|asap|crucial|essential|always)\b", re.I
)
_DEICTIC = re.compile(
    r"^(?:that|this|these|those|it|it's|its|your|you|ya|them|him|her|how|what|when|where|the way|all the|all of|"
    r"all your|to hear|hearing|seeing that|seeing you|so much)\b", re.I
)
_VAGUE = re.compile(
    r"^(?:it|them|him|her|this|that|these|those|one|some|stuff|something)(?:\s+(?:to|after|for|when|because|so|as|"
    r"with|in|on|at|and|but|up|out|off|yesterday|today|last|earlier|recently|too|again|myself|though)\b|$)",
    re.I,
)
_PRONOUNS_ONLY = frozenset({"you", "ya", "u", "it", "that", "this", "them", "him", "her", "guys", "y'all", "too",
                             "so", "much", "a", "lot", "all", "both", "one", "here", "there", "now", "again"})
_FIRST_TO_THIRD = (
    (re.compile(r"\bI'm\b"), "they're"), (re.compile(r"\bI've\b"), "they've"), (re.compile(r"\bI'll\b"), "they'll"),
    (re.compile(r"\bI'd\b"), "they'd"), (re.compile(r"\bI am\b"), "they are"), (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI\b"), "they"), (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"), (re.compile(r"(?<![\w-])my(?![\w-])", re.I), "their"),
    (re.compile(r"(?<![\w-])me(?![\w-])", re.I), "them"),
)
_IRREGULAR_3SG = {"be": "is", "am": "is", "have": "has", "do": "does", "go": "goes", "'m": "is", "'ve": "has",
                  "can": "can", "could": "could", "would": "would", "should": "should", "must": "must",
                  "will": "will", "might": "might", "may": "may", "wanna": "wants", "gotta": "has to",
                  "'d": "would", "don't": "doesn't", "do not": "does not", "can't": "can't", "cannot": "cannot"}
_NOT_PAST_ED = frozenset("need feed seed bleed speed breed proceed succeed exceed heed embed shred wed shed".split())
_PAST_OR_FIXED = re.compile(
    r"ed$|ing$|^(?:been|seen|taken|given|written|eaten|gotten|"
    r"chosen|driven|known|shown|grown|flown|thrown|drawn|done|gone|went|did|got|made|ran|took|won|met|saw|read|gave|had|"
    r"lost|found|spoke|taught|became|came|spent|drove|flew|grew|left|quit|built|wrote|sold|broke|began|put|let|set)$"
)
_ADVERBS = frozenset("really just also still truly totally absolutely genuinely personally definitely actually so very "
                     "now currently always pretty even kinda usually often never".split())


def _third(verb: str) -> str:
    """Third-person singular of a first-person verb phrase ("love" -> "loves", "don't like" -> "doesn't like")."""
    v = verb.strip().lower()
    for k in ("don't", "do not", "can't", "cannot"):
        if v.startswith(k + " ") or v == k:
            return _IRREGULAR_3SG[k] + v[len(k):]
    if v.startswith(("'ve ", "have ")):
        return "has " + v.split(" ", 1)[1]
    if v.startswith("'d "):
        return "would " + v[3:]
    words = v.split()
    lead = []
    while len(words) > 1 and words[0] in _ADVERBS:
        lead.append(words.pop(0))
    if lead:
        return " ".join([*lead, _third(" ".join(words))])
    head, _, rest = v.partition(" ")
    if head in _IRREGULAR_3SG:
        out = _IRREGULAR_3SG[head]
    elif _PAST_OR_FIXED.search(head) and head not in _NOT_PAST_ED:
        out = head
    elif re.search(r"(?:s|sh|ch|x|z|o)$", head):
        out = head + "es"
    elif re.search(r"[^aeiou]y$", head):
        out = head[:-1] + "ies"
    else:
        out = head + "s"
    return f"{out} {rest}".strip()


def _to_third_person(text: str) -> str:
    for pat, rep in _FIRST_TO_THIRD:
        text = pat.sub(rep, text)
    return text


def _trim_object(obj: str) -> str:
    obj = TRAILING_QUESTION.sub("", obj.strip()).strip(" ,;:-\"'")
    obj = re.sub(r"[\s!.?,;:~*]+$", "", obj)
    obj = re.sub(r"\s*[\U0001F000-\U0001FFFF\u2600-\u27BF]+\s*", " ", obj).strip()
    words = obj.split()
    if len(words) > 28:  # a run-on clause: keep the head, which carries the claim
        obj = " ".join(words[:28])
    return obj


def _has_content(obj: str) -> bool:
    ws = [w for w in split_words(obj) if w not in _PRONOUNS_ONLY]
    return any(w not in STOPWORDS and (len(w) > 2 or w.isdigit()) for w in ws)


def clauses(sentence: str) -> list[tuple[str, bool]]:
    """(clause, starts_sentence) pairs; the sentence is cut where a new subject starts."""
    out = []
    for i, clause in enumerate(c for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip()):
        out.append((clause.strip(), i == 0))
    return out


def _strip_lead(clause: str) -> tuple[str, str]:
    """(clause without leading discourse markers / vocatives / time phrases, the stripped lead)."""
    m = _LEAD.match(clause)
    if m is None:
        return clause, ""
    return clause[m.end():], m.group(0)


def _keyword_tags(obj: str, limit: int = 3) -> list[str]:
    tags: list[str] = []
    seen: set[str] = set()
    for w in split_words(obj):
        if (w in STOPWORDS or w in TOPIC_STOPWORDS or w in NUMBER_WORDS or not 4 <= len(w) <= MAX_KEYWORD_CHARS
                or w.isdigit() or CJK.match(w)):
            continue
        key = stem(w)
        if key in seen:
            continue
        seen.add(key)
        tags.append(w)
        if len(tags) == limit:
            break
    return tags


def _importance(rule: _Rule, sentence: str, obj: str) -> float:
    score = rule.importance
    if re.search(r"\d", obj) or REL_DATE.search(sentence):
        score += 0.05
    if re.search(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+", obj) or re.search(r"\b[A-Z]{2,}\b", obj):
        score += 0.05  # names, places, acronyms
    if _EMPHASIS.search(sentence):
        score += 0.1
    if re.search(r"\b(?:really|so much|absolutely|definitely|truly)\b|!", sentence, re.I):
        score += 0.05
    return round(min(1.0, max(0.05, score)), 2)


def _duration(memory_type: str, priority: str) -> str:
    if memory_type == "ERROR":
        return ERROR_DURATION  # seed 004 §4: ERROR kept 7 days
    return PRIORITY_DURATION[priority]


def match_clause(
    clause: str, starts_sentence: bool, is_question: bool
) -> tuple[_Rule, re.Match[str], str] | None:
    """The first rule matching ``clause`` (after its lead), the match, and the time phrase of the lead if any."""
    body, lead = _strip_lead(clause)
    for rule in _RULES:
        if rule.sentence_start and not starts_sentence:
            continue
        if is_question and not rule.allow_question:
            continue
        m = rule.pattern.match(body)
        if m is None:
            continue
        obj = _trim_object(m.groupdict().get("o") or "")
        if not obj or not _has_content(obj):
            continue
        if not rule.deictic_ok and _DEICTIC.match(obj):
            continue
        if _VAGUE.match(obj):
            continue
        when = REL_DATE.search(lead)
        return rule, m, when.group(0) if when else ""
    return None


def _render(rule: _Rule, m: re.Match[str], subject: str, time_phrase: str = "") -> tuple[str, str, str, str]:
    """(text, predicate, object, polarity) of a matched clause, in the third person.

    ``time_phrase`` is a leading "Yesterday," / "Last week" that was stripped from the clause; it is put back at the
    end of the object so the date survives.
    """
    g = {k: (v or "") for k, v in m.groupdict().items()}
    obj = _to_third_person(_trim_object(g.get("o", "")))
    if time_phrase and not REL_DATE.search(obj):
        obj = f"{obj} {time_phrase.lower()}"
    verb = re.sub(r"\bdont\b", "don't", g.get("v", "").lower())
    polarity = "positive"
    negative_verb = verb in NEG_PREF_VERBS or re.match(r"(?:don't|do not|can't|cannot)", verb) is not None
    if rule.memory_type == "PREFERENCE" and negative_verb:
        polarity = "negative"
    fields = {
        "S": subject,
        "o": obj,
        "v": _to_third_person(_third(verb)) if rule.name in ("like", "intend", "know_how") else verb,
        "p": g.get("p", "").lower(),
        "a": g.get("a", "").lower(),
        "k": g.get("k", "").lower().strip(),
        "w": g.get("w", "").lower(),
        "cop": g.get("cop", "").lower(),
        "r": "",  # "status" keeps the status word only; the rest of the clause is usually commentary
        "o3": "",
        "to": g.get("to", "").lower(),  # "my goal is 40,000 pounds" has no "to": not "goal is to 40,000 pounds"
    }
    if rule.name == "will_by":
        head = re.sub(r"^i(?:'ll| will)", "will", re.sub(r"^i(?:'m| am) going to", "is going to", verb))
        fields["v"] = _third(re.sub(r"^i ", "", head)) if head.startswith("i ") else head
    if "{o3}" in rule.template:
        if fields["a"] == "tend to":
            fields["a"], fields["o3"] = "tends to", obj
        else:
            head, _, rest = obj.partition(" ")
            fields["o3"] = f"{_third(head)} {rest}".strip() if head.isalpha() else obj
    text = rule.template.format(**fields)
    text = re.sub(r"\s+", " ", text).strip()
    text = text[0].upper() + text[1:]
    predicate = rule.predicate.format(p=fields["p"], k=fields["k"], v=verb)
    if rule.name == "like" and polarity == "negative":
        predicate = "dislikes"
    return text, predicate, obj, polarity


#: a clause whose subject is the user ("we only eat halal", "my sister is a nurse")
_OWN_START = re.compile(r"^(?:I|I'm|I've|I'd|we|we're|we've|my|our)\b", re.I)


def _standing_rule(segment: str, sentence: str, turn: Turn, subject: str, hedged: bool) -> Candidate:
    """A RULE for a standing instruction (``directives.standing``, "If I ask X, remind me Y" too; seed 004 §4)."""
    obj = _trim_object(_to_third_person(segment))
    text = f"{subject}'s rule: {obj[0].lower() + obj[1:]}."
    confidence = round(0.85 * (0.6 if hedged else 1.0), 2)
    h = dedupe_hash(turn.user_id, text)
    data: dict[str, Any] = {"subject": subject, "predicate": "rule", "object": obj, "polarity": "positive",
                            "functional": False, "hedged": hedged, "quarantined": confidence < QUARANTINE_CONFIDENCE,
                            "duration": _duration("RULE", "PERMANENT"), "rule": "rule_standing", "sentence": sentence,
                            "dedupe_hash": h}
    return Candidate(memory_type="RULE", text=text, importance=0.8, confidence=confidence,
                     tags=["rule", *_keyword_tags(obj)], priority="PERMANENT", user_id=turn.user_id,
                     source_event_ids=[turn.event_id], data=data)


def extract_memories(turns: list[Turn], *, roles: Collection[str] = ("user",)) -> list[Candidate]:
    """Rule-based typed memory candidates from first-person statements of ``roles`` turns.

    Seeds: 001 "写入（记忆存储）" (extract candidates with type/text/importance/tags after each turn), 002 §3.2
    (preference / fact / pattern / skill), 004 §4 (FACT / PREFERENCE / SKILL / ERROR / RULE, priorities, confidence).

    Each sentence of a turn is cut into clauses where a new subject starts; a clause that begins (after discourse
    markers such as "Well," or "By the way,") with a first-person pattern becomes one candidate. Questions are skipped
    ("Do you love painting?") except requests such as "Can you remind me to ...?"; conditional sentences ("If I ...")
    are skipped; reactions to the listener's words ("I love that!", "I love your painting") are not preferences.
    Hedged sentences ("maybe", "I think") get confidence x0.6; below ``QUARANTINE_CONFIDENCE`` (seed 003) the
    candidate carries ``data["quarantined"] = True``. Relative dates ("yesterday", "last Friday", "3 years ago") are
    resolved against the turn's ``occurred_at`` in the text and in ``data["when"]``. Text is rewritten in the third
    person with the speaker's name ("Caroline loves painting."), so that recall by name works and merges compare
    like with like. Candidates with the same ``dedupe_hash`` within the batch are folded into one (their
    ``source_event_ids`` joined). Assistant turns are not mined by default: what the assistant says about itself is
    not a memory about the user.
    """
    by_hash: dict[str, int] = {}
    out: list[Candidate] = []
    for turn in by_seq(turns):
        if turn.role not in roles or not turn.text.strip():
            continue
        subject = name_of(turn)
        turn_out: list[Candidate] = []
        carried: list[str] = []  # what an ending-only sentence ended ("Left Google in May."), for the turn's others
        for sentence in sentences_en.apart(turn.text):
            sent = clean_text(sentence)
            if CJK.search(sent):  # Chinese and mixed sentences: jieba and clause handling (issue #29, ``zh``)
                said = generalise.zh_candidates(sent, turn)
                if not said and (learned := generalise.learned(sent, turn, "用户", lang="zh")) is not None:
                    said = [learned]  # what no rule reads, the learned reader may (issue #29 item 1)
                # a sentence that only ends something ("年糕去年冬天走了") hands its ends to the turn's others
                carried.extend(e for c in said if c.data.get("ends") and not c.data.get("slots")
                               for e in c.data["ends"])
                turn_out.extend(said)
                continue
            sent = reframe.uncleft(sent)  # "Where I live now is X" is read as "I live in X now"
            is_question = sent.endswith("?") or bool(_QUESTION_START.match(_strip_lead(sent)[0]))
            if re.match(r"^(?:if|unless|in case|suppose|imagine|whenever|what if)\b", sent, re.I):
                turn_out.extend(_standing_rule(s, sent, turn, subject, False) for s in [directives.standing(sent)] if s)
                continue
            parts = clauses(sent)
            # the sentence-level readings below (a standing rule, the parser's) state the main clause
            hedged_sentence = hedged_clause(sent, parts, 0) if parts else hedged_text(sent)
            sent_out: list[Candidate] = []
            for i, (clause, first) in enumerate(parts):
                hedged = hedged_clause(sent, parts, i)
                # plain self-statements first (issue #18 item 5, ``selfstatements``), then the general table
                own = None if is_question else match_self_statement(_strip_lead(clause)[0], subject)
                if own is not None:
                    rule = _Rule(own.name, own.memory_type, _NO_PATTERN, "", own.predicate, own.confidence,
                                 own.importance, own.priority, own.tag, functional=own.functional)
                    text, predicate, obj, polarity = own.text, own.predicate, own.object, own.polarity
                else:
                    hit = match_clause(clause, first, is_question)
                    if hit is None:
                        continue
                    rule, m, time_phrase = hit
                    if rule.name == "rule_imperative" and not directives.addressed(clause):
                        continue  # advice between people ("never give up", "always here to help"), no instruction
                    text, predicate, obj, polarity = _render(rule, m, subject, time_phrase)
                text, when = resolve_dates(text, turn.occurred_at)
                obj, _ = resolve_dates(obj, turn.occurred_at)
                if not text.endswith((".", "!", "?")):
                    text += "."
                confidence = round(rule.confidence * (0.6 if hedged else 1.0), 2)
                h = dedupe_hash(turn.user_id, text)
                data: dict[str, Any] = {
                    "subject": subject,
                    "predicate": predicate,
                    "object": obj,
                    "polarity": polarity,
                    "functional": rule.functional,
                    "hedged": hedged,
                    "quarantined": confidence < QUARANTINE_CONFIDENCE,
                    "duration": _duration(rule.memory_type, rule.priority),
                    "rule": rule.name,
                    "sentence": sent,
                    "dedupe_hash": h,
                    "said_on": turn.occurred_at.date().isoformat(),
                }
                if when:
                    data["when"] = when
                tags = [rule.tag, *(t for t in _keyword_tags(obj) if t != rule.tag)]
                sent_out.append(
                    Candidate(
                        memory_type=rule.memory_type,
                        text=text,
                        importance=_importance(rule, sent, obj),
                        confidence=confidence,
                        tags=tags,
                        priority=rule.priority,
                        user_id=turn.user_id,
                        source_event_ids=[turn.event_id],
                        data=data,
                    )
                )
            if not any(c.memory_type == "RULE" for c in sent_out) and (seg := directives.standing(sent)):
                sent_out.append(_standing_rule(seg, sent, turn, subject, hedged_sentence))
            # the parser's reading (issue #29, ``generalise``): what the rules missed, what the sentence ended
            kept, ended = generalise.english(sent, sent_out, turn, subject, hedged=hedged_sentence,
                                             question=is_question)
            if not kept and not is_question:
                # the small parser misreads a long sentence at times ("anything really, as long as it's halal"):
                for j, (clause, first) in enumerate(parts):  # a clause of the user's own gets a parse of its own
                    if not first and _OWN_START.match(clause):
                        more, _ = generalise.english(clause, [], turn, subject, hedged=hedged_clause(sent, parts, j),
                                                     question=False)
                        kept.extend(more)
            if not kept and not ended and (learned := generalise.learned(sent, turn, subject)) is not None:
                kept = [learned]  # what no rule or clause reading keeps, the learned reader may (issue #29 item 1)
            kept += presupposed_en.candidates(sent, turn, subject, kept + sent_out)  # "here in Cork" in a question
            turn_out.extend(kept)
            carried.extend(ended)
        for c in generalise.with_ends(turn_out, carried, turn, subject):
            if framing.dropped(c, turn.text) is None:  # "假如我吃素的话", "write a story about a girl who's ..."
                generalise.add(out, by_hash, slot_reader.retyped(c))  # a FACT by default: its slot's type
    return out
