"""A bench-only loader: synthetic turns folded straight into the read models, without the log (issue #13 item 3's
1,000,000-turn context bench, which would take hours through publish + projector on this 2-core machine).

What it writes is exactly what the projectors' fold writes for the same events at the same stream positions: each
turn goes through the core projections' own pure folds (``projections.registry.handlers_for`` over ``PROJECTIONS``:
``thread_activity``, ``messages``, ``tombstones``) and their ``SqlOp`` statements are run by the runner's own
``engine.runtime.sql.execute_ops``, in batches, one transaction each; turn ``i`` (0-based) sits at stream sequence
``i + 1`` as if it were the ``i+1``-th message published. The checkpoints of those projections are then set to the
last sequence. Checked on 3,000 turns over 30 threads: ``messages``, ``thread_activity`` and ``tombstones`` equal,
row for row, what publish + projector wrote.

What it does not do: the recall projection (``memory_vectors``: its fold runs statements per turn that read its
own table, ~10 ms a turn here, hours for 1M), so recall and the user-memory part's turn lines find nothing; nor
publish the events (the facts stream stays empty, so ``memengine verify`` and a rebuild would see an empty log),
nor the projector's exactly-once bookkeeping (``applied_events``). Use it only with an engine started without the
projector role.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from _common import synthetic_turns

from memengine.engine.runtime.sql import execute_ops
from memengine.events import TurnRecorded
from memengine.projections.ops import FoldConfig, Position
from memengine.projections.registry import PROJECTIONS, handlers_for

BATCH = 5_000


async def bulk_load(engine: Any, turns: int, *, threads: int, chunk: int = 20_000) -> int:
    """Fold ``turns`` synthetic turns (``_common.synthetic_turns``) into the read models of ``engine`` (started with
    roles without ``projector``); returns the last stream sequence."""
    projections = PROJECTIONS
    folds = [f for _, f in handlers_for(TurnRecorded, projections)]
    cfg = FoldConfig(condensed_tool_max=engine.settings.condensed_tool_max)
    t0 = time.perf_counter()
    for start in range(0, turns, chunk):
        events = synthetic_turns(min(chunk, turns - start), threads=threads, start=start)
        for b in range(0, len(events), BATCH):
            ops = []
            for j, e in enumerate(events[b:b + BATCH]):
                pos = Position(start + b + j + 1, engine.subjects.fact(e.tenant_id, e.thread_id, "TurnRecorded"))
                for fold in folds:
                    ops.extend(fold(e, pos, cfg))
            async with engine.pool.acquire() as conn, conn.transaction():
                await execute_ops(conn, ops)
        print(f"bulk-loaded {start + len(events)} turns in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
              flush=True)
    async with engine.pool.acquire() as conn:
        for p in projections:
            await conn.execute(
                "INSERT INTO projection_checkpoints (projection, version, stream, last_seq) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (projection) DO UPDATE SET last_seq = EXCLUDED.last_seq",
                p.name, p.version, engine.streams.facts, turns)
        await conn.execute("ANALYZE")
    return turns
