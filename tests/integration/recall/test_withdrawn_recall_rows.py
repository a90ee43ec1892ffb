"""Recall rows after a withdrawal are the rows of a log in which the withdrawn turns were never recorded (issue #26
item 6): the withdrawn rows go and their words leave the neighbours' windows (``win_text``, ``win_tsv``,
``emb_text``), whatever the sessions, which turns are withdrawn (by id or ``all_before``), the turns recorded after
the withdrawal, and where the runner cuts its batches. Only ``changed_seq`` (the embedder's watermark: the withdrawal
changed those texts) may differ. Property-based (hypothesis) on the real PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.runtime.sql import execute_ops
from memengine.events import TextBlock, TurnRecorded, TurnsWithdrawn
from memengine.projections import vectors
from memengine.projections.ops import FoldConfig, Position, SqlOp

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CFG = FoldConfig()
WORDS = ["reykjavik", "tea", "carpenter", "alps", "peanut", "boat", "piano", "kiwi"]


def _turn(i: int, session: str | None, role: str, words: list[str], thread: str = "th") -> TurnRecorded:
    return TurnRecorded(event_id=uuid.UUID(int=1000 + i), tenant_id="acme", thread_id=thread, role=role,
                        occurred_at=T0 + timedelta(minutes=i), session_id=session,
                        user_id="maya" if role == "user" else None, content=[TextBlock(text=" ".join(words))])


LOGS = st.tuples(
    st.lists(st.tuples(st.sampled_from([None, "a", "b"]), st.sampled_from(["user", "assistant"]),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=12),  # the withdrawal comes after this many turns
    st.booleans(),  # all_before
    st.sets(st.integers(min_value=0, max_value=14), max_size=6),  # named turns (indexes; some not yet recorded)
    st.booleans(),  # also name a turn of another thread
    st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=4),  # batch sizes
)


async def _fold(dsn: str, events: list[tuple[int, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    ops = [vectors.PROJECTION.handlers[type(e)](e, Position(seq, "s"), CFG) for seq, e in events]
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("TRUNCATE memory_vectors")
        i, k = 0, 0
        while i < len(ops):
            size = sizes[k % len(sizes)]
            batch: list[SqlOp] = [op for o in ops[i:i + size] for op in o]
            async with conn.transaction():
                await execute_ops(conn, batch)
            i, k = i + size, k + 1
        rows = await conn.fetch("SELECT *, turn_tsv::text AS tt, win_tsv::text AS wt, piece_tsv::text AS pt"
                                " FROM memory_vectors ORDER BY thread_id, seq")
        return [{k: v for k, v in dict(r).items() if k not in ("changed_seq", "turn_tsv", "win_tsv", "piece_tsv")}
                for r in rows]
    finally:
        await conn.close()


@pytest.fixture
async def dbs(make_db) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    return await make_db(), await make_db()


@given(log=LOGS)
@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
async def test_rows_after_a_withdrawal_are_rows_never_recorded(dbs: tuple[str, str], log: Any) -> None:
    spec, at, all_before, named, foreign, sizes = log
    turns = [_turn(i, s, r, w) for i, (s, r, w) in enumerate(spec)]
    at = min(at, len(turns))
    ids = [uuid.UUID(int=1000 + i) for i in sorted(named)]
    if foreign:
        turns.append(_turn(99, "a", "user", ["foreign"], thread="other"))
        ids.append(uuid.UUID(int=1099))
    withdrawal = TurnsWithdrawn(event_id=uuid.UUID(int=5), tenant_id="acme", thread_id="th", occurred_at=T0,
                                event_ids=ids, all_before=all_before)
    # the foreign thread's turn first, then the thread's turns with the withdrawal after the first ``at`` of them
    ordered: list[Any] = turns[len(spec):] + turns[:at] + [withdrawal] + turns[at:len(spec)]
    events = list(enumerate(ordered, start=1))
    w_seq = next(seq for seq, e in events if e is withdrawal)
    gone = {e.event_id for seq, e in events if isinstance(e, TurnRecorded) and e.thread_id == "th" and seq < w_seq
            and (all_before or e.event_id in set(ids))}
    reference = [(seq, e) for seq, e in events if isinstance(e, TurnRecorded) and e.event_id not in gone]
    got = await _fold(dbs[0], events, sizes)
    want = await _fold(dbs[1], reference, [len(reference) or 1])
    assert got == want
    assert not {r["event_id"] for r in got} & gone


async def test_withdrawing_nothing_is_no_op() -> None:
    ev = TurnsWithdrawn(event_id=uuid.UUID(int=5), tenant_id="acme", thread_id="th", occurred_at=T0)
    assert vectors.on_turns_withdrawn(ev, Position(3, "s"), CFG) == []
