"""``engine.derive.offline.topics``: topics in Chinese and in mixed Chinese and English (issue #29 item 3), pure
functions of the turns."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from memengine.engine.derive.offline import Turn, topics
from memengine.engine.derive.offline.topics import zh_topics
from tests.unit.engine.derive.offline.test_summaries import zh_turns


def test_chinese_topics_are_segmented_content_words() -> None:
    got = topics(zh_turns())
    assert {"过敏", "马拉松", "女儿"} <= set(got), got
    assert "李娜" not in got and not {"今天", "时候", "谢谢", "我们", "明白"} & set(got), got
    assert all(re.fullmatch(r"[\u4e00-\u9fff]{2,}", t) for t in got), got
    assert zh_topics("no Chinese here") == [] and topics(zh_turns()) == got  # deterministic


def test_mixed_language_topics_keep_both() -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    turns = [*zh_turns(), Turn(event_id="x", seq=99, role="user", user_id="lina", occurred_at=t0,
                                text="I also started learning Python programming for data analysis.")]
    got = topics(turns)
    assert any(re.search(r"[a-z]", t) for t in got) and any(re.search(r"[\u4e00-\u9fff]", t) for t in got), got
