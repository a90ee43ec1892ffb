"""API keys of the HTTP API (issue #12): the keys file, stored hashes, the loopback default; the HTTP status of
every wire error code; the HTTP settings."""

from __future__ import annotations

import hashlib
import typing
from pathlib import Path

import pytest

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.http.auth import (
    Caller,
    KeyRing,
    KeysFileError,
    Unauthorized,
    authenticate,
    hash_key,
    is_loopback,
    presented_key,
)
from memengine.engine.http.problems import STATUS, problem_body
from memengine.engine.wire.errors import ErrorCode


def _ring(tmp_path: Path, text: str) -> KeyRing:
    p = tmp_path / "keys"
    p.write_text(text)
    return KeyRing.load(str(p))


def test_keys_file_binds_hashed_keys_to_tenants(tmp_path: Path) -> None:
    ring = _ring(tmp_path, f"# comment\n\nacme {hash_key('k1')}  # trailing\nops {hash_key('k2').upper()} admin\n")
    assert hash_key("k1") == hashlib.sha256(b"k1").hexdigest()
    assert ring.lookup("k1") == Caller(tenant="acme", admin=False)
    assert ring.lookup("k2") == Caller(tenant="ops", admin=True)
    assert ring.lookup("k3") is None and ring.lookup("") is None
    assert not ring.open and KeyRing.load("").open


@pytest.mark.parametrize("line", ["acme", "acme deadbeef", f"acme {hash_key('k')} root",
                                  f"a.b {hash_key('k')}", f"acme {'z' * 64}"])
def test_a_malformed_line_is_refused_with_its_number(tmp_path: Path, line: str) -> None:
    with pytest.raises(KeysFileError, match=r"keys:2: expected"):
        _ring(tmp_path, f"ok {hash_key('x')}\n{line}\n")


def test_an_unreadable_keys_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KeysFileError, match="cannot be read"):
        KeyRing.load(str(tmp_path / "missing"))


def test_without_keys_only_loopback_is_served_as_default() -> None:
    ring = KeyRing([])
    assert authenticate(ring, "127.0.0.1", None, None, None) == Caller("default", True)
    assert authenticate(ring, "::1", None, None, None) == Caller("default", True)
    for peer in ("10.0.0.5", "192.168.1.2", None, "not an address"):
        with pytest.raises(Unauthorized):
            authenticate(ring, peer, None, None, None)
    assert is_loopback("127.8.0.1") and not is_loopback("0.0.0.0")


def test_with_keys_a_key_is_needed_even_on_loopback() -> None:
    ring = KeyRing([(hash_key("k1"), Caller("acme", False))])
    with pytest.raises(Unauthorized):
        authenticate(ring, "127.0.0.1", None, None, None)
    assert authenticate(ring, "10.0.0.1", "Bearer k1", None, None).tenant == "acme"
    assert authenticate(ring, "10.0.0.1", None, "k1", None).tenant == "acme"
    assert authenticate(ring, "10.0.0.1", None, None, "k1").tenant == "acme"
    assert presented_key("bearer k1", "k2", "k3") == "k1" and presented_key("Basic x", None, "k3") == "k3"


def test_every_wire_error_code_has_an_http_status() -> None:
    for code in typing.get_args(ErrorCode):
        assert code in STATUS, code
    assert STATUS["unknown_thread"] == STATUS["unknown_memory"] == 404  # never 403 for another tenant's ids
    body = problem_body("rate_limited", "slow down")
    assert body == {"type": "urn:memengine:error:rate_limited", "title": "Too Many Requests", "status": 429,
                    "detail": "slow down", "code": "rate_limited"}


def test_http_settings_from_the_environment(tmp_path: Path) -> None:
    s = Settings.from_env(env={"MEMENGINE_HTTP_PORT": "8765", "MEMENGINE_HTTP_HOST": "0.0.0.0",
                               "MEMENGINE_HTTP_KEYS_FILE": "/run/secrets/keys"}, home=str(tmp_path))
    assert (s.http_port, s.http_host, s.http_keys_file) == (8765, "0.0.0.0", "/run/secrets/keys")
    assert Settings.from_env(env={}, home=str(tmp_path)).http_port is None  # off by default
    with pytest.raises(SettingsError, match="MEMENGINE_HTTP_PORT"):
        Settings.from_env(env={"MEMENGINE_HTTP_PORT": "70000"}, home=str(tmp_path))
