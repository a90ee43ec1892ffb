"""Where a request may come from, and what its URL may hold: one ASGI middleware around the whole app (``/v1``, the
console, ``/docs``, ``/openapi.json``, ``/static``, the live-page SSE stream alike), so no route can forget it
(issue #26 items 1 and 3).

DNS rebinding: a page on ``evil.example`` whose name re-resolves to 127.0.0.1 talks to the loopback server as its own
origin, so its requests carry ``Host: evil.example`` and an ``Origin`` equal to it (comparing the two proves nothing).
Only the ``Host`` tells them apart: the server names its own hosts and refuses the rest. Cross-site requests (CSRF):
a browser says where a request comes from (``Origin``, ``Sec-Fetch-Site``); a form or ``text/plain`` POST needs no
preflight, so every state-changing route checks it. The checks, in order (the model is the MCP SDK's transport
security for streamable HTTP: 421 for a bad Host, 403 for a bad Origin):

1. ``Host`` (421 ``misdirected_request``). With no keys file: a loopback name (``localhost``, or an IP literal that
   is loopback: ``127.0.0.1``, ``[::1]``), with the server's port or none, or the bound host, or one of
   ``MEMENGINE_HTTP_ALLOWED_HOSTS``; nothing else, on every route. With keys: the same list when
   ``MEMENGINE_HTTP_ALLOWED_HOSTS`` is set, any Host otherwise (a rebound page carries no key: the cookie belongs
   to the real name, and browsers send no ``Authorization`` on their own).
2. ``Origin`` (403 ``forbidden``), when present: one of the server's own origins (the request's scheme with a name
   of step 1's list, not "any Host", and the server's port or the Host's) or of ``MEMENGINE_HTTP_ALLOWED_ORIGINS``;
   ``null`` (a sandboxed frame, a ``data:`` page) is foreign. Checked on every route without keys, on
   state-changing routes (any method but GET, HEAD, OPTIONS) with keys.
3. Fetch Metadata (403): a state-changing request must not say ``Sec-Fetch-Site: cross-site`` or ``same-site``
   (another port of localhost is same-site); a read saying so is refused too unless it is a top-level navigation
   (``Sec-Fetch-Mode: navigate``, ``Sec-Fetch-Dest: document``: a link the user follows), so another site can
   neither frame the console nor load its pages as scripts or images (the resource isolation policy of
   web.dev/articles/fetch-metadata).
4. A state-changing ``/v1`` request with a body must say it is JSON when it names a type (415
   ``unsupported_media_type``): a form or ``text/plain`` body is what a cross-site page can send without preflight.
5. The path and every query parameter name and value, decoded, hold no control character but TAB, LF and CR (422
   ``invalid_request``): PostgreSQL stores no NUL, and no id or filter of the API holds the others.

Requests without ``Origin`` / ``Sec-Fetch-*`` (curl, the SDKs, the TypeScript client) pass steps 2 and 3.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from memengine.engine.http.problems import problem

#: Methods that change nothing (RFC 9110 §9.2.1); every other method is checked as state-changing.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: ``Sec-Fetch-Site`` values of a request a browser made from the server's own pages or the user's own action.
OWN_SITES = frozenset({"same-origin", "none"})
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/@?#]+)(?::(\d{1,5}))?")
#: C0 controls and DEL except TAB, LF, CR (step 5 of the module docstring).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DEFAULT_PORT = {"http": 80, "https": 443}
_WILDCARD = frozenset({"", "0.0.0.0", "::", "[::]"})


def parse_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` header value (``name``: lower-cased, an IPv6 literal in brackets; ``port``:
    ``None`` when absent), or ``None`` when it is not ``host[:port]`` (RFC 9110 §7.2)."""
    m = _HOST.fullmatch(value.strip())
    if m is None:
        return None
    port = int(m.group(2)) if m.group(2) else None
    if port is not None and not 0 < port < 65536:
        return None
    return m.group(1).lower(), port


def parse_origin(value: str) -> tuple[str, str, int] | None:
    """``(scheme, name, port)`` of a serialized origin (``scheme://host[:port]``, RFC 6454 §6.1; the port defaulted
    by scheme, the name as ``parse_host`` gives it), or ``None`` for anything else (``null`` included)."""
    try:
        parts = urlsplit(value.strip())
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORT or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
            return None
        host = parse_host(parts.netloc)
    except ValueError:
        return None
    if host is None:
        return None
    return scheme, host[0], host[1] if host[1] is not None else _DEFAULT_PORT[scheme]


def is_loopback_name(name: str) -> bool:
    """``localhost``, or an IP literal (IPv6 in brackets) of a loopback address: names no one else can point at the
    server. ``localhost.`` and ``localhost.evil.example`` are other names; ``127.1`` is no literal."""
    if name == "localhost":
        return True
    literal = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if literal is not name and ":" not in literal:
        return False  # only IPv6 literals take brackets
    if literal is name and ":" in literal:
        return False  # an IPv6 literal without brackets is no Host
    try:
        return ipaddress.ip_address(literal).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Policy:
    """Who the server is (module docstring): ``keyless`` (no keys file), ``bound`` (the ``host`` it listens on),
    ``hosts`` (``MEMENGINE_HTTP_ALLOWED_HOSTS``: ``(name, port or None for any)``) and ``origins``
    (``MEMENGINE_HTTP_ALLOWED_ORIGINS``: ``(scheme, name, port)``)."""

    keyless: bool
    bound: str
    hosts: frozenset[tuple[str, int | None]]
    origins: frozenset[tuple[str, str, int]]

    @classmethod
    def build(cls, *, keyless: bool, bound: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> Policy:
        """From the settings' comma-separated lists (blanks ignored). Raises ``ValueError`` naming a malformed
        entry (``Settings.validate`` refuses them first)."""
        parsed_hosts, parsed_origins = set(), set()
        for h in (x.strip() for x in hosts if x.strip()):
            ph = parse_host(h)
            if ph is None:
                raise ValueError(f"MEMENGINE_HTTP_ALLOWED_HOSTS: {h!r} is not host[:port]")
            parsed_hosts.add(ph)
        for o in (x.strip() for x in origins if x.strip()):
            po = parse_origin(o)
            if po is None:
                raise ValueError(f"MEMENGINE_HTTP_ALLOWED_ORIGINS: {o!r} is not scheme://host[:port]")
            parsed_origins.add(po)
        b = bound.strip().lower()
        if ":" in b and not b.startswith("["):
            b = f"[{b}]"
        return cls(keyless=keyless, bound="" if b in _WILDCARD else b, hosts=frozenset(parsed_hosts),
                   origins=frozenset(parsed_origins))

    def own_name(self, name: str, port: int | None, server_port: int | None) -> bool:
        """``name`` with ``port`` (``None``: not given) is one of the server's own hosts (module docstring, step 1)."""
        if (name, None) in self.hosts or (port is not None and (name, port) in self.hosts):
            return True
        if port is not None and port != server_port:
            return False
        return is_loopback_name(name) or (bool(self.bound) and name == self.bound)

    def host_ok(self, host: str | None, server_port: int | None) -> bool:
        """Step 1: the ``Host`` header value is accepted."""
        if not self.keyless and not self.hosts:
            return True
        parsed = parse_host(host) if host else None
        return parsed is not None and self.own_name(parsed[0], parsed[1], server_port)

    def origin_ok(self, origin: str, scheme: str, host: str | None, server_port: int | None) -> bool:
        """Step 2: ``origin`` is the server's own or allowed (``scheme``: the request's; ``host``: its ``Host``)."""
        parsed = parse_origin(origin)
        if parsed is None:
            return False
        if parsed in self.origins:
            return True
        o_scheme, name, port = parsed
        if o_scheme != scheme:
            return False
        # the port of an own origin is the server's, or the Host's (a proxy in front on another port); an allowed
        # host named without a port does not make every port of it an own origin
        h = parse_host(host) if host else None
        via_host = (h[1] if h[1] is not None else _DEFAULT_PORT.get(scheme)) if h else None
        if port not in (server_port, via_host):
            return False
        return ((name, None) in self.hosts or (name, port) in self.hosts or is_loopback_name(name)
                or (bool(self.bound) and name == self.bound))

    def refusal(self, scope: Scope) -> tuple[str, str, int] | None:
        """``(code, detail, status)`` of the first check of the module docstring ``scope`` fails, or ``None``."""
        headers = Headers(scope=scope)
        server = scope.get("server")
        server_port = server[1] if server else None
        host = headers.get("host")
        if not self.host_ok(host, server_port):
            return ("misdirected_request", f"this server does not answer for Host {host!r}: it serves its own"
                    " loopback names" + (" and MEMENGINE_HTTP_ALLOWED_HOSTS" if self.hosts else
                                         " (set MEMENGINE_HTTP_ALLOWED_HOSTS for others)"), 421)
        method = scope.get("method", "GET")
        changes = method not in SAFE_METHODS
        origin = headers.get("origin")
        if origin is not None and (changes or self.keyless) and not self.origin_ok(
                origin, scope.get("scheme", "http"), host, server_port):
            return ("forbidden", f"requests from origin {origin!r} are refused: same-origin only (set"
                    " MEMENGINE_HTTP_ALLOWED_ORIGINS to allow another)", 403)
        site = headers.get("sec-fetch-site")
        if site is not None and site not in OWN_SITES and (changes or not (
                method in ("GET", "HEAD") and headers.get("sec-fetch-mode") == "navigate"
                and headers.get("sec-fetch-dest") == "document")):
            return "forbidden", f"a {site} request is refused: same-origin only", 403
        path: str = scope.get("path", "")
        if changes and path.startswith("/v1/") and _has_body(headers) and not _is_json(headers.get("content-type")):
            return ("unsupported_media_type", f"the API takes application/json bodies, not"
                    f" {headers.get('content-type')!r}", 415)
        if _CONTROL.search(path):
            return "invalid_request", "the path holds a control character", 422
        query = scope.get("query_string", b"").decode("latin-1")
        if query:
            for name, value in parse_qsl(query, keep_blank_values=True):
                if _CONTROL.search(name) or _CONTROL.search(value):
                    return "invalid_request", f"query parameter {name!r} holds a control character", 422
        return None


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() not in ("", "0"))


def _is_json(content_type: str | None) -> bool:
    """No type (a non-browser client) or ``application/json`` / ``application/*+json`` (RFC 6839)."""
    if content_type is None:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    """ASGI middleware: answers ``Policy.refusal`` as problem+json before the app sees the request; HTTP scopes
    only (lifespan and anything else pass)."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.policy.refusal(scope)
            if refused is not None:
                code, detail, status = refused
                await problem(code, detail, status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def guard_kwargs(settings: Any) -> dict[str, list[str]]:
    """``hosts`` and ``origins`` of ``Policy.build`` from ``Settings`` (comma-separated lists)."""
    return {"hosts": settings.http_allowed_hosts.split(","), "origins": settings.http_allowed_origins.split(",")}
