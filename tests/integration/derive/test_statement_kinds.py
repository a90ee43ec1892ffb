"""What a statement is decides its type and lifetime, not a word in it (issue #29 defects 1 and 2), on the real
servers, offline deriver: a lasting fact said beside a mood of the moment keeps the fact's lifetime (the mood is its
own clause), and getting somewhere by bike or on foot is a routine, not a skill (practising an activity is)."""

from __future__ import annotations

import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.derive.offline import parse_en
from tests.integration.poison import drained

pytestmark = pytest.mark.integration


async def _active(engine: Engine, user: str) -> list[tuple[str, str, str]]:
    rows = await engine.pool.fetch("SELECT type, text, priority FROM memory_items WHERE user_id = $1 AND status ="
                                   " 'active'", user)
    return [(r["type"], r["text"], r["priority"]) for r in rows]


#: a lasting fact and a mood in one sentence, in several shapes: a participle, a verbless exclamation, a conjoined
#: predicate, a second clause, a dash
FACT_AND_MOOD = [("I turned 30 yesterday, feeling old!", "30"), ("Got engaged last weekend, so happy!", "engaged"),
                 ("I'm 29 and honestly so tired of dating apps.", "29"),
                 ("Just turned 41 and I feel ancient.", "41"),
                 ("I started at Deloitte on Monday - nervous but excited.", "Deloitte")]


async def test_a_lasting_fact_beside_a_mood_keeps_its_lifetime(engine: Engine) -> None:
    if not parse_en.available():
        pytest.skip("the English parser (nlp extra) reads clauses")
    c = engine.client()
    for i, (text, _value) in enumerate(FACT_AND_MOOD):
        await c.record_turn(f"mood-{i}", "user", text, user_id=f"mood-{i}")
    await drained(engine)
    for i, (text, value) in enumerate(FACT_AND_MOOD):
        items = await _active(engine, f"mood-{i}")
        held = [it for it in items if value.lower() in it[1].lower()]
        assert held, (text, items)
        # the fact's lifetime (age, engagement, employer: lasting), not the mood's day
        assert all(p == "PERMANENT" for _t, _x, p in held), (text, held)
        assert all(t in ("PROFILE", "FACT") for t, _x, _p in held), (text, held)


ROUTINES = [("I mostly cycle to the office.", "cycle"), ("I cycle to work most days, rain or shine.", "cycle"),
            ("I swim to the pier and back most mornings.", "pier"),
            ("I usually take the train into the city.", "train")]
SKILLS = [("I climb at a bouldering gym three times a week.", "boulder"), ("I've been learning to sail.", "sail")]


async def test_a_commute_is_a_routine_and_a_practised_activity_a_skill(engine: Engine) -> None:
    if not parse_en.available():
        pytest.skip("the English parser (nlp extra) reads clauses")
    c = engine.client()
    for i, (text, _v) in enumerate(ROUTINES + SKILLS):
        await c.record_turn(f"way-{i}", "user", text, user_id=f"way-{i}")
    await drained(engine)
    for i, (text, value) in enumerate(ROUTINES + SKILLS):
        held = [it for it in await _active(engine, f"way-{i}") if value in it[1].lower()]
        assert held, text
        types = {t for t, _x, _p in held}
        if (text, value) in SKILLS:
            assert "SKILL" in types, (text, held)
        else:
            assert types <= {"FACT", "PREFERENCE", "PROFILE"}, (text, held)
