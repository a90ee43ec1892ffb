"""``POST /v1/memories`` takes an ``Idempotency-Key`` as ``POST /v1/threads/{thread}/turns`` does (issue #26 item
7), on the real servers: a retried remember records one memory; two keys record two; a key reused for another
request is refused (422 invalid_request) before anything is published."""

from __future__ import annotations

import httpx
import pytest

from memengine.engine.bootstrap import Engine
from tests.integration.http_fixtures import http_engine_fixture  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration


async def test_a_retried_remember_with_a_key_is_one_memory(http_engine: Engine) -> None:
    body = {"text": "Maya is vegetarian", "user": "maya"}
    async with httpx.AsyncClient(base_url=http_engine.http.url, timeout=30) as api:
        first = (await api.post("/v1/memories", json=body, headers={"Idempotency-Key": "m-1"})).json()
        again = (await api.post("/v1/memories", json=body, headers={"Idempotency-Key": "m-1"})).json()
        assert not first["duplicate"] and again["duplicate"]
        assert (again["seq"], again["memory_id"]) == (first["seq"], first["memory_id"])
        other = (await api.post("/v1/memories", json=body, headers={"Idempotency-Key": "m-2"})).json()
        assert not other["duplicate"] and other["memory_id"] != first["memory_id"]
        reused = await api.post("/v1/memories", json={**body, "text": "Maya eats fish"},
                                headers={"Idempotency-Key": "m-1"})
        assert reused.status_code == 422 and reused.json()["code"] == "invalid_request", reused.text
    facts = (await http_engine.js.stream_info(http_engine.streams.facts)).state
    assert facts.messages == 2
