"""Text helpers shared by the offline derivers: normalisation, sentence and word splitting, a light stemmer,
Jaccard similarity, token estimates, relative-date resolution and speaker names.

Pure functions of their arguments (the "now" of a relative date is the turn's own time, never the clock). Token
counts are estimates (seed 000 §6); exact counts come from the caller's ``count_tokens``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable
from datetime import date, datetime, timedelta

from memengine.engine.derive.offline.structures import Turn

QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})

#: Function words ignored when comparing or scoring text (small on purpose; YAKE brings its own list for topics).
STOPWORDS = frozenset(
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
NEGATORS = frozenset(
    "not no never don't doesn't didn't isn't aren't wasn't weren't can't cannot won't wouldn't haven't hasn't "
    "hadn't shouldn't dont doesnt didnt isnt cant wont nothing nobody none".split()
)
NEG_PREF_VERBS = frozenset({"hate", "hates", "dislike", "dislikes", "detest", "detests", "loathe", "loathes"})
POS_PREF_VERBS = frozenset(
    {"like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "adores", "prefer", "prefers"})
MONTHS = (
    "January February March April May June July August September October November December".split()
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3,
}
#: The longest word that can be a tag or a topic. Longer runs of letters are not keywords (a pasted hash, a URL-safe
#: token, a sentence without spaces); a tag or topic is a ``ShortText`` (1024 characters) of a derived event, and a
#: topic a B-tree key of ``memory_topics`` (2704 bytes): a 3000-letter word in one turn made every memory derived
#: from it fail the derived fold (issue #26 item 3: accepted, then lost).
MAX_KEYWORD_CHARS = 64
#: a question tacked on after a statement ("My commute is 40 minutes each way, what podcast should I try"): not part
#: of what the statement says, cut from its object
TRAILING_QUESTION = re.compile(
    r"\s*[,;]\s*(?:so\s+|and\s+|but\s+|anyway\s+)?(?:what|how|which|where|who|why|is there|are there|"
    r"any (?:tips|ideas|suggestions|recommendations)|can you|could you|would you|should I|do you)\b.*$", re.I)

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f]+(?:'[A-Za-z]+)?|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Sr|Jr|vs|etc|e\.g|i\.e|approx|No)\.)$", re.I)


def clean_text(text: str) -> str:
    """NFKC, ASCII quotes and dashes, collapsed whitespace."""
    text = unicodedata.normalize("NFKC", text).translate(QUOTES)
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    """Split text into sentences (English and CJK end marks, newlines), keeping common abbreviations together."""
    out: list[str] = []
    for para in re.split(r"\n+", unicodedata.normalize("NFKC", text).translate(QUOTES)):
        para = re.sub(r"\s+", " ", para).strip()
        if not para:
            continue
        # NFKC made a full-width ！？ an ASCII !?: in Chinese no space follows it, so a CJK character after it ends
        # the sentence too (issue #29 item 2: "你好!我叫李娜..." is two sentences)
        parts = re.split(r"(?<=[.!?\u2026])[\"')\]]*\s+(?=\S)|(?<=[\u3002\uff01\uff1f])|(?<=[!?])(?=[\u3400-\u9fff])",
                         para)
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


#: a run of pictographs (emoji, dingbats, flags, with their skin tones, joiners and variation selectors)
_PICTOGRAPHS = re.compile(r"\s*[\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]"
                          r"[\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff\ufe0f\u200d]*\s+")
#: the fewest words on each side of a pictograph that ends a sentence ("I ❤️ my bike" is one: the heart is its verb)
_MIN_SIDE_WORDS = 2


def pictographs_apart(sentence: str) -> list[str]:
    """``sentence`` cut where a run of pictographs stands between two runs of words, the pictographs dropped and
    the part before closed with a full stop: people end a statement with an emoji where a full stop would stand
    ("my credit score is up to 720 now 🎉 time to refinance?" is a statement, then a question; issue #29, heldout
    s17 / s18 dev). Each side needs ``_MIN_SIDE_WORDS`` words (a pictograph for a word, "I ❤️ my bike", cuts
    nothing); one at either end of the sentence cuts nothing. Pure."""
    out: list[str] = []
    rest = sentence.strip()
    while (m := next((m for m in _PICTOGRAPHS.finditer(rest) if len(rest[:m.start()].split()) >= _MIN_SIDE_WORDS
                      and len(rest[m.end():].split()) >= _MIN_SIDE_WORDS), None)) is not None:
        left = rest[:m.start()].rstrip()
        out.append(left if left.endswith((".", "!", "?", "\u2026")) else left + ".")
        rest = rest[m.end():].strip()
    return [*out, rest] if out else [sentence]


def stem(word: str) -> str:
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


def split_words(text: str) -> list[str]:
    """Lower-cased word tokens; CJK runs become character bigrams so similarity works without spaces."""
    out: list[str] = []
    for tok in _WORD.findall(text.translate(QUOTES)):
        if CJK.match(tok):
            out.extend(tok[i : i + 2] for i in range(max(1, len(tok) - 1)))
        else:
            out.append(tok.lower())
    return out


def content_words(text: str, drop: Collection[str] = ()) -> list[str]:
    """Stemmed content tokens (no function words, no tokens in ``drop``)."""
    return [stem(w) for w in split_words(text) if w not in STOPWORDS and w not in drop and (len(w) > 1 or w.isdigit())]


def jaccard(a: Collection[str], b: Collection[str]) -> float:
    """|A ∩ B| / |A ∪ B| of the two token sets, 0..1; two empty sets are identical (1.0)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def estimate_tokens(text: str) -> int:
    """About 4 characters a token (seed 000 §6: counts are estimates); the default when no tokenizer is given."""
    return len(text) // 4


def _fmt_date(d: date) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return date(y, m + 1, 1)


_NUM = r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few|a|an)"
REL_DATE = re.compile(
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


def resolve_dates(text: str, when: datetime) -> tuple[str, list[str]]:
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
        return f"in {MONTHS[d.month - 1]} {d.year}"

    def year(y: int) -> str:
        if not date.min.year <= y <= date.max.year:
            raise OverflowError(f"year {y} out of range")
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
        wd = next(i for i, name in enumerate(WEEKDAYS) if name.startswith(what[:3]))
        if sign < 0:
            d = anchor - timedelta(days=(anchor.weekday() - wd) % 7 or 7)
        else:  # "next Friday", "this Friday": the coming one
            d = anchor + timedelta(days=(wd - anchor.weekday()) % 7 or 7)
        return day(d, f"on {WEEKDAYS[wd].capitalize()}")

    def repl(m: re.Match[str]) -> str:
        # A date beyond what ``date`` holds ("100000000 days ago", "99999 months ago", a 5,000-digit count) keeps
        # the words as said, unresolved: raising here stopped extraction for every tenant (issue #17 defect 3).
        # Each branch computes its date before recording it, so nothing is half-recorded in ``found``.
        try:
            return resolve(m)
        except (OverflowError, ValueError):
            return m.group(0)

    def resolve(m: re.Match[str]) -> str:
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
            wd = WEEKDAYS.index(target)
            return day(anchor + timedelta(days=(wd - anchor.weekday()) % 7), f"{m['by']} {WEEKDAYS[wd].capitalize()}")
        if m["unit"]:
            n = int(m["n"]) if m["n"].isdigit() else NUMBER_WORDS.get(m["n"].lower(), 1)
            out = ago(n, m["unit"].lower())
            if m["approx"]:
                out = re.sub(r"^(?:on|in|around) ", "around ", out)
            return out
        what = m["what"].lower()
        out = relative(m["dir"].lower(), what)
        # "last Tues." loses its abbreviation point; "last week." keeps the full stop that ends the sentence
        full_word = what in WEEKDAYS or what in ("week", "weekend", "month", "year")
        return out + "." if m.group(0).endswith(".") and full_word else out

    return REL_DATE.sub(repl, text), found


def name_of(turn: Turn) -> str:
    """Who spoke: the user's id when it reads like a display name ("Caroline"), else the role ("User", "Assistant")."""
    if turn.role == "user":
        uid = (turn.user_id or "").strip()
        if re.fullmatch(r"[A-Z][A-Za-z'.-]*(?: [A-Z][A-Za-z'.-]*){0,3}", uid):
            return uid
        return "User"
    return turn.role.capitalize() if turn.role else "Unknown"


def by_seq(turns: Iterable[Turn]) -> list[Turn]:
    """``turns`` in log order (``seq``, then ``event_id``), whatever order they were given in."""
    return sorted(turns, key=lambda t: (t.seq, t.event_id))


def first_match(patterns: Iterable[re.Pattern[str]], text: str) -> str | None:
    """The words the first of ``patterns`` that matches ``text`` found, stripped, at most 120 characters (what a
    quarantine reason quotes); ``None`` when none matches. The gate's screens read a text against lists of shapes."""
    for p in patterns:
        m = p.search(text)
        if m:
            return m.group(0).strip()[:120]
    return None
