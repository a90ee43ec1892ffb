"""Changes recognised from what the statements mean, on the real servers (issue #29 item 1: "a change is
recognised from what the new statement means and the item it contradicts, not from a list of verbs"): a newer
statement that restates an attribute with another value (one allegiance, one device in use, one dentist, one
breakfast drink, the office another moved the user to, the one who leads the user's team) closes the older item; a
second value of a many-valued attribute (another pet, another allergy, another instrument) is kept beside the
first. Phrased unlike ``tests/data/statements_v2`` (the suite's scoring, ``statements_suite.score``, is reused: an
update is right when the new value is active and the old one is never current without it; a keep when both stay)."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive.offline import parse_en
from tests.integration import statements_suite

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not parse_en.available(), reason="the English parser (nlp extra) is not installed")]

_FILLER = [{"role": "user", "text": "Can you suggest a quick lunch?"}, {"role": "assistant", "text": "Sure."}]


def _case(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="Noted.")


CASES = [
    _case("mu-1", "update", "I follow the Lakers.", "These days I'm rooting for the Celtics.", ["celtics"],
          ["lakers"]),
    _case("mu-2", "update", "My phone is a Nokia.", "I carry a Motorola now.", ["motorola"], ["nokia"]),
    _case("mu-3", "update", "My dentist is Dr Shaw.", "My new dentist is Dr Ruiz.", ["ruiz"], ["shaw"]),
    _case("mu-4", "update", "I drink black coffee at breakfast.", "I drink green tea at breakfast now.",
          ["green tea"], ["black coffee"]),
    # the user said by another to be somewhere, a new holder of the user's manager role
    _case("mu-5", "update", "I work out of our Lyon office.", "My firm transferred me to the Munich office.",
          ["munich"], ["lyon"]),
    _case("mu-6", "update", "My boss is Kim.", "Kim moved on, so Samira leads our team now.", ["samira"], ["kim"]),
    # only world knowledge tells: both phones, both clubs (``kinds``)
    _case("mu-7", "update", "I've got a Nokia.", "I'm on an iPhone 13 now.", ["iphone"], ["nokia"]),
    _case("mu-8", "update", "I'm a Chelsea man.", "These days it's Real Madrid for me.", ["real madrid"],
          ["chelsea"]),
    _case("mk-4", "keep", "I speak French.", "I'm learning German now.", ["german"], ["french"]),
    _case("mk-1", "keep", "I have a dog called Bruno.", "We also adopted a cat called Mochi.", ["mochi"], ["bruno"]),
    _case("mk-2", "keep", "I'm allergic to pollen.", "I'm allergic to nuts as well.", ["nuts"], ["pollen"]),
    _case("mk-3", "keep", "My brother lives in Cork.", "My brother is a chef now.", ["chef"], ["cork"]),
]


async def test_a_restated_attribute_supersedes_and_a_second_value_is_kept(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="meaning")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
