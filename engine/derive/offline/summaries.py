"""Extractive rolling summaries (seed 000 §3.1 "摘要递归压缩").

``summarize`` picks informative sentences of the new turns (TF-IDF centroid relevance with a redundancy penalty),
renders them attributed and dated, one line per run of one speaker on one day, and merges them into the previous
summary; when previous + new exceed ``max_tokens`` the previous one is compressed to about 1/3 and the whole again
if still over. Token counts come from the caller's ``count_tokens`` (default: an estimate, seed 000 §6).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection

import msgspec

from memengine.engine.derive.offline.extraction import clauses, match_clause
from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.text import (
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

#: Share of the new turns' own length that their part of a summary may take, and its floor in tokens.
SUMMARY_RATIO = 0.35
SUMMARY_MIN_TOKENS = 48


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
        for sentence in sentences(turn.text):
            sent = clean_text(sentence)
            sent, _ = resolve_dates(sent, turn.occurred_at)
            first = turn.role == "user" and any(
                match_clause(c, f, sent.endswith("?")) is not None for c, f in clauses(sent)
            )
            units.append(_Unit(len(units), day, name_of(turn), sent, first))
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
        for sentence in sentences(body):
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
    toks = [content_words(u.text, drop) for u in units]
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
    toks = [set(content_words(u.text, drop)) for u in units]
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
            redundancy[i] = max(redundancy[i], jaccard(toks[i], toks[best]))
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
    count = count_tokens or estimate_tokens
    if max_tokens <= 0:
        return ""
    previous = (previous or "").strip()
    units = _units_from_turns(by_seq(turns))
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
