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
