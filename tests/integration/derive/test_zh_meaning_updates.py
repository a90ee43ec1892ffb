"""Chinese changes recognised from what the statements are about, on the real servers (issue #29 item 1: "a change is
recognised from what the new statement means and the item it contradicts, not from a list of verbs"; "when the
deriver is unsure, it keeps the user's own words with their date"). A newer statement about the same kind of thing
(a phone, a way to work, a sport, a drink, a city) supersedes the older item with one holding both, the newer words
first and dated (``zh_revision``), so the old value is never current alone; a second pet or instrument keeps the
first. Phrased unlike ``tests/data/statements_v2`` and its scoring reused (``statements_suite.score``)."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from tests.integration import statements_suite

pytestmark = pytest.mark.integration

_FILLER = [{"role": "user", "text": "推荐个简单的午饭"}, {"role": "assistant", "text": "好的。"}]


def _case(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="记下了。",
                                             lang="zh")


CASES = [
    _case("zmu-1", "update", "我的手机是三星的，用了好几年", "前两天入手了一台 vivo，拍照真清楚", ["vivo"], ["三星"]),
    _case("zmu-2", "update", "我每天开车通勤，单程四十分钟", "油价太贵，这个月起骑自行车上班了", ["自行车"], ["开车"]),
    _case("zmu-3", "update", "我周末常打网球", "这阵子迷上了瑜伽，每周练三次", ["瑜伽"], ["网球"]),
    _case("zmu-4", "update", "我在长沙长大，现在也住长沙", "今年来成都发展了，节奏慢挺舒服", ["成都"], ["长沙"]),
    _case("zmu-5", "update", "我爱喝可乐，一天两罐", "医生说要控糖，现在只喝苏打水", ["苏打水"], ["可乐"]),
    # a level of study (traditional characters) ended by graduating, the employer said as a start ("去 X 入职")
    _case("zmu-6", "update", "我在讀研二，主修統計", "畢業啦！下週去美團入職", ["美團"], ["研二"]),
    _case("zmu-7", "update", "本人目前大四，学的是土木", "已经毕业了，下个月到中建三局报到", ["中建三局"], ["大四"]),
    # an English name of several words inside a Chinese clause is one value, ended whole
    _case("zmu-8", "update", "我开的是 Model Y，续航还行", "Model Y 卖掉了，换了辆理想 L6", ["理想"], ["Model Y"]),
    _case("zmu-9", "update", "我平时用 Galaxy S22 拍照", "把 Galaxy S22 送人了，入了个华为 Mate 60", ["华为"],
          ["Galaxy S22"]),
    _case("zmu-10", "update", "我在 Morgan Stanley 做 IT", "已经不在 Morgan Stanley 了，去了一家创业公司", ["创业公司"],
          ["Morgan Stanley"]),
    _case("zmk-1", "keep", "我养了一只仓鼠", "上周又带回家一只兔子", ["兔子"], ["仓鼠"]),
    _case("zmk-2", "keep", "我会弹钢琴，考过八级", "最近开始学小提琴了", ["小提琴"], ["钢琴"]),
    # one said to come beside the old (also / a second / one more) after a chatty elaboration of the first
    _case("zmk-3", "keep", "我芒果过敏，吃了嘴巴会肿", "前阵子体检查出来对牛奶也过敏", ["牛奶"], ["芒果"]),
    _case("zmk-4", "keep", "我家有只橘猫", "上个月家里又多了一只金毛", ["金毛"], ["橘猫"]),
]


async def test_a_chinese_restatement_supersedes_keeping_both_and_a_second_value_is_kept(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="zh-meaning")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
