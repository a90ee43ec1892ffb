"""A Chinese statement said on the way to a question (issue #29 item 1; session 18's blind sets lost about a third
of their Chinese statements and updates this way): the clauses that ask or request are cut, what is left is read as
any statement, subject dropped or not; a sentence that only asks, or only passes on hearsay, is nothing. Phrased
unlike ``tests/data``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.derive.offline import zh
from memengine.engine.derive.offline.zh_questions import asking


@pytest.mark.parametrize(("said", "held", "asked"), [
    ("最近开始学游泳了，泳镜买哪种好", "游泳", "泳镜"),
    ("养了一只柯基，一天要遛几次", "柯基", "遛"),
    ("帮我改改简历，我在美团做产品经理", "美团", "简历"),
    ("搬到厦门以后才发现这边潮得要命，除湿机有推荐吗", "厦门", "除湿机"),
    ("不开出租了，现在在物流园开叉车，腰受得了吗", "叉车", "腰"),
    ("又捡了一只流浪猫，猫砂选豆腐砂还是膨润土？", "流浪猫", "猫砂"),
])
def test_a_statement_before_a_question_is_kept_without_the_question(said: str, held: str, asked: str) -> None:
    got = zh.zh_statements(said)
    assert len(got) == 1, got
    assert held in got[0].text and asked not in got[0].text, got[0].text


def test_a_place_moved_to_is_the_place_not_the_clause_after_it() -> None:
    got = zh.zh_statements("搬到厦门以后才发现这边潮得要命，除湿机有推荐吗")
    assert got[0].slots.get("lives_in") == "厦门"


def test_a_transfer_without_who_made_it_is_where_the_user_works() -> None:
    assert zh.zh_statements("刚调到深圳分公司，那边加班多不多")[0].slots == {"works_at": "深圳分公司"}


def test_an_ended_verb_and_object_also_ends_the_object() -> None:
    """"不开出租了" ends 出租, so an item "用户是出租车司机" holds what ended."""
    assert "出租" in zh.zh_statements("不开出租了，现在在物流园开叉车")[0].ends


@pytest.mark.parametrize("said", [
    "周末去不去爬山好呢", "这个牌子的扫地机贵不贵", "明天上海下不下雨", "晚饭吃饺子行不行",
    "听说喝咖啡伤胃，是真的吗", "据说这边房租又涨了，要不要早点续约", "我不太懂，怎么弄",
    "冬天去长白山穿什么合适？", "做完全飞秒以后多久能游泳",
])
def test_a_sentence_that_only_asks_or_passes_on_hearsay_is_nothing(said: str) -> None:
    assert zh.zh_statements(said) == []


@pytest.mark.parametrize("clause", ["贵不贵", "喜不喜欢", "去哪玩比较好", "有推荐吗", "请问几点开门", "帮我查一下"])
def test_clauses_that_ask(clause: str) -> None:
    assert asking(clause)


@pytest.mark.parametrize("clause", ["不得不加班", "越来越忙", "我什么都吃", "去年搬到了杭州"])
def test_clauses_that_do_not_ask(clause: str) -> None:
    assert not asking(clause)


_STATED = [("上个月领养了一只边牧", "边牧"), ("我在华为做测试", "华为"), ("最近迷上了攀岩", "攀岩"),
           ("我对青霉素过敏", "青霉素"), ("刚换了一台小米平板", "小米平板")]
_ASKED = ["有什么要注意的吗", "怎么办", "哪个牌子好", "要准备多少钱", "贵不贵", "能不能推荐几个"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_STATED), st.lists(st.sampled_from(_ASKED), min_size=1, max_size=2),
       st.sampled_from(["", "？", "?"]))
def test_any_statement_before_any_questions_keeps_the_statement_only(stated: tuple[str, str], asked: list[str],
                                                                     end: str) -> None:
    said, held = stated
    got = zh.zh_statements("，".join([said, *asked]) + end)
    assert len(got) == 1 and held in got[0].text, got
    assert not any(q in got[0].text for q in asked), got[0].text


def test_not_much_is_no_question() -> None:
    """不怎么 / 没怎么 mean "not much": "羽毛球也不怎么打了" ends something, it asks nothing."""
    assert not asking("羽毛球也不怎么打了") and not asking("最近没怎么练")
    assert zh.zh_statements("最近迷上了桨板，羽毛球也不怎么打了")[0].text.endswith("羽毛球也不怎么打了”")


def test_a_break_up_ends_the_partner() -> None:
    """"跟阿明分手了" ends 阿明, so an item naming him as the user's partner is closed (blind s18 u-013)."""
    assert "阿明" in zh.zh_statements("上个月跟阿明分手了，现在单身")[0].ends


@pytest.mark.parametrize("clause", ["入职要准备啥", "这个咋弄", "婚礼一般提前多久订酒店", "为啥总是失眠",
                                    "走过去要多远", "你觉得咋样"])
def test_colloquial_interrogatives_ask(clause: str) -> None:
    """啥 / 咋 / 为啥 / 多久 / 多远 ask as 什么 / 怎么 / 多少 do (s19 u-002: "入职要准备啥" was read as where the
    user works)."""
    assert asking(clause)


@pytest.mark.parametrize("clause", ["最近没啥胃口", "也没多久", "我啥都吃"])
def test_colloquial_words_that_do_not_ask(clause: str) -> None:
    assert not asking(clause)


def test_a_start_followed_by_a_question_in_colloquial_words_keeps_the_workplace() -> None:
    (got,) = zh.zh_statements("下周一去字节报到，入职要准备啥")
    assert got.slots.get("works_at") == "字节", got
