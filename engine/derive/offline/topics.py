"""Keyphrase topics of a stretch of conversation (seed 000 §1.2 ``memory_topics``, §4.4 "[Recallable Topics]").

YAKE (unsupervised, single-document; its stop-word lists ship inside the wheel, read once per process) plus a list of
chat words that are never topics and the names people are addressed by.
"""

from __future__ import annotations

import functools
import re

from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.text import MAX_KEYWORD_CHARS, by_seq, clean_text, name_of, stem

#: Chat words that are frequent but never a topic; added to YAKE's English list.
TOPIC_STOPWORDS = frozenset(
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
    ordered = [t for t in by_seq(turns) if t.role in ("user", "assistant") and t.text.strip()]
    if not ordered:
        return []
    names = {w.lower() for t in ordered for w in (name_of(t).split() + (t.user_id or "").split())}
    names |= {(m[1] or m[2]).lower() for t in ordered for m in _VOCATIVE.finditer(clean_text(t.text))}
    stop = set(_yake_stopwords() | TOPIC_STOPWORDS | names)
    text = "\n".join(clean_text(t.text) for t in ordered)
    extractor = yake.KeywordExtractor(lan="en", n=2, dedup_lim=0.8, top=max(20, 4 * k), stopwords=stop)
    ranked = sorted(extractor.extract_keywords(text), key=lambda kv: (float(kv[1]), kv[0].lower()))
    chosen: list[str] = []
    keys: list[tuple[str, ...]] = []
    for phrase, _score in ranked:
        words = [w for w in re.findall(r"[\w'-]+", phrase.lower())]
        if not words or any(w in stop or w.isdigit() or not 3 <= len(w) <= MAX_KEYWORD_CHARS for w in words):
            continue
        key = tuple(stem(w) for w in words)
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
