"""The access trail over the HTTP API (issue #30): ``/v1/threads/{thread}/served`` lists the answers and shows one
with its items; ``/v1/users/{user}/access`` the user's figures and hot memories; both in the key's tenant and for
admin keys only (the trail names every user's answers)."""

from __future__ import annotations

import httpx
import pytest

from memengine.engine.bootstrap import Engine
from tests.conftest import wait_until
from tests.integration.http_fixtures import KEY_ACME, KEY_DEFAULT, keyed_engine_fixture

pytestmark = pytest.mark.integration
keyed_engine = keyed_engine_fixture


async def test_served_and_user_access_routes(keyed_engine: Engine) -> None:
    c = keyed_engine.client()
    await c.record_turn("h0", "user", "I have two cats named Milo and Otis.", user_id="ivy")
    rec = await c.record_turn("h1", "user", "What are my cats called?", user_id="ivy")

    async def item() -> str | None:
        return await keyed_engine.pool.fetchval(
            "SELECT memory_id FROM memory_items WHERE user_id = 'ivy' AND status = 'active' AND text ILIKE '%cats%'")

    mid = str(await wait_until(item, timeout=60, interval=0.05))
    ctx = await c.context("h1", after_seq=rec.seq, query="What are my cats called?")
    assert ctx.user_memory is not None and mid in ctx.user_memory.memory_ids
    assert keyed_engine.trail is not None and keyed_engine.access is not None
    await keyed_engine.trail.settled()
    await keyed_engine.access.catch_up()
    url = keyed_engine.http.url
    async with httpx.AsyncClient(base_url=url, headers={"X-API-Key": KEY_DEFAULT}) as admin, \
            httpx.AsyncClient(base_url=url, headers={"X-API-Key": KEY_ACME}) as tenant_key:
        r = await admin.get("/v1/threads/h1/served")
        assert r.status_code == 200, r.text
        answers = r.json()["answers"]
        assert len(answers) == 1 and answers[0]["kind"] == "context"
        one = (await admin.get("/v1/threads/h1/served", params={"seq": answers[0]["seq"]})).json()["answer"]
        assert {i["id"] for i in one["items"]} >= {m.event_id for m in ctx.messages if m.event_id}
        assert (await admin.get("/v1/threads/h1/served", params={"seq": 999})).status_code == 404
        assert (await admin.get("/v1/users/ivy/access")).json()["answers_served"] == 1
        # the console's memory page: how often and where the item was used
        page = (await admin.get(f"/memories/{mid}")).text
        assert "placed in 1 answer(s)" in page and "served seq" in page
        # a non-admin key: refused (and it is another tenant's key anyway)
        assert (await tenant_key.get("/v1/threads/h1/served")).status_code == 403
        assert (await tenant_key.get("/v1/users/ivy/access")).status_code == 403
