"""Who the user lives with is one attribute however it is said (issue #29 item 1, ``engine.derive.offline.household``):
a new household supersedes the old one; where the user lives stays its own attribute; an outing with someone or a
short stay is no household. Seed 002 §2.2 "冲突的记忆 → 保留最新". Pairs are phrased unlike the suites'."""

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

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _closed(old: str, new: str) -> tuple[set[str], set[str], list[str]]:
    def kept(text: str) -> list:  # type: ignore[type-arg]
        turn = Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)
        return [c for c in extract_memories([turn]) if not quarantined(gate(c, turn_text=text))]

    olds = [ExistingItem(f"m{i}", c.memory_type, c.text, "u1") for i, c in enumerate(kept(old))]
    assert olds, old
    cands = kept(new)
    closed = {t for c in cands for d in [decide_merge(c, olds)] if d.action == "replace" for t in d.target_ids}
    return {o.memory_id for o in olds}, closed, [c.text for c in cands]


@pytest.mark.parametrize(("old", "new"), [
    ("I still live with my mom and dad.", "Finally got my own flat in Salford!"),
    ("I live with my parents in Lyon.", "I moved in with my boyfriend last month."),
    ("I share a house with three other students.", "I live on my own these days."),
    ("I live by myself.", "My partner and I... well, I live with Chris now."),
])
def test_a_new_household_supersedes_the_old(old: str, new: str) -> None:
    olds, closed, texts = _closed(old, new)
    assert closed == olds, texts


@pytest.mark.parametrize(("old", "new"), [
    ("I live with my parents.", "I'm staying with friends this weekend."),
    ("I live alone.", "I went hiking with my brother on Sunday."),
])
def test_a_short_stay_or_an_outing_is_no_new_household(old: str, new: str) -> None:
    _, closed, texts = _closed(old, new)
    assert not closed, texts


def test_the_household_is_read_with_its_words() -> None:
    assert parse_en.slots("I still live with my mum and dad.")["household"] == "parents"
    assert parse_en.slots("I live alone.")["household"] == "alone"
