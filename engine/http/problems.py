"""Errors as RFC 9457 problem details (``application/problem+json``), with the wire error code of the RPCs
(``engine.wire.errors.ErrorCode``) as the ``code`` member, so an HTTP client branches on the same codes as a NATS
client.

Status per code: ``invalid_request`` / ``invalid_token`` / ``invalid_event`` 422, ``payload_too_large`` 413,
``unknown_thread`` / ``unknown_memory`` / ``unknown_user`` / ``not_found`` 404 (another tenant's ids too: never 403,
which would say they exist), ``unauthorized`` 401 (no or wrong API key; HTTP only), ``forbidden`` 403, ``rate_limited``
429, ``busy`` 409, ``unavailable`` 503, ``internal`` 500; HTTP only (``engine.http.guard``): ``misdirected_request`` 421
(a Host the server does not answer for), ``unsupported_media_type`` 415 (a ``/v1`` body that is not JSON).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from memengine.engine.wire.errors import (
    Busy,
    Forbidden,
    InvalidInput,
    MemengineError,
    NotFound,
    RateLimited,
    Unavailable,
)

MEDIA_TYPE = "application/problem+json"

STATUS: dict[str, int] = {
    "invalid_request": 422, "invalid_token": 422, "invalid_event": 422, "payload_too_large": 413,
    "unknown_thread": 404, "unknown_memory": 404, "unknown_user": 404, "not_found": 404, "unauthorized": 401,
    "forbidden": 403, "method_not_allowed": 405, "unsupported_media_type": 415, "misdirected_request": 421,
    "rate_limited": 429, "busy": 409, "unavailable": 503, "internal": 500,
}

TITLES: dict[int, str] = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type", 421: "Misdirected Request",
    422: "Unprocessable Content", 429: "Too Many Requests",
    500: "Internal Server Error", 503: "Service Unavailable",
}


#: The status of an error whose code is not in ``STATUS`` (an operation's own code, e.g. the dead letters'
#: ``invalid_state``), by its family (``engine.wire.errors``), most specific first.
FAMILY_STATUS: tuple[tuple[type[MemengineError], int], ...] = (
    (InvalidInput, 422), (NotFound, 404), (Forbidden, 403), (RateLimited, 429), (Busy, 409), (Unavailable, 503))


def status_of(code: str, exc: BaseException | None = None) -> int:
    """The HTTP status of a wire error code; for a code not listed, of ``exc``'s family (``FAMILY_STATUS``: a
    caller's mistake stays 4xx whatever its code, issue #26), else 500."""
    if code in STATUS:
        return STATUS[code]
    return next((status for family, status in FAMILY_STATUS if isinstance(exc, family)), 500)


def problem_body(code: str, detail: str, status: int | None = None, **extra: Any) -> dict[str, Any]:
    """The problem object: ``type`` (a URN naming the code), ``title``, ``status``, ``detail``, ``code``."""
    status = status or status_of(code)
    return {"type": f"urn:memengine:error:{code}", "title": TITLES.get(status, "Error"), "status": status,
            "detail": detail, "code": code, **extra}


def problem(code: str, detail: str, status: int | None = None, **extra: Any) -> JSONResponse:
    """A ``JSONResponse`` of ``problem_body`` with the problem+json media type (and ``WWW-Authenticate`` on 401)."""
    body = problem_body(code, detail, status, **extra)
    headers = {"WWW-Authenticate": 'Bearer realm="memengine"'} if body["status"] == 401 else None
    return JSONResponse(body, status_code=body["status"], media_type=MEDIA_TYPE, headers=headers)
