"""A relative named in one turn and their fact in the next, on the real servers (issue #29, a class left open by
session 17: "我妹天天熬夜背书" then "她在读临床医学"): the fact is kept as that person's (an active item holds both
who and what), and it does not change the user's own attributes. Phrased unlike ``tests/data`` and scored with
``statements_suite.score``."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from tests.integration import statements_suite

pytestmark = pytest.mark.integration


def _turns(*texts: str) -> list[dict[str, str]]:
    return [t for x in texts for t in ({"role": "user", "text": x}, {"role": "assistant", "text": "嗯嗯。"})]


def _statement(cid: str, texts: list[str], active: list[str]) -> dict[str, Any]:
    return {"id": cid, "lang": "zh", "kind": "statement", "types": ["FACT", "PROFILE"], "sessions": [_turns(*texts)],
            "active": active}


CASES = [
    _statement("zp-1", ["我表姐下个月生宝宝", "她在协和当护士，天天三班倒", "送什么礼物好"], ["表姐", "协和"]),
    _statement("zp-2", ["俺儿子今年高考", "他想考哈工大的计算机", "志愿怎么填"], ["儿子", "哈工大"]),
    _statement("zp-3", ["我男朋友最近在找工作", "他以前在字節跳動做測試", "面試要準備什麼"], ["男朋友", "字節"]),
    {"id": "zp-k1", "lang": "zh", "kind": "keep", "types": ["FACT", "PROFILE"],
     "sessions": [_turns("我在南京的一家银行上班"), _turns("我老公刚调到苏州", "他在苏州的一家外企上班")],
     "active": ["苏州"], "kept": ["南京"]},
    # a subjectless clause after another's is theirs: the sister works at Tencent, the father retired
    {"id": "zp-k2", "lang": "zh", "kind": "keep", "types": ["FACT", "PROFILE"],
     "sessions": [_turns("我在招商银行上班"), _turns("我妹刚搬到深圳，在腾讯上班")], "active": ["腾讯"],
     "kept": ["招商银行"]},
    {"id": "zp-k3", "lang": "zh", "kind": "keep", "types": ["FACT", "PROFILE"],
     "sessions": [_turns("我在中石油做会计"), _turns("我爸今年六十了，上个月刚退休")], "active": ["退休"],
     "kept": ["中石油"]},
]


async def test_a_relatives_fact_in_the_next_turn_is_theirs(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="zh-people")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
