"""The committed contract documents (docs/contract/) are what the code generates, and they describe real messages
(issue #11 item 5). A failure here means the wire changed: run
``python -m memengine.engine.ops.contract_docs --out docs/contract`` and commit the diff (and tell the other languages'
clients, clients/typescript/)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import jsonschema
import msgspec
import pytest

from memengine.engine.ops import contract_docs as schemas
from memengine.engine.wire import replies
from memengine.events import (
    DERIVED_TYPES,
    FACT_TYPES,
    ContextWanted,
    MemoryAsserted,
    Subjects,
    SummaryUpdated,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    encode,
)
from tests.paths import ROOT

CONTRACT = ROOT / "docs" / "contract"
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize("name", schemas.DOCUMENTS)
def test_committed_document_is_what_the_code_generates(name: str) -> None:
    committed = (CONTRACT / name).read_text(encoding="utf-8")
    generated = schemas.render(schemas.documents()[name])
    assert json.loads(committed) == json.loads(generated), (
        f"docs/contract/{name} is stale: run `python -m memengine.engine.ops.contract_docs --out docs/contract`")
    assert committed == generated  # formatting too, so a regeneration never shows a spurious diff


def _validator(name: str, ref: str | None = None) -> jsonschema.Draft202012Validator:
    doc = json.loads((CONTRACT / name).read_text(encoding="utf-8"))
    schema = doc if ref is None else {**doc, "oneOf": None, "$ref": ref}
    schema = {k: v for k, v in schema.items() if v is not None}
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def test_every_event_type_is_documented() -> None:
    doc = json.loads((CONTRACT / "events.schema.json").read_text())
    for t in (*FACT_TYPES, *DERIVED_TYPES):
        assert t.__name__ in doc["$defs"], t


def test_encoded_events_validate_and_bad_ones_do_not() -> None:
    v = _validator("events.schema.json")
    turn = TurnRecorded(event_id=uuid.uuid4(), tenant_id="acme", thread_id="t-1", occurred_at=NOW, role="assistant",
                        content=[TextBlock(text="hi"), ToolUseBlock(id="c1", name="search", input={"q": "x"}),
                                 ToolResultBlock(tool_use_id="c1", content="ok")],
                        want_context=ContextWanted(window=8000))
    assert not list(v.iter_errors(json.loads(encode(turn))))
    asserted = MemoryAsserted(event_id=uuid.uuid4(), tenant_id="acme", thread_id="_", occurred_at=NOW, text="x")
    assert not list(v.iter_errors(json.loads(encode(asserted))))
    summary = SummaryUpdated(event_id=uuid.uuid4(), tenant_id="acme", thread_id="t-1", occurred_at=NOW,
                             source_event_ids=[uuid.uuid4()], source_seq_range=[1, 2], model="m", prompt_version="1",
                             summary="s", message_count=2)
    assert not list(v.iter_errors(json.loads(encode(summary))))

    bad = json.loads(encode(turn))
    bad["thread_id"] = "a.b"  # would add a subject level
    assert list(v.iter_errors(bad))
    bad = json.loads(encode(turn))
    bad["content"] = []
    assert list(v.iter_errors(bad))
    bad = json.loads(encode(turn))
    bad["type"] = "NoSuchEvent"
    assert list(v.iter_errors(bad))


def test_requests_and_replies_validate() -> None:
    doc = json.loads((CONTRACT / "rpc.schema.json").read_text())
    assert set(doc["x-memengine-methods"]) == set(schemas.rpc_methods())
    req = _validator("rpc.schema.json", "#/$defs/ContextRequest")
    assert not list(req.iter_errors({"tenant": "acme", "thread": "t-1", "window": 32000, "after_seq": 3}))
    assert list(req.iter_errors({"thread": "t-1", "windw": 1}))  # forbid_unknown_fields
    assert list(req.iter_errors({"tenant": "acme"}))  # thread is required
    recall = _validator("rpc.schema.json", "#/$defs/RecallRequest")
    assert not list(recall.iter_errors({"query": "aisle", "sources": ["turns", "memories"], "k": 5}))
    assert list(recall.iter_errors({"query": "aisle", "sources": ["nope"]}))

    reply = _validator("rpc.schema.json", "#/$defs/ThreadsReply")
    ok = json.loads(replies.encode_ok({"tenant": "acme", "threads": []}))
    err = json.loads(replies.encode_error("unknown_thread", "no thread"))
    assert not list(reply.iter_errors(ok)) and not list(reply.iter_errors(err))
    assert list(reply.iter_errors({"ok": False}))
    codes = doc["$defs"]["ErrorCode"]["enum"]
    assert "unknown_thread" in codes and "forbidden" in codes


def test_asyncapi_covers_every_subject_and_method() -> None:
    doc = json.loads((CONTRACT / "asyncapi.json").read_text())
    assert doc["asyncapi"] == "3.0.0"
    addresses = {c["address"] for c in doc["channels"].values()}
    s = Subjects("mem")
    assert {"{root}.fact.{tenant}.{thread}.{eventType}", "{root}.drv.{tenant}.{thread}.{eventType}",
            "{root}.dlq.{consumer}", "{root}.ctx.{tenant}.{thread}"} <= addresses
    for method in schemas.rpc_methods():
        assert "{root}" + s.rpc(method)[3:] in addresses
        assert "{root}" + s.rpc_scoped(method, "T")[3:-1] + "{tenant}" in addresses
    assert set(doc["channels"]["facts"]["messages"]) == {t.__name__ for t in FACT_TYPES}
    assert set(doc["channels"]["derived"]["messages"]) == {t.__name__ for t in DERIVED_TYPES}
    for op in doc["operations"].values():  # every reference resolves
        assert op["channel"]["$ref"].removeprefix("#/channels/") in doc["channels"]
    text = json.dumps(doc)
    for ref in {r for r in _refs(doc) if r.startswith("#/components/")}:
        kind, name = ref.split("/")[2:4]
        assert name in doc["components"][kind], ref
    assert "#/$defs/" not in text  # every schema ref was moved under components


def _refs(obj: object) -> list[str]:
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == "$ref" and isinstance(v, str)] + [
            r for v in obj.values() for r in _refs(v)]
    if isinstance(obj, list):
        return [r for v in obj for r in _refs(v)]
    return []


def test_schema_matches_what_the_decoder_accepts() -> None:
    """A message the schema accepts decodes with the Structs, so a non-Python producer that validates is safe."""
    msg = {"type": "TurnRecorded", "v": 2, "event_id": str(uuid.uuid4()), "tenant_id": "acme", "thread_id": "t",
           "occurred_at": "2025-01-02T03:04:05Z", "role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert not list(_validator("events.schema.json").iter_errors(msg))
    from memengine.events import decode

    assert decode(msgspec.json.encode(msg)).content == [TextBlock(text="hi")]
