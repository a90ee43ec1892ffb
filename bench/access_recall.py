"""What reading the access trail changes for memory-item recall on LoCoMo dev (issue #30): evidence recall@k of
``sources: ["memories"]`` (an item's ``source_event_ids`` are its turns), with ``MEMORY_RECALL_ACCESS_WEIGHT`` 0 (the
recency of ``updated_at`` alone, as before) against 1 (of ``greatest(updated_at, last_accessed_at)``). The trail an
agent leaves: the even-numbered questions of each conversation are asked first (their answers served and folded
into ``memory_access``); the odd-numbered ones are then measured at both weights, with the trail off (so neither
variant's answers are recorded and both see the same served state). ``as_of`` is now: LoCoMo is from 2023, so the
recency of ``updated_at`` is ~0 for every item and an access is worth up to +0.2 (the seed's recency weight).

    python bench/access_recall.py /work/shared/data/locomo-dev/26.json /work/shared/data/locomo-dev/30.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.ops.eval_client import InProcessClient
from memengine.engine.ops.eval_locomo import questions, recall_at
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read.recall import Weights
from memengine.events import TurnRecorded

KS = (5, 10, 20)


async def main(files: list[Path]) -> dict[str, Any]:
    """``{"questions", "served_items", "weight_0": {k: r}, "weight_1": {k: r}}``."""
    settings = Settings.from_env()
    out: dict[str, Any] = {}
    rows: dict[float, list[dict[int, float]]] = {0.0: [], 1.0: []}
    lifted = {0.0: 0, 1.0: 0}  # measured hits whose recency an access raised above 0.5
    async with lifespan(settings, roles={"projector", "query", "enricher"}, run_projector=False) as engine:
        base = engine.service.recaller.weights
        for path in files:
            tenant = f"acc-{path.stem}-{secrets.token_hex(4)}"
            evs = read_locomo(path, tenant)
            summary = await publish_all(engine, evs, tenant, quiet=True)
            await ensure_current(engine, quiet=True, target=summary["last_seq"], embed=True)
            dia_of = {str(e.event_id): str(e.metadata.get("dia_id")) for e in evs if isinstance(e, TurnRecorded)}
            qs = questions(json.loads(path.read_text()))
            client = InProcessClient(engine, tenant)
            thread = f"locomo-{path.stem}"
            trail = engine.service.trail
            for _cat, q, _ev in qs[0::2]:  # the served trail: the even questions, their answers recorded
                await client.recall(q, thread=thread, k=10, sources=["memories"])
            assert engine.trail is not None and engine.access is not None
            await engine.trail.settled()
            await engine.access.catch_up()
            engine.service.trail = None  # the measured answers are not recorded: both weights see the same state
            for _cat, q, ev in qs[1::2]:
                for a in (0.0, 1.0):
                    engine.service.recaller.weights = Weights(base.relevance, base.recency, base.importance,
                                                              base.decay_days, base.turns, a)
                    res = await client.recall(q, thread=thread, k=max(KS), sources=["memories"])
                    hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in res.hits]
                    rows[a].append({k: recall_at(hits, ev, k) for k in KS})
                    lifted[a] += sum(1 for h in res.hits if h.recency > 0.5)
            out.setdefault("served_items", 0)
            engine.service.trail = trail
            out["served_items"] += await engine.pool.fetchval(
                "SELECT count(*) FROM memory_access WHERE tenant_id = $1", tenant)
            # days since each item's updated_at (the recency an access could raise): LoCoMo's dates or the replay's
            ages = await engine.pool.fetchrow(
                "SELECT min(extract(epoch FROM now() - updated_at) / 86400) AS lo,"
                " max(extract(epoch FROM now() - updated_at) / 86400) AS hi FROM memory_items WHERE tenant_id = $1",
                tenant)
            out.setdefault("item_age_days", []).append([round(float(ages["lo"]), 2), round(float(ages["hi"]), 2)])
            out.setdefault("items", 0)
            out["items"] += await engine.pool.fetchval(
                "SELECT count(*) FROM memory_items WHERE tenant_id = $1 AND status = 'active'", tenant)
    out["questions"] = len(rows[0.0])
    out["hits_recency_over_half"] = {f"weight_{a:g}": n for a, n in lifted.items()}
    for a, rs in rows.items():
        out[f"weight_{a:g}"] = {str(k): round(sum(r[k] for r in rs) / len(rs), 4) for k in KS}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    print(json.dumps(asyncio.run(main(ap.parse_args().files))))
