"""Keyphrase topics of a stretch of conversation (seed 000 §1.2 ``memory_topics``, §4.4 "[Recallable Topics]").

English: YAKE (unsupervised, single-document; its stop-word lists ship inside the wheel, read once per process) plus
a list of chat words that are never topics and the names people are addressed by. Chinese (issue #29 item 3): YAKE
splits on spaces, so a Chinese turn is one "word" to it; Chinese text is segmented and POS-tagged first (``rjieba``,
the Rust port of jieba, already the recall segmenter) and its nouns ranked by TextRank, the algorithm of
``jieba.analyse.textrank`` (co-occurrence window 5, damping 0.85) run here over rjieba's tags, so no second
segmenter (``jieba``) is needed.
"""

from __future__ import annotations

import functools
import re

from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.text import CJK, MAX_KEYWORD_CHARS, by_seq, clean_text, name_of, stem

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


#: Chinese words that are frequent in chat but never a topic (beside recall's function words, ``projections.segment``).
ZH_TOPIC_STOPWORDS = frozenset("""今天 明天 昨天 后天 前天 今年 去年 明年 现在 最近 刚才 以前 以后 之前 之后 时候
时间 上午 下午 晚上 早上 中午 周末 东西 事情 事儿 问题 情况 感觉 觉得 知道 意思 样子 办法 地方 方面 部分 一点
有点 一些 一下 一起 大家 朋友们
人家 别人 谢谢 哈哈 嗯嗯 真的 其实 可能 应该 已经 非常 特别 一直 还是 然后 不过 好像 需要 喜欢 希望 打算 准备 开始 回来
消息 话题 聊天 明白 好的 没事 可爱 辛苦 厉害 不错""".split())
#: A name introduced in Chinese ("我叫李娜", "名叫…"): a person, not a topic, like a speaker's name.
_ZH_NAMED = re.compile(r"(?:我叫|名叫|叫做|我的名字是|我名字叫)([\u4e00-\u9fff]{2,3})")
#: Parts of speech that make topics (jieba's tag set): nouns, place and organisation names, other proper nouns,
#: verbal nouns, English words. Person names (nr) are left out like the English speakers' names, except that jieba
#: tags some ordinary two-character nouns nr (过敏), which the name filter below lets through when not a speaker.
_ZH_POS = frozenset({"n", "ns", "nt", "nz", "nw", "vn", "nr", "eng", "an"})


def zh_tags(text: str) -> list[tuple[str, str]]:
    """``(word, part of speech)`` of Chinese ``text`` by rjieba (jieba's tag set); without rjieba, the recall
    segmenter's words tagged ``n``."""
    try:
        import rjieba

        return [(w, p) for w, p in rjieba.tag(text)]
    except ImportError:  # no tagger: the recall segmenter's words, all taken as nouns
        from memengine.projections.segment import CJK_RUN, words

        return [(w, "n") for run in CJK_RUN.findall(text) for w in words(run)]


def zh_topics(text: str, k: int = 8, names: frozenset[str] = frozenset()) -> list[str]:
    """Up to ``k`` Chinese topic words of ``text``, best first: TextRank (Mihalcea & Tarau 2004, as in
    ``jieba.analyse.textrank``: undirected co-occurrence graph of the candidate words within a window of 5 tokens,
    PageRank with damping 0.85, 20 iterations) over the nouns of rjieba's POS tags, without function words, chat
    words (``ZH_TOPIC_STOPWORDS``), single characters and ``names``. Ties broken by first occurrence, so the output
    is deterministic. Text without CJK gives ``[]``."""
    from memengine.projections.segment import STOP

    if k <= 0 or not CJK.search(text):
        return []
    tagged = zh_tags(text)
    names = names | {w for w, _ in tagged if any(m.startswith(w) for m in _ZH_NAMED.findall(text))}
    ok = [len(w) >= 2 and CJK.search(w) is not None and p in _ZH_POS and w not in STOP
          and w not in ZH_TOPIC_STOPWORDS and w.lower() not in names for w, p in tagged]
    edges: dict[tuple[str, str], float] = {}
    first: dict[str, int] = {}
    for i, (w, _p) in enumerate(tagged):
        if not ok[i]:
            continue
        first.setdefault(w, i)
        for j in range(i + 1, min(i + 5, len(tagged))):
            if ok[j] and tagged[j][0] != w:
                a, b = sorted((w, tagged[j][0]))
                edges[(a, b)] = edges.get((a, b), 0.0) + 1.0
    if not first:
        return []
    nbrs: dict[str, list[tuple[str, float]]] = {w: [] for w in first}
    for (a, b), wt in sorted(edges.items()):
        nbrs[a].append((b, wt))
        nbrs[b].append((a, wt))
    out_w = {w: sum(x for _, x in ns) for w, ns in nbrs.items()}
    score = dict.fromkeys(first, 1.0)
    for _ in range(20):
        score = {w: 0.15 + 0.85 * sum(score[o] * x / out_w[o] for o, x in nbrs[w]) for w in first}
    ranked = sorted(first, key=lambda w: (-round(score[w], 9), first[w]))
    return ranked[:k]


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
    zh = zh_topics("\n".join(clean_text(t.text) for t in ordered if CJK.search(t.text)), k, frozenset(names))
    latin = [t for t in ordered if not _mostly_cjk(t.text)]
    if not latin:
        return zh
    stop = set(_yake_stopwords() | TOPIC_STOPWORDS | names)
    text = "\n".join(clean_text(t.text) for t in latin)
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
    if zh:  # a mixed conversation: both languages' topics, alternating, best first
        mixed = [x for pair in zip(zh, chosen, strict=False) for x in pair]
        rest = zh[len(chosen):] + chosen[len(zh):]
        chosen = list(dict.fromkeys(mixed + rest))
    return chosen[:k]


def _mostly_cjk(text: str) -> bool:
    """More CJK characters than Latin letters: the turn goes to the Chinese topics only."""
    return len(CJK.findall(text)) > len(re.findall(r"[A-Za-z]", text))
