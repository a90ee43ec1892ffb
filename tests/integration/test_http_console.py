"""The web console in a real headless Chromium (issue #12 "Done when"): threads -> thread -> context viewer; memory
-> provenance -> source turn; retract a memory and see its status change; a stored ``<script>`` shown as text.

Debian's ``chromium`` through Playwright's ``executable_path`` (``.ci/run`` installs it; never ``playwright
install``). Screenshots go to ``$MEMENGINE_TEST_ARTIFACTS/console`` (default: the test's ``tmp_path``).
"""

from __future__ import annotations

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
