"""Chinese statements, updates and keeps said on the way to a question, on the real servers (issue #29 item 1):
the subject dropped, the question in the same sentence; hearsay and a question alone become nothing. Phrased unlike
``tests/data``; scored with ``statements_suite.score``."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from tests.integration import statements_suite

pytestmark = pytest.mark.integration

_FILLER = [{"role": "user", "text": "今天好冷"}, {"role": "assistant", "text": "嗯。"}]


def _case(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="嗯。", lang="zh")


def _one(cid: str, kind: str, said: str, values: list[str]) -> dict[str, Any]:
    return {"id": cid, "lang": "zh", "kind": kind, "types": ["FACT", "PROFILE", "PREFERENCE", "SKILL"],
            "sessions": [[*_FILLER, {"role": "user", "text": said}, {"role": "assistant", "text": "嗯。"}]],
            "active": values if kind == "statement" else [], "absent": values}


CASES = [
    _one("zq-s1", "statement", "最近开始学游泳了，泳镜买哪种好", ["游泳"]),
    _one("zq-s2", "statement", "帮我改改简历，我在美团做产品经理", ["美团"]),
    _case("zq-u1", "update", "我住在无锡", "搬到厦门以后才发现这边潮得要命，除湿机有推荐吗", ["厦门"], ["无锡"]),
    _case("zq-u2", "update", "我是出租车司机", "不开出租了，现在在物流园开叉车，腰受得了吗", ["叉车"], ["出租"]),
    _case("zq-k1", "keep", "我养了一只柯基", "又捡了一只流浪猫，猫砂选哪种？", ["流浪猫"], ["柯基"]),
    _one("zq-n1", "none", "听说喝咖啡伤胃，是真的吗，要不要少喝点", ["咖啡"]),
    _one("zq-n2", "none", "周末去不去爬山好呢", ["爬山"]),
]


async def test_statements_before_a_question_are_read_and_questions_alone_are_not(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="zh-questions")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
