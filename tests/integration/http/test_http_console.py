"""The web console in a real headless Chromium (issue #12 "Done when"): threads -> thread -> context viewer; memory
-> provenance -> source turn; retract a memory and see its status change; a stored ``<script>`` shown as text.

Debian's ``chromium`` through Playwright's ``executable_path`` (``.ci/run`` installs it; never ``playwright
install``). Screenshots go to ``$MEMENGINE_TEST_ARTIFACTS/console`` (default: the test's ``tmp_path``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Dialog, Page, async_playwright, expect

from memengine.engine.bootstrap import Engine
from tests.conftest import wait_until
from tests.integration.http_fixtures import api_fixture, http_engine_fixture  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("MEMENGINE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium binary at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    base = os.environ.get("MEMENGINE_TEST_ARTIFACTS")
    out = (Path(base) if base else tmp_path) / "console"
    out.mkdir(parents=True, exist_ok=True)
    return out


async def _seed(api: httpx.AsyncClient) -> dict:  # type: ignore[type-arg]
    """A thread with a self-statement (the offline deriver makes it a memory), a thinking + tool turn and a
    ``<script>``; waits until the memory is derived. Returns that memory."""
    turns = [
        {"role": "user", "content": "I live in Lisbon.", "user_id": "rui", "session_id": "s1"},
        {"role": "assistant", "session_id": "s1", "content": [
            {"type": "thinking", "thinking": "Lisbon: check the weather tool."},
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Lisbon"}},
        ]},
        {"role": "tool", "session_id": "s1", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "22 C, sunny"}]},
        {"role": "assistant", "content": "Lisbon is sunny today, 22 C.", "session_id": "s1"},
        {"role": "user", "content": SCRIPT, "user_id": "rui", "session_id": "s1"},
    ]
    for t in turns:
        r = await api.post("/v1/threads/trip/turns", json=t)
        assert r.status_code == 200, r.text
    r = await api.get("/v1/threads/trip/history", params={"after_seq": r.json()["seq"]})  # all five projected
    assert len(r.json()["messages"]) == 5, r.text

    async def derived() -> dict | None:  # type: ignore[type-arg]
        r = await api.get("/v1/memories", params={"user": "rui"})
        return next((m for m in r.json()["memories"] if m["text"] == "User lives in Lisbon."), None)

    return await wait_until(derived, timeout=60)  # type: ignore[no-any-return]


def _no_dialogs(page: Page) -> list[str]:
    seen: list[str] = []

    async def on_dialog(d: Dialog) -> None:
        seen.append(d.message)
        await d.dismiss()

    page.on("dialog", on_dialog)
    return seen


async def test_console_threads_context_provenance_retract(http_engine: Engine, api: httpx.AsyncClient,
                                                          browser: Browser, artifacts: Path) -> None:
    memory = await _seed(api)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs = _no_dialogs(page)
    base = http_engine.http.url

    # threads -> thread -> context viewer
    await page.goto(base + "/")
    await page.get_by_role("link", name="trip", exact=True).click()
    await expect(page.locator("#transcript > li")).to_have_count(5)
    await expect(page.locator("details.thinking")).to_have_count(1)
    await expect(page.locator("details.tool")).to_have_count(2)
    assert not await page.locator("details.thinking").get_attribute("open")  # collapsed until clicked
    await expect(page.locator("#transcript")).to_contain_text(SCRIPT)  # shown as text, never run
    await page.screenshot(path=str(artifacts / "thread.png"), full_page=True)
    # live: a turn projected while the page is open appears (server-sent events, then a reload)
    r = await api.post("/v1/threads/trip/turns", json={"role": "assistant", "content": "A live turn."})
    assert r.status_code == 200, r.text
    await expect(page.locator("#transcript > li")).to_have_count(6, timeout=15_000)
    await expect(page.locator("#transcript > li").last).to_contain_text("A live turn.")
    await page.goto(base + "/")
    await page.screenshot(path=str(artifacts / "threads.png"), full_page=True)
    await page.get_by_role("link", name="trip", exact=True).click()
    await page.locator("#context-link").click()
    await expect(page.locator("#tiers > section")).to_have_count(3)
    await expect(page.locator("#tier-3")).to_contain_text("verbatim")
    await expect(page.locator("#tier-3 .bar")).to_have_count(1)
    await page.screenshot(path=str(artifacts / "context.png"), full_page=True)

    # memory -> provenance -> source turn
    await page.goto(base + "/memories?user=rui")
    await page.get_by_role("link", name="User lives in Lisbon.").click()
    await expect(page.locator("#memory-status")).to_have_text("active")
    source = page.locator("#provenance a.source-link").first
    await expect(source).to_contain_text("trip #")
    await expect(page.locator("#provenance")).to_contain_text("I live in Lisbon.")
    await page.screenshot(path=str(artifacts / "memory.png"), full_page=True)
    memory_url = page.url
    await source.click()
    seq = page.url.rsplit("#seq-", 1)[1]
    await expect(page.locator(f"#seq-{seq}")).to_contain_text("I live in Lisbon.")

    # retract it and see the status change
    await page.goto(memory_url)
    await page.locator("#retract button").click()
    await expect(page.locator("#memory-status")).to_have_text("retracted")
    assert page.url.endswith(f"/memories/{memory['memory_id']}")
    await page.goto(base + "/memories?user=rui&status=retracted")
    await expect(page.locator("#memories")).to_contain_text("User lives in Lisbon.")
    await page.goto(base + "/ops")
    await expect(page.locator("h1")).to_have_text("Operations")
    assert dialogs == []  # no stored text ever ran as script
    for name in ("threads", "thread", "context", "memory"):
        assert (artifacts / f"{name}.png").stat().st_size > 10_000


@pytest.fixture
async def evil_browser() -> AsyncIterator[Browser]:
    """Chromium that resolves ``evil.example`` to 127.0.0.1: a page served from that name, then (DNS rebinding)
    talking to the loopback server under it."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium binary at {CHROMIUM} (Debian: apt-get install chromium; .ci/run installs it)")
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--host-resolver-rules=MAP evil.example 127.0.0.1"])
        try:
            yield b
        finally:
            await b.close()


async def _serve_once_per_request(html: str) -> asyncio.Server:
    """A one-page HTTP server on a free loopback port (the attacker's site)."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        body = html.encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def test_a_real_browser_cannot_rebind_or_post_cross_site(http_engine: Engine, api: httpx.AsyncClient,
                                                               evil_browser: Browser) -> None:
    """Issue #26 item 1 in a real browser: a page on evil.example posts a form to the console's dead-letter retry
    and a ``text/plain`` drop to the API (no preflight); both are refused and the dead letter stays open. The page
    re-resolved to the server (``evil.example:<server port>``) reads nothing."""
    from tests.integration.poison import publish_raw

    await publish_raw(http_engine, http_engine.subjects.fact("default", "bad", "TurnRecorded"), b"not an event")

    async def dead() -> int | None:
        rows = (await api.get("/v1/dlq")).json()["dead_letters"]
        return int(rows[0]["id"]) if rows else None

    dead_id = await wait_until(dead, timeout=30)
    base = http_engine.http.url
    site = await _serve_once_per_request(f"""<html><body><form id="f" method="POST"
        action="{base}/dlq/{dead_id}/retry"></form><script>
        fetch("{base}/v1/dlq/{dead_id}/drop", {{method: "POST", mode: "no-cors",
              headers: {{"content-type": "text/plain"}}, body: "{{}}"}})
          .finally(() => document.getElementById("f").submit());</script></body></html>""")
    try:
        port = site.sockets[0].getsockname()[1]
        page = await evil_browser.new_page()
        async with page.expect_navigation(url=lambda u: u.startswith(base)):  # the form posted
            await page.goto(f"http://evil.example:{port}/")
        assert "forbidden" in await page.content()
        open_ids = {d["id"] for d in (await api.get("/v1/dlq")).json()["dead_letters"]}
        assert dead_id in open_ids
        # rebound: the attacker's name now resolves to the server, on its port
        r = await page.goto(f"http://evil.example:{http_engine.http.port}/v1/threads")
        assert r is not None and r.status == 421
        r = await page.goto(f"http://evil.example:{http_engine.http.port}/")
        assert r is not None and r.status == 421
    finally:
        site.close()
        await site.wait_closed()
