"""Where the user's home is, named in passing (issue #29 item 1, ``engine.derive.offline.homes_en``): a home of the
user's with "in" + a place is where they live, whatever the sentence is about, so a newer home elsewhere supersedes
it; an old, holiday or someone else's home is not. Phrased unlike the suites' (session 16)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import (
    ExistingItem,
    Turn,
    decide_merge,
    extract_memories,
    gate,
    parse_en,
    quarantined,
)
from memengine.engine.derive.offline.homes_en import home_of

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


@pytest.mark.parametrize(("text", "place"), [
    ("The tram from my apartment in Zagreb was packed this morning.", "Zagreb"),
    ("Our house in Aberdeen is freezing, any tips for draughts?", "Aberdeen"),
    ("User's flat in Lisbon has a tiny kitchen.", "Lisbon"),
])
def test_a_home_of_the_users_named_in_passing_is_where_they_live(text: str, place: str) -> None:
    assert home_of(text) == {"lives_in": place}


@pytest.mark.parametrize("text", ["My old flat in Zagreb was tiny.", "Our holiday cottage in Cornwall is let out.",
                                  "My sister's flat in Zagreb is lovely.", "Their flat in Paris is lovely.",
                                  "We're viewing a new flat in Split on Friday."])
def test_an_old_holiday_new_or_anothers_home_is_not(text: str) -> None:
    assert home_of(text) == {}


def test_a_newer_home_elsewhere_supersedes_the_home_named_in_passing() -> None:
    old = "The tram from my apartment in Zagreb was packed this morning."
    new = "Finally got the keys to our apartment in Split last weekend!"

    def kept(text: str) -> list:  # type: ignore[type-arg]
        turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
        return [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]

    olds = [ExistingItem(f"m{i}", c.memory_type, c.text, "u1") for i, c in enumerate(kept(old))]
    assert olds, old
    actions = [decide_merge(c, olds).action for c in kept(new)]
    assert "replace" in actions, actions
