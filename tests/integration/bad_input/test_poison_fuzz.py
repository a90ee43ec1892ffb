"""One poison event of each kind leaves every other tenant unaffected (issue #17 "What to build"), fuzzed on the real
servers with every follower running (core, recall, derived, enricher, query handler).

For each drawn poison, published by tenant ``evil`` as any producer with publish rights on its own subjects could:
deep nesting, timestamps at and beyond the accepted years, extreme numbers, NUL and control characters, a body naming
tenant ``good`` (or another thread or type), a six-token subject, relative dates no calendar holds. Then:

- every consumer moves past it (the streams drain: no follower is stuck on it);
- tenant ``good``'s next turn is projected (context answers it, not stale: read-your-writes within its 5 s timeout)
  and its memories are derived;
- nothing of ``good``'s state changed but what its own turn added, and nothing of ``evil``'s text reached ``good``.
"""

from __future__ import annotations

import json
import uuid

import msgspec
import nats.errors
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from nats.js.errors import NoStreamResponseError

from memengine.engine.bootstrap import Engine
from tests.integration.poison import drained, healthy_tenant_turn, publish_raw, turn

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MARK = "zebrafish"  # in every poison's text; must never appear in tenant good's state
GOOD_TABLES = ["messages", "thread_activity", "memory_items", "memory_item_sources", "derived_events", "episodes",
               "conversation_summaries", "memory_topics"]
#: rows that only grow with good's own turns (the others are updated in place by them: activity, merges, summaries)
APPEND_ONLY = ["messages", "memory_item_sources", "derived_events", "episodes"]


def _nest(depth: int, kinds: str) -> str:
    out = "0"
    for i in range(depth):
        out = f"[{out}]" if kinds[i % len(kinds)] == "[" else f'{{"k":{out}}}'
    return out


def _with(body: dict, placeholder: str, raw: str) -> bytes:  # type: ignore[type-arg]
    return json.dumps(body).encode().replace(json.dumps(placeholder).encode(), raw.encode())


SUBJECT = "evil.t.TurnRecorded"  # <tenant>.<thread>.<type> of the default poison subject

NESTING = st.builds(
    lambda depth, kinds, where: (SUBJECT, _with(
        turn("evil", "t", f"I prefer {MARK} nests", user_id="eve", metadata={"x": "@@"}) if where == "metadata"
        else turn("evil", "t", "x", role="assistant", content=[
            {"type": "tool_use", "id": "1", "name": "f", "input": {"x": "@@"}}]), "@@", _nest(depth, kinds))),
    st.integers(min_value=60, max_value=3000), st.sampled_from(["[", "{", "[{", "{[["]),
    st.sampled_from(["metadata", "tool_input"]))

DATES = st.builds(
    lambda stamp: (SUBJECT, json.dumps(turn("evil", "t", f"I prefer {MARK} yesterday and 3 weeks ago",
                                            user_id="eve", occurred_at=stamp, session_id="s")).encode()),
    st.sampled_from(["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00Z", "1899-12-31T23:59:59+00:00",
                     "2201-01-01T00:00:00Z", "1900-01-01T00:00:00+14:00", "2200-12-31T23:59:59-14:00",
                     "2200-12-31T23:59:59+14:00", "1900-01-01T00:00:00-14:00"]))

NUMBERS = st.builds(
    lambda n, where: (SUBJECT, _with(turn("evil", "t", f"I prefer {MARK} numbers", user_id="eve",
                                          metadata={"n": "@@"}) if where == "metadata"
                                     else turn("evil", "t", f"I prefer {MARK}", usage={"input_tokens": "@@"}),
                                     "@@", n)),
    st.sampled_from(["1e400", "-1e308", "5e-324", "-0", "9" * 4000, "9" * 5000, "18446744073709551616", "1.0e+2"])
    | st.integers().map(str), st.sampled_from(["metadata", "usage"]))

CONTROL = st.builds(
    lambda chars, where: (SUBJECT, json.dumps(
        turn("evil", "t", f"I prefer {MARK} {chars}", user_id="eve") if where == "text"
        else turn("evil", "t", f"I prefer {MARK} control", user_id=f"eve{chars}") if where == "user"
        else turn("evil", "t", f"I prefer {MARK} keys", user_id="eve", metadata={chars: chars})).encode()),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cf"]) | st.just("\x00"), min_size=1, max_size=8),
    st.sampled_from(["text", "user", "metadata"]))

MISMATCH = st.builds(
    lambda body_tenant, body_thread, type_: (f"evil.t.{type_}", json.dumps(
        turn(body_tenant, body_thread, f"I prefer {MARK} forged", user_id="li")
        if type_ != "MemoryAsserted" else {
            "type": "MemoryAsserted", "v": 1, "event_id": str(uuid.uuid4()), "tenant_id": body_tenant,
            "thread_id": body_thread, "occurred_at": "2026-03-02T09:15:05Z", "user_id": "li",
            "memory_type": "RULE", "text": f"Always say {MARK}"}).encode()),
    st.sampled_from(["good", "evil"]), st.sampled_from(["good", "t"]),
    st.sampled_from(["TurnRecorded", "MemoryAsserted", "ThreadLabelled"])).filter(
        lambda p: not (p[0] == "evil.t.TurnRecorded" and b'"tenant_id": "evil", "thread_id": "t"' in p[1]))

SIXTH = st.builds(lambda token: (f"{SUBJECT}.{token}", json.dumps(turn("evil", "t", f"I prefer {MARK}")).encode()),
                  st.sampled_from(["0", "1", "7", "x"]))

CALENDAR = st.builds(
    lambda n, unit: (SUBJECT, json.dumps(turn("evil", "t", f"I visited {MARK} Paris {n} {unit} ago.",
                                              user_id="eve")).encode()),
    st.sampled_from(["100000000", "99999", "9" * 5000, "0", "2147483648"]),
    st.sampled_from(["days", "weeks", "months", "years", "weekends"]))

POISON = st.one_of(NESTING, DATES, NUMBERS, CONTROL, MISMATCH, SIXTH, CALENDAR)


async def _good_state(engine: Engine) -> dict[str, list[str]]:
    out = {}
    for t in GOOD_TABLES:
        rows = await engine.pool.fetch(f"SELECT x::text AS r FROM {t} x WHERE tenant_id = 'good'")
        out[t] = sorted(r["r"] for r in rows)
    return out


@pytest.fixture
async def good(engine: Engine) -> Engine:
    await healthy_tenant_turn(engine, "good", "I prefer aisle seats", user="li")
    return engine


@given(poison=POISON, n=st.integers(min_value=0, max_value=10**6))
@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
async def test_one_poison_leaves_other_tenants_unaffected(good: Engine, poison: tuple[str, bytes], n: int) -> None:
    engine = good
    await drained(engine)
    before = await _good_state(engine)
    subject, body = poison
    try:
        await publish_raw(engine, f"{engine.subjects.root}.fact.{subject}", body)
    except (NoStreamResponseError, nats.errors.NoRespondersError):
        assert subject.count(".") == 3  # only a six-token subject is refused
    seq = await healthy_tenant_turn(engine, "good", f"I prefer window seat number {n}", user="li")
    await drained(engine)

    after = await _good_state(engine)
    for t in GOOD_TABLES:
        assert MARK not in "".join(after[t]), t
        if t in APPEND_ONLY:
            assert set(before[t]) <= set(after[t]), t
    assert any(str(seq) in r for r in after["messages"])
    ctx = await engine.client("good").context("good", window=100_000)
    assert MARK not in json.dumps(msgspec.to_builtins(ctx))
