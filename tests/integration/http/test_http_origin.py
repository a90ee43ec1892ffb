"""Where HTTP requests may come from, on the live server (issue #26 item 1): DNS rebinding (a foreign ``Host``) and
cross-site requests (``Origin``, ``Sec-Fetch-Site``, simple ``text/plain`` / form posts) on every route of the API
and the console, with no keys file and with keys; and the URL's characters and ids (item 3, its HTTP half): NUL or
another control character in a query or path parameter, an id beyond its column, answered 4xx problem+json, never
500. Each reproduction of the issue is a test here; hypothesis walks Host / Origin values and every GET route's query
parameters (the app's own route table, so a new route is covered)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import msgspec
import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import Engine, lifespan
from tests.conftest import wait_until
from tests.integration.http_fixtures import (  # noqa: F401 - fixtures
    KEY_ACME,
    KEY_DEFAULT,
    api_fixture,
    http_engine_fixture,
    keyed_engine_fixture,
)

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"
EVIL = "evil.example"
HUGE_ID = 10**30
FUZZ = hsettings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def assert_problem(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    assert r.headers["content-type"].startswith(PROBLEM), r.headers
    body = r.json()
    assert body["code"] == code and body["status"] == status, body


def port_of(engine: Engine) -> int:
    return int(engine.http.port)


async def remembered(api: httpx.AsyncClient, text: str) -> str:
    """Assert a memory over the API and wait until it reads active; its id."""
    r = await api.post("/v1/memories", json={"text": text, "user": "maya"})
    assert r.status_code == 202, r.text
    mid = r.json()["memory_id"]

    async def active() -> bool:
        got = await api.get(f"/v1/memories/{mid}/audit")
        return got.status_code == 200 and got.json()["memory"]["status"] == "active"

    await wait_until(active, timeout=30)
    return str(mid)


async def dead_letters(engine: Engine, api: httpx.AsyncClient, n: int) -> list[int]:
    """``n`` open dead letters (undecodable bytes on the facts stream); their ids."""
    from tests.integration.poison import publish_raw

    subject = engine.subjects.fact("default", "bad", "TurnRecorded")
    for _ in range(n):
        await publish_raw(engine, subject, b"not an event")

    async def opened() -> list[int] | None:
        dead = (await api.get("/v1/dlq")).json()["dead_letters"]
        ids = sorted({d["stream_seq"]: d["id"] for d in dead}.values())  # one id per message
        return ids if len(ids) == n else None

    return await wait_until(opened, timeout=30)  # type: ignore[no-any-return]


async def open_ids(api: httpx.AsyncClient) -> set[int]:
    """The ids of the open dead letters (one per projector group that dead-lettered the message)."""
    return {d["id"] for d in (await api.get("/v1/dlq")).json()["dead_letters"]}


# -- item 1: the keyless loopback server --------------------------------------------------------------------------

async def test_keyless_server_refuses_a_rebound_host_on_every_route(http_engine: Engine,
                                                                      api: httpx.AsyncClient) -> None:
    """Reproduction: ``GET /v1/threads`` and the console ``/`` answered 200 with data to ``Host: evil.example``."""
    r = await api.post("/v1/threads/t/turns", json={"role": "user", "content": "my card ends 4242"})
    assert r.status_code == 200, r.text
    await api.get("/v1/threads/t/history", params={"after_seq": r.json()["seq"]})  # projected
    port = port_of(http_engine)
    for path in ("/v1/threads", "/", "/threads/t", "/v1/threads/t/history", "/docs", "/openapi.json",
                 "/memories", "/ops", "/static-docs/swagger-ui.css", "/login", "/v1/nothing-here"):
        for host in (EVIL, f"{EVIL}:{port}", f"localhost.{EVIL}:{port}", f"127.0.0.1.nip.io:{port}"):
            r = await api.get(path, headers={"Host": host})
            assert_problem(r, 421, "misdirected_request")
            assert "ends 4242" not in r.text  # the text, not bare digits: a problem may carry a random id
    async with api.stream("GET", "/threads/t/live", headers={"Host": f"{EVIL}:{port}"}) as live:
        assert live.status_code == 421
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost", f"LocalHost:{port}"):
        r = await api.get("/v1/threads", headers={"Host": host})
        assert r.status_code == 200 and r.json()["threads"], (host, r.text)


async def test_rebound_console_form_cannot_retract(http_engine: Engine, api: httpx.AsyncClient) -> None:
    """Reproduction: a console form POST ``/memories/{id}/retract`` with ``Host`` and ``Origin`` both
    ``evil.example:P`` retracted the memory (``_form()`` compared Origin with Host, which rebinding makes equal)."""
    mid = await remembered(api, "Maya keeps her spare key under the mat.")
    port = port_of(http_engine)
    r = await api.post(f"/memories/{mid}/retract", data={"reason": "rebinding"},
                       headers={"Host": f"{EVIL}:{port}", "Origin": f"http://{EVIL}:{port}",
                                "Sec-Fetch-Site": "same-origin"})
    assert_problem(r, 421, "misdirected_request")
    # the same origin under the server's own name, from another port of localhost (same-site, not same-origin)
    r = await api.post(f"/memories/{mid}/retract", data={"reason": "csrf"},
                       headers={"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"})
    assert_problem(r, 403, "forbidden")
    r = await api.post(f"/memories/{mid}/retract", data={"reason": "sandboxed"}, headers={"Origin": "null"})
    assert_problem(r, 403, "forbidden")
    assert (await api.get(f"/v1/memories/{mid}/audit")).json()["memory"]["status"] == "active"
    # the console's own form (same origin) still works
    r = await api.post(f"/memories/{mid}/retract", data={"reason": "mine"},
                       headers={"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303, r.text
    assert (await api.get(f"/v1/memories/{mid}/audit")).json()["memory"]["status"] == "retracted"


async def test_cross_site_console_dead_letter_forms_are_refused(http_engine: Engine, api: httpx.AsyncClient) -> None:
    """Reproduction: a cross-site form POST to the console's ``/dlq/{id}/retry`` was carried out
    (``dlq_retry_action`` never checked)."""
    (first,) = await dead_letters(http_engine, api, 1)
    cross = {"Origin": f"http://{EVIL}", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
             "Sec-Fetch-Dest": "document"}
    assert_problem(await api.post(f"/dlq/{first}/retry", data={}, headers=cross), 403, "forbidden")
    assert_problem(await api.post(f"/dlq/{first}/drop", data={"confirm": "yes"}, headers=cross), 403, "forbidden")
    # an old browser sends no Origin, but says cross-site in its Fetch Metadata
    assert_problem(await api.post(f"/dlq/{first}/retry", data={}, headers={"Sec-Fetch-Site": "cross-site"}), 403,
                   "forbidden")
    assert first in await open_ids(api)
    r = await api.post(f"/dlq/{first}/retry", data={}, headers={"Origin": f"http://127.0.0.1:{port_of(http_engine)}",
                                                               "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303 and r.headers["location"] == "/ops", r.text


async def test_cross_site_text_plain_api_posts_are_refused(http_engine: Engine, api: httpx.AsyncClient) -> None:
    """Reproduction: a cross-site ``text/plain`` ``POST /v1/dlq/{id}/drop`` (a simple request: no preflight) dropped
    dead letters."""
    (first,) = await dead_letters(http_engine, api, 1)
    plain = {"content-type": "text/plain"}
    for headers in ({**plain, "Origin": f"http://{EVIL}"}, {**plain, "Sec-Fetch-Site": "cross-site"},
                    {"Origin": f"http://{EVIL}"}, {"Origin": "null"}):
        assert_problem(await api.post(f"/v1/dlq/{first}/drop", content=b"{}", headers=headers), 403, "forbidden")
        assert_problem(await api.post(f"/v1/dlq/{first}/retry", headers=headers), 403, "forbidden")
    # a text/plain or form body on the API is refused whatever the headers say (a browser that sends no Origin)
    assert_problem(await api.post(f"/v1/dlq/{first}/drop", content=b"{}", headers=plain), 415,
                   "unsupported_media_type")
    assert_problem(await api.post("/v1/memories", data={"text": "x"}), 415, "unsupported_media_type")
    assert_problem(await api.post("/v1/recall", content=b'{"query": "x"}', headers=plain), 415,
                   "unsupported_media_type")
    assert first in await open_ids(api)
    # curl and the SDKs send no Origin: unchanged
    r = await api.post(f"/v1/dlq/{first}/drop")
    assert r.status_code == 200 and r.json()["dropped"], r.text
    assert first not in await open_ids(api)


async def test_keyless_reads_refuse_foreign_origins(http_engine: Engine, api: httpx.AsyncClient) -> None:
    port = port_of(http_engine)
    for origin in (f"http://{EVIL}", f"http://{EVIL}:{port}", "null", f"https://127.0.0.1:{port}",
                   "http://localhost:1", f"http://127.0.0.1:{port}/path"):
        assert_problem(await api.get("/v1/threads", headers={"Origin": origin}), 403, "forbidden")
        assert_problem(await api.get("/", headers={"Origin": origin}), 403, "forbidden")
    # another site's <script src> / <img> / fetch of a console page or the API: no Origin, cross-site metadata
    for dest, mode in (("script", "no-cors"), ("image", "no-cors"), ("iframe", "navigate"), ("empty", "cors")):
        r = await api.get("/v1/threads", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": mode,
                                                  "Sec-Fetch-Dest": dest})
        assert_problem(r, 403, "forbidden")
    # a link the user follows from another site still opens the console; the server's own pages read as before
    r = await api.get("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                                    "Sec-Fetch-Dest": "document"})
    assert r.status_code == 200
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"):
        assert (await api.get("/v1/threads", headers={"Origin": origin})).status_code == 200


# -- item 1: with keys ----------------------------------------------------------------------------------------------

async def test_keyed_state_changes_refuse_cross_site(keyed_engine: Engine) -> None:
    """With keys a rebound page carries no key, but a cookie or a key in another tab must not let a cross-site page
    change anything: every state-changing route compares Origin with the server's own and the allowed origins."""
    port = port_of(keyed_engine)
    async with httpx.AsyncClient(base_url=keyed_engine.http.url, headers={"X-API-Key": KEY_DEFAULT}) as mine:
        rebound = {"Host": f"{EVIL}:{port}", "Origin": f"http://{EVIL}:{port}"}
        for headers in ({"Origin": f"http://{EVIL}"}, rebound, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}, {"Origin": "null"}):
            assert_problem(await mine.post("/v1/memories", json={"text": "x"}, headers=headers), 403, "forbidden")
            assert_problem(await mine.post("/v1/threads/t/turns", json={"role": "user", "content": "x"},
                                           headers=headers), 403, "forbidden")
            assert_problem(await mine.delete("/v1/memories/00000000-0000-0000-0000-000000000000", headers=headers),
                           403, "forbidden")
            assert_problem(await mine.post("/login", data={"key": KEY_ACME}, headers=headers), 403, "forbidden")
        assert (await mine.get("/v1/threads")).json()["threads"] == []  # nothing was recorded
        # reads need the key, which a cross-site page does not have; with it they answer as before
        assert (await mine.get("/v1/threads", headers={"Origin": f"http://{EVIL}"})).status_code == 200
        r = await mine.post("/v1/memories", json={"text": "x"}, headers={"Origin": f"http://localhost:{port}"})
        assert r.status_code == 202, r.text


@pytest.fixture
async def proxied_engine(settings: Settings, tmp_path: Path) -> AsyncIterator[Engine]:
    """Keys, and the names an operator configures behind a reverse proxy on memory.example.com."""
    keys = tmp_path / "http-keys"
    keys.write_text(f"default {hashlib.sha256(KEY_DEFAULT.encode()).hexdigest()} admin\n")
    s = msgspec.structs.replace(settings, http_port=0, http_keys_file=str(keys),
                                http_allowed_hosts="memory.example.com, memory.lan:8765",
                                http_allowed_origins="https://memory.example.com")
    async with lifespan(s) as e:
        yield e


async def test_allowed_hosts_and_origins_are_the_operators(proxied_engine: Engine) -> None:
    port = port_of(proxied_engine)
    async with httpx.AsyncClient(base_url=proxied_engine.http.url, headers={"X-API-Key": KEY_DEFAULT}) as c:
        for host in ("memory.example.com", "memory.example.com:443", "memory.lan:8765", f"localhost:{port}"):
            assert (await c.get("/v1/threads", headers={"Host": host})).status_code == 200, host
        for host in (EVIL, "memory.lan:8766", "memory.example.com.evil.example", f"localhost:{port + 1}"):
            assert_problem(await c.get("/v1/threads", headers={"Host": host}), 421, "misdirected_request")
        r = await c.post("/v1/memories", json={"text": "x"}, headers={
            "Host": "memory.example.com", "Origin": "https://memory.example.com", "Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 202, r.text
        for origin in ("http://memory.example.com:8080", "https://memory.example.com.evil.example",
                       f"https://{EVIL}"):
            r = await c.post("/v1/memories", json={"text": "x"}, headers={"Host": "memory.example.com",
                                                                           "Origin": origin})
            assert_problem(r, 403, "forbidden")


def test_allowed_hosts_and_origins_settings_are_validated(tmp_path: Path) -> None:
    from memengine.engine.adapters.settings import SettingsError

    s = Settings.from_env(env={"MEMENGINE_HTTP_ALLOWED_HOSTS": "a.example, [::1]:8765",
                               "MEMENGINE_HTTP_ALLOWED_ORIGINS": "https://a.example"}, home=str(tmp_path))
    assert (s.http_allowed_hosts, s.http_allowed_origins) == ("a.example, [::1]:8765", "https://a.example")
    for var, bad in (("MEMENGINE_HTTP_ALLOWED_HOSTS", "a.example/x"), ("MEMENGINE_HTTP_ALLOWED_ORIGINS", "a.example"),
                     ("MEMENGINE_HTTP_ALLOWED_ORIGINS", "https://a.example/path")):
        with pytest.raises(SettingsError, match=var):
            Settings.from_env(env={var: bad}, home=str(tmp_path))


# -- item 3 (HTTP): bad URL input is 4xx problem+json ---------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v1/operations?kind=a%00b", "/v1/dlq?consumer=a%00b",
                                  "/v1/memories?user=a%00b", "/v1/threads?as_of=a%00b", "/ops?status=a%00b",
                                  "/v1/threads/a%00b/history", "/users/a%00b/profile"])
async def test_nul_in_a_query_or_path_parameter_is_422(api: httpx.AsyncClient, path: str) -> None:
    """Reproductions: ``/v1/operations?kind=a%00b`` and ``/v1/dlq?consumer=a%00b`` answered 500 (PostgreSQL stores
    no NUL); the same class for the other routes."""
    r = await api.get(path)
    assert r.status_code == 422, r.text
    if path.startswith("/v1/"):
        assert_problem(r, 422, "invalid_request")


async def test_an_operations_own_error_code_keeps_its_4xx(api: httpx.AsyncClient) -> None:
    """Found by the walk: ``/ops?status=<anything else>`` answered 500 (the dead letters' ``invalid_state`` code is
    in no status table); an error's family now gives its status."""
    r = await api.get("/ops", params={"status": "bogus"})
    assert r.status_code == 422 and "invalid_state" in r.text, r.text


@pytest.mark.parametrize("action", ["retry", "drop"])
async def test_dead_letter_id_out_of_range_is_422(api: httpx.AsyncClient, action: str) -> None:
    """Reproduction: ``POST /v1/dlq/<10^30>/retry`` answered 500 (asyncpg cannot encode it as a bigint)."""
    for n in (HUGE_ID, -HUGE_ID, 2**63):
        assert_problem(await api.post(f"/v1/dlq/{n}/{action}"), 422, "invalid_request")
        r = await api.post(f"/dlq/{n}/{action}", data={"confirm": "yes"})
        assert r.status_code == 422, r.text
    assert (await api.get("/v1/operations")).status_code == 200


# -- hypothesis: Host / Origin values ------------------------------------------------------------------------------

OWN_NAMES = ("localhost", "127.0.0.1", "[::1]", "[0:0:0:0:0:0:0:1]", "127.8.9.10")
#: Names a page could be served from that resolve (or could resolve) to loopback, and mangled own names.
FOREIGN_NAMES = ("evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "localhost.", "127.0.0.1.", "127.1",
                 "0x7f.0.0.1", "2130706433", "0.0.0.0", "[::]", "[::ffff:7f00:1]", "localhost..", "xn--localhost",
                 "localhost%2eevil.example", "[::1%25lo]", "10.0.0.1", "[fe80::1]", "local-host", "::1")


def mixed_case(draw: st.DrawFn, name: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.upper() if f else c for c, f in zip(name, flips, strict=True))


@st.composite
def own_hosts(draw: st.DrawFn, port: int) -> str:
    name = mixed_case(draw, draw(st.sampled_from(OWN_NAMES)))
    return name + draw(st.sampled_from(["", f":{port}"]))


@st.composite
def foreign_hosts(draw: st.DrawFn, port: int) -> str:
    """Foreign names (fixed adversarial ones and random domains), own names on another port, or with a trailing
    dot or suffix; each with or without a port."""
    kind = draw(st.sampled_from(["fixed", "domain", "own-other-port", "own-suffixed"]))
    if kind == "own-other-port":
        other = draw(st.integers(1, 65535).filter(lambda p: p != port))
        return f"{draw(st.sampled_from(OWN_NAMES))}:{other}"
    if kind == "own-suffixed":
        name = draw(st.sampled_from(["localhost", "127.0.0.1"])) + draw(st.sampled_from(
            [".", ".evil.example", ".nip.io", "-evil.example", ".localhost.evil.example"]))
    elif kind == "domain":
        name = draw(st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){1,3}", fullmatch=True))
        if name == "localhost":
            name = "evil.example"
    else:
        name = draw(st.sampled_from(FOREIGN_NAMES))
    return mixed_case(draw, name) + draw(st.sampled_from(["", f":{port}", ":80", ":1"]))


@given(data=st.data())
@FUZZ
async def test_hosts_the_keyless_server_answers_for(http_engine: Engine, api: httpx.AsyncClient,
                                                    data: st.DataObject) -> None:
    port = port_of(http_engine)
    own = data.draw(st.booleans(), label="own")
    host = data.draw(own_hosts(port) if own else foreign_hosts(port), label="host")
    method, path = data.draw(st.sampled_from([("GET", "/v1/threads"), ("GET", "/"), ("GET", "/openapi.json"),
                                              ("POST", "/v1/recall")]), label="route")
    r = await api.request(method, path, headers={"Host": host}, json={"query": "x"} if method == "POST" else None)
    if own:
        assert r.status_code == 200, (host, r.status_code, r.text)
    else:
        assert_problem(r, 421, "misdirected_request")
        # rebinding: the page's own origin equals its Host; still refused, whatever the method
        r = await api.post("/v1/memories", json={"text": "x"}, headers={"Host": host, "Origin": f"http://{host}"})
        assert_problem(r, 421, "misdirected_request")


@given(data=st.data())
@FUZZ
async def test_origins_the_keyless_server_accepts(http_engine: Engine, api: httpx.AsyncClient,
                                                  data: st.DataObject) -> None:
    port = port_of(http_engine)
    own = data.draw(st.booleans(), label="own")
    if own:
        origin = f"http://{data.draw(own_hosts(port))}"
        if not origin.endswith(f":{port}"):
            origin += f":{port}"
    else:
        origin = data.draw(st.one_of(
            foreign_hosts(port).map(lambda h: f"http://{h}"),
            own_hosts(port).map(lambda h: f"https://{h}"),  # another scheme is another origin
            st.sampled_from(OWN_NAMES).map(lambda n: f"http://{n}:{port}/"),  # not a serialized origin
            st.sampled_from(["null", "", "*", f"http://user@localhost:{port}", f"ws://localhost:{port}",
                             f"http://localhost:{port}@evil.example"])), label="origin")
    method, path = data.draw(st.sampled_from([("GET", "/v1/threads"), ("GET", "/memories"),
                                              ("POST", "/v1/recall")]), label="route")
    r = await api.request(method, path, headers={"Origin": origin}, json={"query": "x"} if method == "POST" else None)
    if own:
        assert r.status_code == 200, (origin, r.status_code, r.text)
    else:
        assert_problem(r, 403, "forbidden")


# -- hypothesis: control characters and huge numbers in every parameter of every route -----------------------------

def app_routes(engine: Engine) -> list[tuple[str, str, list[str], list[str]]]:
    """``(method, path template, path parameter names, query parameter names)`` of every route of the app (the
    API's and the console's), through included routers (FastAPI keeps them as branches of the route table)."""
    out = []
    pending = list(engine.http.app.routes)
    while pending:
        route = pending.pop(0)
        included = getattr(route, "original_router", None)
        if included is not None:
            pending.extend(included.routes)
        elif isinstance(route, APIRoute):
            out.extend((m, route.path, list(route.param_convertors), [p.name for p in route.dependant.query_params])
                       for m in sorted(route.methods))
    return out


CONTROLS = [chr(c) for c in (*range(0x20), 0x7F)]
REFUSED = set(CONTROLS) - {"\t", "\n", "\r"}
#: Numbers beyond every integer column (bigint) and every int the wire encodes (uint64).
HUGE_NUMBERS = [str(HUGE_ID), f"-{HUGE_ID}", str(2**63), str(2**64), str(-(2**63) - 1), "1e400", "NaN", "-0"]


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    text = draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12))
    at = draw(st.integers(0, len(text)))
    bad = draw(st.sampled_from(CONTROLS))
    return text[:at] + bad + text[at:]


async def test_route_walk_covers_the_openapi_document(http_engine: Engine, api: httpx.AsyncClient) -> None:
    walked = {(m.lower(), path): q for m, path, _, q in app_routes(http_engine)}
    doc = (await api.get("/openapi.json")).json()
    documented = {(m, path): {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
                  for path, ops in doc["paths"].items() for m, op in ops.items()}
    assert documented and set(documented) <= set(walked), set(documented) - set(walked)
    for key, names in documented.items():  # and the documented query parameters are the walked ones
        assert names == set(walked[key]), key


@given(data=st.data())
@hsettings(max_examples=int(os.environ.get("MEMENGINE_HTTP_WALK_EXAMPLES", "200")), deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
async def test_control_characters_and_huge_numbers_in_any_parameter_are_4xx(
        http_engine: Engine, api: httpx.AsyncClient, data: st.DataObject) -> None:
    """Every route, every path and query parameter (and one the route does not take): a control character is 422
    problem+json (TAB, LF, CR: whatever the route says, never 5xx), a number beyond every column never 5xx."""
    method, path, path_params, query_params = data.draw(st.sampled_from(app_routes(http_engine)), label="route")
    bad = data.draw(st.one_of(hostile_text(), st.sampled_from(HUGE_NUMBERS)), label="value")
    targets = [("path", p) for p in path_params] + [("query", q) for q in query_params] + [("query", "extra")]
    where, name = data.draw(st.sampled_from(targets), label="param")
    values: dict[str, Any] = {p: "t" for p in path_params}
    params: dict[str, str] = {}
    if where == "path":
        values[name] = bad
    else:
        params[name] = bad
    url = path.format(**{k: quote(v, safe="") for k, v in values.items()})
    body: dict[str, Any] = {}
    if method not in ("GET", "HEAD"):
        body = {"json": {}} if path.startswith("/v1/") else {"data": {"reason": "walk"}}
    async with api.stream(method, url, params=params, **body) as r:
        status = r.status_code
        text = (await r.aread()) if status != 200 else b""
    assert status < 500, (method, url, params, status, text[:500])
    if any(c in REFUSED for c in bad):
        assert status == 422, (method, url, params, status, text[:500])
        assert r.headers["content-type"].startswith(PROBLEM)
