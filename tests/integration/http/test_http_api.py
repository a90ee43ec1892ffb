"""The HTTP API (issue #12 item 1) against the live server of the embedded engine: every route, API keys and tenant
isolation, problem+json errors, idempotent turns, escaping in the console."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import httpx
import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from memengine.engine.wire.errors import RpcError
from tests.conftest import wait_until
from tests.integration.http_fixtures import (  # noqa: F401 - fixtures
    KEY_ACME,
    KEY_DEFAULT,
    api_fixture,
    http_engine_fixture,
    keyed_engine_fixture,
)
from tests.integration.procs import hello, memengine_up, stop_process

pytestmark = pytest.mark.integration

SCRIPT = "<script>alert(1)</script>"
PROBLEM = "application/problem+json"


def assert_problem(r: httpx.Response, status: int, code: str) -> dict:  # type: ignore[type-arg]
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith(PROBLEM), r.headers
    body = r.json()
    assert body["code"] == code and body["status"] == status and body["type"] == f"urn:memengine:error:{code}", body
    return body  # type: ignore[no-any-return]


async def turn(c: httpx.AsyncClient, thread: str, role: str, content: object, **kw: object) -> dict:  # type: ignore[type-arg]
    r = await c.post(f"/v1/threads/{thread}/turns", json={"role": role, "content": content, **kw})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def memory_of(c: httpx.AsyncClient, user: str, text: str) -> dict:  # type: ignore[type-arg]
    async def listed() -> dict | None:  # type: ignore[type-arg]
        r = await c.get("/v1/memories", params={"user": user, "status": "all"})
        assert r.status_code == 200, r.text
        return next((m for m in r.json()["memories"] if m["text"] == text), None)

    return await wait_until(listed, timeout=30)  # type: ignore[no-any-return]


async def test_every_route_answers_what_the_query_handler_answers(http_engine: Engine, api: httpx.AsyncClient) -> None:
    t1 = await turn(api, "trip", "user", "I prefer aisle seats on long flights.", user_id="maya", session_id="s1")
    await turn(api, "trip", "assistant", [{"type": "thinking", "thinking": "note the seat"},
                                          {"type": "text", "text": "Noted: aisle seats."}], session_id="s1")
    last = await turn(api, "trip", "user", SCRIPT, user_id="maya", session_id="s1")
    assert last["seq"] > t1["seq"] and not last["duplicate"] and uuid.UUID(last["event_id"])

    hist = (await api.get("/v1/threads/trip/history", params={"after_seq": last["seq"]})).json()
    r = await api.get("/v1/threads")
    assert [t["thread"] for t in r.json()["threads"]] == ["trip"]
    assert [m["seq"] for m in hist["messages"]] == [t1["seq"], t1["seq"] + 1, last["seq"]]
    assert hist["messages"][2]["content"] == [{"type": "text", "text": SCRIPT}]
    # the same reply as the NATS RPC, field for field
    via_nats = await http_engine.client().request("history", {"thread": "trip"})
    assert hist["messages"] == via_nats["messages"]

    ctx = (await api.get("/v1/threads/trip/context", params={"window": 8000, "query": "seats"})).json()
    assert set(ctx["tokens"]) == {"tier1", "tier2", "tier3", "total"} and ctx["budget"]["window"] == 8000
    assert {m["tier"] for m in ctx["messages"]} <= {1, 2, 3} and ctx["messages"]

    r = await api.post("/v1/recall", json={"query": "aisle seats", "after_seq": last["seq"]})
    assert r.status_code == 200, r.text
    assert any("aisle" in (h.get("text") or "") for h in r.json()["hits"]), r.json()

    r = await api.post("/v1/memories", json={"text": "Maya is vegetarian", "user": "maya", "type": "PREFERENCE"})
    assert r.status_code == 202, r.text
    asserted = r.json()
    item = await memory_of(api, "maya", "Maya is vegetarian")
    assert item["memory_id"] == asserted["memory_id"] and item["status"] == "active"
    chain = (await api.get(f"/v1/memories/{item['memory_id']}/audit")).json()
    assert chain["memory"]["memory_id"] == item["memory_id"]
    assert any(s["event_id"] == asserted["event_id"] for ev in chain["derived_events"] for s in ev["sources"])
    prof = (await api.get("/v1/users/maya/profile")).json()
    assert "Maya is vegetarian" in "".join(prof["files"].values())

    r = await api.delete(f"/v1/memories/{item['memory_id']}", params={"wait": 20, "reason": "wrong"})
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "retracted"
    listed = (await api.get("/v1/memories", params={"user": "maya", "status": "retracted"})).json()["memories"]
    assert [m["memory_id"] for m in listed] == [item["memory_id"]]

    eps = (await api.get("/v1/threads/trip/episodes")).json()
    assert eps["thread"] == "trip" and "episodes" in eps and "summary" in eps
    assert isinstance((await api.get("/v1/operations")).json()["operations"], list)
    assert (await api.get("/v1/dlq")).json() == {"dead_letters": []}

    doc = (await api.get("/openapi.json")).json()
    for path in ("/v1/threads/{thread}/turns", "/v1/threads", "/v1/threads/{thread}/history",
                 "/v1/threads/{thread}/context", "/v1/recall", "/v1/memories", "/v1/memories/{memory_id}",
                 "/v1/memories/{memory_id}/audit", "/v1/users/{user}/profile", "/v1/threads/{thread}/episodes",
                 "/v1/operations", "/v1/dlq"):
        assert path in doc["paths"], path
    assert "RecallRequest" in doc["components"]["schemas"]
    for page in ("/docs", "/redoc"):  # interactive docs with no network: every asset same-origin and served
        r = await api.get(page)
        assert r.status_code == 200 and "/openapi.json" in r.text and "://" not in r.text, (page, r.text)
        assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|(?:url|Url)\s*:\s*["']([^"']+)["']""", r.text)
        urls = {a or b for a, b in assets}
        assert len(urls) >= (3 if page == "/docs" else 2) and all(u.startswith("/") and not u.startswith("//")
                                                                  for u in urls), (page, urls)
        for u in urls:
            assert (await api.get(u)).status_code == 200, u


async def test_time_travel_answers_as_the_log_stood(api: httpx.AsyncClient) -> None:
    first = await turn(api, "tt", "user", "first turn", user_id="maya")
    await turn(api, "tt", "user", "second turn", user_id="maya")
    r = await api.get("/v1/threads/tt/history", params={"as_of_seq": first["seq"]})
    assert r.status_code == 200, r.text
    assert [m["content"][0]["text"] for m in r.json()["messages"]] == ["first turn"]
    assert r.json()["as_of"]["facts_seq"] == first["seq"]
    await turn(api, "tt2", "user", "a thread that did not exist yet")
    at_first = (await api.get("/v1/threads", params={"as_of_seq": first["seq"]})).json()
    assert [t["thread"] for t in at_first["threads"]] == ["tt"]
    eps = await api.get("/v1/threads/tt/episodes", params={"as_of_seq": first["seq"]})
    assert eps.status_code == 200 and eps.json()["as_of"]["facts_seq"] == first["seq"], eps.text
    assert_problem(await api.get("/v1/threads/tt2/episodes", params={"as_of_seq": first["seq"]}), 404,
                   "unknown_thread")
    assert_problem(await api.get("/v1/threads/tt/history", params={"as_of_seq": 10**6}), 422, "invalid_request")
    assert_problem(await api.get("/v1/threads/tt/history", params={"as_of": "not a time"}), 422, "invalid_request")


async def test_idempotency_key_is_the_event_id(api: httpx.AsyncClient) -> None:
    key = str(uuid.uuid4())
    a = await api.post("/v1/threads/idem/turns", json={"role": "user", "content": "once"},
                       headers={"Idempotency-Key": key})
    b = await api.post("/v1/threads/idem/turns", json={"role": "user", "content": "once"},
                       headers={"Idempotency-Key": key})
    assert a.status_code == b.status_code == 200, (a.text, b.text)
    assert a.json()["event_id"] == b.json()["event_id"] == key
    assert b.json()["seq"] == a.json()["seq"] and b.json()["duplicate"] and not a.json()["duplicate"]
    c = await api.post("/v1/threads/idem/turns", json={"role": "user", "content": "again"},
                       headers={"Idempotency-Key": "order-42"})
    d = await api.post("/v1/threads/idem/turns", json={"role": "user", "content": "again"},
                       headers={"Idempotency-Key": "order-42"})
    assert c.json()["seq"] == d.json()["seq"] and d.json()["duplicate"]
    reused = await api.post("/v1/threads/idem/turns", json={"role": "user", "content": "something else"},
                            headers={"Idempotency-Key": "order-42"})
    assert_problem(reused, 422, "invalid_request")
    hist = (await api.get("/v1/threads/idem/history", params={"after_seq": d.json()["seq"]})).json()
    assert [m["content"][0]["text"] for m in hist["messages"]] == ["once", "again"]


async def test_bad_input_is_problem_json(http_engine: Engine, api: httpx.AsyncClient) -> None:
    await turn(api, "known", "user", "hello")
    assert_problem(await api.get("/v1/threads/nope/history"), 404, "unknown_thread")
    assert_problem(await api.get("/v1/threads/nope/context"), 404, "unknown_thread")
    assert_problem(await api.get("/v1/threads/nope/episodes"), 404, "unknown_thread")
    assert_problem(await api.get("/v1/memories/00000000-0000-0000-0000-000000000000/audit"), 404, "unknown_memory")
    assert_problem(await api.delete("/v1/memories/00000000-0000-0000-0000-000000000000"), 404, "unknown_memory")
    assert_problem(await api.post("/v1/threads/known/turns", json={"role": "robot", "content": "x"}), 422,
                   "invalid_request")
    assert_problem(await api.post("/v1/threads/known/turns", content=b"{not json",
                                  headers={"content-type": "application/json"}), 422, "invalid_request")
    assert_problem(await api.post("/v1/threads/known/turns", json={"role": "user", "content": [{"type": "x"}]}),
                   422, "invalid_request")
    assert_problem(await api.post("/v1/threads/a.b/turns", json={"role": "user", "content": "x"}), 422,
                   "invalid_token")
    assert_problem(await api.post("/v1/recall", content=b"[[[[", headers={"content-type": "application/json"}),
                   422, "invalid_request")
    assert_problem(await api.post("/v1/recall", json={"query": "x", "bogus": 1}), 422, "invalid_request")
    assert_problem(await api.get("/v1/threads", params={"limit": 0}), 422, "invalid_request")
    big = "x" * (http_engine.settings.max_request_bytes + 1)
    assert_problem(await api.post("/v1/recall", json={"query": big}), 413, "payload_too_large")
    assert_problem(await api.get("/v1/nothing-here"), 404, "not_found")


async def test_api_keys_bind_a_tenant(keyed_engine: Engine) -> None:
    url = keyed_engine.http.url
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY_DEFAULT}"}) as mine, \
            httpx.AsyncClient(base_url=url, headers={"X-API-Key": KEY_ACME}) as theirs, \
            httpx.AsyncClient(base_url=url) as anonymous:
        assert_problem(await anonymous.get("/v1/threads"), 401, "unauthorized")
        assert_problem(await anonymous.get("/v1/threads", headers={"X-API-Key": "wrong"}), 401, "unauthorized")
        t = await turn(mine, "secret", "user", "my card ends 4242", user_id="maya")
        r = await mine.post("/v1/memories", json={"text": "Maya's card ends 4242", "user": "maya"})
        mid = r.json()["memory_id"]
        await memory_of(mine, "maya", "Maya's card ends 4242")

        assert (await theirs.get("/v1/threads")).json() == {"tenant": "acme", "threads": []}
        assert_problem(await theirs.get("/v1/threads/secret/history", params={"after_seq": t["seq"]}), 404,
                       "unknown_thread")
        assert_problem(await theirs.get("/v1/threads/secret/context"), 404, "unknown_thread")
        assert_problem(await theirs.get(f"/v1/memories/{mid}/audit"), 404, "unknown_memory")
        assert_problem(await theirs.delete(f"/v1/memories/{mid}"), 404, "unknown_memory")
        assert (await theirs.get("/v1/memories", params={"status": "all"})).json()["memories"] == []
        r = await theirs.post("/v1/recall", json={"query": "card", "after_seq": t["seq"]})
        assert r.status_code == 200 and r.json()["hits"] == [], r.text
        # a body never widens the key's scope
        assert_problem(await theirs.post("/v1/recall", json={"query": "card", "tenant": "default"}), 403, "forbidden")
        assert_problem(await theirs.get("/v1/operations"), 403, "forbidden")
        assert_problem(await theirs.get("/v1/dlq"), 403, "forbidden")
        assert (await mine.get("/v1/dlq")).status_code == 200
        # their own writes land in their tenant
        t2 = await turn(theirs, "secret", "user", "acme's own thread of the same name")
        own = (await theirs.get("/v1/threads/secret/history", params={"after_seq": t2["seq"]})).json()["messages"]
        assert [m["content"][0]["text"] for m in own] == ["acme's own thread of the same name"]
        mine_now = (await mine.get("/v1/threads/secret/history")).json()["messages"]
        assert [m["content"][0]["text"] for m in mine_now] == ["my card ends 4242"]
        # the console answers with the same scope
        r = await theirs.get("/threads/secret")
        assert r.status_code == 200 and "4242" not in r.text


async def test_console_shows_stored_text_as_text(api: httpx.AsyncClient) -> None:
    last = await turn(api, "xss", "user", SCRIPT, user_id="mallory")
    await api.get("/v1/threads/xss/history", params={"after_seq": last["seq"]})
    for path in ("/", "/threads/xss", "/threads/xss/context"):
        r = await api.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), (path, r.text)
        assert SCRIPT not in r.text, path
    page = (await api.get("/threads/xss")).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    r = await api.get("/threads/nope")
    assert r.status_code == 404 and "unknown_thread" in r.text
    # the as-of control: the transcript as the log stood at the first turn's sequence
    later = await turn(api, "xss", "user", "a later turn")
    await api.get("/v1/threads/xss/history", params={"after_seq": later["seq"]})
    assert "a later turn" in (await api.get("/threads/xss")).text
    past = await api.get("/threads/xss", params={"as_of_seq": last["seq"]})
    assert past.status_code == 200 and "a later turn" not in past.text and "showing a past state" in past.text


async def test_live_thread_events_and_same_origin_forms(api: httpx.AsyncClient) -> None:
    first = await turn(api, "live", "user", "hello")
    await api.get("/v1/threads/live/history", params={"after_seq": first["seq"]})
    async with api.stream("GET", "/threads/live/live", params={"after": first["seq"]}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        second = await turn(api, "live", "user", "are you there?")
        lines = stream.aiter_lines()
        while await asyncio.wait_for(anext(lines), timeout=15) != "event: turn":
            pass
        assert await anext(lines) == f"data: {second['seq']}"
    r = await api.post("/memories/x/retract", data={"reason": "csrf"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "same-origin" in r.text


async def test_console_sign_in_with_a_key(keyed_engine: Engine) -> None:
    async with httpx.AsyncClient(base_url=keyed_engine.http.url) as browser:
        r = await browser.get("/")
        assert r.status_code == 401 and "/login" in r.text
        assert (await browser.post("/login", data={"key": "wrong"})).status_code == 401
        r = await browser.post("/login", data={"key": KEY_ACME})
        assert r.status_code == 303 and "httponly" in r.headers["set-cookie"].lower()
        r = await browser.get("/")
        assert r.status_code == 200 and "tenant <b>acme</b>" in r.text


async def test_dead_letters_retry_and_drop_after_confirmation(http_engine: Engine, api: httpx.AsyncClient) -> None:
    from tests.integration.poison import publish_raw

    subject = http_engine.subjects.fact("default", "bad", "TurnRecorded")
    for _ in range(2):
        await publish_raw(http_engine, subject, b"not an event")

    async def two_open() -> list | None:  # type: ignore[type-arg]
        dead = (await api.get("/v1/dlq")).json()["dead_letters"]
        return dead if len({d["stream_seq"] for d in dead}) == 2 else None

    dead = await wait_until(two_open, timeout=30)
    first, second = sorted({d["stream_seq"]: d["id"] for d in dead}.values())
    page = await api.get("/ops")
    assert page.status_code == 200 and f"/dlq/{first}/drop" in page.text and "not an event" not in page.text
    confirm = await api.get(f"/dlq/{first}/drop")
    assert confirm.status_code == 200 and 'name="confirm" value="yes"' in confirm.text
    r = await api.post(f"/dlq/{first}/drop", data={})  # not confirmed: back to the question, nothing dropped
    assert r.status_code == 303 and r.headers["location"] == f"/dlq/{first}/drop"
    assert (await api.get("/v1/dlq", params={"status": "dropped"})).json()["dead_letters"] == []
    r = await api.post(f"/dlq/{first}/drop", data={"confirm": "yes"})
    assert r.status_code == 303 and r.headers["location"] == "/ops"
    dropped = (await api.get("/v1/dlq", params={"status": "dropped"})).json()["dead_letters"]
    assert {d["id"] for d in dropped} >= {first}
    r = await api.post(f"/v1/dlq/{second}/retry")
    assert r.status_code == 200 and r.json()["retried"], r.text
    ops = (await api.get("/v1/operations")).json()["operations"]
    assert [o["kind"] for o in ops[:2]] == ["dlq-retry", "dlq-drop"], ops
    assert "dlq-retry" in (await api.get("/ops")).text


async def test_memengine_up_serves_the_api_and_stops_on_sigterm(settings: Settings, tmp_path: Path) -> None:
    log = tmp_path / "up.log"
    proc = memengine_up(settings, log, "--http-port", "0")
    try:
        up = await wait_until(lambda: _hello(log), timeout=60)
        assert up["http_url"].startswith("http://127.0.0.1:") and up["http_auth"] == "loopback, tenant default"
        assert "no API keys configured" in log.read_text()  # said at start-up
        async with httpx.AsyncClient(base_url=up["http_url"]) as c:
            t = await turn(c, "via-up", "user", "hello from the CLI's server")
            r = await c.get("/v1/threads/via-up/history", params={"after_seq": t["seq"]})
            assert r.status_code == 200 and r.json()["messages"][0]["seq"] == t["seq"], r.text
    finally:
        stop_process(proc)
    assert proc.returncode == 0, log.read_text()[-2000:]  # uvicorn left SIGTERM to the engine's own shutdown


async def _hello(log: Path) -> dict | None:  # type: ignore[type-arg]
    return hello(log)


async def test_http_and_nats_draw_from_one_rate_bucket(settings: Settings) -> None:
    # a bucket of 3 that cannot refill during the test (0.001/s): exact counts, no clock. The engine's start-up may
    # take a token itself, so the NATS side is drained until refused rather than counted.
    limited = msgspec.structs.replace(settings, http_port=0, rpc_rate=0.001, rpc_burst=3.0)
    async with lifespan(limited) as engine, httpx.AsyncClient(base_url=engine.http.url, timeout=30) as c:
        assert (await c.get("/v1/threads")).status_code == 200  # a token taken over HTTP
        nats, refused = engine.client(), None
        for _ in range(3):
            try:
                await nats.threads()
            except RpcError as exc:
                refused = exc.code
                break
        assert refused == "rate_limited"
        # a bucket of its own would still hold tokens for HTTP
        assert_problem(await c.get("/v1/threads"), 429, "rate_limited")
