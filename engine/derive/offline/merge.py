"""Dedupe and merge decisions for memory candidates (seed 001 ``dedupe_hash``, seed 002 §4.1 ``_merge_or_update``).

``dedupe_hash`` is the user-scoped hash of the normalised text; ``decide_merge`` compares a candidate with the user's
active items of a compatible type (``compatible``: semantic, procedural, episodic, task and error memories never merge
across those kinds) on stemmed content tokens (Jaccard thresholds below) and attribute slots (``attribute_slots``),
and returns a ``MergeVerdict`` (add / merge / replace / keep_both / ignore). ``replace`` is a supersede (issue #15
item 1, seed 002 §2.2 "冲突的记忆 → 保留最新", seed 003 lifecycle): the old item is closed (``invalid_at``,
``superseded_by``) and kept. ``richer_text`` picks the wording a merge keeps. ``near_duplicate`` is the same test for
consolidation (seed 004 §7 "语义去重合并").
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection

import msgspec

from memengine.engine.derive.offline import (
    conventions_en,
    fold,
    hanzi,
    homes_en,
    kept_words,
    parse_en,
    revision,
    same_slot,
    zh,
    zh_counts,
    zh_revision,
)
from memengine.engine.derive.offline.structures import Candidate, ExistingItem, MergeVerdict
from memengine.engine.derive.offline.text import (
    CJK,
    NEG_PREF_VERBS,
    NEGATORS,
    POS_PREF_VERBS,
    QUOTES,
    STOPWORDS,
    clean_text,
    content_words,
    jaccard,
    sentences,
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


#: Kinds of memory (seed 004 types; seed 001 "语义 / 情节 / 程序"): a candidate merges with, duplicates or supersedes
#: only an item of the same kind. So an EPISODIC "booked a trip with an aisle seat" never rewrites the PREFERENCE
#: "prefers aisle seats", and a RULE never swallows a FACT (issue #15: eight typed ``remember`` calls became one RULE).
TYPE_KINDS = {"PROFILE": "semantic", "PREFERENCE": "semantic", "FACT": "semantic", "EPISODIC": "episodic",
              "RULE": "procedural", "SKILL": "procedural", "PATTERN": "procedural", "TASK": "task", "ERROR": "error"}


def compatible(a: str, b: str) -> bool:
    """Whether memory types ``a`` and ``b`` (seed 004 names, any case) are of one kind (``TYPE_KINDS``); an unknown
    type is its own kind."""
    a, b = a.upper(), b.upper()
    return TYPE_KINDS.get(a, a) == TYPE_KINDS.get(b, b)


#: Types that state an attribute of the user (who they are, what they like, what they do and can do): a statement of
#: one may end or change one stated as another ("User plays tennis" is a SKILL, "Padel is User's thing now, gave up
#: tennis" a PREFERENCE: one hobby slot, whatever each statement was typed; issue #29 "hobby switch across SKILL").
ATTRIBUTE_TYPES = frozenset({"PROFILE", "PREFERENCE", "FACT", "SKILL"})


def supersedable(a: str, b: str) -> bool:
    """Whether an item of type ``b`` may be superseded (``replace``) by a candidate of type ``a``: same kind
    (``compatible``), or both state an attribute of the user (``ATTRIBUTE_TYPES``). Merges and duplicates stay
    within a kind: a SKILL is never rewritten into a FACT's wording."""
    return compatible(a, b) or a.upper() in ATTRIBUTE_TYPES and b.upper() in ATTRIBUTE_TYPES


#: "prefers <modifiers> <head>": the head noun names the slot, the modifiers are its value ("aisle seats" ->
#: ``prefers:seat`` = ``aisle``); the object ends at a preposition or clause ("... on long flights", "... over X").
_PREFERS = re.compile(r"\bprefer(?:s|red)? (?P<o>.+)", re.I)
_OBJECT_END = re.compile(r"\b(?:over|to|than|rather|instead|when|whenever|on|for|in|at|during|because|but|and|with|"
                         r"if|unless|as)\b|[,.;:!?(]", re.I)
#: words that date a statement, not its object ("window seats now", "these days")
_TIME_WORDS = frozenset({"now", "nowadays", "anymore", "currently", "today", "these", "days", "still", "always",
                         "usually", "actually", "really"})


def _subject(prefix: str, names: Collection[str]) -> str:
    """Who a claim is about: the content words before its predicate, less the user's own names ("" = the user).
    "User's sister lives in Porto" is about ``sister``, not the user."""
    # a time word before the predicate dates the claim ("User now based in Lisbon"), it is nobody's attribute
    return " ".join(w for w in content_words(prefix, drop=NEGATORS) if w not in names and w not in {"user", "i", "my"}
                    and w not in _TIME_WORDS)


def _claims(text: str, names: Collection[str] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    clean = clean_text(text)
    for key, pat in _FUNCTIONAL:
        m = pat.search(clean)
        if m:
            g = m.groupdict()
            obj = g.get("o") or g.get("o2") or ""
            k = f"{key}:{g['k'].lower().strip()}" if g.get("k") else key
            subj = _subject(clean[:m.start()], names)
            out[f"{subj}|{k}" if subj else k] = " ".join(w for w in content_words(obj.rstrip(". "))
                                                         if w not in _TIME_WORDS)
    m = _PREFERS.search(clean)
    if m:
        obj = _OBJECT_END.split(m.group("o"), maxsplit=1)[0]
        words = [w for w in content_words(obj) if w not in _TIME_WORDS]
        if len(words) >= 2:  # "prefers tea" names no slot: a second preference beside it is not a change
            subj = _subject(clean[:m.start()], names)
            k = f"prefers:{words[-1]}"
            out[f"{subj}|{k}" if subj else k] = " ".join(words[:-1])
    return out


def attribute_slots(text: str, user_id: str | None = None, subject: str | None = None) -> dict[str, str]:
    """Attribute slots a statement fills: ``{slot: value}`` (issue #15 item 1; seed 002 §2.2 "冲突的记忆 → 保留最新").

    A slot is subject + predicate of a single-valued attribute (``_FUNCTIONAL``: lives in, works at, works as, from,
    name, age, drives, favourite X, marital status) or a preference with a head noun ("prefers aisle seats" ->
    ``prefers:seat`` = ``aisle``); the subject is omitted when it is the user (their id, ``subject`` or "User" of
    the extraction rules in ``selfstatements``), so "Maya prefers aisle seats" and "User prefers window seats" of
    user ``maya`` fill the same slot. Values are stemmed content words. Two statements with one slot and values
    sharing < half their words are a change of value: the newer supersedes the older.
    """
    names = {stem(w.lower()) for w in (user_id or "").split()} | {"user"}
    if subject:
        names |= {stem(w.lower()) for w in subject.split()}
    english = {} if CJK.search(text) else {**homes_en.home_of(text), **parse_en.slots(text)}
    quote = _QUOTED.match(text.strip())
    if quote is not None and not CJK.search(text):
        # the user's words kept as said ("User said: \"Weighed in. 94kg!! 8 gone\""): a sentence of them may fill a
        # slot that the quote read as one does not (``verbatim_en`` quotes a short turn whole); earlier ones win
        for part in reversed(sentences(quote.group(1))):
            read = parse_en.slots(f"{quote.group(0)[:quote.start(1)]}{part}\"")
            english = {**{k: v for k, v in read.items() if k != "qty:say"}, **english}  # ("said" 7: no amount of)
    # (how many of a thing the user has is read across clauses: "又捡了两只小猫，五只了", ``zh_counts``)
    return {**_claims(text, names), **zh.slots(text), **(zh_counts.counts(text) if CJK.search(text) else {}), **english}


#: an item that keeps the user's words as said: ``<subject> said: "<words>"`` (``statements_en.quoted``)
_QUOTED = re.compile(r'^[\w\' -]{1,40} said: "(.+)"\.?$', re.S)


#: words that date or stress a statement without changing what it is about ("no longer likes sushi" is about sushi)
_NOT_CONTENT = frozenset({"now", "anymore", "longer", "currently", "actually", "nowadays"})


def _polarity(words: list[str]) -> bool:
    """True for a negative statement: an odd number of negators, or a dislike verb."""
    neg = sum(1 for w in words if w in NEGATORS)
    return (neg % 2 == 1) ^ any(w in NEG_PREF_VERBS for w in words)


def _core(words: list[str], drop: Collection[str]) -> list[str]:
    """Content tokens without negators, preference verbs and the subject's name (what the statement is about)."""
    return [stem(w) for w in words if w not in STOPWORDS and w not in NEGATORS and w not in NEG_PREF_VERBS
            and w not in POS_PREF_VERBS and w not in _NOT_CONTENT and w not in drop and (len(w) > 1 or w.isdigit())]


def _shares_subject(a: set[str], b: set[str]) -> bool:
    """At least two content words in common and they make up >= 40 % of the shorter statement."""
    shared = len(a & b)
    return shared >= 2 and shared / max(1, min(len(a), len(b))) >= 0.4


def decide_merge(candidate: Candidate, existing: list[ExistingItem]) -> MergeVerdict:
    """Seed 002 §4.1 ``_merge_or_update`` without an LLM: add | merge | replace | keep_both | ignore.

    Only items of the candidate's user are considered (seed 001: dedupe is scoped by ``user_id``), and steps 1-4 only
    among items of a compatible type (``compatible``): another kind of memory is at most "related", except that an
    end or a changed attribute slot (step 2) also closes an item of another attribute type (``supersedable``: a
    hobby typed SKILL changed by a statement typed PREFERENCE). In order:

    1. same ``dedupe_hash`` -> ``ignore`` (already stored);
    2. contradiction -> ``replace`` (supersede) every contradicted item (seed 002 §2.2 "冲突的记忆 → 保留最新"): an
       attribute slot (``attribute_slots``) with another value ("I live in Boston" vs "I moved to Denver", "prefers
       aisle seats" vs "prefers window seats"), the same statement with the opposite polarity ("likes" vs "doesn't
       like", "love" vs "hate"), the same statement with other numbers, or — no slot named — a newer statement that
       restates the item's attribute with another value as the current one (``revision.revises``: "I root for
       Tottenham nowadays" after "I follow Arsenal", "my new dentist is Dr Ruiz"; issue #29 "from what the new
       statement means"), or a newer RULE setting an aspect of the replies an older rule (or, for a name, a
       profile item) set otherwise (``conventions_en``: "switch back to English now" after "answer in Spanish");
    3. content-token Jaccard (stemmed, names, negators and preference verbs removed) >= ``DUPLICATE_SIMILARITY``, or
       the candidate says nothing the item does not -> ``ignore``;
    4. the item says nothing the candidate does not, or Jaccard >= ``MERGE_SIMILARITY`` -> ``merge`` into it;
    5. an item kept in the user's words (``kept_words``: "User said: ...", 用户说：“...”, said on an earlier day) on
       the topic of the candidate, no amount of another unit between them -> ``replace`` unsure: the older words
       kept beside the newer ones, dated (English ``fold``, Chinese ``zh_revision.combined``); else an English
       statement of how things are now on an item's topic -> the same fold (``fold.topic``);
    6. Jaccard >= ``RELATED_SIMILARITY``, or two shared content words making up >= 40 % of the shorter statement
       ("adopted a dog named Rex" / "walks Rex at the dog park") -> ``keep_both`` (related, both worth keeping);
    7. otherwise ``add``.
    """
    cand_hash = dedupe_hash(candidate.user_id, candidate.text)
    mine = [e for e in existing if (e.user_id or None) == (candidate.user_id or None)]
    if not mine:
        return MergeVerdict("add", [], "no existing memory for this user")
    peers = [e for e in mine if compatible(e.memory_type, candidate.memory_type)]
    # what a change may close: its peers and the items of other kinds that state an attribute (``supersedable``)
    closable = [e for e in mine if supersedable(candidate.memory_type, e.memory_type)]
    for e in peers:
        if dedupe_hash(e.user_id, e.text) == cand_hash:
            return MergeVerdict("ignore", [e.memory_id], f"duplicate of {e.memory_id}")

    name_words = {w.lower() for w in (candidate.user_id or "").split()} | {"user"}
    subj = candidate.data.get("subject") if isinstance(candidate.data, dict) else None
    if isinstance(subj, str):
        name_words |= {w.lower() for w in subj.split()}
    c_words = split_words(candidate.text)
    c_core = _core(c_words, name_words)
    c_neg = _polarity(c_words)
    c_claims = attribute_slots(candidate.text, candidate.user_id, subj if isinstance(subj, str) else None)
    c_nums = {w for w in c_core if w.isdigit()}

    contradicted: list[str] = []
    reasons: list[str] = []
    unsure: list[ExistingItem] = []  # superseded on a Chinese reading that may be wrong: their words are kept
    ends = candidate.data.get("ends") if isinstance(candidate.data, dict) else None
    end_texts = [str(x) for x in ends] if isinstance(ends, list) else []
    for e in (closable if isinstance(ends, list) else []):
        said = fold.base(e.text)  # (not the newer words folded into it: they are not what the item states)
        if _polarity(split_words(said)) or re.search(r"\b(?:no longer|stopped|quit|gave up|left)\b", said, re.I):
            continue  # an item that itself says the thing ended is not contradicted by another end of it
        ended = _ended(said, end_texts, e.user_id, subj if isinstance(subj, str) else None)
        if ended:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: {ended} ended")
    if candidate.memory_type.upper() == "RULE" and not CJK.search(candidate.text):
        # a newer standing rule sets the aspect of the replies an older one set ("switch back to English now" after
        # "answer me in Spanish"; a naming rule, the name an older profile item gives): one convention at a time
        for e in mine:
            if e.memory_id not in contradicted and (why := conventions_en.changes(candidate.text, e.text,
                                                                                  e.memory_type)):
                contradicted.append(e.memory_id)
                reasons.append(f"{e.memory_id}: {why}")
    sims: list[tuple[float, ExistingItem, list[str]]] = []
    qty_keys: dict[str, set[str]] = {}  # the quantity slots of each closable item ("qty:rent")
    amounts: dict[str, set[str]] = {}  # ... those that hold a number ("qty:微克" = "50微克", not "qty:吃" = "每天")
    others: list[tuple[float, ExistingItem, list[str]]] = []  # other kinds: only ever "related"
    for e in mine:
        e_words = split_words(e.text)
        e_core = _core(e_words, name_words)
        sim = jaccard(c_core, e_core)
        if e not in closable:
            others.append((sim, e, e_core))
            continue
        # (a combined item states its newest words; the older ones after ``zh.EARLIER`` are past, no value to clash)
        e_claims = attribute_slots(zh.current_part(e.text), e.user_id, subj if isinstance(subj, str) else None)
        qty_keys[e.memory_id] = {k for k in e_claims if k.startswith("qty:")}
        amounts[e.memory_id] = _amounts(e_claims)
        clash = [k for k in c_claims.keys() & e_claims.keys()
                 if c_claims[k] and e_claims[k] and jaccard(c_claims[k].split(), e_claims[k].split()) < 0.5]
        if clash and e.memory_id not in contradicted:
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: {clash[0]} changed ({e_claims[clash[0]]} -> {c_claims[clash[0]]})")
        elif e.memory_id not in contradicted and not clash and not CJK.search(candidate.text + e.text) and (
                why := revision.revises(candidate.text, e.text, _said(candidate), frozenset(name_words))):
            # no named slot, but the newer statement restates what the item states with another value, as the
            # current one (``revision``: "I root for Tottenham nowadays" after "I follow Arsenal")
            contradicted.append(e.memory_id)
            reasons.append(f"{e.memory_id}: {why}")
        elif e.memory_id not in contradicted and not clash and sim < MERGE_SIMILARITY and \
                CJK.search(candidate.text) and CJK.search(e.text) and \
                (why := zh_revision.same_attribute(candidate.text, e.text)):
            # a Chinese statement about what the item is about, no slot naming it: supersede, keeping the item's
            # words after the newer dated ones (``zh_revision``), so nothing is lost if the reading was wrong
            contradicted.append(e.memory_id)
            unsure.append(e)
            reasons.append(f"{e.memory_id}: {why}, kept beside")
        if e not in peers:
            others.append((sim, e, e_core))
            continue
        sims.append((sim, e, e_core))
        if e.memory_id in contradicted:
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
        said_on = candidate.data.get("said_on") if isinstance(candidate.data, dict) else None
        text = zh_revision.combined(candidate.text, [e.text for e in unsure],
                                    said_on if isinstance(said_on, str) else None) if unsure else None
        # an unsure candidate is kept only folded into the item it is about (the enricher drops it otherwise): a
        # change found for it is that fold, the older words kept beside the user's newer ones (``fold``)
        loose = bool(candidate.data.get("unsure")) and not candidate.data.get("verbatim") and not unsure
        return MergeVerdict("replace", contradicted, "supersedes " + "; ".join(reasons), text=text, fold=loose)

    sims.sort(key=lambda s: (-s[0], s[1].memory_id))
    best_sim, best_core = (sims[0][0], sims[0][2]) if sims else (0.0, [])
    c_set, b_set = set(c_core), set(best_core)
    if sims and c_set and (best_sim >= DUPLICATE_SIMILARITY or c_set <= b_set):
        reason = f"already covered by {sims[0][1].memory_id} (similarity {best_sim:.2f})"
        return MergeVerdict("ignore", [sims[0][1].memory_id], reason)
    if sims and b_set and (b_set < c_set or best_sim >= MERGE_SIMILARITY):
        target = sims[0][1].memory_id
        return MergeVerdict("merge", [target], f"refines {target} (similarity {best_sim:.2f})")
    c_qty = {k for k in c_claims if k.startswith("qty:")}
    # an amount keyed otherwise by the quantity slots is another attribute, however near in meaning (rent / salary)
    foldable = [e for e in closable if not (c_qty and qty_keys.get(e.memory_id) and not c_qty & qty_keys[e.memory_id])]
    c_amounts = _amounts(c_claims)
    # two amounts of other units or things are two attributes, however alike the sentences ("优甲乐每天吃50微克",
    # "鱼油现在每天吃1000毫克了": the shared "every day" fills a slot of both)
    unlike = [e for e in foldable if not (c_amounts and amounts.get(e.memory_id) and
                                          not c_amounts & amounts[e.memory_id])]
    near_kept = kept_words.changed(candidate, unlike, frozenset(name_words))
    if changed := ([near_kept[0]], near_kept[1]) if near_kept else \
            same_slot.changed(candidate, closable, frozenset(name_words)):
        # an item kept in the user's words names no slot: a newer statement on its topic supersedes it unsure, the
        # older words kept beside the newer ones, dated (``kept_words``: "I'm like 800 on chess.com", "hit 1500");
        # so do the items of a single-valued attribute a newer statement gives another value of (``same_slot``)
        olds, why = changed
        ids = [e.memory_id for e in olds]
        if not CJK.search(candidate.text):
            return MergeVerdict("replace", ids, f"supersedes {', '.join(ids)}: {why}, kept in the user's words",
                                fold=True)
        said_on = candidate.data.get("said_on") if isinstance(candidate.data, dict) else None
        return MergeVerdict("replace", ids, f"supersedes {', '.join(ids)}: {why}, kept beside",
                            text=zh_revision.combined(candidate.text, [e.text for e in olds],
                                                      said_on if isinstance(said_on, str) else None))
    if not CJK.search(candidate.text) and (near := fold.topic(candidate, foldable, frozenset(name_words))):
        # no rule named the attribute and its values, but the newer statement says how things are now on the topic
        # of an older item: one item keeps both, the newer words dated (``fold``, issue #29 item 1)
        return MergeVerdict("replace", [near[0].memory_id], f"supersedes {near[0].memory_id}: {near[1]}, kept in "
                                                            "the user's words", fold=True)
    related = [e.memory_id for sim, e, core in sorted(sims + others, key=lambda s: (-s[0], s[1].memory_id))
               if sim >= RELATED_SIMILARITY or _shares_subject(c_set, set(core))]
    if related:
        return MergeVerdict("keep_both", related, f"related to {', '.join(related)} (similarity {best_sim:.2f})")
    return MergeVerdict("add", [], f"new (best similarity {best_sim:.2f})")


#: a number in a slot's value, in digits or Chinese numerals
_NUMBER = re.compile(r"\d|[一二两三四五六七八九十百千万半]")


def _amounts(claims: dict[str, str]) -> set[str]:
    """The quantity slots of ``claims`` (``attribute_slots``) whose value holds a number: an amount, not a
    frequency word."""
    return {k for k, v in claims.items() if k.startswith("qty:") and _NUMBER.search(v)}


def _said(candidate: Candidate) -> str | None:
    """The sentence a candidate was drawn from (``data["sentence"]`` of the rule tables), when it recorded one."""
    said = candidate.data.get("sentence") if isinstance(candidate.data, dict) else None
    return said if isinstance(said, str) else None


def _ended(text: str, ends: list[str], user_id: str | None, subject: str | None) -> str | None:
    """Which of ``ends`` (words a newer statement says ended: "阿里" of "从阿里离职", "smoking" of "quit smoking", or
    ``slot:<name>`` for an end without an object, "我辞职了") an item's ``text`` holds; ``None`` when none. Chinese
    words match as substrings, others on stems ("smoking" ends "smokes a pack a day")."""
    stems = {stem(w) for w in split_words(text)} | parse_en.lemmas(text)
    for end in ends:
        if end.startswith("slot:"):
            if end[5:] in attribute_slots(text, user_id, subject):
                return end
        elif CJK.search(end):
            # ends are read from simplified text (hanzi), the item may be 繁體; a combined item's older words are past
            if end in hanzi.simplified(zh.current_part(text)):
                return end
        elif (words := [w for w in split_words(end) if w not in STOPWORDS]) and all(
                stem(w) in stems or w in stems or any(len(w) >= 3 and w in s or len(stem(w)) >= 4 and
                                                      s.startswith(stem(w)) for s in stems) for w in words):
            return end
    return None


#: what a verdict may do to its targets: merge and ignore act on items of the candidate's kind only, replace on those
#: and on other attribute types (``supersedable``)
_ACTIONS = ("add", "merge", "replace", "keep_both", "ignore")


def checked_verdict(verdict: MergeVerdict, candidate: Candidate, existing: list[ExistingItem]) -> MergeVerdict:
    """A verdict from any deriver (a model's included) made safe to apply, else the offline ``decide_merge``.

    Kept when its action is one of ``add | merge | replace | keep_both | ignore``, every target is an active item of
    the candidate's user that the deriver was shown, ``merge`` / ``ignore`` name exactly one target and ``merge``,
    ``ignore`` only targets of a compatible type (``compatible``: an episodic memory never overwrites a semantic
    one, issue #15 item 1), ``replace`` only targets it may supersede (``supersedable``: also a SKILL by a FACT or
    the reverse, never a semantic item by an episode); ``add`` has no targets. Otherwise the offline rule decides,
    and its reason says the model's verdict was set aside.
    """
    mine = {e.memory_id: e for e in existing if (e.user_id or None) == (candidate.user_id or None)}
    targets = [mine.get(t) for t in verdict.target_ids]
    problem = None
    if verdict.action not in _ACTIONS:
        problem = f"unknown action {verdict.action!r}"
    elif any(t is None for t in targets):
        problem = "a target is not an active item of this user"
    elif verdict.action in ("merge", "ignore") and len(targets) != 1:
        problem = f"{verdict.action} needs exactly one target"
    elif verdict.action in ("replace", "keep_both") and not targets:
        problem = f"{verdict.action} needs a target"
    elif verdict.action == "add" and targets:
        problem = "add has no target"
    elif verdict.action in ("merge", "ignore") and not all(
            t is not None and compatible(t.memory_type, candidate.memory_type) for t in targets):
        problem = f"{verdict.action} across memory kinds"
    elif verdict.action == "replace" and not all(
            t is not None and (supersedable(candidate.memory_type, t.memory_type) or candidate.memory_type == "RULE"
                               and conventions_en.changes(candidate.text, t.text, t.memory_type)) for t in targets):
        problem = "replace across memory kinds"
    if problem is None:
        return verdict
    fallback = decide_merge(candidate, existing)
    return msgspec.structs.replace(fallback, reason=f"model verdict set aside ({problem}); {fallback.reason}")


def _words(text: str) -> set[str]:
    return set(content_words(text))


def richer_text(candidate: str, target: str) -> str:
    """The wording a merge keeps (issue #15 item 1: "true duplicates merge without losing the richer wording"): the
    candidate when its content words include the target's, else the target when its words include the candidate's,
    else the one with more content words (the candidate on a tie: the newer statement)."""
    c, t = _words(candidate), _words(target)
    if t <= c:
        return candidate
    if c <= t:
        return target
    return candidate if len(c) >= len(t) else target


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
    xa, xb = attribute_slots(a, user_id), attribute_slots(b, user_id)
    if any(xa[k] != xb[k] for k in xa.keys() & xb.keys()):
        return False, sim
    if {w for w in ca if w.isdigit()} != {w for w in cb if w.isdigit()}:
        return False, sim
    return True, sim


#: Slots whose predicate says who someone is (seed 004 §4 PROFILE: "用户画像") rather than what they like.
_PROFILE_SLOTS = frozenset({"lives_in", "from", "works_as", "works_at", "name", "age", "marital", "drives"})


def statement_type(text: str, user_id: str | None = None) -> str:
    """The seed 004 §4 type of an explicit statement whose caller named none (``memengine remember`` without
    ``--type``): ``"PREFERENCE"`` when it fills a preference slot ("prefers aisle seats", "favourite colour is ...")
    or uses a like/dislike verb, ``"PROFILE"`` when it fills a slot of who the user is (lives in, works at, age,
    ...), else ``"FACT"``. Only the user's own slots count ("Maya's sister lives in Porto" is a FACT of Maya's).
    Pure; the same slots as ``attribute_slots``, so an inferred type always merges with the items it may supersede.
    """
    slots = [k for k in attribute_slots(text, user_id) if "|" not in k]
    if any(k.startswith(("prefers:", "favorite:")) for k in slots):
        return "PREFERENCE"
    if any(k in _PROFILE_SLOTS for k in slots):
        return "PROFILE"
    words = {w.lower() for w in split_words(clean_text(text))}
    if words & (POS_PREF_VERBS | NEG_PREF_VERBS):
        return "PREFERENCE"
    return "FACT"
