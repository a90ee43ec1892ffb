"""The wire contract as documents: JSON Schema of every event and every request/reply, and an AsyncAPI 3 document of
the subjects (issue #11 item 5). Generated from the code, never written by hand:

- ``events.schema.json``: the fact and derived events (``events.model.FACT_TYPES``, ``events.derived.DERIVED_TYPES``),
  from their msgspec Structs (``msgspec.json.schema_components``);
- ``rpc.schema.json``: per method of ``RpcHandlers.methods`` (``engine.read.rpc``, the one table of which request
  type each method takes) the request Struct, and the reply envelope with the handler's return type as ``result``
  (a Struct where the handler returns one; an open object where it returns a plain dict);
- ``asyncapi.json``: AsyncAPI 3.0 channels for facts, derived events, dead letters, pushed context and request/reply
  (plain ``<root>.rpc.<method>`` and tenant-scoped ``<root>.rpc.<method>.<tenant>``), with the streams of
  ``events.streams.stream_specs`` and the message payloads of the two schema documents.

Why not FastStream's AsyncAPI generator: only the request/reply handlers are FastStream subscribers
(``engine.read.serving``). Facts and derived events are read by JetStream pull consumers (``engine.runtime``), dead
letters and pushed context are published with the raw client, and what agents *publish* (facts) is no subscriber at
all. A generator over FastStream would document a fifth of the contract and its schemas would come from
FastStream's pydantic view of the handler signatures (``bytes``), not from the msgspec Structs that decode the wire.
So one function here builds the document from the same tables the engine runs on.

``python -m memengine.engine.ops.contract_docs --out docs/contract`` rewrites the committed documents;
``tests/unit/engine/ops/test_contract_docs.py`` fails when they and the code drift apart. Needs the ``server`` extra
(the method table lives in the query handler).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import typing
from pathlib import Path
from typing import Any, cast

import msgspec

from memengine.engine.wire import errors, replies
from memengine.events import CURRENT_VERSION, DERIVED_TYPES, FACT_TYPES, StreamNames, Subjects, stream_specs
from memengine.events.derived import DERIVED_VERSION

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Files written by ``write`` (name -> builder), in the order the CLI writes them.
DOCUMENTS = ("events.schema.json", "rpc.schema.json", "asyncapi.json")
TOKEN_DESCRIPTION = "1-128 characters of [A-Za-z0-9_-] (no '.', '*' or '>': a subject token)"

# Headers of the wire (the engine sets or reads them; the names are the contract).
MSG_ID_HEADER = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQ_HEADER = "Nats-Expected-Last-Subject-Sequence"
CONTEXT_SEQ_HEADER = "Memengine-Seq"
CONTEXT_EVENT_ID_HEADER = "Memengine-Event-Id"
DLQ_HEADERS = {
    "Nats-Msg-Id": "<consumer>:<stream>:<stream sequence> (a repeat after a crash stores nothing)",
    "Memengine-Error": "why the consumer could not process the event (one line, at most 1,000 characters)",
    "Memengine-Consumer": "the consumer (projector) that failed",
    "Memengine-Stream": "the stream the event came from",
    "Memengine-Stream-Seq": "its sequence in that stream",
    "Memengine-Subject": "its subject",
    "Memengine-Retry-Stream-Seq": "present on a failing retry: the stream sequence of the original",
}


def rpc_methods() -> dict[str, tuple[type, Any]]:
    """``{method: (request type, result type)}`` read from ``RpcHandlers.methods`` without a database.

    ``RpcHandlers`` is built over a stand-in service whose attributes are the unbound ``QueryService`` /
    ``MemoryQueries`` methods, and ``_wrap`` is overridden to return what it is given; the result type is the
    handler's return annotation (``dict[str, Any]`` for the handlers that build plain dicts)."""
    from memengine.engine.adapters.settings import Settings
    from memengine.engine.read.memories import MemoryQueries
    from memengine.engine.read.rpc import RpcHandlers
    from memengine.engine.read.service import QueryService

    class _Memory:
        def __getattr__(self, name: str) -> Any:
            return getattr(MemoryQueries, name)

    class _Service:
        memory = _Memory()

        def __getattr__(self, name: str) -> Any:
            return getattr(QueryService, name)

    class _Table(RpcHandlers):
        def _wrap(self, req_type: type, fn: Any, **_: Any) -> Any:
            return req_type, typing.get_type_hints(fn).get("return", Any)

    # a stand-in for the service (duck-typed: the unbound methods), and _wrap's tuples in place of handlers
    table = _Table(cast(QueryService, _Service()), Settings.from_env(env={}))
    return cast(dict[str, tuple[type, Any]], dict(sorted(table.methods().items())))


def _components(types: list[Any]) -> tuple[tuple[dict[str, Any], ...], dict[str, Any]]:
    return msgspec.json.schema_components(types, ref_template="#/$defs/{name}")


def events_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of every event: ``oneOf`` a fact (``Fact``) or a derived event (``DerivedEvent``), each a
    union tagged by ``type``; one ``$defs`` entry per Struct."""
    from memengine.events import AnyDerived, AnyFact

    (fact, derived), defs = _components([AnyFact, AnyDerived])
    defs["Fact"] = {"title": "Fact", "description": "What agents and users said and did, published on "
                    "<root>.fact.<tenant_id>.<thread_id>.<type>. TurnRecorded v1 (plain `text` instead of `content`) "
                    "is still accepted and upcast; this schema describes the current versions. Beyond the schema "
                    "(events.codec, issue #26): no string, key or value at any depth, may hold U+0000 or a lone "
                    "surrogate, and user_id and session_id are at most 1024 bytes in UTF-8 (no read model can "
                    "store more); such a fact is dead-lettered.", **fact}
    defs["DerivedEvent"] = {"title": "DerivedEvent", "description": "What the engine derived from facts, with "
                            "provenance, published on <root>.drv.<tenant_id>.<thread_id>.<type>.", **derived}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": "memengine/events.schema.json",
        "title": "memengine events",
        "description": "Every event of memengine's log, generated from the msgspec Structs of memengine.events "
                       "(python -m memengine.engine.ops.contract_docs). `x-memengine-versions`: the current `v` per "
                       "type.",
        "x-memengine-versions": {"facts": dict(CURRENT_VERSION), "derived": dict(DERIVED_VERSION)},
        "oneOf": [{"$ref": "#/$defs/Fact"}, {"$ref": "#/$defs/DerivedEvent"}],
        "$defs": dict(sorted(defs.items())),
    }


def _title(method: str) -> str:
    return method[:1].upper() + method[1:]


def rpc_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of the request/reply protocol: ``$defs`` ``<Method>Request`` (an alias of the request
    Struct, e.g. ``ContextRequest``), ``<Method>Reply`` (``{"ok": true, "result": ...}`` or ``ErrorReply``), the
    reply Structs and ``ErrorCode``; ``x-memengine-methods`` maps each method to its two definitions."""
    methods = rpc_methods()
    req_types = sorted({req for req, _ in methods.values()}, key=lambda t: t.__name__)
    result_types = sorted({res for _, res in methods.values() if isinstance(res, type)
                           and issubclass(res, msgspec.Struct)}, key=lambda t: t.__name__)
    _, defs = _components([*req_types, *result_types, replies.ErrorReply])
    defs["ErrorCode"] = {
        "title": "ErrorCode",
        "description": "The error codes the engine sends (engine.wire.errors.ErrorCode). A client must accept a "
                       "code it does not know (treat it as `internal`).",
        "enum": list(typing.get_args(errors.ErrorCode)),
    }
    index: dict[str, Any] = {}
    for method, (req, res) in methods.items():
        name = _title(method)
        if f"{name}Request" != req.__name__:
            defs[f"{name}Request"] = {"$ref": f"#/$defs/{req.__name__}"}
        if isinstance(res, type) and issubclass(res, msgspec.Struct):
            result: dict[str, Any] = {"$ref": f"#/$defs/{res.__name__}"}
        else:
            result = {"type": "object", "description": f"A JSON object (QueryService.{method} builds a plain dict; "
                                                       "no schema beyond that yet)."}
        defs[f"{name}Reply"] = {
            "title": f"{name}Reply",
            "description": f"Reply to <root>.rpc.{method} and <root>.rpc.{method}.<tenant>.",
            "oneOf": [
                {"type": "object", "properties": {"ok": {"const": True}, "result": result},
                 "required": ["ok", "result"]},
                {"$ref": "#/$defs/ErrorReply"},
            ],
        }
        index[method] = {"request": f"#/$defs/{name}Request", "reply": f"#/$defs/{name}Reply"}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": "memengine/rpc.schema.json",
        "title": "memengine request/reply",
        "description": "Requests to <root>.rpc.<method> (tenant from the payload) and <root>.rpc.<method>.<tenant> "
                       "(the subject's tenant must be the payload's), and their replies: {\"ok\": true, \"result\": "
                       "...} or {\"ok\": false, \"error\": {\"code\", \"message\"}}. Generated from "
                       "engine.read.rpc.RpcHandlers.methods and the msgspec Structs "
                       "(python -m memengine.engine.ops.contract_docs).",
        "x-memengine-methods": index,
        "$defs": dict(sorted(defs.items())),
    }


# -- AsyncAPI ------------------------------------------------------------------------------------------------------


def _to_asyncapi(schema: Any) -> Any:
    """A JSON Schema of ``schema_components`` as an AsyncAPI Schema Object: refs into ``#/components/schemas`` and
    ``discriminator`` as the property name (AsyncAPI's form; msgspec writes OpenAPI's object form)."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "$ref" and isinstance(v, str):
                out[k] = v.replace("#/$defs/", "#/components/schemas/")
            elif k == "discriminator" and isinstance(v, dict):
                out[k] = v["propertyName"]
            else:
                out[k] = _to_asyncapi(v)
        return out
    if isinstance(schema, list):
        return [_to_asyncapi(v) for v in schema]
    return schema


def _header_schema(headers: dict[str, str], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": "string", "description": d} for k, d in headers.items()},
            **({"required": required} if required else {})}


def _param(description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, **extra}


def asyncapi(root: str = "mem", stream_prefix: str = "MEMORY") -> dict[str, Any]:
    """The AsyncAPI 3.0 document of one deployment's subjects, seen from the engine (it receives facts and requests,
    sends derived events, dead letters, pushed context and replies). Subject layout from ``events.subjects.Subjects``,
    streams from ``events.streams.stream_specs``, methods from ``RpcHandlers.methods``."""
    subjects = Subjects(root)
    names = StreamNames.for_prefix(stream_prefix)
    streams = {s.name: s for s in stream_specs(names, subjects)}
    ev, rpc = events_schema(), rpc_schema()
    schemas = _to_asyncapi({**ev["$defs"], **rpc["$defs"]})
    methods = rpc_methods()
    from memengine.engine.read.serving import QUERY_GROUP

    def stream_ext(name: str) -> dict[str, Any]:
        s = streams[name]
        return {"x-memengine-stream": {"name": s.name, "subjects": s.subjects, "description": s.description,
                                       "duplicate_window_s": s.duplicate_window, "max_msg_size": s.max_msg_size}}

    # Subjects are built with placeholder tokens and turned into AsyncAPI address expressions, so a change of the
    # layout in events.subjects changes the document.
    def address(subject: str) -> str:
        for token, param in (("TENANT", "tenant"), ("THREAD", "thread"), ("TYPE", "eventType"),
                             ("CONSUMER", "consumer")):
            subject = subject.replace(token, "{" + param + "}")
        return "{root}" + subject[len(root):]

    root_param = _param(f"MEMENGINE_SUBJECT_ROOT (default `{root}`)", default=root)
    tenant_param = _param(f"Tenant id: {TOKEN_DESCRIPTION}")
    thread_param = _param(f"Thread id: {TOKEN_DESCRIPTION}; `_` for user-level events")

    messages: dict[str, Any] = {}
    fact_headers = _header_schema({
        MSG_ID_HEADER: "`<tenant_id>:<event_id>`: JetStream drops a repeat inside the stream's duplicate window; "
                       "projections are idempotent by event id beyond it",
        EXPECTED_LAST_SUBJECT_SEQ_HEADER: "optional optimistic concurrency on the subject",
    }, [MSG_ID_HEADER])
    for t in FACT_TYPES:
        messages[t.__name__] = {"name": t.__name__, "title": t.__name__, "contentType": "application/json",
                                "headers": fact_headers, "payload": {"$ref": f"#/components/schemas/{t.__name__}"}}
    derived_headers = _header_schema({MSG_ID_HEADER: "the derived event id (deterministic from its sources)"},
                                     [MSG_ID_HEADER])
    for t in DERIVED_TYPES:
        messages[t.__name__] = {"name": t.__name__, "title": t.__name__, "contentType": "application/json",
                                "headers": derived_headers, "payload": {"$ref": f"#/components/schemas/{t.__name__}"}}
    messages["DeadLetter"] = {
        "name": "DeadLetter", "title": "DeadLetter", "contentType": "application/octet-stream",
        "summary": "The failing message's bytes, verbatim (often not a valid event: that is why it is here).",
        "headers": _header_schema(DLQ_HEADERS, ["Nats-Msg-Id", "Memengine-Error", "Memengine-Consumer",
                                                "Memengine-Stream", "Memengine-Stream-Seq", "Memengine-Subject"]),
        "payload": {"type": "string", "description": "raw bytes"},
    }
    messages["PushedContext"] = {
        "name": "PushedContext", "title": "PushedContext", "contentType": "application/json",
        "summary": "Context assembled after a TurnRecorded with `want_context` was projected: the reply envelope of "
                   "rpc.context.",
        "headers": _header_schema({CONTEXT_SEQ_HEADER: "stream sequence of the turn",
                                   CONTEXT_EVENT_ID_HEADER: "event id of the turn"},
                                  [CONTEXT_SEQ_HEADER, CONTEXT_EVENT_ID_HEADER]),
        "payload": {"$ref": "#/components/schemas/ContextReply"},
    }
    for method, (req, _) in methods.items():
        name = _title(method)
        messages[f"{name}Request"] = {"name": f"{name}Request", "title": f"{name}Request",
                                      "contentType": "application/json",
                                      "payload": {"$ref": f"#/components/schemas/{req.__name__}"}}
        messages[f"{name}Reply"] = {"name": f"{name}Reply", "title": f"{name}Reply",
                                    "contentType": "application/json",
                                    "payload": {"$ref": f"#/components/schemas/{name}Reply"}}

    def refs(*names_: str) -> dict[str, Any]:
        return {n: {"$ref": f"#/components/messages/{n}"} for n in names_}

    channels: dict[str, Any] = {
        "facts": {
            "address": address(subjects.fact("TENANT", "THREAD", "TYPE")),
            "title": "Facts",
            "description": "The source of truth. Agents publish here (JetStream publish, with the headers below); the "
                           "subject's last token is the event's `type`, its tenant and thread the event's.",
            "parameters": {"root": root_param, "tenant": tenant_param, "thread": thread_param,
                           "eventType": _param("The event's `type`", enum=[t.__name__ for t in FACT_TYPES])},
            "messages": refs(*[t.__name__ for t in FACT_TYPES]),
            **stream_ext(names.facts),
        },
        "derived": {
            "address": address(subjects.derived("TENANT", "THREAD", "TYPE")),
            "title": "Derived events",
            "description": "Model output with provenance (source_event_ids, source_seq_range, model, prompt_version), "
                           "published by the enricher and folded by the derived projector.",
            "parameters": {"root": root_param, "tenant": tenant_param, "thread": thread_param,
                           "eventType": _param("The event's `type`", enum=[t.__name__ for t in DERIVED_TYPES])},
            "messages": refs(*[t.__name__ for t in DERIVED_TYPES]),
            **stream_ext(names.derived),
        },
        "deadLetters": {
            "address": address(subjects.dlq("CONSUMER")),
            "title": "Dead letters",
            "description": "Events a consumer could not decode or apply (memengine dlq list|show|retry|drop).",
            "parameters": {"root": root_param, "consumer": _param(f"Consumer name: {TOKEN_DESCRIPTION}")},
            "messages": refs("DeadLetter"),
            **stream_ext(names.dlq),
        },
        "context": {
            "address": address(subjects.context("TENANT", "THREAD")),
            "title": "Pushed context",
            "description": "Core NATS (not stored): subscribe before publishing a turn with `want_context`.",
            "parameters": {"root": root_param, "tenant": tenant_param, "thread": thread_param},
            "messages": refs("PushedContext"),
        },
        "rpcReply": {
            "address": None,
            "title": "Reply inbox",
            "description": "The requester's reply subject (NATS request/reply). MemoryClient uses the inbox prefix "
                           "`_INBOX.<tenant>` so that a tenant's NATS user needs only `_INBOX.<tenant>.>`.",
            "messages": refs(*[f"{_title(m)}Reply" for m in methods]),
        },
    }
    operations: dict[str, Any] = {
        "receiveFact": {"action": "receive", "channel": {"$ref": "#/channels/facts"},
                        "summary": "Projectors and the enricher consume facts (JetStream pull consumers)."},
        "sendDerived": {"action": "send", "channel": {"$ref": "#/channels/derived"},
                        "summary": "The enricher publishes derived events."},
        "sendDeadLetter": {"action": "send", "channel": {"$ref": "#/channels/deadLetters"},
                           "summary": "A projector records an event it could not process."},
        "sendContext": {"action": "send", "channel": {"$ref": "#/channels/context"},
                        "summary": "The query handler pushes context for turns that asked for it."},
    }
    for method, _ in methods.items():
        name = _title(method)
        for scoped in (False, True):
            key = f"rpc{name}{'Scoped' if scoped else ''}"
            subject = subjects.rpc_scoped(method, "TENANT") if scoped else subjects.rpc(method)
            channels[key] = {
                "address": address(subject),
                "title": f"rpc.{method}" + (" (tenant-scoped)" if scoped else ""),
                "description": ("The subject's tenant must be the payload's `tenant` (error `forbidden`); NATS "
                                "permissions can scope a user to its tenant's subjects." if scoped else
                                "The tenant comes from the payload's `tenant` (trusted callers)."),
                "parameters": {"root": root_param, **({"tenant": tenant_param} if scoped else {})},
                "messages": refs(f"{name}Request"),
            }
            operations[f"{key}"] = {
                "action": "receive", "channel": {"$ref": f"#/channels/{key}"},
                "summary": f"rpc.{method}: the query handlers answer in a queue group (one of them answers).",
                "bindings": {"nats": {"queue": QUERY_GROUP, "bindingVersion": "0.1.0"}},
                "messages": [{"$ref": f"#/channels/{key}/messages/{name}Request"}],
                "reply": {"channel": {"$ref": "#/channels/rpcReply"},
                          "messages": [{"$ref": f"#/channels/rpcReply/messages/{name}Reply"}]},
            }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "memengine",
            "version": _version(),
            "description": "Event-sourced long-term memory for LLM agents: the NATS subjects of one deployment "
                           f"(subject root `{root}`, streams `{stream_prefix}_*`). Generated from the code by "
                           "python -m memengine.engine.ops.contract_docs; payload schemas are also in "
                           "events.schema.json "
                           "and rpc.schema.json.",
            "license": {"name": "Apache-2.0"},
        },
        "defaultContentType": "application/json",
        "servers": {"embedded": {"host": "127.0.0.1:4222", "protocol": "nats",
                                 "description": "`memengine up` (embedded nats-server) or any NATS given by NATS_URL"}},
        "channels": channels,
        "operations": operations,
        "components": {"schemas": schemas, "messages": messages},
    }


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("memengine")
    except Exception:  # noqa: BLE001 - not installed (a source checkout on PYTHONPATH)
        return "0.0.0"


def documents() -> dict[str, dict[str, Any]]:
    """``{file name: document}`` of every committed contract document."""
    return {"events.schema.json": events_schema(), "rpc.schema.json": rpc_schema(), "asyncapi.json": asyncapi()}


def render(doc: dict[str, Any]) -> str:
    """The committed text of a document: indented JSON, keys in generation order, a final newline."""
    return json.dumps(copy.deepcopy(doc), indent=2, ensure_ascii=False) + "\n"


def write(out: Path) -> list[Path]:
    """Write every document under ``out`` (created if missing); returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, doc in documents().items():
        path = out / name
        path.write_text(render(doc), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memengine.engine.ops.contract_docs",
                                     description="Write the wire contract documents (JSON Schema, AsyncAPI 3).")
    parser.add_argument("--out", type=Path, default=Path("docs/contract"), help="directory (default docs/contract)")
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
