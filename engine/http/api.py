"""The ``/v1`` JSON routes (issue #12 item 1): each is a thin call of ``engine.http.gateway.Gateway`` in the
caller's tenant (and the user its key is bound to, issue #26 item 4), so every answer is the query handler's reply
(``engine.wire.replies``) and every error its typed code as problem+json (``engine.http.problems``).

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from memengine.engine.http.auth import COOKIE, Caller, authenticate
from memengine.engine.http.gateway import Gateway


def caller(request: Request) -> Caller:
    """FastAPI dependency: the request's ``Caller`` (``engine.http.auth.authenticate``)."""
    h = request.headers
    return authenticate(request.app.state.keys, request.client.host if request.client else None,
                        h.get("authorization"), h.get("x-api-key"), request.cookies.get(COOKIE))


def gateway(request: Request) -> Gateway:
    """FastAPI dependency: the app's ``Gateway``."""
    gw: Gateway = request.app.state.gateway
    return gw


Who = Annotated[Caller, Depends(caller)]
Gw = Annotated[Gateway, Depends(gateway)]
Thread = Annotated[str, Path(description="Thread id (a subject token: no dots, spaces or wildcards).")]
AsOf = Annotated[str | None, Query(description="Answer as of this STORAGE time (ISO 8601): a fold of what memengine"
                                   " had stored by then (the CLI's --as-of).")]
AsOfSeq = Annotated[int | None, Query(ge=1, description="Answer as of this facts-stream sequence (--as-of-seq).")]
AfterSeq = Annotated[int | None, Query(ge=0, description="Read your writes: wait until this sequence is projected.")]

router = APIRouter(prefix="/v1")


def _json(body: bytes) -> Response:
    """The reply's JSON bytes as the response, as the query handler encoded them (``Gateway.ask_json``)."""
    return Response(body, media_type="application/json")


class TurnIn(BaseModel):
    """A turn to record (``TurnRecorded``): ``content`` a string or a list of blocks ``{"type": "text" |
    "thinking" | "tool_use" | "tool_result", ...}`` (events.model)."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant", "system", "tool"]
    content: str | list[dict[str, Any]]
    user_id: str | None = Field(None, max_length=1024)
    session_id: str | None = Field(None, max_length=1024)
    metadata: dict[str, Any] | None = None
    occurred_at: dt.datetime | None = None
    model: str | None = Field(None, max_length=256)


class Recorded(BaseModel):
    """The JetStream ack of a published turn: ``seq`` (pass it as ``after_seq``), ``event_id``, ``duplicate``."""

    thread: str
    seq: int
    event_id: str
    duplicate: bool


class MemoryIn(BaseModel):
    """An explicit memory (``MemoryAsserted``; ``memengine remember``)."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=8192)
    user: str | None = Field(None, max_length=1024)
    type: str = Field("FACT", max_length=32, description="PROFILE, PREFERENCE, FACT, TASK, PATTERN, SKILL, RULE, ...")
    importance: float = Field(0.5, ge=0, le=1)
    tags: list[str] = Field(default_factory=list, max_length=16)
    priority: Literal["TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"] | None = None
    thread: str = "_"


@router.post("/threads/{thread}/turns", response_model=Recorded, tags=["threads"])
async def post_turn(thread: Thread, turn: TurnIn, who: Who, gw: Gw,
                    idempotency_key: Annotated[str | None, Header(max_length=200, description=(
                        "The event id: a UUID, or any string (mapped to a stable UUID). A repeat returns the first"
                        " sequence with duplicate=true."))] = None) -> Any:
    """Record a turn; answers after the JetStream ack with its stream sequence."""
    return await gw.record_turn(who.tenant, thread, turn.model_dump(exclude_none=True), idempotency_key,
                                user=who.user)


@router.get("/threads", tags=["threads"])
async def threads(who: Who, gw: Gw, limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                  offset: Annotated[int, Query(ge=0)] = 0, as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """The tenant's threads, most recently active first (``rpc.threads``)."""
    return _json(await gw.ask_json("threads", who.tenant, {"limit": limit, "offset": offset}, as_of=as_of,
                                   as_of_seq=as_of_seq, user=who.user))


@router.get("/threads/{thread}/history", tags=["threads"])
async def history(thread: Thread, who: Who, gw: Gw, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                  from_seq: Annotated[int, Query(ge=0)] = 0, after_seq: AfterSeq = None,
                  as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """The transcript oldest first (``rpc.history``)."""
    return _json(await gw.ask_json("history", who.tenant, {"thread": thread, "limit": limit, "from_seq": from_seq,
                                                           "after_seq": after_seq}, as_of=as_of, as_of_seq=as_of_seq,
                                   user=who.user))


@router.get("/threads/{thread}/context", tags=["threads"])
async def context(thread: Thread, who: Who, gw: Gw, window: Annotated[int | None, Query(ge=1)] = None,
                  query: Annotated[str | None, Query(max_length=8192)] = None,
                  system_tokens: Annotated[int, Query(ge=0)] = 0, after_seq: AfterSeq = None,
                  as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """The tiered context window (``rpc.context``): three tiers, their budgets and used tokens."""
    return _json(await gw.ask_json("context", who.tenant, {"thread": thread, "window": window, "query": query,
                                                           "system_tokens": system_tokens, "after_seq": after_seq},
                                   as_of=as_of, as_of_seq=as_of_seq, user=who.user))


@router.get("/threads/{thread}/episodes", tags=["threads"])
async def episodes(thread: Thread, who: Who, gw: Gw, as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """The thread's episodes (``rpc.episodes``) and its summary and topics (``rpc.summary``)."""
    eps, summary = await gw.thread_page(who.tenant, thread, as_of=as_of, as_of_seq=as_of_seq, user=who.user)
    return {**eps, "summary": summary["summary"], "topics": summary["topics"]}


@router.post("/recall", tags=["memories"], openapi_extra={"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/RecallRequest"}}}}})
async def recall(request: Request, who: Who, gw: Gw) -> Any:
    """Hybrid recall (``rpc.recall``); the body is a ``RecallRequest`` (its ``tenant`` may only be the key's)."""
    return _json(msgspec.json.encode(await gw.ask_body("recall", who.tenant, await request.body(), user=who.user)))


@router.get("/memories", tags=["memories"])
async def memories(who: Who, gw: Gw, user: str | None = None, thread: str | None = None,
                   type: Annotated[str | None, Query(max_length=32)] = None,
                   status: Literal["active", "quarantined", "superseded", "retracted", "deleted", "expired",
                                   "all"] = "active",
                   limit: Annotated[int, Query(ge=1, le=1000)] = 100, include_expired: bool = False,
                   as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """Typed memory items, newest first (``rpc.memories``)."""
    return _json(await gw.ask_json("memories", who.tenant, {
        "user": user, "thread": thread, "type": type, "status": status, "limit": limit,
        "include_expired": include_expired or None}, as_of=as_of, as_of_seq=as_of_seq, user=who.user))


@router.post("/memories", status_code=202, tags=["memories"])
async def assert_memory(body: MemoryIn, who: Who, gw: Gw,
                        idempotency_key: Annotated[str | None, Header(max_length=200, description=(
                            "Names this write: a repeat returns the first sequence with duplicate=true (as for"
                            " turns)."))] = None) -> Any:
    """Assert a memory (``MemoryAsserted``); the enricher records it (202: derived asynchronously)."""
    return await gw.remember(who.tenant, body.model_dump(), idempotency_key, user=who.user)


@router.delete("/memories/{memory_id}", status_code=202, tags=["memories"])
async def retract_memory(memory_id: str, who: Who, gw: Gw, reason: str | None = None,
                         wait: Annotated[float, Query(ge=0, le=30, description="Seconds to wait until the item"
                                                      " reads retracted.")] = 0.0) -> Any:
    """Retract a memory (``MemoryRetracted``): it becomes ``retracted``, kept with its history."""
    return await gw.retract(who.tenant, memory_id, reason=reason, wait=wait, user=who.user)


@router.get("/memories/{memory_id}/audit", tags=["memories"])
async def audit(memory_id: str, who: Who, gw: Gw, as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Any:
    """The provenance chain: item -> derived events (model, prompt version, decision) -> source turns."""
    return _json(await gw.ask_json("audit", who.tenant, {"memory_id": memory_id}, as_of=as_of,
                                   as_of_seq=as_of_seq, user=who.user))


@router.get("/threads/{thread}/served", tags=["threads"])
async def served(thread: Thread, who: Who, gw: Gw, seq: Annotated[int | None, Query(ge=1)] = None,
                 at: dt.datetime | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Any:
    """The answers given in the thread (the access trail, issue #30), newest first; with ``seq`` (served-stream
    sequence) or ``at`` (the last one at or before), exactly what one held, with provenance. Admin keys only."""
    from memengine.engine.read.access import http_view

    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return await http_view(gw.engine.pool, who.admin, who.tenant, "served", thread=thread, seq=seq, at=at,
                           limit=limit)


@router.get("/users/{user}/access", tags=["memories"])
async def user_access(user: str, who: Who, gw: Gw) -> Any:
    """Seed 002 §7 figures of ``user`` and its hot memories by ``access_count`` (§6.2). Admin keys only."""
    from memengine.engine.read.access import http_view

    return await http_view(gw.engine.pool, who.admin, who.tenant, "user", user=user)


@router.get("/users/{user}/profile", tags=["memories"])
async def profile(user: str, who: Who, gw: Gw, include_expired: bool = False, as_of: AsOf = None,
                  as_of_seq: AsOfSeq = None) -> Any:
    """MEMORY.md and USER.md of ``user`` (``rpc.profile``)."""
    return _json(await gw.ask_json("profile", who.tenant, {"user": user, "include_expired": include_expired or None},
                                   as_of=as_of, as_of_seq=as_of_seq, user=who.user))


@router.get("/operations", tags=["operations"])
async def operations(who: Who, gw: Gw, limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                     kind: str | None = None) -> Any:
    """Latest operations (rebuild, verify, forget, consolidate, dlq), newest first; admin keys only."""
    return {"operations": await gw.operations(who.admin, limit=limit, kind=kind)}


@router.get("/dlq", tags=["operations"])
async def dead_letters(who: Who, gw: Gw, status: Literal["open", "retried", "dropped", "all"] = "open",
                       consumer: str | None = None, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> Any:
    """Dead letters, oldest first, without payloads; admin keys only."""
    return {"dead_letters": await gw.dead_letters(who.admin, status=status, consumer=consumer, limit=limit)}


@router.post("/dlq/{dead_letter_id}/retry", tags=["operations"])
async def dlq_retry(dead_letter_id: int, who: Who, gw: Gw) -> Any:
    """Republish one dead letter; admin keys only."""
    return await gw.dlq_retry(who.admin, dead_letter_id)


@router.post("/dlq/{dead_letter_id}/drop", tags=["operations"])
async def dlq_drop(dead_letter_id: int, who: Who, gw: Gw) -> Any:
    """Drop one dead letter (kept for audit, no longer retried); admin keys only."""
    return await gw.dlq_drop(who.admin, dead_letter_id)
