"""The set-based recall fold gives the rows of the per-turn fold, byte for byte (issue #13 items 5-6).

``projections.vectors`` sends a run of turns as one statement (``SqlOp.rows``) that names tools, derives the
windows t-2 .. t+2 and updates the predecessors once per batch. The reference is the per-turn fold it replaced
(tests/integration/legacy_vectors.py: an insert and a window re-derivation per turn). A log mixing LoCoMo dev turns
(sessions, shared images with captions and queries: realistic text), interleaved threads of two tenants with tool
calls and results (role ``tool`` and results carried in user messages, several calls per turn, a call in an earlier
batch, an unknown call id, a result without an id), turns without a session, a deleted thread that is then used
again, and awkward text is folded three ways into fresh databases: per-turn reference, new fold in batches of many
sizes (boundaries everywhere), new fold one op at a time (the runner's isolation path). Every column must be equal,
tsvectors and ``emb_sha`` included. Prune marks do not touch these rows (projections/pruning.py writes messages only).
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from memengine.engine.adapters import postgres as db
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.runtime.sql import execute_ops
from memengine.events import TextBlock, ThinkingBlock, ThreadDeleted, ToolResultBlock, ToolUseBlock, TurnRecorded
from memengine.projections import vectors
from memengine.projections.ops import FoldConfig, Position, SqlOp
from memengine.projections.segment import has_cjk, lexical_text
from tests.integration import legacy_vectors

LOCOMO = Path("/work/shared/data/locomo-dev/26.json")
T0 = datetime(2026, 3, 1, 23, 59, 58, 123456, tzinfo=UTC)
ODD = ('quote " backslash \\ tab \t newline \n é 中文 🙂 \u2028 {"not": "json"}  spaced   out'
       ' 讨论PostgreSQL的表设计，好吗？ ')
CFG = FoldConfig()


def _synthetic(n: int) -> list[object]:
    """Turns over four threads of two tenants, with tool traffic, sessions and a thread deleted then reused."""
    out: list[object] = []
    for i in range(n):
        thread, tenant = f"th-{i % 4}", ("acme" if i % 4 < 3 else "globex")
        k = i // 4
        session = None if k % 11 == 0 else f"s{(k // 7) % 3}"
        if k % 5 == 1:
            role, content = "assistant", [ThinkingBlock(thinking="plan"),
                                          ToolUseBlock(id=f"c{i}", name=f"tool_{i % 3}", input={"q": ODD}),
                                          ToolUseBlock(id=f"d{i}", name="second")]
        elif k % 5 == 2:  # answers the call of the previous turn of the thread, the second one every third time
            role, content = "tool", [ToolResultBlock(tool_use_id=f"{'d' if k % 3 == 0 else 'c'}{i - 4}",
                                                     content=f"result {i} " + ODD)]
        elif k % 5 == 3:  # a result carried in a user message (Anthropic's format); every 4th answers an old call
            role, content = "user", [ToolResultBlock(tool_use_id=f"c{i - (84 if k % 4 == 0 else 8)}",
                                                     content=f"page {i}")]
        elif k % 5 == 4:
            role, content = ("tool", [ToolResultBlock(tool_use_id="nope", content="x")]) if k % 2 else \
                ("tool", [TextBlock(text=f"bare tool text {i}")])
        else:
            role, content = "user", [TextBlock(text=f"question {i}: {ODD}")]
        out.append(TurnRecorded(
            event_id=uuid.UUID(int=10_000 + i), tenant_id=tenant, thread_id=thread, role=role, content=content,
            occurred_at=T0 + timedelta(seconds=i), user_id=None if i % 6 == 0 else f"u{i % 2}", session_id=session,
            metadata={"blip_caption": "a photo of a cat", "query": "cat"} if i % 13 == 0 else {}))
        if i == n // 2:
            out.append(ThreadDeleted(event_id=uuid.UUID(int=90_000 + i), tenant_id="acme", thread_id="th-1",
                                     occurred_at=T0))
    return out


def _log() -> list[object]:
    # LoCoMo's text where the dev data lies (never copied into the package); the synthetic threads alone otherwise
    locomo = [e for e in read_locomo(LOCOMO, "acme") if isinstance(e, TurnRecorded)][:420] if LOCOMO.exists() else []
    synth = _synthetic(360)
    # interleave: the LoCoMo thread's sessions run beside the synthetic threads
    out: list[object] = []
    for a, b in itertools.zip_longest(locomo, synth):
        out.extend(x for x in (a, b) if x is not None)
    return out


def _ops(events: list[object], handlers: dict) -> list[list[SqlOp]]:  # type: ignore[type-arg]
    per_event = []
    for seq, ev in enumerate(events, start=1):
        fold = handlers.get(type(ev))
        per_event.append(fold(ev, Position(seq, "s"), CFG) if fold else [])
    return per_event


async def _apply(dsn: str, batches: list[list[SqlOp]]) -> list[dict]:  # type: ignore[type-arg]
    pool = await db.create_pool(dsn)
    try:
        for ops in batches:
            async with pool.acquire() as conn, conn.transaction():
                await execute_ops(conn, ops)
    finally:
        await pool.close()
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT *, turn_tsv::text AS tt, win_tsv::text AS wt, tool_calls::text AS tc"
                                " FROM memory_vectors ORDER BY tenant_id, thread_id, seq")
        return [dict(r) for r in rows]
    finally:
        await conn.close()


def _chunks(per_event: list[list[SqlOp]], sizes: list[int]) -> list[list[SqlOp]]:
    out, i = [], 0
    for size in itertools.cycle(sizes):
        if i >= len(per_event):
            return out
        out.append([op for ops in per_event[i:i + size] for op in ops])
        i += size
    raise AssertionError("unreachable")


async def test_bulk_fold_equals_per_turn_fold(make_db) -> None:  # type: ignore[no-untyped-def]
    events = _log()
    legacy = _ops(events, legacy_vectors.HANDLERS)
    new = _ops(events, dict(vectors.PROJECTION.handlers))
    reference = await _apply(await make_db(), [[op] for ops in legacy for op in ops])
    assert len(reference) > (600 if LOCOMO.exists() else 250)
    assert any(r["tool"] for r in reference) and any(r["speaker"] == "tool" for r in reference)
    assert any("[image: " in r["turn_text"] for r in reference)
    deleted = next(seq for seq, e in enumerate(events, start=1) if isinstance(e, ThreadDeleted))
    th1 = [r["seq"] for r in reference if r["tenant_id"] == "acme" and r["thread_id"] == "th-1"]
    assert th1 and min(th1) > deleted  # the deleted thread's rows are gone, its later turns are there
    batched = await _apply(await make_db(), _chunks(new, [1, 2, 3, 5, 8, 13, 250, 4, 600]))
    assert sum(len(b) > 100 for b in _chunks(new, [1, 2, 3, 5, 8, 13, 250, 4, 600])) >= 1  # the bulk path is taken
    assert batched == reference
    one_by_one = await _apply(await make_db(), [[op] for ops in new for op in ops])
    assert one_by_one == reference


#: lexeme -> number of positions, the only thing BM25 (engine/read/recall.py: tf = cardinality(positions)) and the OR
#: ts_rank of engine/read/user_memory.py read from a tsvector
_COUNTS = "(SELECT array_agg((lexeme, cardinality(positions)) ORDER BY lexeme) FROM unnest({}))"


async def test_folded_tsvectors_count_as_parsing_the_text(make_db) -> None:  # type: ignore[no-untyped-def]
    """Schema 0034: the fold parses each piece once and concatenates (``||``) for the turn and the window. Every row's
    ``turn_tsv`` / ``win_tsv`` must give each lexeme exactly as many positions as ``to_tsvector`` of ``turn_text`` /
    ``win_text`` (so recall ranks as before; the texts as ``lexical_text`` gives them to the parser, CJK words cut),
    ``piece_tsv`` must be the piece parsed, and a window must change with
    its neighbours (rows updated by later batches too: batch sizes put boundaries everywhere). The log has no text
    that the parser reads as a tag across two turns: there the two differ on purpose (the next test)."""
    events = _log()
    new = _ops(events, dict(vectors.PROJECTION.handlers))
    dsn = await make_db()
    await _apply(dsn, _chunks(new, [1, 7, 250, 3, 600]))
    conn = await asyncpg.connect(dsn)
    try:
        # the text as the parser reads it: CJK runs cut into words (projection version 4, issue #28); runs never
        # cross a piece boundary (pieces are joined with spaces), so cutting the joined text is cutting each piece
        texts = await conn.fetch("SELECT tenant_id, seq, turn_text, win_text, piece FROM memory_vectors")
        assert any(has_cjk(r["piece"]) for r in texts)
        await conn.execute("CREATE TEMP TABLE lex AS SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[],"
                           " $4::text[], $5::text[]) AS x(tenant_id, seq, turn_text, win_text, piece)",
                           [r["tenant_id"] for r in texts], [r["seq"] for r in texts],
                           *[[lexical_text(r[c]) for r in texts] for c in ("turn_text", "win_text", "piece")])
        row = await conn.fetchrow(f"""
            SELECT count(*) AS n,
                   count(*) FILTER (WHERE {_COUNTS.format('m.turn_tsv')}
                                    IS DISTINCT FROM {_COUNTS.format("to_tsvector('english', x.turn_text)")})
                   AS turn_bad,
                   count(*) FILTER (WHERE {_COUNTS.format('m.win_tsv')}
                                    IS DISTINCT FROM {_COUNTS.format("to_tsvector('english', x.win_text)")}) AS win_bad,
                   count(*) FILTER (WHERE m.piece_tsv IS DISTINCT FROM to_tsvector('english', x.piece)) AS piece_bad,
                   count(*) FILTER (WHERE m.next_seq IS NOT NULL AND m.prev_seq IS NOT NULL) AS inner_rows,
                   count(*) FILTER (WHERE {_COUNTS.format('m.win_tsv')} IS DISTINCT FROM {_COUNTS.format('m.turn_tsv')})
                     AS windows_wider
              FROM memory_vectors m JOIN lex x USING (tenant_id, seq)""")
    finally:
        await conn.close()
    assert row["n"] > 250 and row["inner_rows"] > 100 and row["windows_wider"] > 100, dict(row)
    assert (row["turn_bad"], row["win_bad"], row["piece_bad"]) == (0, 0, 0), dict(row)


async def test_a_turn_keeps_its_words_beside_a_tag_like_neighbour(make_db) -> None:  # type: ignore[no-untyped-def]
    """Where concatenating differs from parsing the joined text: the english parser reads ``<b foo`` + ``end> ok``
    across the two turns as one HTML-like tag and drops its words. Folded per piece, each turn keeps its own words
    in the window (one turn's stray ``<`` never hides the next turn's text)."""
    turns = [TurnRecorded(event_id=uuid.UUID(int=70_000 + i), tenant_id="acme", thread_id="tag", role="user",
                          content=[TextBlock(text=t)], occurred_at=T0 + timedelta(seconds=i), user_id="u1")
             for i, t in enumerate(["see <b foo", "end> ok"])]
    rows = await _apply(await make_db(), _ops(turns, dict(vectors.PROJECTION.handlers)))
    first = rows[0]
    assert first["win_text"].endswith("u1: see <b foo u1: end> ok")
    lexemes = {part.split(":")[0].strip("'") for part in first["wt"].split()}
    assert {"see", "foo", "end", "ok"} <= lexemes, first["wt"]
    conn = await asyncpg.connect(await make_db())
    try:  # parsing the joined text instead loses them: the reason the fold does not
        parsed = await conn.fetchval("SELECT to_tsvector('english', $1)::text", first["win_text"])
    finally:
        await conn.close()
    assert "foo" not in parsed and "end" not in parsed, parsed
