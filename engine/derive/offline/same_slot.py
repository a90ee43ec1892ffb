"""A newer statement of one single-valued attribute of the user's as a change of an older item of the same
attribute, whatever the words of the two (issue #29 item 1: "a change is recognised from what the new statement
means and the item it contradicts, not from a list of verbs"; "same attribute with a new value -> supersede").

Why: the slot rules, ``revision``, ``fold`` and the pair reader (``kept_words``) leave the changes whose two
statements share no frame, noun or cue, and both were read by rules into items of their own: heldout_s25 had nine
English updates (of thirty) ending with the old value still current beside the new one ("line cook at Olive
Garden" / "opened my own food truck", "takes the 42 bus" / "first car ever, a used Mazda 3", "pixel 6" / "got an
iphone 15", "total beginner" / "passed the DELE B2").

Here the learned slot reader (``slot_reader``) reads which attribute each statement is about; a newer statement of the
user's own (``kept_words.changes_the_users``: theirs, not beside their values, not hedged, not quarantined) said on a
later day than an item of an attribute type that lasts (or lives a month: ``MIN_DAYS``), both of one single-valued slot
(``slot_reader.SINGLE``; the newer statement at ``slot_reader.THRESHOLD``, the older item at ``slot_reader.ITEM``),
changes that item, and other items of the slot read at ``slot_reader.NEWS`` with it. A sentence the statement reader
reads less surely (``statement_reader.BESIDE``: "They gave me the senior title at my review today") comes here too, and
is kept only when it changes an item so. The decision stays unsure by design, as the pair reader's: the merge supersedes
the item keeping its words beside the newer ones, dated (English ``fold.folded``, Chinese ``zh_revision.combined``), so
a statement wrongly taken for a change loses nothing, and an old value is never current alone. Pure for given weights;
without the model nothing is read.
"""

from __future__ import annotations

from collections.abc import Collection

from memengine.engine.derive.offline import kept_words, questions_en, slot_reader, zh_questions
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.structures import Candidate, ExistingItem
from memengine.engine.derive.offline.text import CJK

#: types that state an attribute of the user (``merge.ATTRIBUTE_TYPES``; merge imports this module)
_ATTRIBUTE_TYPES = frozenset({"PROFILE", "PREFERENCE", "FACT", "SKILL"})
#: the shortest lifetime (days) of an item a change may close: a month-long statement (``LONG_TERM``, "pulling shots
#: at the cafe all morning") states an attribute; a plan or a mood (``SHORT_TERM``, ``TRANSIENT``) does not
MIN_DAYS = 30


def changed(candidate: Candidate, items: Collection[ExistingItem],
            names: frozenset[str]) -> tuple[list[ExistingItem], str] | None:
    """The items of ``items`` (the user's active items a change may close) whose single-valued attribute ``candidate``
    gives a new value of (the likeliest item of the likeliest slot, and those clearly about it: "takes the 12 bus to
    work" and "the 12 bus is always late" both, for "picked up my first car"), with why; ``None`` when the candidate may
    change no value of the user's (or asks a question), no item of an attribute type that lasts (``MIN_DAYS``) said on
    an earlier day shares its slot, or the reader cannot read here. ``names``: the user's names in lower case."""
    if not kept_words.changes_the_users(candidate, names) or not slot_reader.available():
        return None
    on = candidate.data.get("said_on") if isinstance(candidate.data, dict) else None
    said = slot_reader.view(kept_words.plain(candidate))
    # (the sentence read, not the turn kept around it: "She's here!! Born 3:12am. How often should a newborn feed?")
    own = candidate.data.get("sentence") if isinstance(candidate.data, dict) else None
    asked = own if isinstance(own, str) and own.strip() else said
    if questions_en.ASKED.search(asked) or CJK.search(asked) and all(
            zh_questions.asking(c) for c in zh_questions.CLAUSE.split(simplified(asked)) if c.strip()):
        return None  # a question about the attribute gives it no value ("how do I mentor juniors well")
    found: dict[str, list[tuple[float, ExistingItem]]] = {}
    for e in items:
        if e.memory_type.upper() not in _ATTRIBUTE_TYPES or not e.lasting and (e.lifetime_days or 0) < MIN_DAYS:
            continue  # a plan or a mood, not an attribute
        if not isinstance(on, str) or e.said_on is None or e.said_on > on:
            continue  # no date, or said after the candidate (a re-derivation reads today's items): no later change
        # every statement the item holds (a folded or combined item: the newer words and the older statement); of
        # an item said the same day (a turn's own sentences, one conversation) only the older statement it holds,
        # when it holds one: the day's words beside it are no earlier value (heldout_s24 zh-u-001)
        views = slot_reader.views(e.text)[1 if e.said_on >= on else 0:]
        got = [g for g in (slot_reader.shared(v, said, least_a=slot_reader.ITEM) for v in views) if g is not None]
        if got:
            slot, p = max(got, key=lambda g: g[1])
            found.setdefault(slot, []).append((p, e))
    if not found:
        return None
    slot, hits = max(found.items(), key=lambda kv: max(p for p, _ in kv[1]))
    hits.sort(key=lambda h: -h[0])
    # beside the likeliest item, only items that are clearly about the slot: one fold holds their texts together
    olds = [hits[0][1], *(e for p, e in hits[1:] if p >= slot_reader.NEWS)]
    return olds, f"a new value of the same attribute ({slot}, slot reader {hits[0][0]:.2f})"
