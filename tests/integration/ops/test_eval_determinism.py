"""``memengine eval`` gives the same figures for the same input (issue #27): it asks its contexts only once the
memory they show is derived, also beside a running ``memengine up``, and its own answers do not feed what it measures.

- ``up`` holds the enricher (and the derived projector) when the eval ingests: ``ensure_current(derived=True)``
  waits for that enricher, and takes it over as soon as its lock is free. Before, derivation was skipped here
  (``derive_current`` derives only where this process holds the enricher) and the contexts were asked while ``up``
  still wrote the summaries, topics and memories they show.
- the eval's answers are not recorded on the access trail: folded, an item one question's context placed counts as
  just accessed and ranks higher for the next question.
- the tenant (and so every id, whose 8-hex prefixes the Tier-1 text shows, 3 to 6 tokens each) follows from the
  file, not from a random suffix: the same file gives the same figures on fresh servers.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec
import pytest

from memengine.engine.adapters.locks import lock_key
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.embedding.backlog import embedding_backlog
from memengine.engine.ops.eval_locomo import eval_tenant, run_eval
from memengine.engine.ops.eval_recall_set import run_recall_set
from memengine.engine.ops.publish import ensure_current, publish_all
from memengine.engine.runtime.groups import RECALL
from tests.integration.derive.test_memory_lifecycle import turn
from tests.integration.ops.test_eval_path import synthetic_locomo
from tests.integration.recall.test_embedding_switch import HashEmbedder

pytestmark = pytest.mark.integration


async def test_eval_waits_for_the_enricher_another_process_holds(settings: Settings, kv_cleanup) -> None:  # type: ignore[no-untyped-def]
    s = msgspec.structs.replace(settings, summary_threshold=10)
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    evs = [turn("held", i, "user" if i % 2 else "assistant", f"I went to the lake number {i} with my dog Rex.",
                t0 + timedelta(minutes=i)) for i in range(40)]
    up = await asyncpg.connect(settings.database_url)  # `memengine up` holding the enricher and derived projector
    try:
        for name in ("enricher", "derived"):
            assert await up.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(name))
        async with lifespan(s, run_projector=False) as engine:
            assert not engine.enricher.active
            res = await publish_all(engine, evs, "default", quiet=True)
            waiting = asyncio.create_task(ensure_current(engine, quiet=True, target=res["last_seq"], derived=True))
            await asyncio.sleep(1.5)
            assert not waiting.done()  # the enricher is held and has derived nothing: the eval does not ask yet
            await up.close()  # `up` stops: its locks go, the eval takes the enricher over and derives
            await asyncio.wait_for(waiting, timeout=120)
            # derived before the eval asks (before: ensure_current came back without derivation, no summary)
            assert engine.enricher.active
            summary = await engine.pool.fetchval(
                "SELECT summary FROM conversation_summaries WHERE thread_id = 'held'")
            assert summary
    finally:
        if not up.is_closed():
            await up.close()


async def test_the_evals_answers_are_not_recorded_on_the_access_trail(settings: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = synthetic_locomo(tmp_path / "tr.json", sessions=1, questions_per_turn=1)
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
        trail = engine.service.trail
        assert trail is not None
        before = trail.stats().recorded
        await run_eval(engine, [path], [5], contexts=[1000], context_query=["question", "none"])
        assert trail.stats().recorded == before  # 10 questions x (recall x 2 + contexts): none recorded
        assert engine.service.trail is trail  # and the engine's trail is back for what follows


async def test_the_eval_tenant_follows_the_file(settings: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    one = synthetic_locomo(tmp_path / "one.json", sessions=1, questions_per_turn=1)
    two = synthetic_locomo(tmp_path / "two.json", sessions=2, questions_per_turn=1)
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
        first = await eval_tenant(engine, one)
        assert first == await eval_tenant(engine, one) and first.startswith("eval-one-")  # same file, same name
        assert (await eval_tenant(engine, two)).startswith("eval-two-")
        res = await run_eval(engine, [one], [5])
        assert res["questions"] == 10
        assert await engine.pool.fetchval("SELECT count(*) FROM thread_activity WHERE tenant_id = $1", first) == 1
        # a second run on the same servers starts from an empty tenant of its own
        assert await eval_tenant(engine, one) == f"{first}-2"


async def test_the_recall_set_eval_names_its_tenants_from_the_files(settings: Settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "dev").mkdir()
    path = synthetic_locomo(tmp_path / "dev" / "c1.json", sessions=1, questions_per_turn=1)
    conv = json.loads(path.read_text())
    for q in conv["qa"]:  # the recall set's tags (issue #28 item 4)
        q.update(question_lang="en", cross_lingual=False)
    path.write_text(json.dumps(conv))
    async with lifespan(settings, roles={"projector", "query"}, run_projector=False) as engine:
        name = await eval_tenant(engine, path)
        first = await run_recall_set(engine, tmp_path, ["dev"], [3])
        assert await engine.pool.fetchval("SELECT count(*) FROM thread_activity WHERE tenant_id = $1", name) == 1
        again = await run_recall_set(engine, tmp_path, ["dev"], [3])
        # a second run gets a fresh tenant of its own, named from the same file, and the same figures
        assert await engine.pool.fetchval("SELECT count(*) FROM thread_activity WHERE tenant_id = $1",
                                          f"{name}-2") == 1
        assert again == first and first["dev"]["all"]["questions"] == 10


async def test_eval_waits_for_the_recall_projector_another_process_holds(settings: Settings) -> None:
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    evs = [turn("recalled", i, "user" if i % 2 else "assistant", f"We talked about the lake number {i}.",
                t0 + timedelta(minutes=i)) for i in range(12)]
    up = await asyncpg.connect(settings.database_url)  # `memengine up` holding the recall projector
    try:
        assert await up.fetchval("SELECT pg_try_advisory_lock($1)", lock_key(RECALL.name))
        async with lifespan(settings, embedder=HashEmbedder("test-hash-r", 16, "r"), run_projector=False) as engine:
            assert not engine.recall.active
            res = await publish_all(engine, evs, "default", quiet=True)
            waiting = asyncio.create_task(ensure_current(engine, quiet=True, target=res["last_seq"], embed=True))
            await asyncio.sleep(1.5)
            # nothing folded the recall rows yet: the eval does not ask (before: it returned with the core current)
            assert not waiting.done()
            await up.close()  # `up` stops: the eval takes the recall projector over, folds and embeds here
            await asyncio.wait_for(waiting, timeout=180)
            assert engine.recall.active
            rows = await engine.pool.fetchval(
                "SELECT count(*) FROM memory_vectors WHERE thread_id = 'recalled'")
            assert rows == len(evs)
            assert [m["waiting"] for m in await embedding_backlog(engine.pool) if m["state"] == "active"] == [0]
    finally:
        if not up.is_closed():
            await up.close()
