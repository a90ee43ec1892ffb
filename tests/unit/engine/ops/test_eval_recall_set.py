"""The recall set of issue #28 item 4: its files read as LoCoMo conversations, every question names evidence that
exists, the languages are tagged, and the per-group arithmetic of ``memengine eval recall-set``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memengine.engine.ops.eval_recall_set import RecallSetError, set_questions, split_files, summarize_set
from memengine.engine.ops.ingest import read_locomo
from memengine.events import TurnRecorded
from tests.paths import DATA

ROOT = DATA / "zh_recall"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _lang(text: str) -> str:
    cjk, latin = len(CJK.findall(text)), len(re.findall(r"[A-Za-z]+", text))
    return "zh" if cjk and cjk >= latin else "en"


def test_the_set_is_large_enough_and_consistent() -> None:
    n_conv = n_q = n_cross = 0
    for split in ("dev", "test"):
        for path in split_files(ROOT, split):
            evs = read_locomo(path, "t")
            text = {e.metadata["dia_id"]: e.content[0].text for e in evs if isinstance(e, TurnRecorded)}  # type: ignore[union-attr]
            qs = set_questions(json.loads(path.read_text(encoding="utf-8")), path)
            for q in qs:
                assert set(q["evidence"]) <= set(text), (path.name, q)
                assert q["lang"] == _lang(q["question"])
                assert q["cross"] == (q["lang"] not in {_lang(text[d]) for d in q["evidence"]})
            n_conv += 1
            n_q += len(qs)
            n_cross += sum(q["cross"] for q in qs)
    # issue #28 item 4: at least 10 conversations and 200 questions, cross-lingual both ways
    assert n_conv >= 10 and n_q >= 200 and n_cross >= 60


def test_no_conversation_is_in_both_splits() -> None:
    assert not {p.name for p in split_files(ROOT, "dev")} & {p.name for p in split_files(ROOT, "test")}


def test_summarize_groups() -> None:
    rows = [({"lang": "zh", "cross": False}, {3: 1.0, 10: 1.0}), ({"lang": "en", "cross": True}, {3: 0.0, 10: 1.0}),
            ({"lang": "zh", "cross": True}, {3: 0.5, 10: 0.5})]
    s = summarize_set(rows, [3, 10])
    assert s["all"] == {"questions": 3, "recall_at": {"3": 0.5, "10": round(2.5 / 3, 4)}}
    assert s["same_language"]["recall_at"] == {"3": 1.0, "10": 1.0}
    assert s["cross_lingual"] == {"questions": 2, "recall_at": {"3": 0.25, "10": 0.75}}
    assert s["question_en"]["questions"] == 1 and s["question_zh"]["questions"] == 2
    assert summarize_set([], [3])["all"] == {"questions": 0, "recall_at": {}}


def test_malformed_sets_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(RecallSetError, match="no dev"):
        split_files(tmp_path, "dev")
    with pytest.raises(RecallSetError, match="qa\\[0\\]"):
        set_questions({"qa": [{"question": "q", "evidence": ["D1:1"]}]}, tmp_path / "x.json")


def test_a_mixed_language_question_is_accepted_and_grouped(tmp_path: Path) -> None:
    # heldout_s19 tags code-switched questions ("我的 PostgreSQL 表设计") "mixed": a question a user may ask, not
    # a malformed entry; reported in its own group
    qs = set_questions({"qa": [{"question": "我的 PostgreSQL schema 怎么设计的", "evidence": ["D1:3"],
                                "question_lang": "mixed", "cross_lingual": False}]}, tmp_path / "x.json")
    assert qs[0]["lang"] == "mixed"
    s = summarize_set([(qs[0], {3: 1.0})], [3])
    assert s["question_mixed"] == {"questions": 1, "recall_at": {"3": 1.0}}
    assert s["question_zh"]["questions"] == 0 and s["question_en"]["questions"] == 0
    with pytest.raises(RecallSetError, match="qa\\[0\\]"):
        set_questions({"qa": [{"question": "q", "evidence": ["D1:1"], "question_lang": "fr",
                               "cross_lingual": False}]}, tmp_path / "x.json")
