"""The HTTP request guard's rules without a server (issue #26 item 1; the live server's tests are
tests/integration/http/test_http_origin.py): which Host names are the server's own, what is a serialized origin."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.http.guard import Policy, is_loopback_name, parse_host, parse_origin

PORT = 8765


@pytest.mark.parametrize(("name", "own"), [
    ("localhost", True), ("127.0.0.1", True), ("127.8.9.10", True), ("[::1]", True), ("[0:0:0:0:0:0:0:1]", True),
    ("localhost.", False), ("localhost.evil.example", False), ("127.0.0.1.nip.io", False), ("127.1", False),
    ("2130706433", False), ("0x7f.0.0.1", False), ("::1", False), ("[127.0.0.1]", False), ("[::ffff:7f00:1]", False),
    ("0.0.0.0", False), ("[::]", False), ("10.0.0.1", False), ("evil.example", False)])
def test_loopback_names(name: str, own: bool) -> None:
    assert is_loopback_name(name) is own


def test_host_and_origin_parsing() -> None:
    assert parse_host("LocalHost:8765") == ("localhost", 8765)
    assert parse_host("[::1]") == ("[::1]", None)
    for bad in ("", "a b", "a:b", "a:0", "a:70000", "user@a", "a/b", "::1", "[::1"):
        assert parse_host(bad) is None, bad
    assert parse_origin("http://LOCALHOST:8765") == ("http", "localhost", 8765)
    assert parse_origin("https://a.example") == ("https", "a.example", 443)
    for bad in ("null", "", "*", "http://a.example/", "http://u@a.example", "ws://a.example", "a.example",
                "http://a.example:99999", "http://a.example?x", "http://[::1"):
        assert parse_origin(bad) is None, bad


def test_keyless_policy() -> None:
    p = Policy.build(keyless=True, bound="127.0.0.1")
    assert p.host_ok(f"localhost:{PORT}", PORT) and p.host_ok("localhost", PORT)
    assert not p.host_ok(f"localhost:{PORT + 1}", PORT) and not p.host_ok(None, PORT)
    assert p.origin_ok(f"http://127.0.0.1:{PORT}", "http", f"127.0.0.1:{PORT}", PORT)
    assert not p.origin_ok(f"http://127.0.0.1:{PORT + 1}", "http", f"127.0.0.1:{PORT}", PORT)
    assert not p.origin_ok(f"https://127.0.0.1:{PORT}", "http", f"127.0.0.1:{PORT}", PORT)


def test_keyed_policy_and_operator_lists() -> None:
    open_hosts = Policy.build(keyless=False, bound="0.0.0.0")
    assert open_hosts.host_ok("evil.example", PORT)  # with keys and no list: any Host (a rebound page has no key)
    assert not open_hosts.origin_ok("http://evil.example", "http", "evil.example", PORT)  # but never its Origin
    p = Policy.build(keyless=False, bound="10.1.2.3", hosts=["memory.lan", " proxy.lan:80 ", ""],
                     origins=["https://memory.example.com"])
    assert p.host_ok("memory.lan:1234", PORT) and p.host_ok("proxy.lan:80", PORT)
    assert p.host_ok(f"10.1.2.3:{PORT}", PORT)
    assert not p.host_ok("proxy.lan:81", PORT) and not p.host_ok("evil.example", PORT)
    assert p.origin_ok("https://memory.example.com", "http", "memory.example.com", PORT)
    assert p.origin_ok("http://memory.lan", "http", "memory.lan", PORT)  # the Host's port (80, a proxy)
    assert not p.origin_ok("http://memory.lan:1234", "http", "memory.lan", PORT)  # another port of it
    with pytest.raises(ValueError, match="ALLOWED_ORIGINS"):
        Policy.build(keyless=False, bound="", origins=["memory.example.com"])


@given(st.from_regex(r"[a-z0-9-]{1,12}(\.[a-z0-9-]{1,12}){0,3}\.?", fullmatch=True), st.none() | st.integers(1, 65535))
def test_no_registrable_name_is_own(name: str, port: int | None) -> None:
    """A DNS name an attacker could register (anything but ``localhost`` and IP literals) is never the keyless
    server's own Host or Origin."""
    p = Policy.build(keyless=True, bound="127.0.0.1")
    literal = name == "localhost" or name.replace(".", "").isdigit()
    host = name if port is None else f"{name}:{port}"
    if not literal:
        assert not p.host_ok(host, PORT)
        assert not p.origin_ok(f"http://{name}:{PORT}", "http", host, PORT)
