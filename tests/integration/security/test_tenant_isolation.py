"""Every read path filters by tenant (issue #6 §4), property-tested: two tenants with the same thread, user and
session ids and overlapping words; for any RPC method and any parameters hypothesis draws, a reply for one tenant
never carries the other tenant's marker word, event ids or memory ids. (Recall has its own property test in
test_recall.py; this one covers context, history, threads, memories, summary, episodes, profile, audit, recall.)"""

from __future__ import annotations

import re

import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.bootstrap import Engine
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

TENANTS = {"alpha": "zebrafish", "beta": "kingfisher"}  # tenant -> a word only its turns contain
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
async def two_tenants(engine: Engine) -> tuple[Engine, dict[str, set[bytes]]]:
    last = 0
    for tenant, word in TENANTS.items():
        c = engine.client(tenant)
        for i in range(6):
            ack = await c.record_turn("shared", "user" if i % 2 == 0 else "assistant",
                                      f"I prefer the {word} exhibit, visit {i}", user_id="sam", session_id="s1")
            last = ack.seq
        await c.end_session("shared", "s1", user_id="sam")

    async def derived() -> bool:
        n = await engine.pool.fetchval("SELECT count(DISTINCT tenant_id) FROM memory_items")
        e = await engine.pool.fetchval("SELECT count(DISTINCT tenant_id) FROM episodes")
        return n == 2 and e == 2

    await engine.client("alpha").context("shared", after_seq=last)
    await wait_until(derived, timeout=30)
    ids: dict[str, set[bytes]] = {}
    for tenant in TENANTS:
        rows = await engine.pool.fetch(
            "SELECT event_id::text AS id FROM messages WHERE tenant_id = $1 UNION SELECT memory_id FROM memory_items"
            " WHERE tenant_id = $1 UNION SELECT event_id::text FROM derived_events WHERE tenant_id = $1", tenant)
        ids[tenant] = {r["id"].encode() for r in rows}
    assert all(ids.values()) and not (ids["alpha"] & ids["beta"])
    return engine, ids


PARAMS = {
    "context": st.fixed_dictionaries({"thread": st.just("shared")}, optional={
        "window": st.integers(200, 200_000), "query": st.sampled_from(["exhibit", "zebrafish", "kingfisher"])}),
    "history": st.fixed_dictionaries({"thread": st.just("shared")}, optional={"limit": st.integers(1, 50)}),
    "threads": st.fixed_dictionaries({}, optional={"limit": st.integers(1, 10)}),
    "memories": st.fixed_dictionaries({}, optional={
        "user": st.just("sam"), "thread": st.just("shared"), "status": st.sampled_from(["active", "all"])}),
    "summary": st.just({"thread": "shared"}),
    "episodes": st.just({"thread": "shared"}),
    "profile": st.just({"user": "sam"}),
    "recall": st.fixed_dictionaries({"query": st.sampled_from(["exhibit visit", "zebrafish", "kingfisher"])},
                                    optional={"user": st.just("sam"), "k": st.integers(1, 20),
                                              "sources": st.just(["turns", "memories"])}),
}


@given(method=st.sampled_from(sorted(PARAMS)), data=st.data(), tenant=st.sampled_from(sorted(TENANTS)))
@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
async def test_replies_never_cross_tenants(two_tenants, method: str, data: st.DataObject, tenant: str) -> None:  # type: ignore[no-untyped-def]
    engine, ids = two_tenants
    other = next(t for t in TENANTS if t != tenant)
    body = data.draw(PARAMS[method], label="params")
    reply = await engine.nc.request(engine.subjects.rpc_scoped(method, tenant),
                                    msgspec.json.encode({"tenant": tenant, **body}), timeout=10)
    decoded = msgspec.json.decode(reply.data)
    assert decoded["ok"] is True, reply.data[:300]
    # the reply may echo the question itself (recall's "query"): only what the engine found must stay in the tenant
    echoed = msgspec.json.encode(decoded["result"].get("query")) if isinstance(decoded["result"], dict) else b""
    assert TENANTS[other].encode() not in reply.data.replace(echoed, b"")
    found = set(UUID.findall(reply.data))
    assert not (found & ids[other])
    if method in ("context", "history"):
        assert TENANTS[tenant].encode() in reply.data and found & ids[tenant]  # the answer is not vacuous
    # audit of each memory this tenant can see stays inside the tenant too
    if method == "memories":
        for mem in msgspec.json.decode(reply.data)["result"]["memories"][:2]:
            audit = await engine.nc.request(engine.subjects.rpc_scoped("audit", tenant), msgspec.json.encode(
                {"tenant": tenant, "memory_id": mem["memory_id"]}), timeout=10)
            assert TENANTS[other].encode() not in audit.data and not (set(UUID.findall(audit.data)) & ids[other])
        # and the other tenant's memory ids are unknown here
        foreign = next(i for i in ids[other] if i.count(b"-") == 4)
        probe = await engine.nc.request(engine.subjects.rpc_scoped("audit", tenant), msgspec.json.encode(
            {"tenant": tenant, "memory_id": foreign.decode()}), timeout=10)
        assert msgspec.json.decode(probe.data)["ok"] is False
