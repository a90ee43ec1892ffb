"""The answer after a question is found by the question's words (issue #28, session 16; on the real servers).

An assistant asks "你平时用什么键盘布局？" and the user answers "Dvorak，用了三年了": the topic's words are in the
question, the fact in the answer, which shares no word with a later question about it. Neighbour propagation gave
the answer half the asking turn's score, so the asking turn and the turn before it ranked above the answer; the turn
after an asking one now keeps the asking turn's score as its own (``recall_fragments.ANSWER_WEIGHT``). Full text only
(no embedder), so nothing but the lexical lists and propagation rank; written here, not taken from a recall set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from tests.integration.recall.test_recall import settle

pytestmark = pytest.mark.integration
T0 = datetime(2024, 7, 8, 9, 0, tzinfo=UTC)

#: (role, speaker, text, session): the asked topic, then other sessions with no word of the questions below
TURNS = [
    ("user", "yiming", "我打字特别快", "s1"),
    ("assistant", "bot", "你平时用什么键盘布局？", "s1"),
    ("user", "yiming", "Dvorak，用了三年了", "s1"),
    ("assistant", "bot", "那一定很顺手。", "s1"),
    ("user", "yiming", "明天要去杭州出差", "s2"),
    ("assistant", "bot", "Which editor do you use at work?", "s2"),
    ("user", "yiming", "Mostly vim, sometimes VS Code", "s2"),
    ("assistant", "bot", "Nice, good luck with the trip.", "s2"),
]

#: (question, the answer expected first)
QUESTIONS = [("我用什么键盘布局", "Dvorak"), ("What editor do I use?", "Mostly vim")]


@pytest.fixture
async def lexical(settings: Settings) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=None, run_projector=True) as e:
        yield e


@pytest.mark.parametrize("scope", ["thread", "tenant"])
async def test_the_answer_to_a_question_ranks_first_for_the_question_s_words(lexical: Engine, scope: str) -> None:
    client = lexical.client("answers")
    last = 0
    for i, (role, who, text, session) in enumerate(TURNS):
        ack = await client.record_turn("chat", role, text, user_id=who, session_id=session,  # type: ignore[arg-type]
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    await settle(lexical, last)
    wrong = []
    for question, answer in QUESTIONS:
        res = await client.recall(question, thread="chat" if scope == "thread" else None, k=3)
        if not res.hits or answer not in res.hits[0].text:
            wrong.append((question, [h.text for h in res.hits]))
    assert not wrong, wrong


async def test_a_statement_passes_only_the_half_of_propagation(lexical: Engine) -> None:
    """A turn that does not ask gives its neighbours half its score, as before: the asked turn stays first."""
    client = lexical.client("statements")
    last = 0
    for i, text in enumerate(["我最近在用 Dvorak 键盘布局。", "那一定很顺手。", "明天要去杭州出差"]):
        ack = await client.record_turn("chat", "user", text, user_id="yiming", session_id="s1",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    await settle(lexical, last)
    res = await client.recall("键盘布局", thread="chat", k=3)
    assert res.hits and "Dvorak" in res.hits[0].text, [h.text for h in res.hits]
