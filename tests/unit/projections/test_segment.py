"""CJK segmentation for recall's lexical lists (issue #28 item 2): English text is untouched, every CJK character of
a text reaches the parser as a token of its own or inside a word, and the rest of the text keeps its order."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memengine.projections import segment
from memengine.projections.segment import CJK_RUN, STOP, has_cjk, lexical_text, segmenter, words

HAN = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
LATIN = st.characters(codec="ascii", categories=("Lu", "Ll", "Nd", "Zs", "Po"))
MIXED = st.lists(st.one_of(st.text(HAN, min_size=1, max_size=12), st.text(LATIN, min_size=1, max_size=12)),
                 max_size=8).map("".join)


def test_the_segmenter_is_jieba() -> None:
    assert segmenter().split()[0] in ("rjieba", "jieba")  # the server extra installs rjieba
    assert "花生" in words("我对花生过敏") and "过敏" in words("我对花生过敏")


def test_examples() -> None:
    assert lexical_text("PostgreSQL的表设计").split()[0] == "PostgreSQL"
    assert {"表", "设计"} <= set(lexical_text("PostgreSQL的表设计").split())
    assert {"讨", "论", "PostgreSQL", "表", "设计"} <= set(lexical_text("我们讨论一下 PostgreSQL 的表设计").split())
    # function words are left out, as the english configuration leaves out "i" and "what"
    assert lexical_text("我对什么过敏").split() == ["过敏", "过", "敏"]
    assert lexical_text("以后请一直用中文回答我。").rstrip().endswith("。")


@given(st.text(st.characters(exclude_categories=("Cs",), max_codepoint=0x2FFF)))
def test_text_without_cjk_is_the_same_object(text: str) -> None:
    assert not has_cjk(text)
    assert lexical_text(text) is text


@given(MIXED)
def test_every_character_reaches_the_parser_in_order(text: str) -> None:
    out = lexical_text(text)
    # the non-CJK characters keep their order; every CJK run becomes space-separated words covering its characters
    assert CJK_RUN.sub(" ", text).split() == CJK_RUN.sub(" ", out).split()
    runs_in, runs_out = CJK_RUN.findall(text), CJK_RUN.findall(out)
    assert set("".join(runs_out)) <= set("".join(runs_in))
    for run in runs_in:
        # function words are left out as words; a content word keeps all its characters (但丁 -> 但丁, 但, 丁)
        cut = [w for w in segment._cut(run) if w.strip()]
        assert words(run) == [x for w in cut if w not in STOP for x in ([w, *w] if len(w) > 1 else [w])]
        kept = {c for w in segment._cut(run) if w not in STOP for c in w}
        assert kept == set("".join(words(run)))  # every character of a word that is not a function word is a token
    assert not re.search(r"[\u4e00-\u9fff][A-Za-z]|[A-Za-z][\u4e00-\u9fff]", out)  # scripts never glued


def test_tokens_are_the_cut_words_without_their_characters() -> None:
    """``tokens`` (what the cross-lingual dictionary is looked up by, issue #28): jieba's words less ``STOP``."""
    from memengine.projections.segment import tokens

    assert tokens("我对花生过敏") == ["花生", "过敏"]
    assert all(len(w) > 1 or w not in segment.STOP for w in tokens("我们讨论一下表设计"))


def test_mostly_cjk_examples() -> None:
    assert segment.mostly_cjk("我对花生过敏")
    assert segment.mostly_cjk("我们用 FastAPI 部署")  # 5 characters weigh 15 letters, FastAPI has 7
    assert not segment.mostly_cjk("deploy it with k8s 吧")
    assert not segment.mostly_cjk("") and not segment.mostly_cjk("12345，。")


@given(MIXED, st.text(HAN, min_size=1, max_size=12))
def test_mostly_cjk_is_three_letters_per_character(text: str, han: str) -> None:
    cjk = sum(len(m) for m in CJK_RUN.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    assert segment.mostly_cjk(text) is (cjk > 0 and 3 * cjk > latin)
    if segment.mostly_cjk(text):  # more CJK never makes a text Latin
        assert segment.mostly_cjk(text + han)
    assert not segment.mostly_cjk(CJK_RUN.sub("", text))
