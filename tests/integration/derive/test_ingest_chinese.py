"""`memengine ingest` of a Chinese conversation (issue #29 item 4): a dated extractive summary split on Chinese
sentence ends, Chinese topic words from segmentation, lasting lifetimes for what typed memories it derives, and an
exact rebuild. The conversation (tests/data/zh_conversation.jsonl) was written for this test: two sessions of one
user (a nurse who becomes a product manager, a penicillin allergy, a daughter, a cat, a half marathon)."""

from __future__ import annotations

import json
import re

import pytest

from memengine.engine.adapters.settings import Settings
from tests.integration.ops.test_cli import run
from tests.paths import DATA

pytestmark = pytest.mark.integration

CONVERSATION = DATA / "zh_conversation.jsonl"


def test_ingest_chinese_conversation_summary_topics_memories(settings: Settings,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_SUMMARY_THRESHOLD", "8")  # 24 messages: three rolling summaries
    run(settings, "ingest", str(CONVERSATION), "--tenant", "zh", "--json")
    reply = json.loads(run(settings, "summary", "zh-lina", "--tenant", "zh", "--json").stdout)
    summary = reply["summary"]["summary"]
    lines = summary.splitlines()
    assert lines and all(re.match(r"^\[2025-0[35]-\d\d\] (User|Assistant): \S", ln) for ln in lines), summary
    assert {ln[1:11] for ln in lines} == {"2025-03-01", "2025-05-10"}, summary  # both sessions, dated
    assert "李娜" in summary and ("过敏" in summary or "护士" in summary)  # the salient first sentences
    assert "希望你们玩得开心" not in summary and "太厉害了" not in summary  # pleasantries left out
    # 你好！ is a sentence of its own (。！？ end Chinese sentences), so the greeting does not ride with the name
    assert "你好!我叫" not in summary and "你好！我叫" not in summary
    topics = {t["topic"] if isinstance(t, dict) else t for t in reply["topics"]}
    assert topics & {"过敏", "青霉素", "护士", "马拉松", "医院", "女儿", "产品经理", "公司"}, topics
    assert not topics & {"李娜", "今天", "时候", "谢谢", "我们"}, topics
    assert all(re.fullmatch(r"[\u4e00-\u9fff]{2,}", t) for t in topics), topics  # words, not sentences

    mems = json.loads(run(settings, "memories", "--user", "lina", "--tenant", "zh", "--include-expired",
                          "--json").stdout)["memories"]
    # what the deriver types from Chinese statements (if anything) is lasting when it is identity, health, family
    for m in mems:
        if re.search(r"过敏|护士|女儿|我叫|李娜", m["text"]) and m["type"] != "TASK":
            assert m["priority"] == "PERMANENT" and m["expires_at"] is None, m

    verified = json.loads(run(settings, "verify", "--json").stdout)
    assert verified["ok"] is True and verified["differing"] == [], verified
