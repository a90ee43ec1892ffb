"""The web console at ``/`` (issue #12 item 2): server-rendered pages (Jinja2, autoescaped: every stored text is
shown as text, a turn holding ``<script>`` included), readable without JavaScript; the as-of control on every page
re-renders it as it stood at a storage time or facts sequence (``?as_of=`` / ``?as_of_seq=``, as the API).

Pages read through ``engine.http.gateway.Gateway`` exactly as the ``/v1`` routes do; the two changes (retract a
memory, retry / drop a dead letter) are POST forms, and dropping asks first on a page of its own. Cross-site posts
and foreign Hosts are refused for every route by ``engine.http.guard`` (issue #26).

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

import jinja2
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.templating import Jinja2Templates

from memengine.engine.http.api import AsOf, AsOfSeq, Gw
from memengine.engine.http.api import Who as AnyCaller
from memengine.engine.http.auth import COOKIE, Caller, Unauthorized
from memengine.engine.http.problems import status_of
from memengine.engine.wire.errors import Forbidden  # main's operator check (issue #26 item 4) raises it

#: Seconds between SSE keep-alive comments on the live thread page (proxies drop idle streams).
LIVE_KEEPALIVE = 15.0

#: Autoescape on for every template (not only *.html: the guarantee must not depend on a file name).
_env = jinja2.Environment(loader=jinja2.PackageLoader("memengine.engine.http", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined)
_env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
templates = Jinja2Templates(env=_env)

router = APIRouter(include_in_schema=False)


def operator(who: AnyCaller) -> Caller:
    """FastAPI dependency: the console is the tenant operator's tool (every user's threads and memories), so a key
    bound to a user is ``Forbidden`` here (issue #26 item 4); it uses the ``/v1`` API, which keeps it to its user."""
    if who.user is not None:
        raise Forbidden("the console is for operator keys; this key is bound to a user (use the /v1 API)")
    return who


Who = Annotated[Caller, Depends(operator)]

TIERS = {1: "Tier 1: memory (summary, topics, user memory, scratchpad)", 2: "Tier 2: condensed history",
         3: "Tier 3: recent turns, verbatim"}


def _page(request: Request, name: str, http_status: int = 200, **ctx: Any) -> HTMLResponse:
    as_of = {k: request.query_params.get(k) for k in ("as_of", "as_of_seq")}
    keep = [(k, v) for k, v in request.query_params.multi_items() if k not in ("as_of", "as_of_seq")]
    response: HTMLResponse = templates.TemplateResponse(
        request, name, {"as_of": as_of, "keep": keep, "q": _q, **ctx}, status_code=http_status)
    return response


def _q(**params: Any) -> str:
    """A query string of the non-empty ``params`` (``?a=1&b=2``, or ``""``)."""
    pairs = {k: v for k, v in params.items() if v not in (None, "")}
    return "?" + urlencode(pairs) if pairs else ""


def error_page(request: Request, code: str, detail: str, status: int | None = None) -> Response:
    """The console's error page (the problem's code and detail, escaped)."""
    return _page(request, "error.html", status or status_of(code), code=code, detail=detail)


async def _form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (first value per field). Where it may come from is checked
    before any route runs (``engine.http.guard``: own Host, own Origin, no cross-site Fetch Metadata; issue #26),
    not here: comparing ``Origin`` with ``Host`` proves nothing under DNS rebinding, which makes them equal."""
    return {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request) -> Response:
    """A form for the API key (needed when ``MEMENGINE_HTTP_KEYS_FILE`` is set); kept in an HttpOnly,
    SameSite=Strict cookie."""
    return _page(request, "login.html", tenant="")


@router.post("/login")
async def login_action(request: Request) -> Response:
    """Check the key, set the cookie, go to the threads."""
    key = (await _form(request)).get("key", "")
    if request.app.state.keys.lookup(key) is None:
        raise Unauthorized("that API key is not configured")
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


@router.get("/", response_class=HTMLResponse)
async def threads_page(request: Request, who: Who, gw: Gw, as_of: AsOf = None,
                       as_of_seq: AsOfSeq = None) -> Response:
    """The tenant's threads, most recent first."""
    reply = await gw.ask("threads", who.tenant, {"limit": 200}, as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "threads.html", tenant=who.tenant, threads=reply["threads"])


@router.get("/threads/{thread}", response_class=HTMLResponse)
async def thread_page(request: Request, thread: str, who: Who, gw: Gw, from_seq: Annotated[int, Query(ge=0)] = 0,
                      as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Response:
    """A thread's transcript; thinking and tool blocks collapsed (``<details>``), each turn anchored ``#seq-N``."""
    hist = await gw.ask("history", who.tenant, {"thread": thread, "limit": 500, "from_seq": from_seq},
                        as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "thread.html", tenant=who.tenant, thread=thread, hist=hist)


@router.get("/threads/{thread}/live")
async def thread_live(request: Request, thread: str, who: Who, gw: Gw,
                      after: Annotated[int, Query(ge=0)] = 0) -> StreamingResponse:
    """Server-sent events for the thread page: one ``turn`` event (data: the turn's ``seq``) each time a new turn
    of ``thread`` after ``after`` is projected. Woken by the read side's checkpoint notifications
    (``engine.read.progress.ProgressWatcher``), then one ``rpc.history`` read; no polling of the thread."""
    await gw.ask("history", who.tenant, {"thread": thread, "limit": 1})  # unknown_thread (404) otherwise
    progress = gw.engine.service.progress

    async def events() -> AsyncIterator[str]:
        last = after
        applied = await progress.applied()
        while not await request.is_disconnected():
            reply = await gw.ask("history", who.tenant, {"thread": thread, "from_seq": last, "limit": 100})
            for m in reply["messages"]:
                last = m["seq"]
                yield f"event: turn\ndata: {m['seq']}\n\n"
            applied, _ = await progress.wait_for(applied + 1, LIVE_KEEPALIVE)
            yield ": keep-alive\n\n"
            await asyncio.sleep(0)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


@router.get("/threads/{thread}/context", response_class=HTMLResponse)
async def context_page(request: Request, thread: str, who: Who, gw: Gw,
                       window: Annotated[int, Query(ge=1, le=10_000_000)] = 8000, query: str | None = None,
                       as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Response:
    """The context window viewer: the three tiers, their budgets and used tokens, which turns sit where."""
    ctx = await gw.ask("context", who.tenant, {"thread": thread, "window": window, "query": query or None},
                       as_of=as_of, as_of_seq=as_of_seq)
    tiers = [{"tier": t, "name": TIERS[t], "budget": ctx["budget"][f"tier{t}"], "used": ctx["tokens"][f"tier{t}"],
              "messages": [m for m in ctx["messages"] if m["tier"] == t]} for t in (1, 2, 3)]
    return _page(request, "context.html", tenant=who.tenant, thread=thread, ctx=ctx, tiers=tiers, window=window,
                 query=query or "")


@router.get("/threads/{thread}/episodes", response_class=HTMLResponse)
async def episodes_page(request: Request, thread: str, who: Who, gw: Gw, as_of: AsOf = None,
                        as_of_seq: AsOfSeq = None) -> Response:
    """A thread's episodes, rolling summary and topics."""
    eps, summary = await gw.thread_page(who.tenant, thread, as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "episodes.html", tenant=who.tenant, thread=thread, episodes=eps["episodes"],
                 summary=summary)


STATUSES = ("active", "quarantined", "superseded", "retracted", "expired", "deleted", "all")


@router.get("/memories", response_class=HTMLResponse)
async def memories_page(request: Request, who: Who, gw: Gw, user: str | None = None, type: str | None = None,
                        status: str = "active", as_of: AsOf = None, as_of_seq: AsOfSeq = None) -> Response:
    """Memories, filterable by user, type and status; each with importance, confidence and validity."""
    reply = await gw.ask("memories", who.tenant, {"user": user or None, "type": type or None, "status": status,
                                                  "limit": 500}, as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "memories.html", tenant=who.tenant, reply=reply, user=user or "", type=type or "",
                 status=status, statuses=STATUSES)


@router.get("/memories/{memory_id}", response_class=HTMLResponse)
async def memory_page(request: Request, memory_id: str, who: Who, gw: Gw, as_of: AsOf = None,
                      as_of_seq: AsOfSeq = None) -> Response:
    """A memory and its provenance chain: derived events (model, prompt version, decision) and source turns,
    each linked to its place in the transcript."""
    chain = await gw.ask("audit", who.tenant, {"memory_id": memory_id}, as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "memory.html", tenant=who.tenant, chain=chain, item=chain["memory"])


@router.post("/memories/{memory_id}/retract")
async def retract_action(request: Request, memory_id: str, who: Who, gw: Gw) -> Response:
    """Retract, wait until the item reads ``retracted`` (10 s at most), then show its page again."""
    form = await _form(request)
    done = await gw.retract(who.tenant, memory_id, reason=form.get("reason") or None, wait=10.0)
    return RedirectResponse(f"/memories/{done['memory_id']}", status_code=303)


@router.get("/users/{user}/profile", response_class=HTMLResponse)
async def profile_page(request: Request, user: str, who: Who, gw: Gw, as_of: AsOf = None,
                       as_of_seq: AsOfSeq = None) -> Response:
    """MEMORY.md and USER.md, as preformatted (escaped) text."""
    prof = await gw.ask("profile", who.tenant, {"user": user}, as_of=as_of, as_of_seq=as_of_seq)
    return _page(request, "profile.html", tenant=who.tenant, user=user, prof=prof)


@router.get("/ops", response_class=HTMLResponse)
async def ops_page(request: Request, who: Who, gw: Gw, status: str = "open") -> Response:
    """Operations (newest first) and dead letters with retry / drop."""
    return _page(request, "ops.html", tenant=who.tenant, operations=await gw.operations(who.admin),
                 dead=await gw.dead_letters(who.admin, status=status), status=status)


@router.post("/dlq/{dead_letter_id}/retry")
async def dlq_retry_action(dead_letter_id: int, who: Who, gw: Gw) -> Response:
    """Republish one dead letter, back to the operations page."""
    await gw.dlq_retry(who.admin, dead_letter_id)
    return RedirectResponse("/ops", status_code=303)


@router.get("/dlq/{dead_letter_id}/drop", response_class=HTMLResponse)
async def dlq_drop_confirm(request: Request, dead_letter_id: int, who: Who, gw: Gw) -> Response:
    """Asks before dropping (a POST form with a confirm button)."""
    dead = [d for d in await gw.dead_letters(who.admin, status="all", limit=100_000) if d["id"] == dead_letter_id]
    if not dead:
        return error_page(request, "not_found", f"no dead letter {dead_letter_id}")
    return _page(request, "drop.html", tenant=who.tenant, dead=dead[0])


@router.post("/dlq/{dead_letter_id}/drop")
async def dlq_drop_action(request: Request, dead_letter_id: int, who: Who, gw: Gw) -> Response:
    """Drop one dead letter once confirmed (``confirm=yes`` in the form), back to the operations page."""
    if (await _form(request)).get("confirm") != "yes":
        return RedirectResponse(f"/dlq/{dead_letter_id}/drop", status_code=303)
    await gw.dlq_drop(who.admin, dead_letter_id)
    return RedirectResponse("/ops", status_code=303)
