"""The MCP retry rule (issue #26 item 7, ``engine.integrations.mcp_writes``) as a property over call sequences: a
call is the same write as an earlier one exactly when it carries that call's key with the same arguments, or, with
no key, when it repeats the previous unkeyed call to the same scope in the same session within the window with no
other write to that scope in between."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.integrations.mcp_writes import RETRY_WINDOW, WriteMemory, fingerprint
from memengine.engine.wire.errors import InvalidInput

calls = st.lists(st.tuples(
    st.sampled_from(["s1", "s2"]),  # session
    st.sampled_from(["turn:a", "turn:b"]),  # scope
    st.sampled_from(["yes", "no"]),  # the arguments
    st.one_of(st.none(), st.sampled_from(["k1", "k2", "k3"])),  # idempotency key
    st.floats(min_value=0, max_value=2 * RETRY_WINDOW),  # seconds since the previous call
), max_size=30)


@given(calls)
def test_a_call_is_the_same_write_only_under_the_rule(seq: list[tuple[str, str, str, str | None, float]]) -> None:
    now = [0.0]
    mem = WriteMemory("acme", clock=lambda: now[0])
    sessions: dict[str, Any] = {"s1": object(), "s2": type("Connection", (), {})()}  # no weak reference; one
    keyed: dict[str, tuple[str, Any]] = {}  # key -> (text, event id) of its first call
    last: dict[tuple[str, str], tuple[str, str | None, float, Any]] = {}  # (session, scope) -> previous call
    for session, scope, text, key, gap in seq:
        now[0] += gap
        if key is not None and key in keyed and keyed[key][0] != text:
            with pytest.raises(InvalidInput):
                mem.identity(sessions[session], scope, fingerprint(text), key)
            continue  # refused: nothing published, nothing remembered
        event_id, _at = mem.identity(sessions[session], scope, fingerprint(text), key)
        prev = last.get((session, scope))
        if key is not None:
            if key in keyed:
                assert event_id == keyed[key][1]
            keyed.setdefault(key, (text, event_id))
        elif prev is not None and prev[1] is None and prev[0] == text and now[0] - prev[2] <= RETRY_WINDOW:
            assert event_id == prev[3]  # an immediate identical retry
        else:  # a new write: an id no earlier call had
            assert all(event_id != p[3] for p in last.values())
            assert all(event_id != k[1] for k in keyed.values())
        last[(session, scope)] = (text, key, now[0], event_id)
