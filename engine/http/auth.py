"""API keys bound to tenants (issue #12 item 1 "Auth").

The keys file (``MEMENGINE_HTTP_KEYS_FILE``) holds one key per line, stored hashed: ``<tenant> <sha256 hex of the
key> [admin | user=<id>]`` (``#`` starts a comment). Make a line with ``printf %s "$KEY" | sha256sum``. A request
presents its key as ``Authorization: Bearer <key>``, ``X-API-Key: <key>`` or (the console, after ``/login``) the
``memengine_key`` cookie; it then sees only its key's tenant. ``admin`` keys may also read the engine-wide
operations and dead letters (they are not per tenant). A key with ``user=<id>`` (issue #26 item 4; the id
percent-encoded, e.g. ``user=Maya%20Li``) is bound to that user as well: its requests carry the user as their
``bound_user`` and are answered in that user's scope only (``engine.read.scope``); such a key cannot be ``admin``,
and the console (an operator tool) refuses it.

With no keys file the server accepts requests from loopback addresses only, as tenant ``default`` with admin
rights, and says so at start-up (the embedded default, like the metrics endpoint's loopback bind).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from memengine.engine.wire.errors import InvalidInput
from memengine.events import InvalidToken, check_token

COOKIE = "memengine_key"


@dataclass(frozen=True)
class Caller:
    """Who a request is: its ``tenant`` (the scope of everything it reads and writes), whether it is ``admin``, and
    the ``user`` its key is bound to (``None``: the tenant's operator, every user)."""

    tenant: str
    admin: bool
    user: str | None = None


class KeysFileError(InvalidInput, ValueError):
    """The keys file cannot be read or has a malformed line (raised at start-up, naming the line)."""


def hash_key(key: str) -> str:
    """The stored form of an API key: the hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(key.encode()).hexdigest()


class KeyRing:
    """The configured keys: ``[(sha256 hex, Caller)]``. Empty = loopback-only ``default`` (module docstring)."""

    def __init__(self, entries: list[tuple[str, Caller]]) -> None:
        self.entries = entries

    @classmethod
    def load(cls, path: str) -> KeyRing:
        """Read ``path`` (``""``: no keys). Raises ``KeysFileError`` for an unreadable file or a bad line."""
        if not path:
            return cls([])
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise KeysFileError(f"MEMENGINE_HTTP_KEYS_FILE={path!r} cannot be read: {exc.strerror}") from None
        entries: list[tuple[str, Caller]] = []
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].split()
            if not line:
                continue
            ok = len(line) in (2, 3) and len(line[1]) == 64 and all(c in "0123456789abcdef" for c in line[1].lower())
            user = _user_of(line[2]) if ok and len(line) == 3 and line[2].startswith("user=") else None
            if ok and len(line) == 3 and user is None:
                ok = line[2] == "admin"
            try:
                if ok:
                    check_token("tenant", line[0])
            except InvalidToken:
                ok = False
            if not ok:
                raise KeysFileError(f"{path}:{n}: expected `<tenant> <sha256 hex of the key> [admin | user=<id>]`"
                                    " (the user id percent-encoded: 1-1024 characters, no NUL)")
            entries.append((line[1].lower(), Caller(tenant=line[0], admin=len(line) == 3 and user is None,
                                                     user=user)))
        return cls(entries)

    @property
    def open(self) -> bool:
        """No keys configured: loopback requests are tenant ``default``."""
        return not self.entries

    def lookup(self, key: str) -> Caller | None:
        """The caller of ``key``, or ``None``. Compares with every stored hash in constant time (no early exit), so
        timing says nothing about which prefix matched."""
        digest = hash_key(key)
        found: Caller | None = None
        for stored, caller in self.entries:
            if hmac.compare_digest(stored, digest):
                found = caller
        return found


def _user_of(field: str) -> str | None:
    """The user of a keys-file field ``user=<id>`` (percent-decoded), or ``None`` when it is not a valid one:
    1-1024 characters, no NUL, valid UTF-8 (``MemoryClient``'s and the requests' rule)."""
    try:
        user = unquote(field[len("user="):], errors="strict")
    except UnicodeDecodeError:
        return None
    return user if 0 < len(user) <= 1024 and "\x00" not in user else None


def is_loopback(host: str | None) -> bool:
    """``host`` (a peer address) is 127.0.0.0/8 or ::1."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def presented_key(authorization: str | None, api_key: str | None, cookie: str | None) -> str | None:
    """The key a request presents: ``Authorization: Bearer``, then ``X-API-Key``, then the console cookie."""
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return api_key or cookie or None


class Unauthorized(InvalidInput):
    """No API key, or one that is not configured (HTTP 401, code ``unauthorized``; HTTP only, no RPC answers it)."""

    code = "unauthorized"


def authenticate(keys: KeyRing, peer: str | None, authorization: str | None, api_key: str | None,
                 cookie: str | None) -> Caller:
    """The ``Caller`` of a request (module docstring). Raises ``Unauthorized``."""
    if keys.open:
        if is_loopback(peer):
            return Caller(tenant="default", admin=True)
        raise Unauthorized("no API keys are configured (MEMENGINE_HTTP_KEYS_FILE): only loopback requests are served")
    key = presented_key(authorization, api_key, cookie)
    caller = keys.lookup(key) if key else None
    if caller is None:
        raise Unauthorized("a valid API key is needed: Authorization: Bearer <key> or X-API-Key")
    return caller
