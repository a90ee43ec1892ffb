"""Accepted, then lost (issue #26 item 3): text no projection can store is refused by every publisher before the
log, with the typed error of its surface, and the facts stream does not move.

PostgreSQL ``text`` cannot hold U+0000 and ``jsonb`` rejects ``\\u0000``; on the old main a NUL turn was acknowledged
(HTTP 200 with a sequence, a MemoryClient ``Recorded``) and then dead-lettered by the projectors. The rule lives in
the event contract's codec (``events.codec``); each surface is checked here on the real servers: MemoryClient, the
HTTP API, the MCP tools, ``memengine ingest``, the LangGraph store and the OpenAI Agents session. A NUL fact that
reaches the log anyway (a raw NATS publisher, an old client) is dead-lettered with the reason and the projector goes
on.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from mcp import Client

from memengine.engine.bootstrap import Engine
from memengine.engine.integrations.langgraph import MemengineStore
from memengine.engine.integrations.mcp_server import build_server
from memengine.engine.integrations.openai_agents import MemengineSession, MemengineSessionError
from memengine.engine.ops.ingest import IngestFormatError, read_events
from memengine.engine.wire.errors import InvalidInput, RpcError
from memengine.events import (
    Event,
    InvalidToken,
    MemoryAsserted,
    MemoryRetracted,
    SessionEnded,
    TextBlock,
    ThinkingBlock,
    ThreadLabelled,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    new_event_id,
)
from memengine.events.model import MAX_TEXT
from tests.conftest import wait_until
from tests.hostile_text import Slot, hostile_events, unstorable
from tests.integration.http_fixtures import api_fixture, http_engine_fixture  # noqa: F401 - fixtures
from tests.integration.ops.test_cli import run
from tests.integration.poison import drained

pytestmark = pytest.mark.integration

NUL = "\x00"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def _stored(engine: Engine) -> int:
    """Messages in the facts stream: what a refusal must leave unchanged."""
    return (await engine.js.stream_info(engine.streams.facts)).state.messages


def _turn(tenant: str, **kw: Any) -> TurnRecorded:
    base: dict[str, Any] = {"event_id": new_event_id(), "tenant_id": tenant, "thread_id": "nul", "occurred_at": NOW,
                            "role": "user", "content": [TextBlock(text="fine")]}
    return TurnRecorded(**(base | kw))


def _envelope(tenant: str) -> dict[str, Any]:
    return {"event_id": new_event_id(), "tenant_id": tenant, "thread_id": "nul", "occurred_at": NOW}


def _nul_events(tenant: str) -> list[tuple[str, Event]]:
    """A NUL (alone, inside, at either end) in every text field of the facts a publisher writes."""
    e = _envelope
    return [
        ("content text", _turn(tenant, content=[TextBlock(text=f"before {NUL} after")])),
        ("content text at the end", _turn(tenant, content=[TextBlock(text="ok"), TextBlock(text=f"x{NUL}")])),
        ("user_id", _turn(tenant, user_id=f"ali{NUL}ce")),
        ("session_id", _turn(tenant, session_id=NUL)),
        ("producer", _turn(tenant, producer=f"{NUL}agent")),
        ("model", _turn(tenant, model=f"gpt{NUL}")),
        ("metadata value", _turn(tenant, metadata={"source": f"web{NUL}"})),
        ("nested metadata value", _turn(tenant, metadata={"a": [{"b": ["ok", f"deep{NUL}"]}]})),
        ("metadata key", _turn(tenant, metadata={f"k{NUL}": 1})),
        ("thinking", _turn(tenant, content=[ThinkingBlock(thinking=f"hmm{NUL}")])),
        ("thinking signature", _turn(tenant, content=[ThinkingBlock(thinking="hmm", signature=NUL)])),
        ("tool_use name", _turn(tenant, content=[ToolUseBlock(id="t1", name=f"f{NUL}")])),
        ("tool_use input", _turn(tenant, content=[ToolUseBlock(id="t1", name="f", input={"q": f"{NUL}"})])),
        ("tool_result content", _turn(tenant, content=[ToolResultBlock(tool_use_id="t1", content=f"out{NUL}")])),
        ("thread label", ThreadLabelled(**e(tenant), label=f"Trip{NUL}")),
        ("session end reason", SessionEnded(**e(tenant), reason=f"{NUL}")),
        ("memory text", MemoryAsserted(**e(tenant), user_id="maya", text=f"likes tea{NUL}")),
        ("memory tag", MemoryAsserted(**e(tenant), user_id="maya", text="likes tea", tags=["ok", f"t{NUL}"])),
        ("memory type", MemoryAsserted(**e(tenant), user_id="maya", text="likes tea", memory_type=f"FACT{NUL}")),
        ("retract reason", MemoryRetracted(**e(tenant), memory_id="m1", reason=f"no{NUL}")),
    ]


async def test_memory_client_refuses_nul_in_every_text_field_before_the_log(engine: Engine) -> None:
    client = engine.client("acme")
    await client.record_turn("nul", "user", "a fine turn first")
    before = await _stored(engine)
    for what, event in _nul_events("acme"):
        with pytest.raises(RpcError) as caught:
            await client.publish(event)
        assert isinstance(caught.value, InvalidInput) and caught.value.code == "invalid_event", what
        assert "U+0000" in caught.value.message, (what, caught.value.message)
    # the convenience methods go through the same path
    for call in (client.record_turn("nul", "user", f"hi{NUL}"), client.record_turn("nul", "user", "hi", user_id=NUL),
                 client.remember(f"tea{NUL}", user="maya"), client.label_thread("nul", f"x{NUL}")):
        with pytest.raises(RpcError, match="invalid_event"):
            await call
    # a lone surrogate is no Unicode text: typed too (it was a UnicodeEncodeError out of the codec)
    with pytest.raises(RpcError, match="invalid_event.*surrogate"):
        await client.record_turn("nul", "user", "half \ud83d of an emoji")
    assert await _stored(engine) == before


async def test_http_api_answers_422_invalid_event_for_nul(http_engine: Engine, api: httpx.AsyncClient) -> None:
    await api.post("/v1/threads/nul/turns", json={"role": "user", "content": "a fine turn first"})
    before = await _stored(http_engine)
    turns = [
        {"role": "user", "content": f"a {NUL} b"},
        {"role": "user", "content": "fine", "user_id": f"maya{NUL}"},
        {"role": "user", "content": "fine", "session_id": NUL},
        {"role": "user", "content": "fine", "model": f"m{NUL}"},
        {"role": "user", "content": "fine", "metadata": {"a": {"b": [f"{NUL}"]}}},
        {"role": "user", "content": "fine", "metadata": {f"{NUL}": "key"}},
        {"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": f"x{NUL}"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"q": NUL}}]},
        {"role": "tool", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": f"{NUL}"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": f"{NUL}"}]},
    ]
    for body in turns:
        r = await api.post("/v1/threads/nul/turns", json=body)
        assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), (body, r.text)
        assert r.json()["code"] == "invalid_event" and "U+0000" in r.json()["detail"], r.text
    # with an Idempotency-Key too (the gateway digests the body before publishing)
    r = await api.post("/v1/threads/nul/turns", json=turns[0], headers={"Idempotency-Key": "k-1"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_event", r.text
    # a lone surrogate (JSON's \ud83d without its pair) is not Unicode text: 422, not a 500, with or without the key
    for body, key in [(b'{"role":"user","content":"half \\ud83d emoji"}', None),
                      (b'{"role":"user","content":"ok","metadata":{"a":"\\udc00"}}', "k-2"),
                      (b'{"role":"user","content":"half \\ud83d emoji"}', "k-3")]:
        r = await api.post("/v1/threads/nul/turns", content=body, headers={
            "content-type": "application/json", **({"Idempotency-Key": key} if key else {})})
        assert r.status_code == 422 and r.json()["code"] == "invalid_event", (body, r.text)
    for body in [{"text": f"likes tea{NUL}", "user": "maya"}, {"text": "likes tea", "user": f"maya{NUL}"},
                 {"text": "likes tea", "user": "maya", "tags": [f"{NUL}"]},
                 {"text": "likes tea", "user": "maya", "type": f"FACT{NUL}"}]:
        r = await api.post("/v1/memories", json=body)
        assert r.status_code == 422 and r.json()["code"] == "invalid_event", (body, r.text)
    assert await _stored(http_engine) == before


async def test_mcp_tools_answer_a_tool_error_for_nul(engine: Engine) -> None:
    server = build_server(engine.client("acme"))
    async with Client(server, mode="legacy") as mc:
        ok = await mc.call_tool("record_turn", {"thread": "nul", "role": "user", "text": "a fine turn first"})
        assert not ok.is_error
        before = await _stored(engine)
        for tool, args in [
            ("record_turn", {"thread": "nul", "role": "user", "text": f"hello{NUL}"}),
            ("record_turn", {"thread": "nul", "role": "user", "text": "hello", "user": f"{NUL}"}),
            ("record_turn", {"thread": "nul", "role": "user", "text": "hello", "session": f"s{NUL}"}),
            ("remember", {"text": f"likes tea{NUL}", "user": "maya"}),
            ("remember", {"text": "likes tea", "user": f"maya{NUL}"}),
            ("remember", {"text": "likes tea", "user": "maya", "tags": [NUL]}),
        ]:
            result = await mc.call_tool(tool, args)
            assert result.is_error, (tool, args)
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("invalid_event:") and "U+0000" in text, text
        assert await _stored(engine) == before


def _text(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def _jsonl(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps({"thread_id": "imp", "occurred_at": "2026-03-01T12:00:00Z", "role": "user",
                                        **t}) + "\n" for t in turns))
    return path


async def test_ingest_refuses_a_file_with_a_nul_before_publishing(engine: Engine, tmp_path: Path) -> None:
    await engine.client().record_turn("nul", "user", "a fine turn first")
    before = await _stored(engine)
    variants = [{"content": _text(f"x{NUL}")}, {"content": _text("x"), "user_id": NUL},
                {"content": _text("x"), "metadata": {"a": NUL}}, {"v": 1, "text": f"old shape {NUL}"},
                {"type": "ThreadLabelled", "label": f"{NUL}"}]
    for i, bad in enumerate(variants):
        path = _jsonl(tmp_path / f"bad{i}.jsonl", [{"content": _text("fine")}, {"content": _text("fine too")}, bad])
        with pytest.raises(IngestFormatError, match=r"U\+0000") as caught:
            read_events(path, "default")
        assert caught.value.line == 3
    locomo = tmp_path / "conv.json"
    locomo.write_text(json.dumps({"speaker_a": "Ann", "speaker_b": "Bo",
                                  "session_1_date_time": "1:00 pm on 8 May, 2023",
                                  "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                                                {"speaker": "Bo", "dia_id": "D1:2", "text": f"hey{NUL}"}]}))
    with pytest.raises(IngestFormatError, match=r"U\+0000"):
        read_events(locomo, "default")
    # the command a user runs: exit 1 (cannot ingest), the error on stderr, nothing published
    proc = run(engine.settings, "ingest", str(tmp_path / "bad0.jsonl"), check=False)
    assert proc.returncode == 1 and "U+0000" in proc.stderr, proc.stderr
    assert await _stored(engine) == before


async def test_langgraph_store_put_refuses_nul(engine: Engine) -> None:
    store = MemengineStore(engine.client("acme"))
    await engine.client("acme").record_turn("nul", "user", "a fine turn first")
    before = await _stored(engine)
    for ns, key, value in [(("maya", "prefs"), "seat", {"content": f"aisle{NUL}"}),
                           (("maya", "prefs"), "seat", {"content": "aisle", "note": {"deep": [NUL]}}),
                           (("maya", "prefs"), f"se{NUL}at", {"content": "aisle"}),
                           (("maya", f"pr{NUL}efs"), "seat", {"content": "aisle"})]:
        # LangGraph refuses a NUL namespace label itself (InvalidNamespaceError, a ValueError); the rest is ours
        with pytest.raises(ValueError, match=r"\[invalid_event\].*U\+0000|cannot contain NUL"):
            await store.aput(ns, key, value)
    assert await _stored(engine) == before


async def test_openai_agents_session_add_items_refuses_nul(engine: Engine) -> None:
    client = engine.client("acme")
    session = MemengineSession("chat-nul", client, user_id="maya")
    await session.add_items([{"role": "user", "content": "a fine turn first"}])
    before = await _stored(engine)
    for items in ([{"role": "user", "content": f"hi{NUL}"}],
                  [{"role": "user", "content": "fine"}, {"role": "assistant", "content": f"{NUL}"}],
                  [{"role": "user", "content": [{"type": "input_text", "text": f"x{NUL}"}]}]):
        with pytest.raises(MemengineSessionError) as caught:
            await session.add_items(items)  # type: ignore[arg-type]
        assert caught.value.code == "invalid_event" and "U+0000" in str(caught.value), caught.value
    with pytest.raises(MemengineSessionError, match="invalid_event"):
        await MemengineSession("chat-nul", client, user_id=f"maya{NUL}").add_items([{"role": "user", "content": "x"}])
    assert await _stored(engine) == before


async def test_nul_fact_already_on_the_log_is_dead_lettered_with_the_reason(engine: Engine) -> None:
    """A raw NATS publisher (or an old client) bypasses the check: the projectors dead-letter the fact at decode,
    name the field, and go on with the next fact."""
    client = engine.client()
    first = await client.record_turn("raw", "user", "before")
    body = json.dumps({"type": "TurnRecorded", "v": 2, "event_id": str(uuid.uuid4()), "tenant_id": "default",
                       "thread_id": "raw", "occurred_at": "2026-03-01T12:00:00Z", "role": "user", "user_id": "maya",
                       "content": [{"type": "text", "text": "ok"}], "metadata": {"a": {"b": f"x{NUL}"}}}).encode()
    assert b"\\u0000" in body
    poison = await engine.js.publish(engine.subjects.fact("default", "raw", "TurnRecorded"), body,
                                     headers={"Nats-Msg-Id": "raw-nul"})
    # an escaped backslash followed by the letters u0000 is not a NUL: stored as it is
    literal = await client.record_turn("raw", "user", "a literal \\u0000 in text")
    last = await client.record_turn("raw", "user", "after")
    ctx = await client.context("raw", after_seq=last.seq)
    assert [m.content[0]["text"] for m in ctx.messages] == ["before", "a literal \\u0000 in text", "after"]
    assert first.seq < poison.seq < literal.seq

    async def dead() -> list[Any]:
        return await engine.pool.fetch("SELECT consumer, stream_seq, error FROM dead_letters WHERE stream_seq = $1",
                                       poison.seq)

    rows = await wait_until(dead)
    assert {r["consumer"] for r in rows} >= {"core"}
    for r in rows:
        assert r["error"].startswith("decode:") and "metadata.a.b contains U+0000" in r["error"], r["error"]


@given(cases=st.lists(hostile_events(), min_size=1, max_size=4))
@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
async def test_hostile_text_is_refused_before_the_log_or_folds_without_a_dead_letter(
        engine: Engine, cases: list[tuple[Event, Slot, str]]) -> None:
    """Hostile characters in any string of any fact type (tests/hostile_text.py walks the struct fields): the
    publisher gets the typed ``invalid_event`` (or ``invalid_token`` for a subject token) and the stream does not
    move, or every consumer folds the fact without a dead letter."""
    client = engine.client("acme")
    for event, slot, new in cases:
        before = await _stored(engine)
        try:
            await client.publish(event)
        except (RpcError, InvalidToken) as exc:
            assert isinstance(exc, InvalidToken) or (isinstance(exc, InvalidInput) and exc.code == "invalid_event")
            assert unstorable(new) or not slot.free, (slot, ascii(new), exc)
            assert await _stored(engine) == before
            continue
        assert not unstorable(new), (slot, ascii(new))
    await drained(engine)
    dead = await engine.pool.fetch("SELECT consumer, stream_seq, error FROM dead_letters")
    assert not dead, [dict(r) for r in dead]


def _cjk(n: int, seed: int) -> str:
    """``n`` random CJK ideographs (3 bytes each in UTF-8; random, so PostgreSQL cannot compress an index key)."""
    r = random.Random(seed)
    return "".join(chr(r.randint(0x4E00, 0x9FFF)) for _ in range(n))


async def test_ids_the_read_models_index_are_bounded_in_bytes(engine: Engine) -> None:
    """``user_id`` and ``session_id`` are B-tree keys of the recall and memory read models (at most 2704 bytes an
    entry): 1024 CJK characters passed the contract's 1024-character bound and were dead-lettered ("index row size
    3104 exceeds btree version 4 maximum 2704"). Over ``MAX_ID_BYTES`` bytes they are refused before the log; up to
    it, in any script, they fold."""
    client = engine.client("acme")
    await client.record_turn("ids", "user", "a fine turn first")
    before = await _stored(engine)
    for call in (client.record_turn("ids", "user", "hello there", user_id=_cjk(1024, 1)),
                 client.record_turn("ids", "user", "hello there", session_id=_cjk(400, 2)),
                 client.remember("I like coffee very much", user=_cjk(342, 3))):
        with pytest.raises(RpcError, match=r"invalid_event.*bytes in UTF-8, over 1024") as caught:
            await call
        assert isinstance(caught.value, InvalidInput)
    assert await _stored(engine) == before
    fine = [await client.record_turn("ids", "user", "I live in Lisbon", user_id=_cjk(341, 4), session_id=_cjk(341, 5)),
            await client.record_turn("ids", "user", "I live in Porto", user_id="u" * 1024, session_id="s" * 1024),
            await client.remember("I like coffee very much", user=_cjk(341, 6))]
    await drained(engine)
    assert not await engine.pool.fetch("SELECT consumer, error FROM dead_letters")
    assert await engine.pool.fetchval("SELECT count(*) FROM memory_vectors WHERE tenant_id = 'acme' AND seq = ANY($1)",
                                      [r.seq for r in fine[:2]]) == 2
    # a raw publisher past the client: dead-lettered at decode with the reason, the projector goes on
    body = json.dumps({"type": "TurnRecorded", "v": 2, "event_id": str(uuid.uuid4()), "tenant_id": "acme",
                       "thread_id": "ids", "occurred_at": "2026-03-01T12:00:00Z", "role": "user",
                       "user_id": _cjk(1024, 7), "content": [{"type": "text", "text": "hi"}]}).encode()
    poison = await engine.js.publish(engine.subjects.fact("acme", "ids", "TurnRecorded"), body,
                                     headers={"Nats-Msg-Id": "raw-long-user"})
    await client.record_turn("ids", "user", "after")
    await drained(engine)
    rows = await engine.pool.fetch("SELECT consumer, stream_seq, error FROM dead_letters")
    assert rows and {r["stream_seq"] for r in rows} == {poison.seq}, [dict(r) for r in rows]
    assert all(r["error"].startswith("decode:") and "user_id is 3072 bytes" in r["error"] for r in rows)


async def test_long_words_do_not_make_derived_events_the_folds_refuse(engine: Engine) -> None:
    """The engine's own derivations must fit the contract too: a 3000-letter word in a turn became a memory tag
    over the 1024-character ``ShortText`` bound, and every ``MemoriesExtracted`` from such a turn was dead-lettered
    by the derived fold (the turn stored, its memories lost). Tags and topics are words of at most 64 letters,
    episode entities phrases of at most 128 (engine.derive.offline.text.MAX_KEYWORD_CHARS)."""
    client = engine.client("acme")
    long_word, cjk = "x" * 3000, _cjk(1500, 8)
    title_run = " ".join(f"Word{i}" for i in range(300))  # a run of capitalised words: no entity
    for i in range(6):
        await client.record_turn("long", "user", f"I love {long_word} and {cjk} so much, number {i}. "
                                 f"We met {title_run} yesterday.", user_id="maya", session_id="s1")
    await client.end_session("long", "s1", user_id="maya")
    await drained(engine, timeout=120)
    assert not await engine.pool.fetch("SELECT consumer, error FROM dead_letters")
    assert await engine.pool.fetchval("SELECT count(*) FROM memory_items WHERE tenant_id = 'acme'") > 0
    entities = await engine.pool.fetchval(
        "SELECT entities FROM episodes WHERE tenant_id = 'acme' AND thread_id = 'long'")
    assert entities is not None and all(len(e) <= 128 for e in entities), entities


def _distinct_words(n_chars: int, seed: int) -> str:
    r = random.Random(seed)
    words, size = [], 0
    while size < n_chars - 10:
        w = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(3, 8)))
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n_chars]


async def test_the_largest_turns_fold_into_recall_rows(engine: Engine) -> None:
    """Three consecutive turns of ``MAX_TEXT`` characters of distinct words are each valid; the recall fold's
    ``win_tsv`` (projections/vectors.py: date || piece t-1 || piece t || piece t+1) of the third passes 1 MB and
    the turn is dead-lettered by consumer ``recall`` ("string is too long for tsvector"). Per event the contract
    cannot see it (it depends on the neighbours): the fold must bound what it parses or concatenates."""
    client = engine.client("acme")
    for i in range(3):
        await client.record_turn("big", "user", _distinct_words(MAX_TEXT, 10 + i))
    await drained(engine, timeout=120)
    assert not await engine.pool.fetch("SELECT consumer, error FROM dead_letters")
    rows = await engine.pool.fetch("SELECT seq FROM memory_vectors WHERE tenant_id = 'acme' AND thread_id = 'big'")
    assert len(rows) == 3  # every acknowledged turn is in recall
    # the first words of each turn stay searchable (memengine_tsv keeps a text's first ~300 KB of lexemes)
    for i in range(3):
        word = _distinct_words(MAX_TEXT, 10 + i).split()[0]
        assert await engine.pool.fetchval(
            "SELECT count(*) FROM memory_vectors WHERE tenant_id = 'acme' AND thread_id = 'big'"
            " AND turn_tsv @@ plainto_tsquery('english', $1)", word), word


def _wide_words(n_chars: int, seed: int) -> str:
    """Distinct words of 4-byte characters (CJK Extension B): the most tsvector bytes a character of text gives."""
    r = random.Random(seed)
    words, size = [], 0
    while size < n_chars - 10:
        w = "".join(chr(r.randint(0x20000, 0x2A6DF)) for _ in range(r.randint(3, 8)))
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n_chars]


async def test_a_single_text_of_distinct_wide_words_folds(engine: Engine) -> None:
    """One turn and one memory of ``MAX_TEXT`` characters of distinct 4-byte words: each alone parses to more than
    the 1 MB tsvector limit (the recall piece; the memory items' full-text index), so the turn and the memory were
    dead-lettered. Both fold, and the memory is found by its first word."""
    client = engine.client("acme")
    await client.record_turn("wide", "user", _wide_words(MAX_TEXT, 7), user_id="maya")
    await client.remember(_wide_words(MAX_TEXT, 8), user="maya")
    await drained(engine, timeout=120)
    assert not await engine.pool.fetch("SELECT consumer, error FROM dead_letters")
    assert await engine.pool.fetchval(
        "SELECT count(*) FROM memory_vectors WHERE tenant_id = 'acme' AND thread_id = 'wide'") == 1
    first = _wide_words(MAX_TEXT, 8).split()[0]
    assert await engine.pool.fetchval(
        "SELECT count(*) FROM memory_items WHERE tenant_id = 'acme' AND memengine_tsv(text) @@ plainto_tsquery("
        "'english', $1)", first) == 1
