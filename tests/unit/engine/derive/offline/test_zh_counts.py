"""How many of a thing the user has (``engine.derive.offline.zh_counts``): a new total supersedes the old count,
however the change is told; an addition alone ("又捡了两只") states no total."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import ExistingItem, Turn, decide_merge, extract_memories, gate, quarantined
from memengine.engine.derive.offline.zh_counts import counts

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def _actions(old: str, new: str) -> list[str]:
    olds = [c for c in extract_memories([Turn(event_id="e0", seq=0, role="user", user_id="u1", text=old,
                                              occurred_at=T)]) if not quarantined(gate(c, turn_text=old))]
    assert olds, old
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=new, occurred_at=T)
    cands = [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=new))]
    assert cands, new
    existing = [ExistingItem(memory_id="m1", memory_type=o.memory_type, text=o.text, user_id="u1") for o in olds]
    return [decide_merge(c, existing).action for c in cands]


@pytest.mark.parametrize(("old", "new"), [
    ("家里三只猫，猫粮怎么买划算", "小区又捡了两只小猫，五只了，会不会打架？"),
    ("我养了两条狗，每天遛好累", "朋友又送了我一条小狗，现在三条狗了"),
    ("我们家就一个孩子，周末总说无聊", "老二生了，是个闺女！两个孩子差六岁，怎么平衡？"),
    ("我家有两台电脑", "上个月又买了一台笔记本，现在三台电脑了")])
def test_a_new_total_supersedes_the_old_count(old: str, new: str) -> None:
    assert "replace" in _actions(old, new), (old, new)


@pytest.mark.parametrize("text", ["又捡了两只小猫", "小区又捡了两只小猫，会不会打架", "我妹家两只猫"])
def test_an_addition_or_anothers_count_is_no_total(text: str) -> None:
    assert not counts(text), text


def test_the_total_is_the_count_of_the_thing_named_before() -> None:
    assert counts("小区又捡了两只小猫，五只了") == counts("家里五只猫")
