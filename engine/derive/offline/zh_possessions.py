"""What the user says they have on the way to something else (issue #29 item 1): a question or a remark about one of
their things names the thing as theirs — "我的特斯拉Model Y胎压多少合适", "家里金毛会不会欺负它", "我家猫老吐怎么办" ask
about a car, a dog, a cat, and say that the user has one. The sentence itself is no statement (``zh.zh_statements``
skips what asks), so the thing was lost, and a later "又养了只仓鼠" stood alone where the user has both.

A clause that opens (after time words) with an owner (我的, 我家(的), 我们家(的), 咱家(的), 家里(的)) and goes on with
a thing is read: the thing is the run of nouns after the owner (a demonstrative or a count before it skipped: "我家那只
布偶"); a name (jieba ``nr`` / ``nrt`` / ``nz``, a Latin word, a model number after it: "特斯拉Model Y") is the thing
itself, else the run up to its last noun of a kind people own (``zh_revision.kind_of``: a pet, a vehicle, a phone, a
computer). A person (``zh_people.PERSON``: "我家孩子") is no possession, nor a part of the user ("我的皮肤") nor an
abstract noun ("我的工作", "我的情况"): their kind is none of those.

Pure given the tagger and the sentence encoder (``zh_revision``); without the encoder only names are read.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import zh_revision
from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.zh import tagged
from memengine.engine.derive.offline.zh_people import PERSON
from memengine.engine.derive.offline.zh_questions import CLAUSE

#: the kinds of ``zh_revision.KINDS`` a person owns (not a sport, a job or a food)
OWNED_KINDS = frozenset({"pet", "vehicle", "phone", "computer"})
#: who owns the thing: the user (我的) or their household (我家, 家里: "用户家里有 ...")
_OWNER = re.compile(r"^(?:(?P<mine>我的)|(?P<home>我们家的?|我家的?|咱家的?|家里的?))")
#: what opens a clause before its owner: time and place-in-time words, discourse particles
_BEFORE = ("t", "f", "c", "y", "e")
_NAME_TAGS = ("nr", "nrt", "nz", "eng")
_PERSON = re.compile(rf"^{PERSON}$")


def _thing(words: list[tuple[str, str]]) -> str | None:
    """The thing named by the words after an owner, or ``None``."""
    # "那只", "两只", "这台": which or how many of the thing is no part of it
    while words and (words[0][1] in ("r", "m", "q", "mq") or words[0][0] in ("只", "条", "台", "辆", "个", "部")):
        words = words[1:]
    run: list[tuple[str, str]] = []
    for w, f in words:
        if f.startswith("n") or f == "eng" or run and run[-1][1] == "eng" and (f == "m" or not w.strip()):
            run.append((w, f))
            continue
        break
    if not run or any(_PERSON.match(w) for w, _ in run):
        return None
    names: list[tuple[str, str]] = []
    for w, f in run:
        if f in _NAME_TAGS or names and names[-1][1] == "eng" and (f == "m" or not w.strip()):
            names.append((w, f))
            continue
        break
    if names:
        return "".join(w for w, _ in names).strip()
    owned = [i for i, (w, f) in enumerate(run) if f.startswith("n") and zh_revision.kind_of(w) in OWNED_KINDS]
    return "".join(w for w, _ in run[:owned[-1] + 1]) if owned else None


def owned(sentence: str) -> list[str]:
    """The statements of the things ``sentence`` says the user has, one per thing: ``["用户有特斯拉Model Y。"]``,
    ``["用户家里有金毛。"]``; ``[]`` when no clause opens with an owner and a thing."""
    out: list[str] = []
    for clause in CLAUSE.split(simplified(sentence)):
        words = [(w, f) for w, f in tagged(clause.strip())]
        while words and (words[0][1] in _BEFORE or not words[0][0].strip()):
            words = words[1:]
        rest = "".join(w for w, _ in words)
        m = _OWNER.match(rest)
        if m is None:
            continue
        at, eaten = 0, 0
        while at < len(words) and eaten < m.end():
            eaten += len(words[at][0])
            at += 1
        if eaten != m.end():
            continue  # the owner is no word of its own ("家里人")
        thing = _thing(words[at:])
        if thing:
            out.append(f"用户有{thing}。" if m.group("mine") else f"用户家里有{thing}。")
    return out
