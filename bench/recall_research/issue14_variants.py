"""Issue #14 item 3: recall variants measured through the engine (docs/contributors/recall-research.md).

Imports memengine (unlike the other scripts here). Ingests LoCoMo dev 26 + 30 once into fresh tenants (enricher on,
thread pruning off, so typed memory items and episodes exist), then asks every question through
``MemoryClient.recall`` (thread-scoped, k 20) for each variant and prints one JSON line per variant: overall R@5/10/20,
R@10 per conversation (for swap-tuning: pick on one, report on the other) and per category. SQL variants are string
patches of ``recall_sql``; the named-entity factor is ``recall_fragments.ENTITY_WEIGHT`` (1.0 = the design before
issue #14).

    MEMORY_MAX_MESSAGES_PER_THREAD=100000 MEMENGINE_HOME=/tmp/i14 PYTHONPATH=<dir holding memengine> \\
        .venv/bin/python bench/recall_research/issue14_variants.py
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memengine.engine.bootstrap import lifespan
from memengine.engine.cli.options import settings_from_options
from memengine.engine.embedding.models import item_table_for
from memengine.engine.ops import eval_locomo as E
from memengine.engine.ops.ingest import read_locomo
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.read import recall as R
from memengine.engine.read import recall_fragments as RF

FILES = [Path("/work/shared/data/locomo-dev/26.json"), Path("/work/shared/data/locomo-dev/30.json")]
KS = (5, 10, 20)
ORIG = R.recall_sql
# the variants patch recall_sql: thread-scoped recall must go through it, not through recall_thread (issue #13)
R.Recaller.thread_plan = False
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"


def _items_cte(emb_table: str | None, lists: list[str]) -> str:
    """The thread's active typed items: BM25 (``il``) and cosine (``idl``) lists, fused (RRF 10), ranked; ``iv``
    gives every source turn of an item that item's rank (a turn with several items: the best)."""
    it = item_table_for(emb_table) if emb_table else None
    idl = (f"""idl AS (SELECT memory_id, row_number() OVER (ORDER BY dist, memory_id) AS r FROM (
     SELECT mi.memory_id, e.emb <=> qv.v AS dist FROM qv, mi JOIN {it} e ON e.tenant_id = $1
        AND e.memory_id = mi.memory_id WHERE $7::text IS NOT NULL ORDER BY dist, mi.memory_id LIMIT 100) x),"""
           if it else "idl AS (SELECT NULL::text AS memory_id, NULL::bigint AS r WHERE false),")
    src = " UNION ALL ".join(f"SELECT * FROM {name}" for name in lists)
    return f"""mi AS MATERIALIZED (SELECT m.memory_id, to_tsvector('english', m.text) AS tsv FROM memory_items m
     WHERE m.tenant_id = $1 AND ($2::text IS NULL OR m.thread_id = $2) AND m.status = 'active'),
mt AS MATERIALIZED (SELECT mi.memory_id, u.lexeme, cardinality(u.positions)::float8 AS tf
     FROM qq, mi CROSS JOIN LATERAL unnest(ts_filter(setweight(mi.tsv, 'A', qq.ls), '{{a}}')) u),
mst AS MATERIALIZED (SELECT greatest(count(*), 1)::float8 AS n FROM mi),
mdf AS MATERIALIZED (SELECT lexeme, count(*)::float8 AS df FROM mt GROUP BY lexeme),
il AS (SELECT memory_id, row_number() OVER (ORDER BY s DESC, memory_id) AS r FROM (
     SELECT mt.memory_id, sum(ln(1 + (mst.n - mdf.df + 0.5) / (mdf.df + 0.5)) * mt.tf * 2.2 / (mt.tf + 1.2)) AS s
       FROM mt JOIN mdf USING (lexeme) CROSS JOIN mst GROUP BY mt.memory_id ORDER BY s DESC, mt.memory_id
      LIMIT 100) x),
{idl}
ifu AS (SELECT memory_id, sum(1.0 / (10 + r)) AS s FROM ({src}) a GROUP BY memory_id),
irk AS (SELECT memory_id, row_number() OVER (ORDER BY s DESC, memory_id) AS r FROM ifu),
iv AS MATERIALIZED (SELECT d.seq, min(irk.r) AS r FROM irk
     JOIN memory_item_sources s ON s.tenant_id = $1 AND s.memory_id = irk.memory_id
     JOIN memory_vectors d ON d.tenant_id = $1 AND d.event_id = s.source_event_id GROUP BY d.seq),"""


def items_list(lists: list[str], weight: float = 1.0) -> Callable[[], None]:
    """Typed memory items as a 4th RRF list of the turns statement, with list weight ``weight``."""
    def sql(emb_table: str | None, thread: bool = True, user: bool = False, since: bool = False,
            until: bool = False, wide: bool = False) -> str:
        s = ORIG(emb_table, thread, user, since, until, wide)
        if wide:
            return s
        s = s.replace("fused AS MATERIALIZED (", _items_cte(emb_table, lists) + "\nfused AS MATERIALIZED (", 1)
        s = s.replace("sum(1.0 / (10 + r)) AS s\n            FROM (SELECT * FROM bt",
                      "sum(w / (10 + r)) AS s\n            FROM (SELECT *, 1.0 AS w FROM bt", 1)
        old = "UNION ALL SELECT * FROM bw UNION ALL SELECT * FROM dv) a GROUP BY seq)"
        assert old in s
        return s.replace(old, "UNION ALL SELECT *, 1.0 FROM bw UNION ALL SELECT *, 1.0 FROM dv"
                              f" UNION ALL SELECT seq, r, {weight} FROM iv) a GROUP BY seq)", 1)
    return lambda: setattr(R, "recall_sql", sql)


def month_boost(factor: float) -> Callable[[], None]:
    """Turns dated in a month (and year, if given) the question names: score x ``factor`` (like the speaker boost)."""
    def sql(emb_table: str | None, thread: bool = True, user: bool = False, since: bool = False,
            until: bool = False, wide: bool = False) -> str:
        s = ORIG(emb_table, thread, user, since, until, wide)
        if wide:
            return s
        old = "boosted AS (SELECT r.*, r.occurred_at AS t,\n       r.s * CASE"
        assert old in s
        new = f"""qd AS MATERIALIZED (SELECT
        (SELECT array_agg(m[1]) FROM regexp_matches($6, '\\m({MONTHS})\\M', 'g') m) AS months,
        (SELECT (regexp_match($6, '\\m((?:19|20)[0-9][0-9])\\M'))[1]) AS yr),
boosted AS (SELECT r.*, r.occurred_at AS t,
       r.s * CASE WHEN qd.months IS NOT NULL AND to_char(r.occurred_at, 'FMMonth') = ANY(qd.months)
                   AND (qd.yr IS NULL OR to_char(r.occurred_at, 'YYYY') = qd.yr) THEN {factor} ELSE 1.0 END * CASE"""
        s = s.replace(old, new, 1)
        return s.replace("FROM sc r CROSS JOIN named)", "FROM sc r CROSS JOIN named CROSS JOIN qd)", 1)
    return lambda: setattr(R, "recall_sql", sql)


def entity_weight(w: float) -> Callable[[], None]:
    def setup() -> None:
        R.recall_sql = ORIG
        RF.ENTITY_WEIGHT = w
    return setup


VARIANTS: list[tuple[str, Callable[[], None], dict[str, Any]]] = [
    ("before issue #14 (no entity weight)", entity_weight(1.0), {}),
    ("sources turns+memories", entity_weight(1.0), {"sources": ["turns", "memories"]}),
    ("items list bm25+dense", items_list(["il", "idl"]), {}),
    ("items list bm25", items_list(["il"]), {}),
    ("items list dense", items_list(["idl"]), {}),
    ("items list bm25+dense w0.5", items_list(["il", "idl"], 0.5), {}),
    ("entities x1.5", entity_weight(1.5), {}),
    ("entities x2 (kept)", entity_weight(2.0), {}),
    ("entities x3", entity_weight(3.0), {}),
    ("entities x4", entity_weight(4.0), {}),
    ("entities x2 + month boost x1.5", month_boost(1.5), {}),
    ("entities x2 + month boost x2", month_boost(2.0), {}),
]


async def main() -> None:
    async with lifespan(settings_from_options(), roles={"projector", "query", "enricher"},
                        run_projector=False) as engine:
        plan = []
        for path in FILES:
            tenant = f"eval-{path.stem}-{secrets.token_hex(4)}"
            s = await publish_all(engine, read_locomo(path, tenant), tenant, quiet=True)
            await ensure_current(engine, quiet=True, target=s["last_seq"], embed=True)
            plan.append((path.stem, tenant, f"locomo-{path.stem}", E.questions(json.loads(path.read_text()))))
        for name, setup, kwargs in VARIANTS:
            RF.ENTITY_WEIGHT = 2.0
            setup()
            engine.service.recaller._sql.clear()
            res = {}
            for stem, tenant, thread, qs in plan:
                client = engine.client(tenant)
                dia_of = {str(r["event_id"]): r["dia_id"] for r in await engine.pool.fetch(
                    "SELECT event_id, metadata->>'dia_id' AS dia_id FROM messages WHERE tenant_id = $1", tenant)}
                per_q, lat = [], []
                for cat, q, ev in qs:
                    t0 = time.perf_counter()
                    r = await client.recall(q, thread=thread, k=20, **kwargs)
                    lat.append((time.perf_counter() - t0) * 1000)
                    hits = [[dia_of.get(e, e) for e in h.source_event_ids] for h in r.hits]
                    per_q.append((cat, {k: E.recall_at(hits, ev, k) for k in KS}))
                res[stem] = E.summarize(per_q, KS, lat), per_q, lat
            both = E.summarize(res["26"][1] + res["30"][1], KS, res["26"][2] + res["30"][2])
            print(json.dumps({"variant": name, "all": both["recall_at"],
                              "by_conversation@10": {c: res[c][0]["recall_at"]["10"] for c in res},
                              "by_category@10": {c: v["recall_at"]["10"] for c, v in both["by_category"].items()},
                              "latency_ms": both["latency_ms"]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
