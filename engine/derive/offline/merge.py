"""Dedupe and merge decisions for memory candidates (seed 001 ``dedupe_hash``, seed 002 §4.1 ``_merge_or_update``).

``dedupe_hash`` is the user-scoped hash of the normalised text; ``decide_merge`` compares a candidate with the user's
active items on stemmed content tokens (Jaccard thresholds below) and single-valued attributes, and returns a
``MergeVerdict`` (add / merge / replace / keep_both / ignore); a contradiction replaces (seed 002 §2.2 "冲突的记忆 →
保留最新"). ``near_duplicate`` is the same test for consolidation (seed 004 §7 "语义去重合并").
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection

from memengine.engine.derive.offline.structures import Candidate, ExistingItem, MergeVerdict
from memengine.engine.derive.offline.text import (
    NEG_PREF_VERBS,
    NEGATORS,
    POS_PREF_VERBS,
    QUOTES,
    STOPWORDS,
    clean_text,
    content_words,
    jaccard,
    split_words,
    stem,
)

#: Merge thresholds on content-token Jaccard similarity (decide_merge).
DUPLICATE_SIMILARITY = 0.85
MERGE_SIMILARITY = 0.6
RELATED_SIMILARITY = 0.3


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.translate(QUOTES))
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
    # one car at a time: "drives a Golf" after "drives a Passat" is a change (issue #18 item 5 "later changes")
    ("drives", re.compile(r"\bdrives? (?P<o>(?:an?|the|their) .+)", re.I)),
    ("favorite", re.compile(r"\bfavou?rite (?P<k>[\w' -]+?) (?:is|are|was) (?P<o>.+)", re.I)),
    ("marital", re.compile(
        r"\b(?:am|is|'m) (?:now |currently |happily )?(?P<o>single|married|divorced|engaged|widowed)\b", re.I
    )),
)


def _claims(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    clean = clean_text(text)
    for key, pat in _FUNCTIONAL:
        m = pat.search(clean)
        if m:
            g = m.groupdict()
            obj = g.get("o") or g.get("o2") or ""
            k = f"{key}:{g['k'].lower().strip()}" if g.get("k") else key
            out[k] = " ".join(content_words(obj.rstrip(". ")))
    return out


def _polarity(words: list[str]) -> bool:
    """True for a negative statement: an odd number of negators, or a dislike verb."""
    neg = sum(1 for w in words if w in NEGATORS)
    return (neg % 2 == 1) ^ any(w in NEG_PREF_VERBS for w in words)


def _core(words: list[str], drop: Collection[str]) -> list[str]:
    """Content tokens without negators, preference verbs and the subject's name (what the statement is about)."""
    return [stem(w) for w in words if w not in STOPWORDS and w not in NEGATORS and w not in NEG_PREF_VERBS
            and w not in POS_PREF_VERBS and w not in drop and (len(w) > 1 or w.isdigit())]


def _shares_subject(a: set[str], b: set[str]) -> bool:
    """At least two content words in common and they make up >= 40 % of the shorter statement."""
    shared = len(a & b)
    return shared >= 2 and shared / max(1, min(len(a), len(b))) >= 0.4


def decide_merge(candidate: Candidate, existing: list[ExistingItem]) -> MergeVerdict:
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
        return MergeVerdict("add", [], "no existing memory for this user")
    for e in mine:
        if dedupe_hash(e.user_id, e.text) == cand_hash:
            return MergeVerdict("ignore", [e.memory_id], f"duplicate of {e.memory_id}")

    name_words = {w.lower() for w in (candidate.user_id or "").split()} | {"user"}
    subj = candidate.data.get("subject") if isinstance(candidate.data, dict) else None
    if isinstance(subj, str):
        name_words |= {w.lower() for w in subj.split()}
    c_words = split_words(candidate.text)
    c_core = _core(c_words, name_words)
    c_neg = _polarity(c_words)
    c_claims = _claims(candidate.text)
    c_nums = {w for w in c_core if w.isdigit()}

    contradicted: list[str] = []
    reasons: list[str] = []
    sims: list[tuple[float, ExistingItem, list[str]]] = []
    for e in mine:
        e_words = split_words(e.text)
        e_core = _core(e_words, name_words)
        sim = jaccard(c_core, e_core)
        sims.append((sim, e, e_core))
        e_claims = _claims(e.text)
        clash = [k for k in c_claims.keys() & e_claims.keys()
                 if c_claims[k] and e_claims[k] and jaccard(c_claims[k].split(), e_claims[k].split()) < 0.5]
        if clash:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: {clash[0]} changed")
            continue
        if sim >= 0.75 and c_neg != _polarity(e_words):
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: opposite polarity")
            continue
        e_nums = {w for w in e_core if w.isdigit()}
        rest_sim = jaccard([w for w in c_core if not w.isdigit()], [w for w in e_core if not w.isdigit()])
        if c_nums and e_nums and c_nums != e_nums and rest_sim >= 0.75:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: numbers changed")
    if contradicted:
        return MergeVerdict("replace", contradicted, "contradicts " + "; ".join(reasons))

    sims.sort(key=lambda s: (-s[0], s[1].memory_id))
    best_sim, best, best_core = sims[0]
    c_set, b_set = set(c_core), set(best_core)
    if c_set and (best_sim >= DUPLICATE_SIMILARITY or c_set <= b_set):
        reason = f"already covered by {best.memory_id} (similarity {best_sim:.2f})"
        return MergeVerdict("ignore", [best.memory_id], reason)
    if b_set and (b_set < c_set or best_sim >= MERGE_SIMILARITY):
        return MergeVerdict("merge", [best.memory_id], f"refines {best.memory_id} (similarity {best_sim:.2f})")
    related = [e.memory_id for sim, e, core in sims if sim >= RELATED_SIMILARITY or _shares_subject(c_set, set(core))]
    if related:
        return MergeVerdict("keep_both", related, f"related to {', '.join(related)} (similarity {best_sim:.2f})")
    return MergeVerdict("add", [], f"new (best similarity {best_sim:.2f})")


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
    wa, wb = split_words(a), split_words(b)
    ca, cb = _core(wa, names), _core(wb, names)
    sim = jaccard(ca, cb)
    if sim < DUPLICATE_SIMILARITY or _polarity(wa) != _polarity(wb):
        return False, sim
    xa, xb = _claims(a), _claims(b)
    if any(xa[k] != xb[k] for k in xa.keys() & xb.keys()):
        return False, sim
    if {w for w in ca if w.isdigit()} != {w for w in cb if w.isdigit()}:
        return False, sim
    return True, sim
