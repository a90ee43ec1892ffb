"""An English-only embedder's dense list ranks no mostly-CJK row for a mostly-CJK question (issue #28, session 18;
on the real servers).

all-MiniLM-L6-v2 (the default) reads every Chinese text as about the same point (hubness: unrelated Chinese turns at
cosine 0.5-0.75), so for a Chinese question the Chinese rows filled the top of its dense list in an order that says
nothing, above the English or mixed turn the question is about. The embedder here is a fixed table with that shape
(every mostly-CJK text at cosine 0.9 of the question, the English evidence at 0.6, other English turns at 0), and
the question shares no word (nor dictionary translation) with any turn, so only the dense list ranks.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.read.recall_fragments import mostly_cjk_sql
from memengine.projections.segment import mostly_cjk
from tests.integration.recall.test_recall import settle

pytestmark = pytest.mark.integration
T0 = datetime(2024, 3, 2, 9, 0, tzinfo=UTC)

QUESTION_ZH = "鼹鼠挖洞的事"  # no character of any turn; its glosses (mole, dig, hole) match none either
QUESTION_EN = "zqxj vlorp"  # no lexeme of any turn, no dictionary word
EVIDENCE = "Ottawa was sunny and cold today"
ENGLISH = ["Let us meet at the station", "The report is due on Friday"]
CHINESE = ["今天加班到九点", "周末想去看电影", "最近在学弹钢琴", "我家的狗叫旺财", "晚饭吃了饺子"]


class HubEmbedder:
    """Unit vectors by the text's shape: the questions [1, 0]; any other mostly-CJK text the hub [0.9, 0.436]; the
    evidence [0.6, 0.8]; other English text [0, 1]. ``english_only`` as ``MiniLMEmbedder`` (or not: a multilingual
    model, whose CJK cosines mean something)."""

    dim = 2

    def __init__(self, english_only: bool) -> None:
        self.english_only = english_only
        self.name = f"test-hub-{int(english_only)}"

    def checksum(self) -> str:
        return "sha256:" + self.name

    def _one(self, text: str) -> list[float]:
        # the question, or its English reading (an english_only model reads a Chinese question's glosses:
        # recall_query.dense_query), which names the mole too
        if "鼹鼠" in text or "zqxj" in text or "mole" in text.split():
            return [1.0, 0.0]
        if mostly_cjk(text):
            return [0.9, 0.4358899]
        return [0.6, 0.8] if "Ottawa" in text else [0.0, 1.0]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]


async def _engine(settings: Settings, english_only: bool) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=HubEmbedder(english_only), run_projector=True) as e:  # type: ignore[arg-type]
        yield e


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[Engine]:
    async for e in _engine(settings, True):
        yield e


async def _record(engine: Engine, tenant: str) -> None:
    client = engine.client(tenant)
    last = 0
    for i, text in enumerate([*CHINESE, *ENGLISH, EVIDENCE]):
        # one session per turn: no window or propagation joins two turns
        ack = await client.record_turn("chat", "user", text, user_id="lin", session_id=f"s{i}",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    await settle(engine, last)


@pytest.mark.parametrize("scope", ["thread", "tenant"])
async def test_a_chinese_question_is_not_ranked_against_chinese_rows_by_an_english_model(engine: Engine,
                                                                                        scope: str) -> None:
    await _record(engine, "hub")
    res = await engine.client("hub").recall(QUESTION_ZH, thread="chat" if scope == "thread" else None, k=3)
    top = [h.text for h in res.hits]
    assert res.mode == "hybrid" and top and EVIDENCE in top[0], top


async def test_the_context_query_part_ranks_the_same_way(engine: Engine) -> None:
    """``Recaller.thread_ranked`` (the context's query part) builds its statement with the same rule."""
    await _record(engine, "ctx")
    rows = await engine.service.recaller.thread_ranked(
        "ctx", "chat", QUESTION_ZH, 3, ", h AS (SELECT d.turn_text FROM top t JOIN memory_vectors d ON d.tenant_id"
        " = $1 AND d.seq = t.seq ORDER BY t.score DESC, t.seq) SELECT turn_text FROM h")
    assert rows and EVIDENCE in rows[0]["turn_text"], [r["turn_text"] for r in rows]


async def test_the_wide_statement_leaves_the_chinese_candidates_out(engine: Engine) -> None:
    """Tenant-wide recall over a large tenant (``recall_sql(wide=True)``, run directly: the tenant here is small)."""
    from memengine.engine.embedding.models import vec_literal
    from memengine.engine.read.recall import WIDE_DENSE, recall_sql
    from memengine.engine.read.recall_fragments import WHOLE

    await _record(engine, "wide")
    table = await engine.service.recaller._emb_table()
    qvec = vec_literal([1.0, 0.0])
    async with engine.pool.acquire() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {WIDE_DENSE}")
        rows = await conn.fetch(recall_sql(table, thread=False, wide=True, lists=WHOLE, cjk_out=True), "wide", None,
                                None, None, None, QUESTION_ZH, qvec, 3, T0 + timedelta(days=1), [1.0, 0.0, 0.0],
                                30.0, 0.5)
    assert rows and EVIDENCE in rows[0]["turn_text"], [r["turn_text"] for r in rows]


async def test_an_english_question_keeps_the_chinese_rows(engine: Engine) -> None:
    """Only CJK x CJK pairs leave the list: an English question's cosine with a Chinese row is kept (measured: it
    still carries the row's Latin words), so here the hub rows, closest, come first."""
    await _record(engine, "en")
    res = await engine.client("en").recall(QUESTION_EN, thread="chat", k=3)
    assert res.hits and res.hits[0].text.split(": ", 1)[1] in CHINESE, [h.text for h in res.hits]


async def test_a_multilingual_embedder_keeps_the_chinese_rows(settings: Settings) -> None:
    """An embedder not marked ``english_only`` (USE, e5, a remote model): its CJK cosines mean something, the list
    is as before."""
    async for engine in _engine(settings, False):
        await _record(engine, "ml")
        res = await engine.client("ml").recall(QUESTION_ZH, thread="chat", k=3)
        assert res.hits and res.hits[0].text.split(": ", 1)[1] in CHINESE, [h.text for h in res.hits]


async def test_the_sql_rule_is_the_python_rule(engine: Engine) -> None:
    """``recall_fragments.mostly_cjk_sql`` (PostgreSQL's regular expressions) and ``segment.mostly_cjk`` agree on
    mixed texts, the edges of every CJK range and the code points just outside them included."""
    edges = [0x3040, 0x30FF, 0x3400, 0x4DBF, 0x4E00, 0x9FFF, 0xAC00, 0xD7AF, 0xF900, 0xFAFF,
             0x303F, 0x3100, 0x33FF, 0x4DC0, 0xA000, 0xABFF, 0xD7B0, 0xF8FF, 0xFB00]
    pool = [chr(c) for c in edges] + list("abcXYZ019 ,.!?，。？é") + ["中", "文", "字", "ア", "한"]
    rng = random.Random(28)
    texts = ["", "abc", "中", "中文 abcdef", "中文 abcdefg"] + [
        "".join(rng.choice(pool) for _ in range(rng.randint(1, 30))) for _ in range(400)]
    rows = await engine.pool.fetch(f"SELECT i, {mostly_cjk_sql('t')} AS cjk FROM unnest($1::text[])"
                                   " WITH ORDINALITY AS x(t, i) ORDER BY i", texts)
    assert [r["cjk"] for r in rows] == [mostly_cjk(t) for t in texts]


async def test_the_script_is_folded_and_a_row_folded_before_falls_back_to_its_piece(engine: Engine) -> None:
    """``memory_vectors.cjk`` (schema 0046, projection version 6) is ``mostly_cjk`` of each turn's body; a row folded
    before the column (NULL) is judged by the same rule over its piece, so recall ranks alike before a rebuild."""
    await _record(engine, "fold")
    rows = await engine.pool.fetch("SELECT piece, speaker, cjk FROM memory_vectors WHERE tenant_id = 'fold'")
    assert len(rows) == len(CHINESE) + len(ENGLISH) + 1
    assert all(r["cjk"] is mostly_cjk(r["piece"][len(r["speaker"]) + 2:]) for r in rows)
    assert sum(r["cjk"] for r in rows) == len(CHINESE)
    await engine.pool.execute("UPDATE memory_vectors SET cjk = NULL WHERE tenant_id = 'fold'")
    res = await engine.client("fold").recall(QUESTION_ZH, thread="chat", k=3)
    assert res.hits and EVIDENCE in res.hits[0].text, [h.text for h in res.hits]
