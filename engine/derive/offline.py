"""Offline default for derived memory: extractive summaries, keyphrase topics, rule-based typed memories, episodes.

No network, no LLM, no clock, no I/O: every function here is a pure, deterministic function of its arguments, so the
derived events it feeds (``SummaryUpdated``, ``TopicsExtracted``, ``MemoriesExtracted``, ``EpisodeRecorded``) are
reproducible. They record ``model = OFFLINE_MODEL`` and ``prompt_version = PROMPT_VERSION`` so that a later
re-derivation with an LLM is an explicit, traceable choice (DESIGN.md "Models": "deterministic extractive methods,
clearly named as such").

Sources (requirement seeds in ``shared/seeds``):

* ``000_*.txt`` §3.1 "摘要递归压缩": when the old summary + the new one exceed ``MEMORY_MAX_SUMMARY_TOKENS`` the old
  one is compressed to about 1/3, merged with the new one, and the whole compressed again if still over;
  §1.2 ``memory_topics`` / §4.4 Tier 1 ``[Recallable Topics]``: short topic labels; §6 token counts are estimates.
* ``001_*.txt`` "字段定义：memory_items": types PROFILE / TASK / FACT / EPISODIC, ``importance`` 0..1, ``tags``,
  ``data`` (structured payload), ``dedupe_hash`` scoped by ``user_id``; "写入（记忆存储）" extract -> score ->
  dedupe decides add / merge / ignore; dedupe_hash = hash(normalize(text)).
* ``002_*.txt`` §3.2 memory types preference / fact / pattern / skill; §4.1 ``_merge_or_update``: replace / merge /
  keep_both; §2.2 "冲突的记忆 → 保留最新" (a contradiction replaces the old memory).
* ``003_*.txt`` "工作记忆": content under the 0.8 confidence threshold is held back (quarantine) instead of being
  promoted; here the candidate is flagged ``data["quarantined"]`` and the caller decides.
* ``004_*.txt`` §4 "记忆类型": FACT / PREFERENCE / SKILL / ERROR / RULE with ``subject``/``predicate``,
  ``importance_score``, ``confidence``; priorities TRANSIENT 1 d, SHORT_TERM 3 d, LONG_TERM 30 d, PERMANENT
  (``duration`` ``permanent|7d|24h|session``, ERROR kept 7 d); Episode = summary, goal, outcome, entities,
  tools_used, started_at, ended_at.

Keyphrases come from YAKE (``yake``: unsupervised, statistical, single-document; stop-word lists ship inside the
wheel, no model or corpus download). Everything else is plain ``re`` + arithmetic.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from datetime import date, datetime, timedelta
from typing import Any

import msgspec

OFFLINE_MODEL = "offline-extractive-v1"  # recorded as `model` on derived events
PROMPT_VERSION = "1"

#: Memory types: seed 001 (PROFILE/TASK/FACT/EPISODIC), seed 002 §3.2 (preference/fact/pattern/skill),
#: seed 004 §4 (FACT/PREFERENCE/SKILL/ERROR/RULE).
MEMORY_TYPES = ("PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC")
#: Priorities and their retention (seed 004 §4 "保留时长机制"); ``None`` = never expires.
PRIORITY_DAYS: dict[str, int | None] = {"TRANSIENT": 1, "SHORT_TERM": 3, "LONG_TERM": 30, "PERMANENT": None}
#: Seed 003 "工作记忆": below this confidence a candidate is quarantined rather than promoted.
QUARANTINE_CONFIDENCE = 0.8
#: Share of the new turns' own length that their part of a summary may take, and its floor in tokens.
SUMMARY_RATIO = 0.35
SUMMARY_MIN_TOKENS = 48
#: Token budget of the summary inside an episode.
EPISODE_SUMMARY_TOKENS = 200
#: Merge thresholds on content-token Jaccard similarity (decide_merge).
DUPLICATE_SIMILARITY = 0.85
MERGE_SIMILARITY = 0.6
RELATED_SIMILARITY = 0.3


# --------------------------------------------------------------------------------------------------------------------
# Structures
# --------------------------------------------------------------------------------------------------------------------


class Turn(msgspec.Struct, frozen=True):
    """One conversation turn as the deriver sees it (text only; thinking and tool payloads already flattened)."""

    event_id: str
    seq: int
    role: str  # user | assistant | system | tool
    user_id: str | None
    text: str
    occurred_at: datetime
    tools: list[str] = []


class Candidate(msgspec.Struct, frozen=True):
    """A typed memory proposed by extraction (seed 001 candidate shape + seed 004 priority/confidence)."""

    memory_type: str
    text: str
    importance: float
    confidence: float
    tags: list[str]
    priority: str
    user_id: str | None
    source_event_ids: list[str]
    data: dict = {}


class ExistingItem(msgspec.Struct, frozen=True):
    """An active memory item of the same user, as decide_merge needs it."""

    memory_id: str
    memory_type: str
    text: str
    user_id: str | None


class MergeDecision(msgspec.Struct, frozen=True):
    """Seed 002 §4.1 decision: ``add`` | ``merge`` | ``replace`` | ``keep_both`` | ``ignore`` + the items it touches."""

    action: str
    target_ids: list[str]
    reason: str


class Episode(msgspec.Struct, frozen=True):
    """Seed 004 §4 "情节记忆 (Episode)": what one stretch of conversation was about and how it ended."""

    summary: str
    goal: str | None
    outcome: str | None
    entities: list[str]
    tools_used: list[str]
    started_at: datetime
    ended_at: datetime
    source_event_ids: list[str]


# --------------------------------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})

#: Function words ignored when comparing or scoring text (small on purpose; YAKE brings its own list for topics).
_STOP = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for
    from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself
    his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most mustn't my myself
    no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
    should shouldn't so some such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's will with won't would
    wouldn't you you'd you'll you're you've your yours yourself yourselves ya yeah yes oh wow hey hi hello really so
    just like got get gonna wanna thanks thank ok okay sure lol haha totally super pretty much well""".split()
)
_NEGATORS = frozenset(
    "not no never don't doesn't didn't isn't aren't wasn't weren't can't cannot won't wouldn't haven't hasn't "
    "hadn't shouldn't dont doesnt didnt isnt cant wont nothing nobody none".split()
)
_NEG_PREF = frozenset({"hate", "hates", "dislike", "dislikes", "detest", "detests", "loathe", "loathes"})
_POS_PREF = frozenset({"like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "adores", "prefer", "prefers"})
_MONTHS = (
    "January February March April May June July August September October November December".split()
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:'[A-Za-z]+)?|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|vs|etc|e\.g|i\.e|approx|No)\.)$", re.I)


def _clean(text: str) -> str:
    """NFKC, ASCII quotes and dashes, collapsed whitespace."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return re.sub(r"\s+", " ", text).strip()


def _sentences(text: str) -> list[str]:
    """Split text into sentences (English and CJK end marks, newlines), keeping common abbreviations together."""
    out: list[str] = []
    for para in re.split(r"\n+", unicodedata.normalize("NFKC", text).translate(_QUOTES)):
        para = re.sub(r"\s+", " ", para).strip()
        if not para:
            continue
        parts = re.split(r"(?<=[.!?\u2026])[\"')\]]*\s+(?=\S)|(?<=[\u3002\uff01\uff1f])", para)
        buf = ""
        for part in parts:
            part = part.strip()
            if not part:
                continue
            buf = f"{buf} {part}".strip() if buf else part
            if _ABBREV.search(buf):
                continue
            out.append(buf)
            buf = ""
        if buf:
            out.append(buf)
    return out


def _stem(word: str) -> str:
    """A deliberately light suffix stripper: enough for 'loves'/'love', 'paintings'/'painting' to meet."""
    w = word.lower().removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("es") and w[-3] in "sxz":
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return w


def _words(text: str) -> list[str]:
    """Lower-cased word tokens; CJK runs become character bigrams so similarity works without spaces."""
    out: list[str] = []
    for tok in _WORD.findall(text.translate(_QUOTES)):
        if _CJK.match(tok):
            out.extend(tok[i : i + 2] for i in range(max(1, len(tok) - 1)))
        else:
            out.append(tok.lower())
    return out


def _content(text: str, drop: Collection[str] = ()) -> list[str]:
    """Stemmed content tokens (no function words, no tokens in ``drop``)."""
    return [_stem(w) for w in _words(text) if w not in _STOP and w not in drop and (len(w) > 1 or w.isdigit())]


def _jaccard(a: Collection[str], b: Collection[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def _estimate_tokens(text: str) -> int:
    return len(text) // 4


def _fmt_date(d: date) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return date(y, m + 1, 1)


_NUM = r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few|a|an)"
_REL_DATE = re.compile(
    r"\b(?:(?P<yesterday>yesterday)|(?P<today>today|tonight|this morning|this afternoon|this evening)"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<by>by|until|before|till) "
    r"(?P<bwd>monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|today)\b"
    r"|(?:(?P<approx>about|around|roughly|almost|nearly|over|more than|less than|like) )?"
    rf"{_NUM} (?P<unit>day|weekend|week|month|year)s? ago"
    r"|(?P<dir>last|next|this past|this coming|this) (?P<what>week(?:end)?|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|weds|thu|thurs?|fri|sat|sun)\b\.?)",
    re.I,
)


def _resolve_dates(text: str, when: datetime) -> tuple[str, list[str]]:
    """Replace relative time expressions ("yesterday", "last Friday", "3 years ago") by dates anchored at ``when``.

    Returns the new text and the ISO dates (or year / year-month) found, for ``Candidate.data["when"]``. Pure: the
    anchor is the turn's ``occurred_at``, never the clock. Month names are spelled out here (not ``strftime``) so
    the output does not depend on the locale.
    """
    anchor = when.date()
    found: list[str] = []

    def day(d: date, prefix: str = "on") -> str:
        found.append(d.isoformat())
        return f"{prefix} {_fmt_date(d)}"

    def month(d: date) -> str:
        found.append(f"{d.year:04d}-{d.month:02d}")
        return f"in {_MONTHS[d.month - 1]} {d.year}"

    def year(y: int) -> str:
        found.append(f"{y:04d}")
        return f"in {y}"

    def ago(n: int, unit: str) -> str:
        if unit == "day":
            return day(anchor - timedelta(days=n))
        if unit in ("week", "weekend"):
            return day(anchor - timedelta(weeks=n), "around")
        if unit == "month":
            return month(_add_months(anchor, -n))
        return year(anchor.year - n)

    def relative(direction: str, what: str) -> str:
        sign = {"next": 1, "this coming": 1, "this": 0}.get(direction, -1)
        if what in ("week", "weekend") and sign == 0:
            return day(anchor, "in the week of")
        if what == "week":
            return day(anchor, "in the week after" if sign > 0 else "in the week before")
        if what == "weekend":  # the Saturday before (or after) the anchor
            if sign < 0:
                return day(anchor - timedelta(days=(anchor.weekday() - 5) % 7 or 7), "on the weekend of")
            return day(anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7), "on the weekend of")
        if what == "month":
            return month(_add_months(anchor, sign))
        if what == "year":
            return year(anchor.year + sign)
        wd = next(i for i, name in enumerate(_WEEKDAYS) if name.startswith(what[:3]))
        if sign < 0:
            d = anchor - timedelta(days=(anchor.weekday() - wd) % 7 or 7)
        else:  # "next Friday", "this Friday": the coming one
            d = anchor + timedelta(days=(wd - anchor.weekday()) % 7 or 7)
        return day(d, f"on {_WEEKDAYS[wd].capitalize()}")

    def repl(m: re.Match[str]) -> str:
        if m["yesterday"]:
            return day(anchor - timedelta(days=1))
        if m["today"]:
            found.append(anchor.isoformat())
            return f"{m['today']} ({_fmt_date(anchor)})"
        if m["tomorrow"]:
            return day(anchor + timedelta(days=1))
        if m["bwd"]:  # "by Friday": the coming Friday, today included
            target = m["bwd"].lower()
            if target in ("tomorrow", "tonight", "today"):
                return day(anchor + timedelta(days=1 if target == "tomorrow" else 0), m["by"])
            wd = _WEEKDAYS.index(target)
            return day(anchor + timedelta(days=(wd - anchor.weekday()) % 7), f"{m['by']} {_WEEKDAYS[wd].capitalize()}")
        if m["unit"]:
            n = int(m["n"]) if m["n"].isdigit() else _NUMBER_WORDS.get(m["n"].lower(), 1)
            out = ago(n, m["unit"].lower())
            if m["approx"]:
                out = re.sub(r"^(?:on|in|around) ", "around ", out)
            return out
        what = m["what"].lower()
        out = relative(m["dir"].lower(), what)
        # "last Tues." loses its abbreviation point; "last week." keeps the full stop that ends the sentence
        full_word = what in _WEEKDAYS or what in ("week", "weekend", "month", "year")
        return out + "." if m.group(0).endswith(".") and full_word else out

    return _REL_DATE.sub(repl, text), found


def _name_of(turn: Turn) -> str:
    """Who spoke: the user's id when it reads like a display name ("Caroline"), else the role ("User", "Assistant")."""
    if turn.role == "user":
        uid = (turn.user_id or "").strip()
        if re.fullmatch(r"[A-Z][A-Za-z'.-]*(?: [A-Z][A-Za-z'.-]*){0,3}", uid):
            return uid
        return "User"
    return turn.role.capitalize() if turn.role else "Unknown"


def _ordered(turns: Iterable[Turn]) -> list[Turn]:
    return sorted(turns, key=lambda t: (t.seq, t.event_id))


# --------------------------------------------------------------------------------------------------------------------
# Rule-based extraction (seeds 001, 002 §3.2, 004 §4)
# --------------------------------------------------------------------------------------------------------------------


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
_STATUS = _alt("""single|married|divorced|engaged|widowed|separated|pregnant|retired|vegan|vegetarian|transgender|
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
#: First match wins, so the order matters: rules before profile, "fan of" before "I'm a ...", tasks with a deadline
#: before plain "I need to", facts last.
_RULES: tuple[_Rule, ...] = (
    # RULE: standing instructions (seed 004 §4 RULE, behaviour rules are PERMANENT)
    _r("rule_imperative", "RULE",
       r"(?:please )?(?P<v>always|never|from now on,?|make sure (?:to|you) always) (?!been\b|was\b|had\b|were\b)" + _O,
       "{S}'s rule: {v} {o}", "rule", 0.85, 0.8, "PERMANENT", "rule", sentence_start=True),
    _r("rule_want_you", "RULE", r"I (?:want|need|would like|'d like) you to (?P<v>always|never) " + _O,
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
       r"(?:is|are|was|has always been) (?:to )?" + _O,
       "{S}'s {k} is to {o}", "goal", 0.85, 0.75, "LONG_TERM", "goal"),
    _r("plan", "TASK",
       rf"{_IM} {_ADV}(?P<v>planning|hoping|aiming|trying|going|preparing|saving up|determined|ready) to " + _O,
       "{S} is {v} to {o}", "goal", 0.75, 0.6, "LONG_TERM", "goal"),
    _r("intend", "TASK",
       rf"I {_ADV}(?P<v>plan|hope|intend|aim|want|wanna|would like|'d like|decided|have decided|'ve decided) to "
       rf"(?!{_CHATTY_INTENT}\b)" + _O,
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
    r"shall|may|wanna|any)\b", re.I
)
_HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|i think|i guess|i suppose|i believe|not sure|kind of|kinda|sort of|"
    r"i feel like|seems|i'm thinking|thinking about|considering|someday|one day)\b", re.I
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
    obj = obj.strip().strip(" ,;:-\"'")
    obj = re.sub(r"[\s!.?,;:~*]+$", "", obj)
    obj = re.sub(r"\s*[\U0001F000-\U0001FFFF\u2600-\u27BF]+\s*", " ", obj).strip()
    words = obj.split()
    if len(words) > 28:  # a run-on clause: keep the head, which carries the claim
        obj = " ".join(words[:28])
    return obj


def _has_content(obj: str) -> bool:
    ws = [w for w in _words(obj) if w not in _PRONOUNS_ONLY]
    return any(w not in _STOP and (len(w) > 2 or w.isdigit()) for w in ws)


def _clauses(sentence: str) -> list[tuple[str, bool]]:
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
    for w in _words(obj):
        if w in _STOP or w in _TOPIC_STOP or w in _NUMBER_WORDS or len(w) < 4 or w.isdigit() or _CJK.match(w):
            continue
        key = _stem(w)
        if key in seen:
            continue
        seen.add(key)
        tags.append(w)
        if len(tags) == limit:
            break
    return tags


def _importance(rule: _Rule, sentence: str, obj: str) -> float:
    score = rule.importance
    if re.search(r"\d", obj) or _REL_DATE.search(sentence):
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
        return "7d"  # seed 004 §4: ERROR kept 7 days
    return {"TRANSIENT": "24h", "SHORT_TERM": "3d", "LONG_TERM": "30d", "PERMANENT": "permanent"}[priority]


def _match_clause(
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
        when = _REL_DATE.search(lead)
        return rule, m, when.group(0) if when else ""
    return None


def _render(rule: _Rule, m: re.Match[str], subject: str, time_phrase: str = "") -> tuple[str, str, str, str]:
    """(text, predicate, object, polarity) of a matched clause, in the third person.

    ``time_phrase`` is a leading "Yesterday," / "Last week" that was stripped from the clause; it is put back at the
    end of the object so the date survives.
    """
    g = {k: (v or "") for k, v in m.groupdict().items()}
    obj = _to_third_person(_trim_object(g.get("o", "")))
    if time_phrase and not _REL_DATE.search(obj):
        obj = f"{obj} {time_phrase.lower()}"
    verb = re.sub(r"\bdont\b", "don't", g.get("v", "").lower())
    polarity = "positive"
    negative_verb = verb in _NEG_PREF or re.match(r"(?:don't|do not|can't|cannot)", verb) is not None
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
    for turn in _ordered(turns):
        if turn.role not in roles or not turn.text.strip():
            continue
        subject = _name_of(turn)
        for sentence in _sentences(turn.text):
            sent = _clean(sentence)
            is_question = sent.endswith("?") or bool(_QUESTION_START.match(_strip_lead(sent)[0]))
            if re.match(r"^(?:if|unless|in case|suppose|imagine|whenever|what if)\b", sent, re.I):
                continue
            hedged = bool(_HEDGE.search(sent))
            for clause, first in _clauses(sent):
                hit = _match_clause(clause, first, is_question)
                if hit is None:
                    continue
                rule, m, time_phrase = hit
                text, predicate, obj, polarity = _render(rule, m, subject, time_phrase)
                text, when = _resolve_dates(text, turn.occurred_at)
                obj, _ = _resolve_dates(obj, turn.occurred_at)
                if not text.endswith((".", "!", "?")):
                    text += "."
                confidence = round(rule.confidence * (0.6 if hedged else 1.0), 2)
                h = dedupe_hash(turn.user_id, text)
                if h in by_hash:
                    i = by_hash[h]
                    prev = out[i]
                    if turn.event_id not in prev.source_event_ids:
                        out[i] = msgspec.structs.replace(prev, source_event_ids=[*prev.source_event_ids, turn.event_id])
                    continue
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
                }
                if when:
                    data["when"] = when
                tags = [rule.tag, *(t for t in _keyword_tags(obj) if t != rule.tag)]
                by_hash[h] = len(out)
                out.append(
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
    return out


# --------------------------------------------------------------------------------------------------------------------
# Summaries (seed 000 §3.1)
# --------------------------------------------------------------------------------------------------------------------


class _Unit(msgspec.Struct):
    order: int
    day: str  # ISO date of the turn, "" when unknown (units parsed back from a summary without a date)
    speaker: str
    text: str
    first_person: bool = False


_FILLER = re.compile(
    r"^(?:thanks|thank you|thx|wow|hey|hi|hello|haha|lol|yeah|yes|yep|no|nope|ok|okay|sure|cool|awesome|great|nice|"
    r"congrats|congratulations|aw+|omg|oh|ah|hmm|same|totally|exactly|absolutely|definitely|bye|see you|talk soon|"
    r"take care|good luck|glad|sounds|that's (?:so |really )?(?:great|awesome|cool|amazing|nice|sweet|good)|"
    r"you're welcome|no problem|of course|me too)\b",
    re.I,
)
_LINE = re.compile(r"^(?:\[(?P<day>\d{4}-\d{2}-\d{2})\] )?(?:(?P<speaker>[^:\n]{1,40}): )?(?P<text>.+)$")


def _units_from_turns(turns: list[Turn]) -> list[_Unit]:
    units: list[_Unit] = []
    for turn in turns:
        if turn.role not in ("user", "assistant") or not turn.text.strip():
            continue
        day = turn.occurred_at.date().isoformat()
        for sentence in _sentences(turn.text):
            sent = _clean(sentence)
            sent, _ = _resolve_dates(sent, turn.occurred_at)
            first = turn.role == "user" and any(
                _match_clause(c, f, sent.endswith("?")) is not None for c, f in _clauses(sent)
            )
            units.append(_Unit(len(units), day, _name_of(turn), sent, first))
    return units


def _units_from_summary(summary: str, start: int = 0) -> list[_Unit]:
    units: list[_Unit] = []
    for line in summary.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:  # cannot happen (the pattern accepts any non-empty line); keeps -O builds honest
            continue
        speaker = (m["speaker"] or "").strip()
        body = m["text"]
        if speaker and (len(speaker.split()) > 4 or not re.match(r"^[\w .'-]+$", speaker)):
            speaker, body = "", line if not m["day"] else f"{m['speaker']}: {m['text']}"
        for sentence in _sentences(body):
            first = bool(re.match(r"^I\b|^I'", sentence))
            units.append(_Unit(start + len(units), m["day"] or "", speaker, sentence, first))
    return units


def _render_units(units: list[_Unit]) -> str:
    """Lines ``[YYYY-MM-DD] Speaker: sentence sentence`` grouping consecutive sentences of one speaker and day."""
    lines: list[str] = []
    key: tuple[str, str] | None = None
    for u in sorted(units, key=lambda u: u.order):
        k = (u.day, u.speaker)
        if k == key and lines:
            lines[-1] += " " + u.text
            continue
        key = k
        prefix = (f"[{u.day}] " if u.day else "") + (f"{u.speaker}: " if u.speaker else "")
        lines.append(prefix + u.text)
    return "\n".join(lines)


def _scores(units: list[_Unit], speakers: Collection[str]) -> list[float]:
    """Centroid (TF-IDF) relevance + cues: first-person facts, numbers/dates, named entities; fillers/questions down."""
    drop = {w.lower() for s in speakers for w in s.split()}
    toks = [_content(u.text, drop) for u in units]
    n = len(units)
    df = Counter(t for ts in toks for t in set(ts))
    tf = Counter(t for ts in toks for t in ts)
    centroid = {t: tf[t] * math.log(1 + n / df[t]) for t in tf}
    norm_c = math.sqrt(sum(v * v for v in centroid.values())) or 1.0
    out: list[float] = []
    for u, ts in zip(units, toks, strict=True):
        if not ts:
            out.append(0.0)
            continue
        counts = Counter(ts)
        vec = {t: c * math.log(1 + n / df[t]) for t, c in counts.items()}
        norm_v = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        score = sum(v * centroid[t] for t, v in vec.items()) / (norm_v * norm_c)
        if u.first_person:
            score += 0.3
        if re.search(r"\d", u.text):
            score += 0.15
        entities = [w for w in re.findall(r"(?<!^)(?<![.!?] )\b(?:[A-Z][a-z]+|[A-Z]{2,})\b", u.text)
                    if w not in speakers and w.lower() not in _STOP and w != "I"]
        score += min(0.2, 0.1 * len(entities))
        n_words = len(u.text.split())
        if n_words < 5:
            score *= 0.3
        elif n_words > 60:
            score *= 0.7
        if u.text.endswith("?"):
            score *= 0.4
        if _FILLER.match(u.text):
            score *= 0.5
        out.append(score)
    return out


def _select(units: list[_Unit], budget: int, count: Callable[[str], int]) -> str:
    """Greedy MMR selection of units under ``budget`` tokens of the rendered text; output in original order."""
    if budget <= 0 or not units:
        return ""
    if count(_render_units(units)) <= budget:
        return _render_units(units)
    speakers = {u.speaker for u in units if u.speaker}
    scores = _scores(units, speakers)
    drop = {w.lower() for s in speakers for w in s.split()}
    toks = [set(_content(u.text, drop)) for u in units]
    chosen: list[int] = []
    redundancy = [0.0] * len(units)
    floor = 0.15 * max(scores)  # never pad the budget with near-empty sentences ("Hey Mel!", "Thanks!")
    remaining = {i for i in range(len(units)) if scores[i] > floor}
    rendered = ""
    while remaining:
        best = min(remaining, key=lambda i: (-(scores[i] - 0.5 * redundancy[i]), i))
        remaining.discard(best)
        trial = _render_units([units[j] for j in [*chosen, best]])
        if count(trial) > budget:
            continue
        chosen.append(best)
        rendered = trial
        for i in remaining:
            redundancy[i] = max(redundancy[i], _jaccard(toks[i], toks[best]))
    if not rendered:
        # not even the best sentence fits: cut it at a word boundary
        u = units[max(range(len(units)), key=lambda i: (scores[i], -i))]
        words = u.text.split()
        lo, hi = 0, len(words)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(_render_units([msgspec.structs.replace(u, text=" ".join(words[:mid]) + " ...")])) <= budget:
                lo = mid
            else:
                hi = mid - 1
        rendered = _render_units([msgspec.structs.replace(u, text=" ".join(words[:lo]) + " ...")]) if lo else ""
    return rendered


def _compress(summary: str, budget: int, count: Callable[[str], int]) -> str:
    if count(summary) <= budget:
        return summary
    return _select(_units_from_summary(summary), budget, count)


def summarize(
    turns: list[Turn],
    max_tokens: int,
    previous: str | None = None,
    *,
    count_tokens: Callable[[str], int] | None = None,
    ratio: float = SUMMARY_RATIO,
) -> str:
    """Extractive rolling summary of ``turns`` merged into ``previous`` (seed 000 §3.1 "摘要递归压缩").

    The new part picks informative sentences (TF-IDF centroid relevance with a redundancy penalty, favouring
    first-person facts, numbers and dates, named entities; fillers and questions scored down) and renders them
    attributed and dated, one line per run of one speaker on one day: ``[2023-05-08] Caroline: I went to ...``.
    Relative dates are resolved against each turn's timestamp. With a ``previous`` summary: when previous + new
    exceed ``max_tokens``, the previous summary is compressed to about 1/3 of its length, merged (old first), and the
    whole compressed again if still over. The result never exceeds ``max_tokens`` by ``count_tokens`` (default
    ``len(text) // 4``, seed 000 §6 treats counts as estimates; pass the real tokenizer when exactness matters).
    The new part is also held to ``ratio`` of the new turns' own length (at least ``SUMMARY_MIN_TOKENS``), so that a
    batch that would fit verbatim is still summarised rather than copied.
    """
    count = count_tokens or _estimate_tokens
    if max_tokens <= 0:
        return ""
    previous = (previous or "").strip()
    units = _units_from_turns(_ordered(turns))
    cap = max(SUMMARY_MIN_TOKENS, math.ceil(ratio * count(_render_units(units)))) if units else 0
    if not previous:
        return _select(units, min(max_tokens, cap), count)
    prev_tokens = count(previous)
    new_budget = min(cap, max(1, max_tokens - min(prev_tokens, max_tokens) // 3))
    new = _select(units, new_budget, count)
    if not new:
        return _compress(previous, max_tokens, count)
    merged = f"{previous}\n{new}"
    if count(merged) <= max_tokens:
        return merged
    # step 1: the old summary to about a third of its length; step 2: merge; step 3: compress the whole if still over
    old = _compress(previous, max(1, prev_tokens // 3), count)
    merged = f"{old}\n{new}" if old else new
    if count(merged) <= max_tokens:
        return merged
    return _compress(merged, max_tokens, count)


# --------------------------------------------------------------------------------------------------------------------
# Topics (seed 000 §1.2 memory_topics, §4.4 "[Recallable Topics]")
# --------------------------------------------------------------------------------------------------------------------

#: Chat words that are frequent but never a topic; added to YAKE's English list.
_TOPIC_STOP = frozenset(
    """hey hi hello wow yeah yes yep yup nope oh ah aw aww awesome cool great amazing good nice glad lol haha hahaha
    ok okay sure gonna wanna gotta kinda sorta thanks thank thx appreciate congrats congratulations totally super
    really honestly literally absolutely definitely stuff thing things lot lots bit kind sort way time times day days
    today yesterday tomorrow tonight morning evening night week weeks weekend month months year years ago last next
    monday tuesday wednesday thursday friday saturday sunday made make makes making felt feel feeling feels
    happened happen happening sounds sound sounded looks look looking love loved loving lovely like liked likes
    enjoy enjoyed want wanted need needed hope hoped glad happy excited exciting proud important huge big little
    special powerful inspiring incredible wonderful fantastic beautiful fun hard tough took take taking keep kept
    went go going gone get got getting thinking think thought know knew told tell telling say said saying talk talked
    talking chat chatted hear heard share shared sharing mean means meant reminds reminded remind start started
    try tried trying help helped helping show showed see saw seen glad guess yeah yep nah wait mind true pretty
    real stoked grateful thankful blessed""".split()
)


#: Names used to address someone ("Hey Mel!", "Thanks, Caroline.", "..., Mel!"): people, not topics.
_VOCATIVE = re.compile(
    r"\b(?i:hey|hi|hello|thanks|thank you|bye|congrats|wow|yeah|yes|oh|aw+|ok|okay|sure|totally|yep),?\s+"
    r"([A-Z][a-z]+)(?=\s*[!,.?])|,\s+([A-Z][a-z]+)(?=\s*[!.?]|$)"
)


@functools.cache
def _yake_stopwords() -> frozenset[str]:
    """YAKE's English stop-word list: package data inside the ``yake`` wheel, read once per process."""
    from importlib.resources import files

    text = files("yake").joinpath("core", "StopwordsList", "stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(text.lower().split())


def topics(turns: list[Turn], k: int = 8) -> list[str]:
    """Up to ``k`` keyphrase topics of ``turns``: lower-cased, deduplicated, best first.

    YAKE (Campos et al., 2020: statistical features of one document, no training data, no downloads) over the user
    and assistant text with its English stop words plus chat fillers and the speakers' names; phrases of 1-2 words.
    A single word is dropped when a chosen phrase contains it ("mental health" absorbs "health"); plural and singular
    forms count as one topic. Deterministic (YAKE has no randomness; ties are broken by the phrase).
    """
    import yake  # imported on first use: it pulls in numpy and networkx

    if k <= 0:
        return []
    ordered = [t for t in _ordered(turns) if t.role in ("user", "assistant") and t.text.strip()]
    if not ordered:
        return []
    names = {w.lower() for t in ordered for w in (_name_of(t).split() + (t.user_id or "").split())}
    names |= {(m[1] or m[2]).lower() for t in ordered for m in _VOCATIVE.finditer(_clean(t.text))}
    stop = set(_yake_stopwords() | _TOPIC_STOP | names)
    text = "\n".join(_clean(t.text) for t in ordered)
    extractor = yake.KeywordExtractor(lan="en", n=2, dedup_lim=0.8, top=max(20, 4 * k), stopwords=stop)
    ranked = sorted(extractor.extract_keywords(text), key=lambda kv: (float(kv[1]), kv[0].lower()))
    chosen: list[str] = []
    keys: list[tuple[str, ...]] = []
    for phrase, _score in ranked:
        words = [w for w in re.findall(r"[\w'-]+", phrase.lower())]
        if not words or any(w in stop or w.isdigit() or len(w) < 3 for w in words):
            continue
        key = tuple(_stem(w) for w in words)
        if key in keys:
            continue
        if len(key) == 1 and any(key[0] in other for other in keys if len(other) > 1):
            continue  # already covered by a phrase
        label = " ".join(words)
        if len(key) > 1:
            # a phrase absorbs a single word chosen earlier: take its place
            covered = [i for i, other in enumerate(keys) if len(other) == 1 and other[0] in key]
            if covered:
                i = covered[0]
                chosen[i], keys[i] = label, key
                for j in reversed(covered[1:]):
                    del chosen[j], keys[j]
                continue
        chosen.append(label)
        keys.append(key)
        if len(chosen) == k:
            break
    return chosen[:k]


# --------------------------------------------------------------------------------------------------------------------
# Episodes (seed 004 §4 "情节记忆")
# --------------------------------------------------------------------------------------------------------------------

_GOAL = re.compile(
    r"^(?:(?:please|hey|hi|so|ok|okay)[, ]+)*(?:(?:can|could|would|will) you|help me|i need|i want to|i'd like|"
    r"i would like|i'm trying to|i am trying to|how (?:do|can|should) i|let's|my goal|i'm looking for|"
    r"write|create|make|build|fix|find|explain|generate|summari[sz]e|add|update|implement|debug|show me|tell me|"
    r"plan|draft|translate|compare|analy[sz]e|set up|install|configure|refactor|review|check|book|schedule|remind)\b",
    re.I,
)
_OUTCOME = re.compile(
    r"\b(?:done|finished|completed|complete|fixed|resolved|created|saved|updated|deployed|installed|booked|sent|"
    r"scheduled|passed|succeeded|success(?:ful(?:ly)?)?|works now|working now|failed|failure|error|couldn't|could not|"
    r"unable|not possible|gave up|decided|agreed|i've (?:added|written|created|updated|fixed))\b",
    re.I,
)
_HERE_IS = re.compile(r"^(?:here is|here's|here are)\b", re.I)
_NOT_ENTITY = frozenset(
    [d.capitalize() for d in _WEEKDAYS] + list(_MONTHS) +
    "I I'm I've I'll I'd The A An And But So Then This That These Those It It's Its He She We They You Your My Our "
    "Hey Hi Hello Wow Oh Yeah Yes No Ok Okay Thanks Thank Sure Well Also Just Really Haha Lol Aw Awww Omg Btw Please "
    "What Why How Where When Who Which If Is Are Was Were Do Does Did Can Could Would Will Should Have Has Had Not "
    "Nice Great Cool Awesome Amazing Good Glad Congrats Sounds Totally Definitely Absolutely There Here Let Let's "
    "Me Mine Their Them His Her Him Not Maybe Sorry Bye Take".split()
)


def _entities(turns: list[Turn]) -> list[str]:
    """Proper names and acronyms: capitalised words seen mid-sentence (or all-caps), in order of first mention."""
    mid: Counter[str] = Counter()
    order: dict[str, int] = {}
    for t in turns:
        if t.role not in ("user", "assistant"):
            continue
        for sentence in _sentences(t.text):
            for m in re.finditer(r"\b[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)*", _clean(sentence)):
                phrase = m.group(0).removesuffix("'s")
                words = [w for w in phrase.split() if w not in _NOT_ENTITY]
                if not words:
                    continue
                phrase = " ".join(words)
                acronym = bool(re.fullmatch(r"[A-Z]{2,}[\w+]*", phrase))
                if m.start() > 0 or acronym:
                    mid[phrase] += 1
                order.setdefault(phrase, len(order))
    return sorted(mid, key=lambda p: order[p])


def episode(turns: list[Turn]) -> Episode:
    """Seed 004 §4 Episode of ``turns``: summary, goal, outcome, entities, tools_used, started_at, ended_at.

    ``summary`` = ``summarize(turns, EPISODE_SUMMARY_TOKENS)``. ``goal`` = the first user sentence that reads like a
    request or intention ("Can you ...", "I need ...", "Fix ...", "I'm trying to ..."), else ``None``. ``outcome`` =
    the last assistant/tool sentence with a completion or failure cue ("done", "fixed", "failed", "here is"), else the
    last such user sentence, else ``None``. ``entities`` = proper names and acronyms, first mention first, plus the
    speakers; ``tools_used`` = the turns' ``tools`` in order of first use. Raises ``ValueError`` on no turns.
    """
    ordered = _ordered(turns)
    if not ordered:
        raise ValueError("episode() needs at least one turn")
    goal: str | None = None
    for t in ordered:
        if t.role != "user":
            continue
        for sentence in _sentences(t.text):
            s = _clean(sentence)
            if _GOAL.match(s) and len(s.split()) >= 3:
                goal = s[:300]
                break
        if goal:
            break
    outcome: str | None = None
    for roles in (("assistant", "tool"), ("user",)):
        for t in reversed(ordered):
            if t.role not in roles:
                continue
            for sentence in reversed(_sentences(t.text)):
                s = _clean(sentence)
                if (_OUTCOME.search(s) or (t.role != "user" and _HERE_IS.match(s))) and not s.endswith("?"):
                    outcome = s[:300]
                    break
            if outcome:
                break
        if outcome:
            break
    speakers = [n for n in dict.fromkeys(_name_of(t) for t in ordered if t.role == "user") if n != "User"]
    entities = list(dict.fromkeys([*speakers, *_entities(ordered)]))[:30]
    tools = list(dict.fromkeys(tool for t in ordered for tool in t.tools))
    return Episode(
        summary=summarize(ordered, EPISODE_SUMMARY_TOKENS),
        goal=goal,
        outcome=outcome,
        entities=entities,
        tools_used=tools,
        started_at=min(t.occurred_at for t in ordered),
        ended_at=max(t.occurred_at for t in ordered),
        source_event_ids=[t.event_id for t in ordered],
    )


# --------------------------------------------------------------------------------------------------------------------
# Dedupe and merge (seed 001 dedupe_hash, seed 002 §4.1)
# --------------------------------------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.translate(_QUOTES))
    text = text.replace("'", "")
    return re.sub(r"\s+", " ", text).strip()


def dedupe_hash(user_id: str | None, text: str) -> str:
    """sha256 hex of ``user_id`` + normalised text (seed 001 ``dedupe_hash``, "与 user_id 共同限定").

    Normalisation: NFKC, lower case, punctuation removed (apostrophes vanish: "I'm" = "im", other marks become
    spaces), whitespace collapsed. ``None`` and ``""`` users hash alike.
    """
    payload = f"{user_id or ''}\x1f{_normalise(text)}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


#: Single-valued attributes: a different value for the same subject is a contradiction (seed 002 §2.2 "保留最新").
_FUNCTIONAL = (
    ("lives_in", re.compile(r"\b(?:live|lives|living|reside|resides|based|moved) (?:in|to|at|near) (?P<o>.+)", re.I)),
    ("name", re.compile(r"\bname(?: is|'s) (?P<o>.+)", re.I)),
    ("age", re.compile(r"\b(?P<o>\d{1,3}) (?:years? old|yo)\b", re.I)),
    ("from", re.compile(r"\b(?:am|is|'m|are) (?:originally )?from (?P<o>.+)|\bcomes? from (?P<o2>.+)", re.I)),
    ("works_as", re.compile(r"\bworks? as (?P<o>.+)|\b(?:am|is|'m) employed as (?P<o2>.+)", re.I)),
    ("works_at", re.compile(r"\bworks? (?:at|for) (?P<o>.+)", re.I)),
    ("favorite", re.compile(r"\bfavou?rite (?P<k>[\w' -]+?) (?:is|are|was) (?P<o>.+)", re.I)),
    ("marital", re.compile(
        r"\b(?:am|is|'m) (?:now |currently |happily )?(?P<o>single|married|divorced|engaged|widowed)\b", re.I
    )),
)


def _claims(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    clean = _clean(text)
    for key, pat in _FUNCTIONAL:
        m = pat.search(clean)
        if m:
            g = m.groupdict()
            obj = g.get("o") or g.get("o2") or ""
            k = f"{key}:{g['k'].lower().strip()}" if g.get("k") else key
            out[k] = " ".join(_content(obj.rstrip(". ")))
    return out


def _polarity(words: list[str]) -> bool:
    """True for a negative statement: an odd number of negators, or a dislike verb."""
    neg = sum(1 for w in words if w in _NEGATORS)
    return (neg % 2 == 1) ^ any(w in _NEG_PREF for w in words)


def _core(words: list[str], drop: Collection[str]) -> list[str]:
    """Content tokens without negators, preference verbs and the subject's name (what the statement is about)."""
    return [_stem(w) for w in words if w not in _STOP and w not in _NEGATORS and w not in _NEG_PREF
            and w not in _POS_PREF and w not in drop and (len(w) > 1 or w.isdigit())]


def _shares_subject(a: set[str], b: set[str]) -> bool:
    """At least two content words in common and they make up >= 40 % of the shorter statement."""
    shared = len(a & b)
    return shared >= 2 and shared / max(1, min(len(a), len(b))) >= 0.4


def decide_merge(candidate: Candidate, existing: list[ExistingItem]) -> MergeDecision:
    """Seed 002 §4.1 ``_merge_or_update`` without an LLM: add | merge | replace | keep_both | ignore.

    Only items of the candidate's user are considered (seed 001: dedupe is scoped by ``user_id``). In order:

    1. same ``dedupe_hash`` -> ``ignore`` (already stored);
    2. contradiction -> ``replace`` every contradicted item (seed 002 §2.2 "冲突的记忆 → 保留最新"): a single-valued
       attribute with another value ("I live in Boston" vs "I live in Denver"), the same statement with the opposite
       polarity ("likes" vs "doesn't like", "love" vs "hate"), or the same statement with other numbers;
    3. content-token Jaccard (stemmed, names, negators and preference verbs removed) >= ``DUPLICATE_SIMILARITY``, or
       the candidate says nothing the item does not -> ``ignore``;
    4. the item says nothing the candidate does not, or Jaccard >= ``MERGE_SIMILARITY`` -> ``merge`` into it;
    5. Jaccard >= ``RELATED_SIMILARITY``, or two shared content words making up >= 40 % of the shorter statement
       ("adopted a dog named Rex" / "walks Rex at the dog park") -> ``keep_both`` (related, both worth keeping);
    6. otherwise ``add``.
    """
    cand_hash = dedupe_hash(candidate.user_id, candidate.text)
    mine = [e for e in existing if (e.user_id or None) == (candidate.user_id or None)]
    if not mine:
        return MergeDecision("add", [], "no existing memory for this user")
    for e in mine:
        if dedupe_hash(e.user_id, e.text) == cand_hash:
            return MergeDecision("ignore", [e.memory_id], f"duplicate of {e.memory_id}")

    name_words = {w.lower() for w in (candidate.user_id or "").split()} | {"user"}
    subj = candidate.data.get("subject") if isinstance(candidate.data, dict) else None
    if isinstance(subj, str):
        name_words |= {w.lower() for w in subj.split()}
    c_words = _words(candidate.text)
    c_core = _core(c_words, name_words)
    c_neg = _polarity(c_words)
    c_claims = _claims(candidate.text)
    c_nums = {w for w in c_core if w.isdigit()}

    contradicted: list[str] = []
    reasons: list[str] = []
    sims: list[tuple[float, ExistingItem, list[str]]] = []
    for e in mine:
        e_words = _words(e.text)
        e_core = _core(e_words, name_words)
        sim = _jaccard(c_core, e_core)
        sims.append((sim, e, e_core))
        e_claims = _claims(e.text)
        clash = [k for k in c_claims.keys() & e_claims.keys()
                 if c_claims[k] and e_claims[k] and _jaccard(c_claims[k].split(), e_claims[k].split()) < 0.5]
        if clash:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: {clash[0]} changed")
            continue
        if sim >= 0.75 and c_neg != _polarity(e_words):
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: opposite polarity")
            continue
        e_nums = {w for w in e_core if w.isdigit()}
        rest_sim = _jaccard([w for w in c_core if not w.isdigit()], [w for w in e_core if not w.isdigit()])
        if c_nums and e_nums and c_nums != e_nums and rest_sim >= 0.75:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: numbers changed")
    if contradicted:
        return MergeDecision("replace", contradicted, "contradicts " + "; ".join(reasons))

    sims.sort(key=lambda s: (-s[0], s[1].memory_id))
    best_sim, best, best_core = sims[0]
    c_set, b_set = set(c_core), set(best_core)
    if c_set and (best_sim >= DUPLICATE_SIMILARITY or c_set <= b_set):
        reason = f"already covered by {best.memory_id} (similarity {best_sim:.2f})"
        return MergeDecision("ignore", [best.memory_id], reason)
    if b_set and (b_set < c_set or best_sim >= MERGE_SIMILARITY):
        return MergeDecision("merge", [best.memory_id], f"refines {best.memory_id} (similarity {best_sim:.2f})")
    related = [e.memory_id for sim, e, core in sims if sim >= RELATED_SIMILARITY or _shares_subject(c_set, set(core))]
    if related:
        return MergeDecision("keep_both", related, f"related to {', '.join(related)} (similarity {best_sim:.2f})")
    return MergeDecision("add", [], f"new (best similarity {best_sim:.2f})")


def near_duplicate(a: str, b: str, user_id: str | None = None) -> tuple[bool, float]:
    """Seed 004 §7 "语义去重合并" without a model: are two memory texts of one user the same statement?

    ``(True, similarity)`` when they share a ``dedupe_hash``, or when their content tokens (stemmed; the user's
    name, negators and preference verbs removed, as in ``decide_merge``) have Jaccard >= ``DUPLICATE_SIMILARITY``
    with the same polarity, no single-valued attribute that differs and the same numbers. A pair that contradicts
    ("likes" / "doesn't like", Boston / Denver) is never a duplicate: that is ``replace``, decided at extraction.
    """
    if dedupe_hash(user_id, a) == dedupe_hash(user_id, b):
        return True, 1.0
    names = {w.lower() for w in (user_id or "").split()} | {"user"}
    wa, wb = _words(a), _words(b)
    ca, cb = _core(wa, names), _core(wb, names)
    sim = _jaccard(ca, cb)
    if sim < DUPLICATE_SIMILARITY or _polarity(wa) != _polarity(wb):
        return False, sim
    xa, xb = _claims(a), _claims(b)
    if any(xa[k] != xb[k] for k in xa.keys() & xb.keys()):
        return False, sim
    if {w for w in ca if w.isdigit()} != {w for w in cb if w.isdigit()}:
        return False, sim
    return True, sim
