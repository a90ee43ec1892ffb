"""The bulk statements give the rows the one-by-one statements give (issue #13 item 1).

The messages, thread_activity and prune-guard folds send a run of ops as one statement over a JSON document of rows
(``SqlOp.rows``, engine/runtime/sql.py). A batch of awkward turns (escapes, non-BMP text, NULL ids, offsets with
microseconds, thinking-only and tool turns, a pruned thread, a deleted thread) is applied once in bulk and once op
by op into two fresh databases; every read model must be equal, JSON columns byte for byte.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import asyncpg

from memengine.engine.adapters import postgres as db
from memengine.engine.runtime.sql import execute_ops
from memengine.events import (
    SessionEnded,
    TextBlock,
    ThinkingBlock,
    ThreadDeleted,
    ThreadLabelled,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
)
from memengine.projections.ops import FoldConfig, Position
from memengine.projections.registry import PROJECTIONS, handlers_for
from tests.integration.folds import READ_MODELS

T0 = datetime(2026, 3, 1, 9, 15, 5, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30)))
ODD = 'quote " backslash \\ slash / tab \t newline \n unicode é ü 中文 emoji 🙂 \u2028 ctrl \x01 {"not": "json"}'


def _events() -> list[object]:
    out: list[object] = []
    blocks = [
        [TextBlock(text=ODD)],
        [ThinkingBlock(thinking="only " + ODD)],
        [ThinkingBlock(thinking="t", signature="sig"), TextBlock(text="answer")],
        [ToolUseBlock(id="c1", name="run", input={"q": ODD, "n": [1, 2.5, None, True], "o": {}})],
        [ToolResultBlock(tool_use_id="c1", content=ODD * 5, is_error=True)],
        [ToolUseBlock(id="c2", name="a"), ToolUseBlock(id="c3", name="b"), ToolResultBlock(tool_use_id="c2")],
    ]
    for i in range(60):
        thread = f"th-{i % 3}"
        out.append(TurnRecorded(
            event_id=uuid.UUID(int=i + 1), tenant_id="acme" if i % 5 else "globex", thread_id=thread,
            occurred_at=(T0 if i % 2 else T0.astimezone(UTC)) + timedelta(microseconds=7 * i),
            role=("user", "assistant", "tool")[i % 3], content=blocks[i % len(blocks)],
            user_id=None if i % 4 == 0 else "u-1", session_id=None if i % 7 == 0 else f"s{i % 2}",
            metadata={} if i % 2 else {"dia_id": f"D1:{i}", "odd": ODD, "nested": {"a": [i, None]}}))
        if i == 20:
            out.append(SessionEnded(event_id=uuid.UUID(int=1000 + i), tenant_id="acme", thread_id=thread,
                                    occurred_at=T0))
            out.append(ThreadLabelled(event_id=uuid.UUID(int=2000 + i), tenant_id="acme", thread_id=thread,
                                      occurred_at=T0, label=ODD[:40]))
        if i == 40:
            out.append(ThreadDeleted(event_id=uuid.UUID(int=3000 + i), tenant_id="acme", thread_id="th-1",
                                     occurred_at=T0))
    return out


async def _apply(dsn: str, ops: list, *, one_by_one: bool) -> dict[str, list[tuple]]:  # type: ignore[type-arg]
    pool = await db.create_pool(dsn)
    try:
        async with pool.acquire() as conn, conn.transaction():
            # th-2 of acme is pruned through seq 30: no turn at or below it may be inserted, in bulk or not
            await conn.execute("INSERT INTO message_prune_marks (tenant_id, thread_id, through_seq, pruned, event_id,"
                               " pruned_at) VALUES ('acme', 'th-2', 30, 0, $1, now())", uuid.UUID(int=9999))
            if one_by_one:
                for op in ops:
                    await execute_ops(conn, [op])
            else:
                await execute_ops(conn, ops)
    finally:
        await pool.close()
    conn = await asyncpg.connect(dsn)
    try:
        out = {}
        for table, order in READ_MODELS.items():
            cols = "*, content::text AS c, content_condensed::text AS cc, metadata::text AS m" \
                if table == "messages" else "*"
            out[table] = [tuple(r) for r in await conn.fetch(f"SELECT {cols} FROM {table} ORDER BY {order}")]
        return out
    finally:
        await conn.close()


async def test_bulk_rows_equal_one_by_one(make_db) -> None:  # type: ignore[no-untyped-def]
    cfg = FoldConfig(condensed_tool_max=20)
    ops = []
    for seq, ev in enumerate(_events(), start=1):
        for _, fold in handlers_for(type(ev), PROJECTIONS):
            ops.extend(fold(ev, Position(seq, "s"), cfg))
    assert sum(op.rows for op in ops) > 100  # the bulk path is taken
    bulk = await _apply(await make_db(), ops, one_by_one=False)
    single = await _apply(await make_db(), ops, one_by_one=True)
    assert len(bulk["messages"]) > 30 and bulk["thread_activity"] and bulk["tombstones"]
    assert bulk == single
