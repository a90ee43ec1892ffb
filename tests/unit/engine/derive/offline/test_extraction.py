"""``offline.extraction``: how a turn is cut into the sentences that are read (issue #29)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, parse_en

pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the English parser is the nlp extra")


def _texts(text: str) -> list[str]:
    turn = Turn(event_id="e1", seq=1, role="user", user_id="u", text=text,
                occurred_at=datetime(2026, 11, 24, tzinfo=UTC))
    return [c.text for c in extract_memories([turn]) if not c.data.get("quarantined")]


@pytest.mark.parametrize(("text", "value"), [
    ("ok my credit score is up to 720 now 🎉 time to refinance?", "720"),
    ("just got diagnosed with hypothyroidism too 🙄 does levothyroxine interact with inhalers?", "hypothyroidism"),
    ("bought a Ducati Monster for the summer weekends 😎 do I need special insurance?", "Ducati"),
    ("the allergist says I'm also allergic to latex now 🙄 what household stuff should I avoid?", "latex"),
])
def test_a_statement_ended_by_a_pictograph_before_a_question_is_read(text: str, value: str) -> None:
    # heldout_s17 / s18 dev: the emoji stood where a full stop would, so the question after it made the whole
    # run a question and the statement became no memory
    assert any(value in t for t in _texts(text)), _texts(text)


def test_a_question_after_a_pictograph_stays_a_question() -> None:
    assert _texts("ugh monday again 😩 what's a quick breakfast?") == []
