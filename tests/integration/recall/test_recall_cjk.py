"""Recall in Chinese and mixed Chinese/English on the real servers (issue #28 item 2): the lexical lists segment
CJK text (``engine.read.segment``), in the fold and in the question, so 花生 matches 我对花生过敏; mixed turns match
on both scripts; the read model stays exactly a fold of the log (``verify``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.embedding.models import MiniLMEmbedder, minilm_available
from memengine.engine.ops import rebuild as rb
from tests.paths import DATA

pytestmark = pytest.mark.integration
T0 = datetime(2024, 3, 2, 9, 12, tzinfo=UTC)

#: A Chinese thread: the allergy among chatter, and the turn that ranked first for "花生过敏" before (issue #28).
CHINESE = [
    ("王磊", "早上好，今天杭州又下雨了，烦"),
    ("王磊", "以后请一直用中文回答我"),
    ("王磊", "帮我想想午饭吃啥，公司楼下就那几家"),
    ("王磊", "沙拉那家有坚果碎，我不能吃，我对花生过敏，吃了会起疹子"),
    ("王磊", "那就面馆吧。对了我们组最近在做一个订单系统"),
    ("王磊", "我们讨论一下 PostgreSQL 的表设计吧，订单表要不要按月分区"),
    ("王磊", "I also use Redis for caching the product catalog"),
    ("王磊", "晚上要喂猫，它叫豆豆，是只橘猫"),
]


async def _record(engine: Engine, tenant: str) -> int:
    client = engine.client(tenant)
    last = 0
    for i, (who, text) in enumerate(CHINESE):
        # one session per turn: no neighbour window or propagation can carry a turn to the top for another's words
        ack = await client.record_turn("chat", "user", text, user_id=who, session_id=f"s{i}",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    return last


async def _settle(engine: Engine, seq: int) -> None:
    from tests.integration.recall.test_recall import settle

    await settle(engine, seq)


async def _top(engine: Engine, tenant: str, query: str, k: int = 3, thread: str | None = "chat") -> list[str]:
    res = await engine.client(tenant).recall(query, thread=thread, k=k)
    return [h.text for h in res.hits]


@pytest.fixture
async def lexical(settings: Settings) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=None, run_projector=True) as e:
        yield e


QUERIES = [
    ("花生过敏", "我对花生过敏"),
    ("我对什么过敏", "我对花生过敏"),
    ("用户对花生过敏吗？", "我对花生过敏"),
    ("表设计", "PostgreSQL 的表设计"),
    ("PostgreSQL", "PostgreSQL 的表设计"),
    ("PostgreSQL的表设计", "PostgreSQL 的表设计"),  # no space between the scripts in the question
    ("postgres 分区", "PostgreSQL 的表设计"),
    ("Redis 缓存", "Redis for caching"),
    ("橘猫叫什么名字", "豆豆"),
    ("用中文回答", "用中文回答我"),
]


@pytest.mark.parametrize("scope", ["thread", "tenant"])
async def test_chinese_words_match_without_an_embedder(lexical: Engine, scope: str) -> None:
    last = await _record(lexical, "zh")
    await _settle(lexical, last)
    for query, expected in QUERIES:
        top = await _top(lexical, "zh", query, thread="chat" if scope == "thread" else None)
        assert top and expected in top[0], (query, top)


@pytest.mark.parametrize(("turns", "questions"), [("s2tw", None), (None, "s2tw")])
async def test_a_question_in_one_script_finds_a_turn_in_the_other(lexical: Engine, turns: str | None,
                                                                  questions: str | None) -> None:
    """A Taiwan user's turns in traditional characters, asked about in simplified ones (an agent's question, a
    search box), and the reverse: the lexical lists read the question's words in both scripts
    (``crosslingual.script_variants``)."""
    import opencc

    def conv(text: str, table: str | None) -> str:
        return opencc.OpenCC(table).convert(text) if table else text

    tenant = f"tw-{turns or 'zh'}"
    client = lexical.client(tenant)
    last = 0
    for i, (who, text) in enumerate(CHINESE):
        ack = await client.record_turn("chat", "user", conv(text, turns), user_id=who, session_id=f"s{i}",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    await _settle(lexical, last)
    # every word of these is written differently in the two scripts (過敏, 訂單系統, 餵貓, 午飯)
    for query, expected in [("过敏", "花生"), ("订单系统", "订单系统"), ("喂猫", "豆豆"), ("午饭", "午饭")]:
        top = await _top(lexical, tenant, conv(query, questions))
        assert top and conv(expected, turns) in top[0], (conv(query, questions), top)


async def test_chinese_words_match_with_minilm(settings: Settings) -> None:
    if not minilm_available():
        pytest.skip("memengine[embed] not installed")
    async with lifespan(settings, embedder=MiniLMEmbedder(), run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        res = await engine.client("zh").recall("花生过敏", thread="chat", k=3)
        assert res.mode == "hybrid" and "我对花生过敏" in res.hits[0].text, [h.text for h in res.hits]
        top = await _top(engine, "zh", "PostgreSQL的表设计")
        assert "PostgreSQL 的表设计" in top[0], top


async def test_verify_is_exact_after_a_chinese_ingest(lexical: Engine) -> None:
    last = await _record(lexical, "zh")
    await _settle(lexical, last)
    report = await rb.verify(lexical, ["vectors"])
    assert report.ok, report.differing


async def test_english_configuration_keeps_cjk_words_verbatim(lexical: Engine) -> None:
    """The claim of ``projections.segment``: the english configuration leaves a cut CJK word as the simple one would
    (so one tsvector holds both), on every word of the recall set's turns."""
    import json

    from memengine.projections.segment import CJK_RUN, words

    root = DATA / "zh_recall"
    ws = sorted({w for p in root.glob("*/*.json") for s in json.loads(p.read_text(encoding="utf-8")).values()
                 if isinstance(s, list) for t in s if isinstance(t, dict) and "text" in t
                 for run in CJK_RUN.findall(t["text"]) for w in words(run)})
    assert len(ws) > 500
    differ = await lexical.pool.fetchval(
        "SELECT count(*) FROM unnest($1::text[]) w"
        " WHERE to_tsvector('english', w)::text IS DISTINCT FROM to_tsvector('simple', w)::text"
        "    OR to_tsvector('simple', w)::text <> quote_literal(w) || ':1'", ws)
    assert differ == 0


async def test_multilingual_use_embedder_option(settings: Settings) -> None:
    """``MEMENGINE_EMBEDDER=use`` (issue #28 item 1): the multilingual USE embeds the rows and the question, so an
    English question finds the Chinese statement in hybrid mode."""
    import msgspec

    from memengine.engine.embedding.models import USE_NAME, UseEmbedder, build_embedder, use_available

    if not use_available():
        pytest.skip("memengine[embed-multilingual] not installed")
    emb = build_embedder(msgspec.structs.replace(settings, embedder="use"))
    assert isinstance(emb, UseEmbedder) and emb.name == USE_NAME and emb.dim == 512
    async with lifespan(settings, embedder=emb, run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        res = await engine.client("zh").recall("What food is the user allergic to?", thread="chat", k=3)
        assert res.mode == "hybrid" and res.embedder == USE_NAME
        assert any("我对花生过敏" in h.text for h in res.hits), [h.text for h in res.hits]


async def test_chinese_memory_items_are_found_by_a_chinese_word(lexical: Engine) -> None:
    """Memory items' full text segments CJK like the recall rows (schema 0044, ``memory_items.lex_text``): 花生 finds
    the item 我对花生过敏 (one token for PostgreSQL's parser before), 橘猫 the cat, a mixed query both scripts; the
    user-memory ranking reads the same statement, and the read models stay a fold of the log."""
    client = lexical.client("zh")
    for text in ("我对花生过敏，吃了会起疹子", "我养了一只橘猫，它叫豆豆", "我们组在做订单系统，用 PostgreSQL 存订单",
                 "I run every morning before work"):
        await client.remember(text, user="王磊", priority="LONG_TERM", importance=0.3)
    await _settle(lexical, 0)
    from tests.integration.poison import drained

    await drained(lexical)
    for query, expected in (("花生", "花生过敏"), ("花生过敏", "花生过敏"), ("橘猫叫什么", "橘猫"),
                            ("订单 database", "订单系统"), ("PostgreSQL", "订单系统"),
                            ("morning run", "every morning")):
        res = await client.recall(query, user="王磊", sources=["memories"], k=3)
        assert res.hits and expected in res.hits[0].text, (query, [h.text for h in res.hits])
    assert not (await client.recall("天气", user="王磊", sources=["memories"], k=3)).hits
    report = await rb.verify(lexical)
    assert report.ok, report.differing


async def test_minilm_plus_use_finds_across_languages(settings: Settings) -> None:
    """``MEMENGINE_EMBEDDER=minilm+use`` (issue #28 item 1, session 13): one composite vector space, MiniLM and the
    multilingual USE, so a Chinese question finds an English statement and an English question a Chinese one; the
    store records the composite as its one model."""
    import msgspec

    from memengine.engine.embedding.composite import CompositeEmbedder
    from memengine.engine.embedding.models import USE_NAME, build_embedder, use_available
    from memengine.engine.embedding.registry import active_model

    if not (use_available() and minilm_available()):
        pytest.skip("memengine[embed] and memengine[embed-multilingual] not installed")
    emb = build_embedder(msgspec.structs.replace(settings, embedder="minilm+use"))
    assert isinstance(emb, CompositeEmbedder) and emb.dim == 384 + 512 and USE_NAME in emb.name
    async with lifespan(settings, embedder=emb, run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        for question, evidence in (("我用什么做产品目录的缓存？", "Redis for caching"),
                                   ("What food is the user allergic to?", "我对花生过敏"),
                                   ("What is the cat called?", "豆豆")):
            res = await engine.client("zh").recall(question, thread="chat", k=3)
            assert res.mode == "hybrid" and res.embedder == emb.name
            assert any(evidence in h.text for h in res.hits), (question, [h.text for h in res.hits])
        active = await active_model(engine.pool)
        assert active["model"] == emb.name and active["dim"] == 896 and active["checksum"] == emb.checksum()


async def test_rebuild_to_minilm_plus_use_switches_a_populated_store(settings: Settings) -> None:
    """``memengine rebuild vectors --model minilm+use`` on a MiniLM store (issue #28 items 1 and 3): the composite
    becomes the store's one model, an English question then finds the Chinese statement, ``verify`` is exact, and a
    start with other fusion weights (same name, other vectors) is refused as a rebuild, never a mix."""
    import msgspec

    from memengine.engine.embedding.composite import CompositeEmbedder, mostly_latin
    from memengine.engine.embedding.models import UseEmbedder, embedder_for_model, use_available
    from memengine.engine.embedding.registry import EmbeddingModelMismatch
    from memengine.engine.embedding.switch import switch_model

    if not (use_available() and minilm_available()):
        pytest.skip("memengine[embed] and memengine[embed-multilingual] not installed")
    async with lifespan(settings, embedder=MiniLMEmbedder(), run_projector=True) as engine:
        last = await _record(engine, "zh")
        await _settle(engine, last)
        both = embedder_for_model(msgspec.structs.replace(settings, embedder="minilm+use"), "minilm+use")
        report = await switch_model(engine.pool, both)
        assert report.previous == "all-MiniLM-L6-v2" and report.model == both.name and report.vectors >= len(CHINESE)
    async with lifespan(settings, embedder=both, run_projector=True) as engine:
        res = await engine.client("zh").recall("What food is the user allergic to?", thread="chat", k=3)
        assert res.mode == "hybrid" and res.embedder == both.name
        assert any("我对花生过敏" in h.text for h in res.hits), [h.text for h in res.hits]
        report_v = await rb.verify(engine)
        assert report_v.ok, report_v.differing
    other = CompositeEmbedder([MiniLMEmbedder(), UseEmbedder()], [0.8, 0.2], [mostly_latin, None])
    with pytest.raises(EmbeddingModelMismatch, match="weights"):
        async with lifespan(settings, embedder=other):
            pass
