"""An unsure change kept in the user's words, on the real servers (issue #29 item 1: "a context never states an old
value as current without the newer statement beside it", ``engine.derive.offline.fold``): a newer statement that
says how things are now on the topic of an older item, when no rule names the attribute and its values (or no rule
types the newer sentence at all), supersedes the older item with one that keeps its text and the newer words, dated;
an additive statement keeps both items; an unsure sentence on no item's topic becomes no memory unless it states
something lasting (``offline.verbatim_en``, kept in the user's words on its own).
Phrased unlike ``tests/data/statements_v2`` (the suite's scoring, ``statements_suite.score``, is reused)."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive.offline import kinds, parse_en
from tests.integration import statements_suite

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (parse_en.available() and kinds.preload()),
                                 reason="the English parser (nlp extra) or the offline MiniLM (embed) is missing")]

_FILLER = [{"role": "user", "text": "What's a good podcast for a long drive?"}, {"role": "assistant", "text": "Sure."}]


def _case(cid: str, kind: str, old: str, new: str, active: list[str], before: list[str]) -> dict[str, Any]:
    return statements_suite.two_session_case(cid, kind, old, new, active, before, filler=_FILLER, ack="Noted.")


CASES = [
    _case("uu-1", "update", "My usual tipple is a pint of bitter.",
          "it's mostly red wine for me these days, the beer was doing my stomach no favours", ["red wine"],
          ["bitter"]),
    _case("uu-2", "update", "I play squash every Monday.", "my wrist gave out, so I took up yoga instead.",
          ["yoga"], ["squash"]),
    _case("uu-3", "update", "I'm a morning person, up at 5 every day.",
          "Honestly I sleep in till 10 most days now that I'm retired.", ["10"], ["5"]),
    # no rule types the newer sentence: it is kept only as the newer words of the item on its topic
    _case("uu-4", "update", "I stream all my music through Deezer.",
          "Tidal has all my playlists these days, the sound is miles better.", ["tidal"], ["deezer"]),
    _case("uk-1", "keep", "We have a tabby cat called Nutmeg.", "We got a budgie as well.",
          ["budgie"], ["nutmeg"]),
]


async def test_an_unsure_change_keeps_the_users_words_beside_the_old_text(engine: Engine) -> None:
    res = await statements_suite.run_suite(engine, CASES, tenant="unsure")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"] if not r["ok"]]
    assert not misses, misses
    folded = [tx for r in res["cases"] if r["id"] == "uu-2" for tx in r["active"] if "yoga" in tx]
    # the old statement and the newer words, dated, in one item typed as the old one was
    assert any("squash" in tx and "Later, on " in tx and "took up yoga instead" in tx for tx in folded), folded


async def test_an_unsure_sentence_on_no_items_topic_is_kept_only_when_it_states_something_lasting(
        engine: Engine) -> None:
    # session 18 (issue #29 item 1, ``offline.verbatim_en``): a lasting statement no rule typed is kept in the
    # user's words on its own (it was dropped before); a remark of the moment with the same aspect still is not
    case = _case("uu-5", "statement", "I'm allergic to penicillin.",
                 "Tidal has all my playlists these days, the sound is miles better.", ["penicillin"], [])
    moment = _case("uu-6", "statement", "I'm allergic to penicillin.",
                   "it's so much quieter in the office now, everyone's off.", ["penicillin"], [])
    res = await statements_suite.run_suite(engine, [{**c, "kind": "update", "stale": ["nothing-here"]}
                                                    for c in (case, moment)], tenant="unsure2")
    lasting, passing = res["cases"][0]["active"], res["cases"][1]["active"]
    assert any("tidal" in t.lower() and "penicillin" not in t.lower() for t in lasting), lasting
    assert not any("quieter" in t.lower() for t in passing), passing
    assert any("penicillin" in t.lower() for t in lasting), lasting


async def test_a_new_value_of_one_attribute_folds_every_older_item_of_it(engine: Engine) -> None:
    """session 26 (``offline.same_slot``): two statements of one single-valued attribute that share no word, frame
    or cue ("takes the 12 bus to work" / "picked up my first car"), a change told as the day's news that no rule
    types, and a Chinese change beside a question, each end with the old value never current alone; a question on
    the attribute and news on no older attribute become no memory."""
    cases = [
        _case("us-1", "update", "I take the 12 bus to work every day, it's always late.",
              "picked up my first car last week, a used Honda Fit. what oil should I use?", ["honda fit"],
              ["12 bus"]),
        _case("us-2", "update", "I'm a junior developer at a fintech startup, still learning the ropes",
              "Officially a team lead as of this morning's review, how do I run a 1:1?", ["team lead"], ["junior"]),
        _case("us-3", "update", "我在一家银行做柜员，天天数钱", "奶茶店开张一个礼拜了，怎么在小红书上推广", ["奶茶店"],
              ["柜员"]),
    ]
    alone = _case("us-4", "statement", "I'm allergic to penicillin.",
                  "Officially a team lead as of this morning's review, how do I run a 1:1?", ["penicillin"], [])
    asked = _case("us-5", "statement", "I live in Bristol, been here 8 years.",
                  "what's the best way to deal with damp walls in an old flat?", ["bristol"], [])
    res = await statements_suite.run_suite(engine, [*cases, alone, asked], tenant="sameslot")
    misses = [f"{r['id']}: {r['why']} {r['active']}" for r in res["cases"][:3] if not r["ok"]]
    assert not misses, misses
    by_id = {r["id"]: r["active"] for r in res["cases"]}
    assert not any("team lead" in t.lower() for t in by_id["us-4"]), by_id["us-4"]  # news beside nothing: dropped
    assert any("bristol" in t.lower() for t in by_id["us-5"]), by_id["us-5"]
    assert not any("damp" in t.lower() and "bristol" in t.lower() for t in by_id["us-5"]), by_id["us-5"]
    bus = [t for t in by_id["us-1"] if "honda fit" in t.lower()]
    assert any("12 bus" in t and "Later, on " in t for t in bus), bus  # the older words kept beside, dated
