"""The FastAPI app (``build_app``) and the uvicorn server the engine's lifespan runs it on (``HttpServer``).

Errors become problem+json (``engine.http.problems``) under ``/v1`` and an escaped HTML page in the console: a
``MemengineError`` (``RpcError`` included) by its code, a request FastAPI cannot validate as ``invalid_request``
(422), a value the database cannot take (a NUL, an id beyond its column's range) as ``invalid_request``, an unknown
route as ``not_found``, anything else as ``internal`` with a logged reference (never the
exception's text; issue #17 defect 9). Bodies over ``MEMENGINE_MAX_REQUEST_BYTES`` are refused (413) before they
are read whole. Before any of it, ``engine.http.guard.RequestGuard`` refuses a foreign Host, a cross-site request and
control characters in the URL, for every route (issue #26).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Generator
from typing import Any

import msgspec
import structlog
import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from memengine.engine.adapters.postgres import is_bad_data, is_transient
from memengine.engine.http import api, console
from memengine.engine.http.auth import KeyRing
from memengine.engine.http.gateway import Gateway
from memengine.engine.http.guard import Policy, RequestGuard, guard_kwargs
from memengine.engine.http.problems import problem, status_of
from memengine.engine.wire import tracing
from memengine.engine.wire.errors import MemengineError, rpc_error
from memengine.engine.wire.requests import RecallRequest
from memengine.events import EventDecodeError, InvalidToken

log = structlog.get_logger("memengine.http")


def _wants_html(request: Request) -> bool:
    path = request.url.path
    return not path.startswith(("/v1", "/openapi", "/docs", "/redoc", DOCS_ASSETS))


def _error(request: Request, code: str, detail: str, status: int | None = None) -> Response:
    if _wants_html(request):
        return console.error_page(request, code, detail, status)
    return problem(code, detail, status)


#: Where the Swagger UI / ReDoc assets are served from: the copies vendored in the ``fastapi-offline`` wheel (Swagger
#: UI 5, which renders the OpenAPI 3.1 document FastAPI writes), so ``/docs`` works with no network.
DOCS_ASSETS = "/static-docs"


def _offline_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` on same-origin assets instead of FastAPI's default CDN (jsDelivr), which
    leaves the page blank on a host with no network (issue #12 item 1: "interactive docs at /docs")."""
    app.mount(DOCS_ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="static-docs")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - Swagger UI",
                                   swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png")

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{openapi_url}", title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png", with_google_fonts=False)


def build_app(gateway: Gateway, keys: KeyRing, bound_host: str = "127.0.0.1") -> FastAPI:
    """The app: ``/v1`` (``engine.http.api``), the console at ``/`` (``engine.http.console``), ``/static``,
    ``/openapi.json``, and ``/docs`` / ``/redoc`` with their assets served by the engine (``DOCS_ASSETS``); all of
    it behind ``engine.http.guard.RequestGuard`` (``bound_host``: the address the server listens on, one of its own
    Host names unless a wildcard). Raises ``ValueError`` for a malformed allowed host or origin setting."""
    app = FastAPI(title="memengine", version="1", summary="Event-sourced long-term memory for LLM agents: threads,"
                  " context windows, recall, typed memories with provenance, time travel.",
                  docs_url=None, redoc_url=None)
    app.state.gateway = gateway
    app.state.keys = keys
    max_bytes = gateway.settings.max_request_bytes

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Any) -> Response:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > max_bytes):
            return _error(request, "payload_too_large", f"request of {length} bytes exceeds {max_bytes}")
        if not tracing.enabled():
            response: Response = await call_next(request)
            return response
        # one SERVER span per request (engine.wire.tracing), a child of the caller's traceparent; the publish and
        # query spans of the gateway nest under it. Named "<METHOD> <route template>" once routed (semconv http).
        with tracing.span(f"HTTP {request.method}", kind="server", parent=request.headers, attributes={
                "http.request.method": request.method, "url.path": request.url.path}) as sp:
            response = await call_next(request)
            template = getattr(request.scope.get("route"), "path", None)
            if sp is not None and template:
                sp.update_name(f"{request.method} {template}")
                sp.set_attribute("http.route", template)
            tracing.set_attributes(sp, http__response__status_code=response.status_code)
        return response

    # outermost of the app's middleware: a refused request reaches nothing, the body limit included
    app.add_middleware(RequestGuard, policy=Policy.build(keyless=keys.open, bound=bound_host,
                                                          **guard_kwargs(gateway.settings)))

    async def on_error(request: Request, exc: Exception) -> Response:
        if is_bad_data(exc):
            return _error(request, "invalid_request", "a value is out of range or holds a character the database"
                          " cannot store")
        code, message = rpc_error(exc, transient=is_transient)
        if message is None:
            ref = uuid.uuid4().hex[:12]
            log.exception("http request failed", path=request.url.path, ref=ref, exc_info=exc)
            message = f"internal error (ref {ref}); it was logged"
        return _error(request, code, message, status_of(code, exc))

    # the expected errors through Starlette's ExceptionMiddleware (answered, not re-raised); anything else through
    # ServerErrorMiddleware (answered 500 with a reference, and logged with its traceback)
    for expected in (MemengineError, InvalidToken, EventDecodeError, msgspec.DecodeError, UnicodeDecodeError,
                     RecursionError, Exception):
        app.add_exception_handler(expected, on_error)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        detail = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
        return _error(request, "invalid_request", detail or "invalid request")

    @app.exception_handler(HTTPException)
    async def on_http(request: Request, exc: HTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(exc.status_code,
                                                                                           "invalid_request")
        return _error(request, code, str(exc.detail), exc.status_code)

    app.include_router(api.router)
    app.include_router(console.router)
    app.mount("/static", StaticFiles(packages=[("memengine.engine.http", "static")]), name="static")
    _offline_docs(app)

    schema = app.openapi()  # cached on the app: add the msgspec request types the raw-body routes take
    for name, s in msgspec.json.schema_components(
            [RecallRequest], ref_template="#/components/schemas/{name}")[1].items():
        schema.setdefault("components", {}).setdefault("schemas", {})[name] = s
    return app


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the engine's process (``memengine up``) owns SIGINT / SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpServer:
    """The HTTP API and console on ``host:port`` (``port`` 0: a free one; ``.port`` after ``start()``)."""

    def __init__(self, engine: Any, port: int, host: str = "127.0.0.1", *, keys_file: str = "",
                 handlers: Any = None) -> None:
        self.keys = KeyRing.load(keys_file)
        self.gateway = Gateway(engine, handlers)
        self.app = build_app(self.gateway, self.keys, host)
        self.host, self.port = host, port
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> HttpServer:
        """Bind and serve; raises ``OSError`` when the port cannot be bound."""
        config = uvicorn.Config(self.app, host=self.host, port=self.port, lifespan="off", log_level="warning",
                                access_log=False, log_config=None,
                                timeout_graceful_shutdown=2)  # live pages hold SSE streams open
        self._server = _Server(config)
        self._task = asyncio.create_task(self._server.serve(), name="http")
        while not self._server.started:
            if self._task.done():
                with contextlib.suppress(BaseException):
                    self._task.result()  # uvicorn exits (SystemExit) when it cannot bind
                raise OSError(f"the HTTP server could not bind {self.host}:{self.port}")
            await asyncio.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        if self.keys.open:
            log.warning("http: no API keys configured (MEMENGINE_HTTP_KEYS_FILE): serving loopback requests only,"
                        " as tenant 'default'", host=self.host, port=self.port)
        else:
            log.info("http: API keys configured", keys=len(self.keys.entries), host=self.host, port=self.port)
        return self

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        """Stop taking requests and finish those in flight (uvicorn's graceful shutdown)."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, timeout=10)
        self._server = self._task = None
