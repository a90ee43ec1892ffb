"""A newer statement on what an item kept in the user's words says (issue #29 item 1: "a change is recognised from
what the new statement means and the item it contradicts"; "when the deriver is unsure, it keeps the user's own
words with their date").

The learned statement reader (``statement_reader``) and the verbatim readings keep a sentence no rule reads as said:
``User said: "I'm like 800 on chess.com."``, ``用户说：“平时通勤靠一辆二手雅迪”``. Such an item names no slot, and its
words rarely share a noun or a frame with the statement that later changes them ("hit 1500 rapid last night!",
"下周一去区税务局报到" after "跑销售一天见五个客户"), so neither the slots, ``revision``, ``fold`` nor ``zh_revision``
(at its ``SAME_TOPIC``) found the change, and the old value stayed current (heldout_s20 b20-en-u-022, zh-u-002,
zh-u-018, zh-u-019, en-u-023).

The other way round too: the reader keeps a change no rule reads ("badge from Stripe came in the mail", "換到全家了"
after "在7-11打工"), and that kept change may supersede any older, not yet combined statement of the user's on its
topic (heldout_s19 en-u-022, zh-u-004, zh-u-026).

Here a newer statement of the user's own attribute changes such an item when the learned change reader
(``change_reader``: a logistic regression over the pair of multilingual USE vectors, trained on the dev sets'
update, keep and unrelated pairs) gives it a probability >= ``change_reader.THRESHOLD`` (0.8). Session 22 tried a
bar on the USE cosine alone (>= 0.15): the changes sit at 0.07-0.66, but so do a third of unrelated pairs of user
statements (leave one set out on the dev pairs: precision 0.36 / 0.29, en / zh); the change reader at 0.8 has
precision 0.87 / 0.78, recall 0.50 / 0.53, and takes 0.1 % / 1.2 % of unrelated pairs for a change
(``bench/derive_research/train_pair_reader.py``). The decision stays unsure by design: the merge supersedes the
item keeping its words beside the newer ones, dated (English: ``fold.folded``, the older words first; Chinese:
``zh_revision.combined``, the newer first), so a statement wrongly taken for a change loses nothing, and an old value
is never current alone. Not a change: a statement of someone else's ("my brother works there now"), one that comes
beside the user's values ("as well", "another", 又养了, 也), a hedged or quarantined one, a negated Chinese one without
了, and one said the same day as the item (``ExistingItem.said_on``; a sentence beside it in one turn:
"香菜一丁点都不要放！！我闻到就想吐"). Pure for given weights; without the model nothing is read.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from memengine.engine.derive.offline import change_reader, fold, revision, zh_revision
from memengine.engine.derive.offline.structures import Candidate, ExistingItem
from memengine.engine.derive.offline.text import CJK
from memengine.engine.derive.offline.zh import EARLIER

#: types that state an attribute of the user (``merge.ATTRIBUTE_TYPES``; merge imports this module)
_ATTRIBUTE_TYPES = frozenset({"PROFILE", "PREFERENCE", "FACT", "SKILL"})
#: ``<subject> said: "<words>"`` (``statements_en.quoted``) and ``用户说：“<words>”`` (``generalise.learned``, ``zh``)
_SAID = re.compile(r'^[\w\' -]{1,40} said: "(?P<en>.+)"\.?$|^用户说[:：]\s*“(?P<zh>.+)”。?$', re.S)


def words(text: str) -> str | None:
    """The user's words of an item kept as said, ``None`` for any other item and for one that already holds a
    change beside older words (``fold.folded``'s "Later, on ...", ``zh_revision.combined``'s ``EARLIER``: the
    folding steps own those)."""
    text = text.strip()
    if fold.base(text) != text or EARLIER in text:
        return None
    m = _SAID.match(text)
    return (m.group("en") or m.group("zh")).strip() if m else None


def plain(candidate: Candidate) -> str:
    """A candidate as the user said it: its kept words, else its sentence (the third-person rewrite reads less
    like the user's own words the item holds), else its text."""
    if (said := words(candidate.text)) is not None:
        return said
    sentence = candidate.data.get("sentence") if isinstance(candidate.data, dict) else None
    return sentence.strip() if isinstance(sentence, str) and sentence.strip() else candidate.text


def changes_the_users(candidate: Candidate, names: frozenset[str]) -> bool:
    """Whether ``candidate`` may state a new value of the user's (module docstring: theirs, not beside, no guess)."""
    data = candidate.data if isinstance(candidate.data, dict) else {}
    if candidate.memory_type.upper() not in _ATTRIBUTE_TYPES or data.get("hedged") or data.get("quarantined"):
        return False
    if CJK.search(candidate.text):
        return zh_revision.changes_a_value(candidate.text)
    a = revision.read(candidate.text, names)
    return a is not None and fold.users(a, candidate.text) and not a.additive


def changed(candidate: Candidate, items: Collection[ExistingItem],
            names: frozenset[str]) -> tuple[ExistingItem, str] | None:
    """The item of ``items`` kept in the user's words (``words``; any item not yet combined when ``candidate`` is
    itself kept in the user's words) that ``candidate`` changes, the likeliest one (``change_reader``), with why;
    ``None`` when the candidate may change no value of the user's, no item reaches ``change_reader.THRESHOLD``, or
    the reader cannot read here. ``names``: the user's names in lower case (``revision``)."""
    # a candidate kept in the user's words itself (the learned reader's) may change any statement of the user's
    own = words(candidate.text) is not None
    # an item with a lifetime (an event, a plan) states no attribute to change: folding a later statement into it
    # made a past event lasting (LoCoMo conv 26: "Caroline just contacted their mentor for adoption advice")
    kept = [(e, w) for e in items if e.memory_type.upper() in _ATTRIBUTE_TYPES and e.lasting and
            (w := words(e.text) or (e.text if own and fold.base(e.text) == e.text and EARLIER not in e.text
                                    else None)) is not None]
    if not kept or not changes_the_users(candidate, names) or not change_reader.available():
        return None
    on = candidate.data.get("said_on") if isinstance(candidate.data, dict) else None
    said = plain(candidate)
    best: tuple[float, ExistingItem] | None = None
    for e, w in kept:
        if isinstance(on, str) and e.said_on is not None and e.said_on >= on:
            continue  # said the same day (a turn's own sentences, one conversation): no later change of it
        p = change_reader.probability(w, said)
        if p is not None and p >= change_reader.THRESHOLD and (best is None or p > best[0]):
            best = (p, e)
    return (best[1], f"a change of the words kept as said (change reader {best[0]:.2f})") if best else None
