"""Issue #26 item 4 on the real servers: user binding is enforced by the query handler, not only by the client.

A client bound to alice (``MemoryClient.for_user``, ``memengine mcp --user alice``, an HTTP key bound to alice):

(a) ``context`` of bob's thread with a window too small for any of bob's turns must not return bob's user-memory
    part (his allergy, his city);
(b) ``threads`` lists alice's threads only;
(c) a turn into bob's thread is refused before the log, and bob keeps his thread.

Every read of another user's things (recall, memories, profile, history, episodes, summary, audit, threads) answers
nothing of bob's: ``forbidden`` or an empty answer. A raw request on the tenant subject carrying ``bound_user``
(what every bound surface sends) is held to the same scope by the server itself. Operator scope (no bound user)
keeps seeing every user.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult, TextContent

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.client.memory_client import MemoryClient
from memengine.engine.integrations.mcp_server import build_server
from memengine.engine.ops import rebuild as rb
from memengine.engine.wire.errors import Forbidden, RpcError
from memengine.events import ContextWanted, TextBlock, TurnRecorded, new_event_id
from tests.integration.recall.test_recall import _item, publish_items, settle

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
#: what must never reach alice: words of bob's turns and of bob's memories
BOB_SECRETS = ("peanut", "Reykjavik", "4321")
KEY_ALICE, KEY_BOB, KEY_OPERATOR = "key-alice-0123456789", "key-bob-0123456789", "key-operator-0123456789"


def _sha(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.fixture
async def eng(settings: Settings) -> AsyncIterator[Engine]:
    """Projector + query handler, no embedder (full-text recall), no rate limit (the property test asks a lot)."""
    async with lifespan(msgspec.structs.replace(settings, rpc_rate=0), roles={"projector", "query"},
                        embedder=None) as e:
        yield e


@pytest.fixture
async def heng(settings: Settings, tmp_path: Path) -> AsyncIterator[Engine]:
    """Projector + query handler + HTTP API with keys bound to alice, to bob, and an unbound key of ``acme``."""
    keys = tmp_path / "http-keys"
    keys.write_text(f"acme {_sha(KEY_ALICE)} user=alice\nacme {_sha(KEY_BOB)} user=bob\n"
                    f"acme {_sha(KEY_OPERATOR)}\n")
    s = msgspec.structs.replace(settings, http_port=0, http_keys_file=str(keys))
    async with lifespan(s, roles={"projector", "query"}, embedder=None) as e:
        yield e


async def setup(engine: Engine) -> int:
    """bob has thread ``bob-t`` (his allergy, his PIN), a long-term memory (his city) and an episode-bearing
    session; alice has thread ``alice-t``. Returns the last sequence."""
    acme = engine.client("acme")
    alice, bob = acme.for_user("alice"), acme.for_user("bob")
    last = 0
    for i, (client, thread, role, text) in enumerate([
        (bob, "bob-t", "user", "I am allergic to peanut butter and my PIN is 4321. " * 80),
        (bob, "bob-t", "assistant", "Noted: no peanut for you, and I keep the 4321 PIN secret. " * 80),
        (alice, "alice-t", "user", "I like hiking in the Alps."),
    ]):
        last = (await client.record_turn(thread, role, text, session_id="s1",
                                         occurred_at=T0 + timedelta(minutes=i))).seq
    await publish_items(engine, "acme", [
        _item("mem-bob-city", "bob lives in Reykjavik", typ="PROFILE", importance=0.9, user="bob"),
        _item("mem-bob-allergy", "bob is allergic to peanut", typ="FACT", importance=0.9, user="bob"),
        _item("mem-alice", "alice likes hiking", user="alice")], at=T0, thread="_")
    await settle(engine, last)
    return last


def _without_query(value: Any) -> Any:
    """``value`` without the ``query`` a recall reply echoes (the asker's own words)."""
    if isinstance(value, dict):
        return {k: _without_query(v) for k, v in value.items() if k != "query"}
    if isinstance(value, list):
        return [_without_query(v) for v in value]
    return value


def assert_no_bob(answer: Any, *, ids: bool = True) -> None:
    """No word of bob's turns or memories in ``answer`` (a reply, or text), and (``ids``) no item, thread or user id
    of his: off where the answer only echoes what the asker named (an error's detail, a profile's header)."""
    if isinstance(answer, str):
        text = answer
    else:
        text = json.dumps(_without_query(answer if isinstance(answer, dict | list) else msgspec.to_builtins(answer)))
    for secret in BOB_SECRETS:
        assert secret not in text, (secret, text[:2000])
    if ids:
        assert '"bob"' not in text and '"bob-t"' not in text and "mem-bob" not in text, text[:2000]


def text_of(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent), result
    return result.content[0].text


async def test_bound_client_a_b_c(eng: Engine) -> None:
    last = await setup(eng)
    operator = eng.client("acme")
    alice, bob = operator.for_user("alice"), operator.for_user("bob")
    # operator scope sees bob's user memory in his thread's context (the part exists to be leaked)
    ctx = await operator.context("bob-t", window=1500, after_seq=last)
    assert ctx.user_memory is not None and ctx.user_memory.user == "bob"
    assert [m.tier for m in ctx.messages] == [1]  # none of bob's turns fits
    # (a) a window too small for any of bob's turns: still nothing of bob's
    for window in (60, 1500, 4000):
        with pytest.raises(Forbidden):
            await alice.context("bob-t", window=window)
    # (b) alice's threads only
    assert [t.thread for t in (await alice.threads()).threads] == ["alice-t"]
    assert {t.thread for t in (await operator.threads()).threads} == {"alice-t", "bob-t"}
    # (c) a turn into bob's thread is refused before the log; bob keeps his thread
    with pytest.raises(Forbidden):
        await alice.record_turn("bob-t", "user", "I am bob, forget my allergy.")
    for event in (lambda: alice.label_thread("bob-t", "mine now"), lambda: alice.end_session("bob-t", "s1")):
        with pytest.raises(Forbidden):
            await event()
    assert len((await bob.history("bob-t")).messages) == 2
    assert (await bob.context("bob-t")).messages
    # a thread nobody has claimed yet is free; once claimed it is the claimer's
    seq = (await alice.record_turn("new-t", "user", "a new thread of mine")).seq
    await settle(eng, seq)
    with pytest.raises(Forbidden):
        await bob.record_turn("new-t", "user", "mine too?")
    assert (await alice.context("new-t")).messages


async def test_foreign_turn_does_not_take_the_thread(eng: Engine) -> None:
    """A turn of alice that reaches bob's thread anyway (a raw publisher with the tenant's credentials: operator
    scope) does not make bob lose his thread, and alice gets no access to it."""
    await setup(eng)
    operator = eng.client("acme")
    seq = (await operator.record_turn("bob-t", "user", "alice was here", user_id="alice")).seq
    await settle(eng, seq)
    bob = operator.for_user("bob")
    hist = await bob.history("bob-t")
    assert len(hist.messages) == 3
    ctx = await bob.context("bob-t", query="allergy")
    assert ctx.user_memory is None or ctx.user_memory.user == "bob"
    alice = operator.for_user("alice")
    with pytest.raises(Forbidden):
        await alice.history("bob-t")
    assert "bob-t" not in {t.thread for t in (await alice.threads()).threads}
    owners = {t.thread: t.user for t in (await operator.threads()).threads}
    assert owners == {"bob-t": "bob", "alice-t": "alice"}
    # the owner is a fold of the log: a rebuild (bulk statements over whole batches) gives the same, and verify
    # finds the live table equal to a fresh fold
    report = await rb.verify(eng, ["thread_activity"])
    assert report.ok, report
    await rb.rebuild(eng, ["thread_activity"])
    assert {t.thread: t.user for t in (await operator.threads()).threads} == owners
    assert len((await bob.history("bob-t")).messages) == 3


async def test_bound_reads_of_bob_things(eng: Engine) -> None:
    await setup(eng)
    alice = eng.client("acme").for_user("alice")
    for call in (lambda: alice.history("bob-t"), lambda: alice.summary("bob-t"), lambda: alice.episodes("bob-t"),
                 lambda: alice.scratchpad("bob-t"), lambda: alice.audit("mem-bob-city"),
                 lambda: alice.profile("bob"), lambda: alice.memories(user="bob"),
                 lambda: alice.recall("peanut", user="bob")):
        with pytest.raises(Forbidden):
            await call()
    # what alice may ask holds nothing of bob's
    assert_no_bob(await alice.recall("peanut allergy Reykjavik PIN", sources=["turns", "memories"], limit=50))
    assert_no_bob(await alice.recall("peanut", thread="bob-t", sources=["turns", "memories"]))
    assert_no_bob(await alice.memories(status="all"))
    assert_no_bob(await alice.memories(thread="bob-t", status="all"))
    assert_no_bob(await alice.profile())
    assert_no_bob(await alice.threads(limit=1000))
    with pytest.raises(Forbidden):
        await alice.retract("mem-bob-city")
    with pytest.raises(Forbidden):
        await alice.promote("mem-bob-city")


async def raw(engine: Engine, method: str, body: dict[str, Any]) -> Any:
    """A request on ``<root>.rpc.<method>.acme`` as a bound surface sends it (``bound_user`` in the body): the
    server, not the client library, holds it to the bound user's scope. The decoded reply envelope."""
    msg = await engine.nc.request(engine.subjects.rpc_scoped(method, "acme"),
                                  msgspec.json.encode({"tenant": "acme", **body}), timeout=10)
    return json.loads(msg.data)


async def test_server_enforces_the_bound_user(eng: Engine) -> None:
    await setup(eng)
    bound = {"bound_user": "alice"}
    for method, body in [("context", {"thread": "bob-t", "window": 60}), ("history", {"thread": "bob-t"}),
                         ("summary", {"thread": "bob-t"}), ("episodes", {"thread": "bob-t"}),
                         ("scratchpad", {"thread": "bob-t"}), ("audit", {"memory_id": "mem-bob-city"}),
                         ("profile", {"user": "bob"}), ("memories", {"user": "bob"}),
                         ("recall", {"query": "peanut", "user": "bob"})]:
        reply = await raw(eng, method, {**body, **bound})
        assert reply.get("error", {}).get("code") == "forbidden", (method, reply)
    for method, body in [("threads", {}), ("memories", {"status": "all"}),
                         ("recall", {"query": "peanut PIN Reykjavik", "sources": ["turns", "memories"]})]:
        reply = await raw(eng, method, {**body, **bound})
        assert reply.get("ok"), (method, reply)
        assert_no_bob(reply)
    # without a bound user: operator scope, as before
    reply = await raw(eng, "threads", {})
    assert {t["thread"] for t in reply["result"]["threads"]} == {"alice-t", "bob-t"}


async def test_mcp_bound_to_alice(eng: Engine) -> None:
    await setup(eng)
    async with Client(build_server(eng.client("acme").for_user("alice")), mode="legacy") as mc:
        res = await mc.call_tool("get_context", {"thread": "bob-t", "window": 60})
        assert res.is_error and text_of(res).startswith("forbidden:"), text_of(res)
        assert_no_bob(text_of(res))
        res = await mc.call_tool("list_threads", {})
        assert not res.is_error and json.loads(text_of(res))["threads"][0]["thread"] == "alice-t"
        assert_no_bob(text_of(res))
        res = await mc.call_tool("record_turn", {"thread": "bob-t", "role": "user", "text": "hello bob"})
        assert res.is_error and text_of(res).startswith("forbidden:"), text_of(res)
    bob = eng.client("acme").for_user("bob")
    assert len((await bob.history("bob-t")).messages) == 2


async def test_http_key_bound_to_a_user(heng: Engine) -> None:
    eng = heng
    last = await setup(eng)
    assert eng.http is not None
    async with httpx.AsyncClient(base_url=eng.http.url, timeout=30,
                                 headers={"Authorization": f"Bearer {KEY_ALICE}"}) as api:
        r = await api.get("/v1/threads/bob-t/context", params={"window": 60, "after_seq": last})
        assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
        assert_no_bob(r.json())
        r = await api.get("/v1/threads")
        assert r.status_code == 200 and [t["thread"] for t in r.json()["threads"]] == ["alice-t"], r.text
        r = await api.post("/v1/threads/bob-t/turns", json={"role": "user", "content": "hello"})
        assert r.status_code == 403, r.text
        r = await api.post("/v1/threads/alice-t/turns", json={"role": "user", "content": "hi", "user_id": "bob"})
        assert r.status_code == 403, r.text
        # time travel answers from scratch tables folded from the log: the same scope
        r = await api.get("/v1/threads", params={"as_of_seq": last})
        assert r.status_code == 200 and [t["thread"] for t in r.json()["threads"]] == ["alice-t"], r.text
        r = await api.get("/v1/threads/bob-t/context", params={"window": 60, "as_of_seq": last})
        assert r.status_code == 403, r.text
        r = await api.get("/v1/memories/mem-bob-city/audit", params={"as_of_seq": last})
        assert r.status_code == 403, r.text
        for path in ("/v1/threads/bob-t/history", "/v1/threads/bob-t/episodes", "/v1/memories/mem-bob-city/audit",
                     "/v1/users/bob/profile"):
            r = await api.get(path)
            assert r.status_code == 403, (path, r.text)
            assert_no_bob(r.json(), ids=False)
        r = await api.get("/v1/memories", params={"user": "bob"})
        assert r.status_code == 403, r.text
        r = await api.get("/v1/memories", params={"status": "all"})
        assert r.status_code == 200 and "mem-alice" in r.text
        assert_no_bob(r.json())
        r = await api.post("/v1/recall", json={"query": "peanut PIN", "sources": ["turns", "memories"]})
        assert r.status_code == 200, r.text
        assert_no_bob(r.json())
        r = await api.post("/v1/recall", json={"query": "peanut", "bound_user": "bob"})
        assert r.status_code == 403, r.text
        r = await api.post("/v1/memories", json={"text": "bob likes tea", "user": "bob"})
        assert r.status_code == 403, r.text
        r = await api.delete("/v1/memories/mem-bob-city")
        assert r.status_code == 403, r.text
        # her own thread works, and her turns carry her user
        r = await api.post("/v1/threads/alice-t/turns", json={"role": "assistant", "content": "Alps it is."})
        assert r.status_code == 200, r.text
        r = await api.get("/v1/threads/alice-t/history", params={"after_seq": r.json()["seq"]})
        assert r.status_code == 200 and {m["user_id"] for m in r.json()["messages"]} == {"alice"}, r.text
        # the console is an operator tool: a user-bound key is refused there
        for path in ("/", "/threads/bob-t", "/memories"):
            r = await api.get(path)
            assert r.status_code == 403, r.text
            assert "bob-t" not in r.text.replace("/threads/bob-t", "") and "Reykjavik" not in r.text
    async with httpx.AsyncClient(base_url=eng.http.url, timeout=30,
                                 headers={"Authorization": f"Bearer {KEY_BOB}"}) as api:
        r = await api.get("/v1/threads/bob-t/history")
        assert r.status_code == 200 and len(r.json()["messages"]) == 2, r.text
    async with httpx.AsyncClient(base_url=eng.http.url, timeout=30,
                                 headers={"Authorization": f"Bearer {KEY_OPERATOR}"}) as api:
        r = await api.get("/v1/threads")
        assert {t["thread"] for t in r.json()["threads"]} == {"alice-t", "bob-t"}


#: user ids that are not alice: other users, case variants, unicode look-alikes, whitespace, empty
OTHER_USERS = st.one_of(
    st.sampled_from(["bob", "Bob", "BOB", "alice ", " alice", "Alice", "ALICE", "аlice",  # Cyrillic а
                     "alice\u200b", "alice\t", "al ice", "", " ", "\u00a0", "alice\n", "ａｌｉｃｅ", "bob-t", "*",
                     "%", "alice%", "_", "null"]),
    st.text(min_size=0, max_size=12).filter(lambda s: s != "alice"),
)


async def test_no_other_user_id_widens_alice_scope(eng: Engine) -> None:
    """Whatever user id a model or a body names beside alice's binding, no answer holds bob's data."""
    await setup(eng)
    alice = eng.client("acme").for_user("alice")
    seen: list[str] = []

    @hsettings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(other=OTHER_USERS)
    def run(other: str) -> None:
        seen.append(other)

    run()
    for other in seen:
        for call in (alice.recall("peanut PIN Reykjavik", user=other, sources=["turns", "memories"]),
                     alice.memories(user=other, status="all"), alice.profile(other)):
            try:
                assert_no_bob(await call)
            except (Forbidden, ValueError):
                pass
        for method, body in [("recall", {"query": "peanut PIN Reykjavik", "user": other,
                                         "sources": ["turns", "memories"]}),
                             ("memories", {"user": other, "status": "all"}), ("profile", {"user": other}),
                             ("threads", {}), ("context", {"thread": "bob-t", "window": 60})]:
            # an id no request may carry (empty, NUL) is invalid_request; any other is answered in alice's scope
            valid = other != "" and "\x00" not in other
            allowed = ("forbidden",) if valid else ("forbidden", "invalid_request")
            reply = await raw(eng, method, {**body, "bound_user": "alice"})
            assert reply.get("ok") or reply["error"]["code"] in allowed, (other, reply)
            assert_no_bob(reply.get("result", {}))
            # a request bound to the look-alike is that user's scope: never bob's unless it is bob
            if other != "bob":
                reply = await raw(eng, method, {**body, "bound_user": other})
                assert reply.get("ok") or reply["error"]["code"] in allowed, (other, reply)
                assert_no_bob(reply.get("result", {}), ids=False)
                assert "mem-bob" not in json.dumps(reply)


def test_keys_file_user_binding(tmp_path: Path) -> None:
    from memengine.engine.http.auth import KeyRing, KeysFileError

    f = tmp_path / "keys"
    f.write_text(f"acme {_sha('a')} user=alice\nacme {_sha('b')} user=Maya%20Li\nacme {_sha('c')}\n"
                 f"default {_sha('d')} admin\n")
    ring = KeyRing.load(str(f))
    assert (ring.lookup("a").tenant, ring.lookup("a").user) == ("acme", "alice")  # type: ignore[union-attr]
    assert ring.lookup("b").user == "Maya Li"  # type: ignore[union-attr]
    assert ring.lookup("c").user is None and ring.lookup("d").admin  # type: ignore[union-attr]
    for bad in (f"acme {_sha('a')} user=", f"acme {_sha('a')} admin user=alice", f"acme {_sha('a')} user=a%00b",
                f"acme {_sha('a')} userx=alice"):
        f.write_text(bad + "\n")
        with pytest.raises(KeysFileError):
            KeyRing.load(str(f))


async def test_raw_publish_of_a_bound_client_into_a_foreign_thread(eng: Engine) -> None:
    await setup(eng)
    alice: MemoryClient = eng.client("acme").for_user("alice")
    with pytest.raises(Forbidden):
        await alice.publish(TurnRecorded(event_id=new_event_id(), tenant_id="acme", thread_id="bob-t", role="user",
                                         user_id="alice", occurred_at=T0, content=[TextBlock(text="hi")]))
    with pytest.raises(RpcError):
        await alice.remember("alice note in bob's thread", thread="bob-t")


async def test_pushed_context_of_bob_thread_is_refused_to_alice(eng: Engine) -> None:
    """A pushed context (``want_context``; a NATS subject, not a request the server scopes) of bob's thread whose
    window holds none of his turns still carries his user memory: alice's bound client refuses it."""
    await setup(eng)
    acme = eng.client("acme")
    alice, bob = acme.for_user("alice"), acme.for_user("bob")
    pushes = alice.subscribe_context("bob-t").__aiter__()
    first = asyncio.create_task(pushes.__anext__())
    await asyncio.sleep(0.3)  # the subscription is in place
    await bob.record_turn("bob-t", "user", "Remind me about the peanut thing. " * 120,
                          want_context=ContextWanted(window=1500))
    with pytest.raises(Forbidden):
        await asyncio.wait_for(first, 15)
