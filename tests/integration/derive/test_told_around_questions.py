"""What people tell while asking, on the real servers (issue #29 item 1; session 19's heldout_s17 / s18 dev classes):
a statement ended by an emoji before a question, an amount someone else sets for the user (a landlord, a doctor),
a new value in the sentence after an ending one, an event of the user's life that ends a state, a named thing of
the user's inside a question or after "mine"; and turns that must stay no memory of the user's. Phrased unlike
``tests/data`` (the suite's scoring is reused)."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive.offline import kinds, parse_en
from tests.integration import statements_suite

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (parse_en.available() and kinds.preload()),
                                 reason="the English parser (nlp extra) or the offline MiniLM (embed) is missing")]

_FILLER = [{"role": "user", "text": "What's a decent podcast about history?"}, {"role": "assistant", "text": "Sure."}]
_TYPES = ["PROFILE", "FACT", "PREFERENCE", "SKILL"]


def _one(cid: str, kind: str, text: str, **values: Any) -> dict[str, Any]:
    turns = [*_FILLER, {"role": "user", "text": text}, {"role": "assistant", "text": "Sure."}]
    return {"id": cid, "lang": "en", "kind": kind, "types": _TYPES, "sessions": [turns], "active": [], **values}


def _two(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="Sure.")


CASES = [
    _one("tq-s1", "statement", "how often should I descale my Sage Barista Express?", active=["barista express"]),
    _one("tq-s2", "statement", "signed up for a half marathon in April 😅 how many runs a week should I do?",
         active=["half marathon"]),
    _one("tq-s3", "statement", "Do Garmin Forerunners lose GPS in tunnels? Mine drops out on every bridge.",
         active=["forerunner"]),
    _two("tq-u1", "update", "My monthly rent is €700 for a studio.",
         "the landlord just raised it to €780 from March 😤 is that even allowed?", ["780"], ["700"]),
    _two("tq-u2", "update", "I take 50 mg of sertraline every morning.",
         "my psychiatrist bumped me up to 100 mg. any tips for the side effects?", ["100 mg"], ["50 mg"]),
    _two("tq-u3", "update", "My girlfriend Lena is a nurse in Graz.",
         "Lena and I got married on Saturday 💍 where should we go for a winter honeymoon?", ["married"],
         ["girlfriend"]),
    _two("tq-u4", "update", "I drive a Renault Clio.",
         "Sold the Clio in May. The Hyundai Kona is so much comfier on long drives", ["kona"], ["clio"]),
    _two("tq-k1", "keep", "I'm allergic to cats.", "turns out I'm also allergic to birch pollen 🤧 any antihistamines?",
         ["birch pollen"], ["cats"]),
    _one("tq-n1", "none", "my neighbour's rent went up to $3000 😬 crazy right?", absent=["user's rent"]),
    _one("tq-n2", "none", "what should I get my Mum for her 70th?", absent=["user has a mum"]),
    _one("tq-n3", "none", "ugh thursday already 😩 what's a quick lunch?", absent=["thursday"]),
]


async def test_what_people_tell_while_asking_is_kept_and_chatter_is_not(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="told-asking")
    misses = [f"{r['id']}: {r['why']} {r['active'][:3]}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
