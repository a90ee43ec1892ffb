"""What a question or a remark says the user has (``engine.derive.offline.zh_possessions``): the thing after 我的 /
我家 / 家里, kept though the sentence asks something."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import ExistingItem, Turn, decide_merge, extract_memories, gate, quarantined
from memengine.engine.derive.offline.zh_possessions import owned

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _kept(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
    return [c.text for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("text", "thing"), [
    ("我的特斯拉Model Y胎压多少合适", "特斯拉"), ("昨天在小区又捡了只小猫，家里金毛会不会欺负它？", "金毛"),
    ("我家猫老吐怎么办", "猫"), ("我的iPhone 15电池掉得快，要换吗", "iPhone"),
    ("我家那条柯基犬不爱吃狗粮怎么办", "柯基"),
    ("最近我的MacBook风扇老响，正常吗", "MacBook"), ("家里的比亚迪要不要贴膜", "比亚迪")])
def test_a_thing_of_the_users_named_in_a_question_is_kept(text: str, thing: str) -> None:
    assert any(thing in t for t in _kept(text)), (text, _kept(text))


@pytest.mark.parametrize("text", ["我家孩子不爱吃饭怎么办", "我的工作怎么办", "我的皮肤很干怎么办",
                                  "家里人都不同意怎么办", "我家附近有什么好吃的", "特斯拉多久需要保养一次？"])
def test_a_person_a_part_or_no_owner_is_no_possession(text: str) -> None:
    assert owned(text) == [], text


def test_a_second_pet_leaves_the_first_kept() -> None:
    first = [t for t in _kept("我家金毛最近掉毛好严重怎么办") if "金毛" in t]
    assert first
    turn = Turn(event_id="e2", seq=2, role="user", user_id="u1", text="又养了只仓鼠，它晚上跑轮好吵", occurred_at=T)
    for c in extract_memories([turn]):
        d = decide_merge(c, [ExistingItem("m1", "FACT", first[0], "u1")])
        # a new pet beside the old one: the old words stay (added, or kept beside in the newer item's text)
        assert d.action != "replace" or (d.text is not None and "金毛" in d.text), d
