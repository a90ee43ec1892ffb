"""LoCoMo evidence recall through the tenant-wide recall path (term statistics + HNSW iterative scan).

Each dev conversation goes into its own tenant (as in ``memengine eval locomo``) and every question is asked with no
thread filter, with ``engine.read.recall.WIDE_MIN_DOCS`` lowered to 0 so that the wide SQL runs on these small tenants,
after ``refresh_term_stats`` of the tenant. Environment: ``BUDGET`` (``WIDE_MATCH_BUDGET``), ``CAP``
(``WIDE_MATCH_CAP``), ``DENSE`` (``WIDE_DENSE``) to measure variants.

    cd bench && ../.venv/bin/python recall_wide_eval.py            # prints the eval JSON
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import memengine.engine.read.recall as R
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.ops.eval_locomo import run_eval

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"


async def main() -> dict[str, object]:
    R.WIDE_MIN_DOCS = 0
    R.WIDE_MATCH_BUDGET = int(os.environ.get("BUDGET", R.WIDE_MATCH_BUDGET))
    R.WIDE_MATCH_CAP = int(os.environ.get("CAP", R.WIDE_MATCH_BUDGET))
    R.WIDE_DENSE = int(os.environ.get("DENSE", R.WIDE_DENSE))
    settings = Settings.from_env(home=tempfile.mkdtemp(prefix="memengine-widee-"))
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
        original = MemoryClient.recall
        refreshed: set[str] = set()

        async def tenant_wide(self, query, *, thread=None, **kw):  # type: ignore[no-untyped-def]
            if self.tenant not in refreshed:
                await R.refresh_term_stats(engine.pool, self.tenant)
                refreshed.add(self.tenant)
            return await original(self, query, thread=None, **kw)

        MemoryClient.recall = tenant_wide  # type: ignore[method-assign]
        try:
            res = await run_eval(engine, [DATA / "26.json", DATA / "30.json"], [5, 10, 20])
        finally:
            MemoryClient.recall = original  # type: ignore[method-assign]
    return {"budget": R.WIDE_MATCH_BUDGET, "cap": R.WIDE_MATCH_CAP, "dense": R.WIDE_DENSE, **res}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
