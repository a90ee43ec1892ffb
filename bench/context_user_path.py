"""Evidence in context on the user's path (issue #27 "Done when"): the engine as ``memengine up`` runs it (every
role, projectors, enricher and pruner running continuously), the LoCoMo files published as ``memengine ingest``
publishes them, contexts asked over NATS with the question and with ``query=""`` at 2000 / 4000 / 8000 tokens; the
same measure as ``memengine eval locomo --context`` (``engine.ops.eval_context``), to compare with it.

    python bench/context_user_path.py HOME [FILE.json ...]    # default: ../shared/data/locomo-dev/{26,30}.json

``HOME``: a fresh directory for the embedded servers. The per-tenant rate limit is off (``rpc_rate=0``): an agent
asks one context per turn, this script asks 1,386 in a row. Waits until the recall rows and vectors are complete,
both threads were pruned and nothing changed for 20 s. Prints ``{"<W> <mode>": [evidence, tokens used, questions]}``.
"""
import asyncio
import json
import secrets
import sys
import time
from pathlib import Path

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.derive.offline.structures import Turn
from memengine.engine.ops.eval_context import fraction, present_in, quotable
from memengine.engine.ops.eval_locomo import questions
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import publish_all
from memengine.events import TurnRecorded
from memengine.projections.content import plain_text


async def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):  # `--help` is not a HOME (it became ./--help/pg)
        print(__doc__)
        raise SystemExit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    s = Settings.from_env(home=sys.argv[1], rpc_rate=0.0)
    dev = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev"
    files = [Path(f) for f in sys.argv[2:]] or [dev / "26.json", dev / "30.json"]
    async with lifespan(s) as engine:
        tenant = "up-" + secrets.token_hex(3)
        plan = []
        n = 0
        for f in files:
            evs = read_locomo(f, tenant)
            await publish_all(engine, evs, tenant, quiet=True)
            turns = [e for e in evs if isinstance(e, TurnRecorded)]
            n += len(turns)
            # the sentences a Tier-1 summary may quote of each turn: credited as the eval credits them
            said = quotable(Turn(str(e.event_id), i, e.role, e.user_id, plain_text(e.content), e.occurred_at)
                            for i, e in enumerate(turns))
            plan.append((f"locomo-{f.stem}", {str(e.event_id): str(e.metadata.get("dia_id")) for e in turns},
                         questions(json.loads(f.read_text())), said))
        t0 = time.time()
        last = None
        while True:  # settled: recall rows and vectors complete, prune marks for both threads, stable 20 s
            table = engine.embed_worker.table
            state = (await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id=$1", tenant),
                     await engine.pool.fetchval(f"SELECT count(*) FROM {table}"),
                     await engine.pool.fetchval("SELECT count(*) FROM message_prune_marks WHERE tenant_id=$1", tenant),
                     await engine.pool.fetchval("SELECT count(*) FROM messages WHERE tenant_id=$1", tenant),
                     await engine.pool.fetchval("SELECT count(*) FROM memory_items WHERE tenant_id=$1", tenant))
            if state == last and state[0] == n and state[2] == len(files):
                break
            last = state
            await asyncio.sleep(20)
        print("settled", state, round(time.time() - t0), file=sys.stderr)
        client = engine.client(tenant)  # over NATS, as a user asks
        out = {}
        for w in (2000, 4000, 8000):
            for mode in ("question", "none"):
                fr, tok = [], []
                for thread, dia_of, qs, said in plan:
                    sources = {}
                    for r in await engine.pool.fetch("SELECT memory_id, array_agg(source_event_id::text) AS ev FROM"
                                                     " memory_item_sources WHERE tenant_id=$1 GROUP BY memory_id",
                                                     tenant):
                        sources[r["memory_id"]] = [dia_of.get(e, e) for e in r["ev"]]
                    for _cat, q, ev in qs:
                        ctx = await client.context(thread, window=w, query=q if mode == "question" else "")
                        fr.append(fraction(present_in(ctx, dia_of, sources, said), ev))
                        tok.append(ctx.tokens["total"])
                out[f"{w} {mode}"] = (round(sum(fr) / len(fr), 4), round(sum(tok) / len(tok), 1), len(fr))
        print(json.dumps(out))

asyncio.run(main())
