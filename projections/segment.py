"""Word segmentation of CJK text for the lexical lists of recall (issue #28 item 2).

PostgreSQL's parser has no Chinese segmentation: a run of Han characters is one token (``我对花生过敏`` is one
lexeme, so ``花生`` never matches it), and a run glued to Latin letters is one token too (``PostgreSQL的表设计``). The
embedded PostgreSQL ships no zhparser, pg_jieba or pg_trgm, so the words are cut here, in the fold and in the
question alike: ``lexical_text`` replaces every run of CJK characters by its words separated by spaces and leaves
every other character as it is. The english text search configuration then keeps each CJK word verbatim (its
stemmer and stop list touch Latin words only: ``to_tsvector('english', w) = to_tsvector('simple', w)`` for a CJK
word, tested in tests/integration/recall/test_recall_cjk.py), so the recall rows' one tsvector per list holds the
english lexemes and the CJK words side by side, and BM25 / RRF read them unchanged (one column rather than a second
``simple`` column: a second column would double the BM25 lists or need a merge of tf and df across columns).

Text without a CJK character is returned unchanged (the same object), so English rows and questions are analysed
exactly as before. Words: jieba's default cut (``rjieba``, the Rust jieba, MIT, a binary wheel with its dictionary
inside; ``jieba`` when rjieba is not importable), plus the single characters of each word of two or more
characters (``SPLIT_CHARS``): jieba cuts a question and a statement differently (``猫叫什么`` -> 猫叫 | 什么 beside
``是只橘猫`` -> 是 | 只橘 | 猫), and the characters let such pairs still meet, weighted by BM25's idf (chosen on the
dev split of tests/data/zh_recall, bench/RESULTS.md "Recall in Chinese").

The segmentation is part of the fold: a different segmenter (or dictionary) gives other rows, so changing it is a
``memengine rebuild vectors`` (the projection's version says so when this module's output changes). ``segmenter()``
names the one in use.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: The CJK characters, as the inside of a bracket expression (literal characters, so Python's ``re`` and
#: PostgreSQL's regular expressions read the same ranges): Han (CJK Unified Ideographs, Extension A, Compatibility
#: Ideographs), kana, Hangul syllables.
CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: CJK runs (``CJK_RANGES``). Punctuation (，。？) is not in a run: it stays and separates tokens for the parser.
CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
_LATIN = re.compile(r"[A-Za-z]")

#: Index the single characters of multi-character words beside the words (module docstring).
SPLIT_CHARS = True

#: Chinese function words left out, as the english configuration leaves out "i", "what", "the": pronouns,
#: particles, interrogatives, common prepositions and conjunctions (simplified and traditional forms), from the usual
#: Chinese stop-word lists, not from the recall set's misses. A question's 什么 / 哪个 / 吗 otherwise matched every
#: chatty turn that asks something ("想聊什么？").
STOP = frozenset("""
的 地 得 了 着 过 是 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 这 那 这个 那个 这些 那些 这里 那里 这样 那样
在 有 和 与 及 或 或者 就 都 也 还 又 才 很 吗 呢 吧 啊 呀 哦 嗯 哈 么 嘛 啦 呗 什么 怎么 怎样 怎么样 为什么 为何 哪
哪里
哪儿 哪个 哪些 几 多少 谁 如何 是否 来着 一下 一个 个 之 把 被 让 给 对 从 到 向 跟 而 但 但是 所以 因为 如果 可以 会 要
們 這 這個 那個 這些 那些 這裡 那裡 這樣 那樣 還 嗎 麼 什麼 怎麼 怎樣 為什麼 為何 哪裡 哪個 誰 一個 個 讓 給 對 從 跟
但是
所以 因為 如果 會 與 或者
""".split())


def _load() -> tuple[str, Callable[[str], list[str]]]:
    try:
        from importlib.metadata import version

        import rjieba

        return f"rjieba {version('rjieba')}", rjieba.cut
    except ImportError:
        pass
    try:
        import jieba

        jieba.setLogLevel(60)  # jieba prints "Building prefix dict" to stderr otherwise
        return f"jieba {jieba.__version__}", lambda s: list(jieba.cut(s))
    except ImportError:
        # no segmenter installed: single characters (a unigram index), so CJK text still matches
        return "characters", list


_loaded: tuple[str, Callable[[str], list[str]]] | None = None


def _segmenter() -> tuple[str, Callable[[str], list[str]]]:
    # loaded on first use: importing rjieba reads its dictionary (~0.15 s), which a process that never folds or
    # asks a CJK question (most CLI commands) should not pay
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def segmenter() -> str:
    """The segmenter in use: ``"rjieba <version>"``, ``"jieba <version>"`` or ``"characters"`` (none installed)."""
    return _segmenter()[0]


def _cut(run: str) -> list[str]:
    return _segmenter()[1](run)


def tokens(run: str) -> list[str]:
    """The words of one CJK run as the segmenter cuts them, less ``STOP``, without the single characters ``words``
    adds (what a dictionary is looked up by: ``engine.read.crosslingual``). ``"我对花生过敏"`` -> ``["花生",
    "过敏"]``."""
    return [w for w in (w.strip() for w in _cut(run)) if w and w not in STOP]


def words(run: str) -> list[str]:
    """The words of one CJK run, in order: jieba's cut less ``STOP``, each multi-character word followed by its
    characters when ``SPLIT_CHARS``. ``"我对花生过敏"`` -> ``["花生", "花", "生", "过敏", "过", "敏"]`` (我, 对:
    ``STOP``)."""
    out: list[str] = []
    for w in _cut(run):
        w = w.strip()
        if not w or w in STOP:
            continue
        out.append(w)
        if SPLIT_CHARS and len(w) > 1:
            out.extend(w)
    return out


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character (``CJK_RUN``)."""
    return CJK_RUN.search(text) is not None


def mostly_cjk(text: str) -> bool:
    """Whether ``text`` reads as CJK rather than Latin: it has CJK characters and three times their count exceeds its
    Latin letters (a Chinese word is ~1.7 characters, an English one ~5 letters: a character carries about three
    letters' worth). An English embedding model (all-MiniLM-L6-v2) reads such a text as noise that is alike for every
    CJK text (issue #28, session 13): ``engine.embedding.composite.mostly_latin`` gives it no MiniLM half, and
    recall leaves such pairs out of MiniLM's dense list (``engine.read.recall_fragments.CJK_ROW_SQL``, its SQL
    twin). ``"我对花生过敏"`` -> True; ``"我们用 FastAPI 部署"`` -> True (5 x 3 > 7); ``"deploy with k8s 吧"``
    -> False."""
    cjk = sum(len(m) for m in CJK_RUN.findall(text))
    return cjk > 0 and 3 * cjk > len(_LATIN.findall(text))


def lexical_text(text: str) -> str:
    """``text`` with every CJK run replaced by `` w1 w2 ... `` (``words``), for ``to_tsvector('english', ...)``;
    ``text`` itself when it has no CJK character. ``"我们讨论一下 PostgreSQL的表设计"`` -> words of 我们讨论一下, the
    Latin word untouched, words of 的表设计, separated by spaces."""
    if not has_cjk(text):
        return text
    return CJK_RUN.sub(lambda m: " " + " ".join(words(m.group(0))) + " ", text)
