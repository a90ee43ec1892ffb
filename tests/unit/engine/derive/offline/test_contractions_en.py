"""Contractions written out for the parser (``engine.derive.offline.contractions_en``): a first-person or negated
contraction typed without its apostrophe ("im in auckland", "ive got two kids", "i dont eat pork") is read as the
contraction, so the user's statement is rendered whole ("User is in auckland", not "Userms in auckland")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memengine.engine.derive.offline import Turn, extract_memories, gate, parse_en, quarantined
from memengine.engine.derive.offline.contractions_en import with_apostrophes

T = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not parse_en.available(), reason="the nlp extra (spaCy) is not installed")


def _kept(text: str) -> list[tuple[str, str]]:
    out = extract_memories([Turn(event_id="e1", seq=1, role="user", user_id="u1", text=text, occurred_at=T)])
    return [(c.memory_type, c.text) for c in out if not quarantined(gate(c, turn_text=text))]


@pytest.mark.parametrize(("bare", "written"), [("im in auckland", "I'm in auckland"), ("Im from ohio", "I'm from ohio"),
                                               ("im a nurse", "I'm a nurse"),
                                               ("honestly im vegan", "honestly I'm vegan"),
                                               ("ive got two kids", "I've got two kids"),
                                               ("ive lived in Leeds for years", "I've lived in Leeds for years")])
@pytest.mark.parametrize("tail", ["", " so would need to drive down south", " lol"])
def test_a_contraction_without_its_apostrophe_is_read_as_with_it(bare: str, written: str, tail: str) -> None:
    kept = _kept(bare + tail)
    assert kept == _kept(written + tail), kept
    assert kept and not any(text.startswith(("Userm", "Userv")) for _, text in kept), kept


@pytest.mark.parametrize(("text", "out"), [("im in auckland", "I'm in auckland"),
                                           ("i dont eat pork", "i don't eat pork"),
                                           ("Ive been there", "I've been there"), ("the film Imogen liked", None),
                                           ("a cant hook", None), ("IM me later", None), ("wont", None)])
def test_only_a_contraction_gets_its_apostrophe(text: str, out: str | None) -> None:
    assert with_apostrophes(text) == (out or text)
