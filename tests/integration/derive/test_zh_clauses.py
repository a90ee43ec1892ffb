"""Chinese clauses whose reading jieba's tags or the clause's subject used to lose, on the real servers (issue #29:
"jieba mis-tags", "everyday chatter"): a done thing jieba tags as a verb ("考完驾照了") or after a one-character verb
it tags as a noun ("换 Mac 了"), a thing someone gives the user ("同事送了我一只英短": the user's, beside the first
pet), stopping the use of a tool ("Evernote 停用"), and a counted thing the speaker has ("家里有两只仓鼠").
Phrased unlike ``tests/data``; scored with ``statements_suite.score``."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from tests.integration import statements_suite

pytestmark = pytest.mark.integration

_FILLER = [{"role": "user", "text": "今天有点累"}, {"role": "assistant", "text": "嗯。"}]


def _case(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="嗯。", lang="zh")


CASES = [
    {"id": "zc-s1", "lang": "zh", "kind": "statement", "types": ["FACT", "PROFILE", "SKILL"],
     "sessions": [[*_FILLER, {"role": "user", "text": "上周考完驾照了"},
                   {"role": "assistant", "text": "嗯。"}]], "active": ["驾照"]},
    {"id": "zc-s2", "lang": "zh", "kind": "statement", "types": ["FACT", "PROFILE", "SKILL"],
     "sessions": [[*_FILLER, {"role": "user", "text": "家里有两只仓鼠，一只叫芝麻"},
                   {"role": "assistant", "text": "嗯。"}]], "active": ["仓鼠"]},
    _case("zc-u1", "update", "我一直用 Windows 做开发", "换 Mac 了，续航很顶", ["mac"], ["windows"]),
    _case("zc-u2", "update", "我平时用 Evernote 记笔记", "Evernote 停用了，笔记都迁到语雀", ["语雀"], ["evernote"]),
    _case("zc-k1", "keep", "我养了一只泰迪", "同事送了我一只英短", ["英短"], ["泰迪"]),
]


async def test_clauses_jieba_misread_are_read_by_their_shape(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="zh-clauses")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
