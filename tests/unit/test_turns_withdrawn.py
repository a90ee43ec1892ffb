"""``TurnsWithdrawn`` (the compensating fact behind the OpenAI Agents session's ``pop_item`` / ``clear_session``):
its fold in ``messages`` is pure and deletes only what the fact names, and the event round-trips the codec."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
import pytest

from memengine.events import CURRENT_VERSION, FACT_TYPES, EventDecodeError, TurnsWithdrawn, decode, encode
from memengine.projections import messages
from memengine.projections.ops import FoldConfig, Position
from memengine.projections.registry import handlers_for

T = datetime(2026, 1, 1, tzinfo=UTC)
CFG = FoldConfig()
IDS = [uuid.UUID(int=1), uuid.UUID(int=2)]


def make(**kw) -> TurnsWithdrawn:  # type: ignore[no-untyped-def]
    return TurnsWithdrawn(**{"event_id": uuid.UUID(int=9), "tenant_id": "a", "thread_id": "b", "occurred_at": T,
                             **kw})


def test_withdraw_by_ids_deletes_exactly_those_turns_of_the_thread() -> None:
    ops = messages.on_turns_withdrawn(make(event_ids=IDS), Position(12, "s"), CFG)
    assert ops == messages.on_turns_withdrawn(make(event_ids=IDS), Position(12, "s"), CFG)  # pure
    assert len(ops) == 1 and ops[0].table == "messages"
    assert "event_id = ANY" in ops[0].sql and ops[0].args == ("a", "b", IDS)


def test_withdraw_all_before_uses_the_facts_own_position() -> None:
    ops = messages.on_turns_withdrawn(make(all_before=True), Position(12, "s"), CFG)
    assert len(ops) == 1 and "seq < $3" in ops[0].sql and ops[0].args == ("a", "b", 12)
    both = messages.on_turns_withdrawn(make(event_ids=IDS, all_before=True), Position(3, "s"), CFG)
    assert [op.args[2] for op in both] == [IDS, 3]


def test_withdraw_nothing_is_no_op() -> None:
    assert messages.on_turns_withdrawn(make(), Position(1, "s"), CFG) == []


def test_registered_as_fact_with_a_version() -> None:
    assert TurnsWithdrawn in FACT_TYPES and CURRENT_VERSION["TurnsWithdrawn"] == 1
    assert [name for name, _ in handlers_for(TurnsWithdrawn)] == ["messages"]


def test_codec_round_trip_and_bounds() -> None:
    ev = make(event_ids=IDS, all_before=True, reason="pop_item")
    assert decode(encode(ev)) == ev
    raw = msgspec.json.decode(encode(ev))
    raw["event_ids"] = [str(uuid.UUID(int=i)) for i in range(1001)]
    with pytest.raises(EventDecodeError):
        decode(msgspec.json.encode(raw))
