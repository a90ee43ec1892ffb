"""``engine.read.recall_fragments.fused_sql`` and ``prop_sql`` without servers (its statements run on the real ones:
tests/integration/recall/test_recall_dense_parts.py).

The full-text lists weigh ``CROSS_SCRIPT_LEXICAL_WEIGHT`` for rows on the other side of a composite's partial span
than the question (issue #28, session 16); a single model, no vector table or weight 1 keep the fusion as it was."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.read import recall_fragments as rf
from memengine.engine.read.recall_fragments import FUSED_SQL, WHOLE, DenseList, fused_sql


@given(st.integers(1, 1024), st.integers(1, 1024), st.booleans(), st.booleans())
def test_a_partial_span_weighs_the_full_text_lists_across_it(a: int, d: int, scoped: bool, wide: bool) -> None:
    lists = WHOLE + (DenseList(a + d, 512, 1.0, bare=(a, d)),)
    sql = fused_sql("memory_embeddings_x", lists, scoped, wide)
    w = repr(float(rf.CROSS_SCRIPT_LEXICAL_WEIGHT))
    assert sql.startswith("xs AS MATERIALIZED (") and sql.endswith(")")
    assert sql.count(f"THEN {w} ELSE 1 END::numeric") == 2  # both full-text lists, the dense lists untouched
    assert "UNION ALL SELECT seq, r, w FROM dv" in sql
    if not wide:  # dense_cte's flag of the part list (index 1), every row of the scope
        assert "(SELECT seq FROM ev WHERE b1)" in sql and "subvector" not in sql
        return
    # the wide statement's ev has the HNSW candidates only: the full-text rows' own words, as dense_cte tells
    # (session 20: not their embedded window's empty half)
    assert f"{rf.CJK_ROW_SQL} <> (vector_norm(subvector(qv.v, {a}, {d})) = 0)" in sql
    assert "subvector(e.emb" not in sql
    assert ("e.thread_id = $2 " in sql) is scoped
    assert ("FROM memory_vectors t" in sql) is not scoped


def test_the_flag_is_dense_cte_s() -> None:
    """``xs`` reads ``ev``'s ``b<i>`` of the list with ``bare``: ``dense_cte`` makes ``ev`` a CTE of the statement
    with that column (one list per span; the whole vector's has no ``bare``)."""
    from memengine.engine.read.recall_fragments import dense_cte

    lists = WHOLE + (DenseList(3, 2, 1.0, bare=(1, 2)),)
    cte = dense_cte("memory_embeddings_x", lists, "true")
    assert cte.startswith("ev AS MATERIALIZED (") and ",\ndv AS MATERIALIZED (" in cte
    assert "true AS b0" in cte and "c.cjk <> q.qx AS b1" in cte


def test_a_row_s_script_is_its_own_words() -> None:
    """Session 20: whether a row is of the other script than the question is its own words' (``CJK_ROW_SQL``), not
    its embedded window's empty half (a Chinese turn among English ones has an English window); the question's is
    its vector's ``bare`` half (the question's own words). A list with ``across`` ranks those rows by that span."""
    from memengine.engine.read.recall_fragments import CJK_ROW_SQL, dense_cte

    lists = (DenseList(1, 0, 1.0, across=(3, 2)), DenseList(3, 2, 1.0, bare=(1, 2)))
    cte = dense_cte("memory_embeddings_x", lists, "true")
    assert f"{CJK_ROW_SQL} AS cjk" in cte and "JOIN memory_vectors d ON d.tenant_id = $1 AND d.seq = c.seq" in cte
    assert "vector_norm(subvector(qv.v, 1, 2)) = 0 AS qx" in cte
    assert "CASE WHEN c.cjk <> q.qx THEN subvector(c.emb, 3, 2) <=> q.ua0 ELSE c.emb <=> q.u0 END AS d0" in cte
    assert "subvector(c.emb, 1, 2)" not in cte  # the row's half is not read
    # without a list across scripts there is no script to tell: ``across`` alone changes nothing
    alone = dense_cte("memory_embeddings_x", (DenseList(1, 0, 1.0, across=(3, 2)), DenseList(3, 2, 0.5)), "true")
    assert "cjk" not in alone and "CASE" not in alone


@pytest.mark.parametrize("table, lists", [(None, WHOLE + (DenseList(3, 2, 1.0, bare=(1, 2)),)),
                                          ("memory_embeddings_x", WHOLE),
                                          ("memory_embeddings_x", WHOLE + (DenseList(3, 2, 1.0),))])
def test_without_a_partial_span_the_fusion_is_unchanged(table: str | None, lists: tuple[DenseList, ...]) -> None:
    assert fused_sql(table, lists, True) == FUSED_SQL == fused_sql(table, lists, False)


def test_weight_one_is_the_fusion_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rf, "CROSS_SCRIPT_LEXICAL_WEIGHT", 1.0)
    assert fused_sql("memory_embeddings_x", WHOLE + (DenseList(3, 2, 1.0, bare=(1, 2)),), True) == FUSED_SQL


@given(st.floats(0.05, 4.0))
def test_the_turn_after_an_asking_one_keeps_its_score(weight: float) -> None:
    """``prop_sql``: the next turn's own score is ``ANSWER_WEIGHT`` x the asking turn's (issue #28, session 16)."""
    import re

    from memengine.engine.read.recall_fragments import ASK_LIT, prop_sql

    old = rf.ANSWER_WEIGHT
    try:
        rf.ANSWER_WEIGHT = weight
        sql = prop_sql("th t ON t.seq = f.seq", "t.ask")
    finally:
        rf.ANSWER_WEIGHT = old
    assert f"(t.next_seq, CASE WHEN t.ask THEN {weight!r} * f.s ELSE 0.0 END, f.s)" in sql
    assert "(t.seq, f.s, 0.0)" in sql and "(t.prev_seq, 0.0, f.s)" in sql
    pattern = ASK_LIT.strip("'").replace("[[:space:]]", r"\s")
    assert re.search(pattern, "你平时用什么键盘布局？ ") and re.search(pattern, "Which editor do you use?")
    assert not re.search(pattern, "我用 Dvorak。") and not re.search(pattern, "Is it? No.")


def test_answer_weight_zero_is_propagation_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    from memengine.engine.read.recall_fragments import prop_sql

    monkeypatch.setattr(rf, "ANSWER_WEIGHT", 0.0)
    sql = prop_sql("th t ON t.seq = f.seq", "t.ask")
    assert "(VALUES (t.seq, f.s, 0.0), (t.next_seq, 0.0, f.s), (t.prev_seq, 0.0, f.s))" in sql and "ask" not in sql


class _English:
    english_only = True


class _Multilingual:
    pass


@pytest.mark.parametrize(("embedder", "question", "out"), [
    (_English(), "我对什么过敏？", True),
    (_English(), "我们用 FastAPI 部署在哪里", True),  # mostly CJK: 8 characters against 7 letters
    (_English(), "What is the user allergic to?", False),
    (_English(), "Where did we deploy FastAPI 部署?", False),  # mostly Latin
    (_Multilingual(), "我对什么过敏？", False),  # USE, e5, a remote model: CJK cosines mean something
    (None, "我对什么过敏？", False),
])
def test_cjk_pairs_leave_only_an_english_model_s_list(embedder: object, question: str, out: bool) -> None:
    assert rf.cjk_pairs_out(embedder, question) is out


def test_cjk_pairs_out_off_is_the_list_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rf, "CJK_PAIRS_OUT", False)
    assert rf.cjk_pairs_out(_English(), "我对什么过敏？") is False


@given(st.sampled_from([None, "memory_embeddings_x"]), st.booleans(), st.booleans(), st.booleans())
def test_only_a_cjk_question_s_statement_reads_the_rows_script(table: str | None, user: bool, since: bool,
                                                                until: bool) -> None:
    """An English question's statements are the ones before (no per-row regular expression: LoCoMo and latency
    unchanged); with ``cjk_out`` the thread statement's dense list reads ``th``'s flag and the general one filters
    its scope by ``CJK_ROW_SQL``."""
    from memengine.engine.read.recall import recall_sql
    from memengine.engine.read.recall_thread import thread_ranked, thread_sql

    for build in (thread_sql, thread_ranked):
        assert rf.CJK_ROW_SQL not in build(table, user, since, until)
        got = build(table, user, since, until, cjk_out=True)
        assert f"{rf.CJK_ROW_SQL} AS cjk" in got
        assert ("SELECT seq FROM th WHERE NOT th.cjk" in got) is (table is not None)
    for thread in (True, False):
        for wide in (True, False):
            assert rf.CJK_ROW_SQL not in recall_sql(table, thread, user, since, until, wide)
            got = recall_sql(table, thread, user, since, until, wide, cjk_out=True)
            assert (f"NOT {rf.CJK_ROW_SQL}" in got) is (table is not None)
