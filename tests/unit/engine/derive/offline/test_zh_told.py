"""What a Chinese sentence tells without its clauses of the moment and its questions, and what it only passes by
(issue #29 item 1; heldout_s26's statements said beside a plan for tonight, its none cases)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import extract_memories, statement_reader, zh_told
from memengine.engine.derive.offline.structures import Turn


@pytest.mark.parametrize(("sentence", "told"), [
    ("今晚想做个凉拌牛肉，教我一下，别放香菜啊，那玩意儿我闻着就想吐", "教我一下，别放香菜啊，那玩意儿我闻着就想吐"),
    ("周杰伦演唱会的票怎么抢啊，从初中就是他的铁粉了", "从初中就是他的铁粉了"),
    ("明天要早起赶飞机，烦死了", "明天要早起赶飞机，烦死了"),  # nothing left to tell: the sentence itself
    ("我在杭州做设计", "我在杭州做设计"),
])
def test_a_sentence_tells_what_its_clauses_of_the_moment_and_questions_leave(sentence: str, told: str) -> None:
    assert zh_told.told(sentence) == told


@pytest.mark.parametrize(("sentence", "passing"), [
    ("今天emo了，啥都不想干", True), ("沒結婚，也沒小孩", True), ("我不抽烟，但是老被二手烟熏", True),
    ("今天拆石膏了", False), ("今天在川大报到了", False), ("我对花生过敏", False), ("研二狗 中期报告都还没搞完", False),
])
def test_a_mood_of_the_day_or_a_negated_attribute_passes(sentence: str, passing: bool) -> None:
    assert zh_told.passing(sentence) is passing


def _extract(text: str) -> list:
    return extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text,
                                  occurred_at=datetime(2026, 11, 20, tzinfo=UTC))])


@pytest.mark.skipif(not statement_reader.available(), reason="the embed-multilingual extra is needed")
def test_what_a_sentence_tells_is_read_and_its_frame_still_holds() -> None:
    kept = _extract("今晚想做个凉拌牛肉，教我一下，别放香菜啊，那玩意儿我闻着就想吐")
    assert any("香菜" in c.text and c.memory_type == "PREFERENCE" for c in kept), kept
    # the clause left out held the frame (a show just watched): nothing of the sentence is the user's
    watched = "刚刷完《繁花》，宝总那种上海老克勒的派头太绝了，剧里那家夜东京有原型吗"
    assert not any("宝总" in c.text for c in _extract(watched))
