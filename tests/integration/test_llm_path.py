"""The OpenAI-compatible path against a local HTTP server speaking the chat-completions API (no network), and its
degradation when the model is down (seed 000 §6): the old summary is kept, extraction falls back to the rules."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from tests.integration.test_derived_memory import derived_caught_up

pytestmark = pytest.mark.integration


class FakeLLM:
    """A chat-completions server: answers summary, extraction and merge-decision prompts with fixed JSON (or what
    the scripts ``extract_for(user message)`` / ``decide_for({"new", "existing"})`` return), or 500 when ``down``."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.down = False
        self.memories: list[dict[str, object]] | None = None  # what extraction proposes (None: the aisle seats)
        self.extract_for: Callable[[str], list[dict[str, object]]] | None = None
        self.decide_for: Callable[[dict[str, Any]], dict[str, object]] | None = None
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                system = body["messages"][0]["content"]
                user = body["messages"][1]["content"]
                task = ("summary" if "rolling summary" in system else "decide" if "merge decision" in system
                        else "extract")
                llm.calls.append(task)
                if llm.down:
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "down"}}')
                    return
                if task == "summary":
                    content = {"summary": "Maya plans a Lisbon trip and prefers aisle seats.",
                               "topics": ["Lisbon trip", "Seats"]}
                elif task == "decide":
                    content = llm.decide_for(json.loads(user)) if llm.decide_for else {"action": "add"}
                elif llm.extract_for is not None:
                    content = {"memories": llm.extract_for(user)}
                else:
                    content = {"memories": llm.memories if llm.memories is not None else [
                        {"type": "PREFERENCE", "text": "Maya prefers aisle seats.", "importance": 0.8,
                         "confidence": 0.95, "tags": ["travel"], "priority": "PERMANENT"}]}
                reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": json.dumps(content)}}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    llm = FakeLLM()
    yield llm
    llm.server.shutdown()
    llm.server.server_close()


async def _wait(engine, predicate, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := await predicate()):
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)
    return value


async def test_openai_compatible_deriver(settings: Settings, fake_llm: FakeLLM) -> None:
    s = msgspec.structs.replace(settings, api_base_url=fake_llm.url, api_key="sk-test-secret", deriver="openai",
                                llm_model="test-model", summary_threshold=4)
    async with lifespan(s) as engine:
        client = engine.client()
        for i in range(4):
            await client.record_turn("trip", "user" if i % 2 == 0 else "assistant",
                                     f"I prefer aisle seats, message {i}", user_id="maya")
        mems = await _wait(engine, lambda: engine.pool.fetch(
            "SELECT text, type, last_event_id FROM memory_items WHERE user_id = 'maya'"))
        summary = await _wait(engine, lambda: engine.pool.fetchrow(
            "SELECT summary, model FROM conversation_summaries WHERE thread_id = 'trip'"))
        model = await engine.pool.fetchval("SELECT model FROM derived_events WHERE type = 'MemoriesExtracted' LIMIT 1")
    assert mems[0]["text"] == "Maya prefers aisle seats." and mems[0]["type"] == "PREFERENCE"
    assert summary["summary"].startswith("Maya plans a Lisbon trip") and summary["model"] == "test-model"
    assert model == "test-model"
    assert "extract" in fake_llm.calls and "summary" in fake_llm.calls
    assert fake_llm.calls.count("summary") == 1  # summary and topics in one call


async def test_llm_down_degrades(settings: Settings, fake_llm: FakeLLM) -> None:
    fake_llm.down = True
    s = msgspec.structs.replace(settings, api_base_url=fake_llm.url, deriver="openai", llm_model="test-model",
                                summary_threshold=4)
    async with lifespan(s) as engine:
        client = engine.client()
        last = None
        for i in range(6):
            last = await client.record_turn("t", "user", f"I love painting landscapes, take {i}", user_id="ana")
        # the enricher past the last turn and the derived projector past all it published (not only the first)
        await derived_caught_up(engine, last.seq, timeout=60)
        models = {r["model"] for r in await engine.pool.fetch("SELECT model FROM derived_events")}
        summaries = await engine.pool.fetchval("SELECT count(*) FROM conversation_summaries")
        ctx = await client.context("t", window=2000)
    assert fake_llm.calls and set(fake_llm.calls) <= {"extract", "summary", "decide"}
    assert summaries == 0  # no summary rather than a wrong one; the messages stay pending
    assert models == {"offline-extractive-v1"}  # extraction fell back to the rules, and says so
    assert ctx.messages[-1].seq == last.seq  # context still works without Tier 1
