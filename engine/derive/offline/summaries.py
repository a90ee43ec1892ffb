"""Extractive rolling summaries (seed 000 §3.1 "摘要递归压缩").

``summarize`` is an extractive summary of the whole thread (issue #29 item 2): the sentences of the previous summary
(themselves chosen from every earlier batch) and of the new turns compete on equal terms for the budget; each is
scored by TF-IDF centroid relevance plus cues (first-person facts, numbers and dates, named entities; fillers and
questions down), and a greedy MMR picks salient sentences that are diverse in words (Jaccard redundancy) and spread
over the days (sessions) of the thread. Lines are attributed and dated, one per run of one speaker on one day, in
thread order. Chinese: sentences end at 。！？ and words are rjieba's segmentation (``_terms``), so TF-IDF and the
redundancy see words, not a whole sentence as one token. Token counts come from the caller's ``count_tokens``
(default: an estimate, seed 000 §6). Pure and deterministic (no clock, no randomness, ties broken by position), so
the ``SummaryUpdated`` events it produces rebuild exactly.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection
from datetime import date

import msgspec

from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.text import (
    CJK,
    STOPWORDS,
    by_seq,
    clean_text,
    content_words,
    estimate_tokens,
    jaccard,
    name_of,
    resolve_dates,
    sentences,
)
from memengine.engine.derive.offline.topics import zh_tags

#: Share of the new turns' own length that their part of a summary may take, and its floor in tokens.
SUMMARY_RATIO = 0.35
SUMMARY_MIN_TOKENS = 48
#: MMR weights: redundancy (max Jaccard with a chosen sentence) and, per sentence already chosen from the same day,
#: a spread penalty so that a summary covers the sessions of the thread rather than the latest one.
REDUNDANCY_WEIGHT = 0.5
SAME_DAY_WEIGHT = 0.12
#: Coverage of the thread's time span: a candidate's penalty grows with its closeness in time to the nearest sentence
#: already chosen (1 on the same day, 0 a whole span away), so that among sentences of similar worth the summary
#: reaches the start, the middle and the end of the thread instead of the latest (or the earliest) run of sessions.
SPREAD_WEIGHT = 0.3


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
_FIRST_PERSON = re.compile(r"\bI\b|\b(?:my|we|our|myself|ourselves)\b", re.I)
_LINE = re.compile(r"^(?:\[(?P<day>\d{4}-\d{2}-\d{2})\] )?(?:(?P<speaker>[^:\n]{1,40}): )?(?P<text>.+)$")


_ZH_FILLER = re.compile(r"^(?:好的|好吧|谢谢|多谢|哈哈|嗯|哦|噢|哇|你好|您好|没问题|不客气|"
                        r"明白了?|知道了|太好了|真棒|加油|再见)")


def _terms(text: str, drop: Collection[str] = ()) -> list[str]:
    """Content terms of a sentence: stemmed English content words, and for CJK runs the words of rjieba's
    segmentation (two or more characters, no function words; ``projections.segment``), not character bigrams."""
    if not CJK.search(text):
        return content_words(text, drop)
    from memengine.projections.segment import CJK_RUN, STOP, words

    latin = content_words(CJK_RUN.sub(" ", text), drop)
    return latin + [w for run in CJK_RUN.findall(text) for w in words(run) if len(w) > 1 and w not in STOP]


def _length(text: str) -> int:
    """Words in a sentence: Latin words plus CJK characters / 2 (about one Chinese word per two characters)."""
    return len(re.findall(r"[A-Za-z0-9']+", text)) + len(CJK.findall(text)) // 2


def _ordinal(day: str) -> int | None:
    """Day number of an ISO date ("2023-05-08"), None when the unit has no date."""
    try:
        return date.fromisoformat(day).toordinal() if day else None
    except ValueError:
        return None


def _first_person(sent: str) -> bool:
    """A sentence about the speaker or theirs: a first-person pronoun anywhere ("I was diagnosed ...", "My sister
    moved ...", "We bought ..."; Chinese 我/我们). Deliberately wider than the self-statement matcher, whose clause
    patterns are for typed memories: a summary's cue must not depend on whether a phrasing has a memory pattern
    (passive, habitual and family sentences scored as small talk and lost their place)."""
    if CJK.search(sent):
        return "我" in sent
    return _FIRST_PERSON.search(sent) is not None


def _units_from_turns(turns: list[Turn]) -> list[_Unit]:
    units: list[_Unit] = []
    for turn in turns:
        if turn.role not in ("user", "assistant") or not turn.text.strip():
            continue
        day = turn.occurred_at.date().isoformat()
        for sentence in sentences(turn.text):
            sent = clean_text(sentence)
            sent, _ = resolve_dates(sent, turn.occurred_at)
            units.append(_Unit(len(units), day, name_of(turn), sent, turn.role == "user" and _first_person(sent)))
    return units


def turn_sentences(turn: Turn) -> list[str]:
    """The sentences of ``turn`` as a summary line quotes them (``summarize`` picks whole sentences: cleaned, with
    relative dates resolved against the turn's time), in order; none for a turn a summary never quotes (a tool's,
    an empty one). Lets a reader tell which turns a summary shows (``engine.ops.eval_context``)."""
    return [u.text for u in _units_from_turns([turn])]


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
        # the same cue as for the turns the line was chosen from: a summary's sentence scored lower on its way back
        # than when it was picked would lose its place to any later session's sentence once the summary is full
        user = speaker not in ("Assistant", "System", "Tool", "Unknown")
        for sentence in sentences(body):
            units.append(_Unit(start + len(units), m["day"] or "", speaker, sentence, user and _first_person(sentence)))
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
    toks = [_terms(u.text, drop) for u in units]
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
                    if w not in speakers and w.lower() not in STOPWORDS and w != "I"]
        if CJK.search(u.text):  # Chinese names of people, places, organisations (rjieba's nr/ns/nt/nz tags)
            entities += [w for w, p in zh_tags(u.text) if p in ("nr", "ns", "nt", "nz") and w not in speakers]
        score += min(0.2, 0.1 * len(entities))
        n_words = _length(u.text)
        if n_words < 5:
            score *= 0.3
        elif n_words > 60:
            score *= 0.7
        if u.text.endswith("?"):
            score *= 0.4
        if _FILLER.match(u.text) or _ZH_FILLER.match(u.text):
            score *= 0.5
        out.append(score)
    return out


def _pleasantry(u: _Unit) -> bool:
    """A short reaction that says nothing about anyone ("Nice, glad to hear it!", "谢谢！"): never kept, even when the
    budget has room (a relative score floor let one through beside a batch of weak sentences). A short sentence that
    opens with such a word but speaks of the speaker ("Thanks, I moved to Oslo") is not one."""
    return bool(_FILLER.match(u.text) or _ZH_FILLER.match(u.text)) and not u.first_person and _length(u.text) < 6


def _select(units: list[_Unit], budget: int, count: Callable[[str], int]) -> str:
    """Greedy MMR selection of units under ``budget`` tokens of the rendered text; output in original order."""
    if budget <= 0 or not units:
        return ""
    speakers = {u.speaker for u in units if u.speaker}
    scores = _scores(units, speakers)
    floor = 0.15 * max(scores)  # never pad the budget with near-empty sentences ("Hey Mel!", "Thanks!")
    kept = [u for u, sc in zip(units, scores, strict=True)
            if (sc > floor and not _pleasantry(u)) or len(units) == 1]
    if count(_render_units(kept)) <= budget:  # all that says something fits
        return _render_units(kept)
    drop = {w.lower() for s in speakers for w in s.split()}
    toks = [set(_terms(u.text, drop)) for u in units]
    chosen: list[int] = []
    redundancy = [0.0] * len(units)
    closeness = [0.0] * len(units)
    per_day: Counter[str] = Counter()
    days = [_ordinal(u.day) for u in units]
    known = [d for d in days if d is not None]
    span = (max(known) - min(known)) if known else 0
    remaining = {i for i in range(len(units)) if scores[i] > floor}
    rendered = ""
    while remaining:
        best = min(remaining, key=lambda i: (-(scores[i] - REDUNDANCY_WEIGHT * redundancy[i]
                                               - SAME_DAY_WEIGHT * per_day[units[i].day]
                                               - SPREAD_WEIGHT * closeness[i]), i))
        remaining.discard(best)
        trial = _render_units([units[j] for j in [*chosen, best]])
        if count(trial) > budget:
            continue
        chosen.append(best)
        per_day[units[best].day] += 1
        rendered = trial
        db = days[best]
        for i in remaining:
            redundancy[i] = max(redundancy[i], jaccard(toks[i], toks[best]))
            di = days[i]
            if span and db is not None and di is not None:
                closeness[i] = max(closeness[i], 1.0 - abs(di - db) / span)
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


def summarize(
    turns: list[Turn],
    max_tokens: int,
    previous: str | None = None,
    *,
    count_tokens: Callable[[str], int] | None = None,
    ratio: float = SUMMARY_RATIO,
) -> str:
    """Extractive summary of the whole thread: ``previous`` (the summary so far) updated with ``turns`` (seed 000
    §3.1 "摘要递归压缩", issue #29 item 2).

    Sentences are scored (TF-IDF centroid relevance, favouring first-person facts, numbers and dates, named entities;
    fillers and questions scored down) and picked by MMR (redundancy in words, spread over days). While the previous
    summary plus the new batch's share fits ``max_tokens`` the summary grows (previous, then the new batch's pick);
    once full, the previous summary's sentences and the new turns' compete together for ``max_tokens``, so an
    earlier session's salient sentence keeps its place against a later session's small talk. Rendered attributed and
    dated, one line per run of one speaker on one day, in thread order: ``[2023-05-08] Caroline: I went to ...``.
    Relative dates are resolved against each turn's timestamp; Chinese sentences end at 。！？ and are scored over
    rjieba words. The new batch's share is ``ratio`` of the new turns' own length, at least ``SUMMARY_MIN_TOKENS`` (a
    batch that would fit verbatim is still summarised rather than copied); the result is never more than ``max_tokens``
    by ``count_tokens`` (default ``len(text) // 4``; seed 000 §6 treats counts as estimates). Deterministic.
    """
    count = count_tokens or estimate_tokens
    if max_tokens <= 0:
        return ""
    previous = (previous or "").strip()
    units = _units_from_turns(by_seq(turns))
    cap = max(SUMMARY_MIN_TOKENS, math.ceil(ratio * count(_render_units(units)))) if units else 0
    if not previous:
        return _select(units, min(max_tokens, cap), count)
    if count(previous) + cap <= max_tokens:  # room for the new batch's share: the summary grows
        new = _select(units, cap, count)
        return f"{previous}\n{new}" if new else previous
    # full: the whole thread's sentences compete for max_tokens, the previous summary's (already the best of every
    # earlier batch) and the new ones on equal terms, spread over the days (no old part cut to a fixed share)
    old = _units_from_summary(previous)
    pool = old + [msgspec.structs.replace(u, order=len(old) + u.order) for u in units]
    return _select(pool, max_tokens, count)
