"""``TurnsWithdrawn`` (the compensating fact behind the OpenAI Agents session's ``pop_item`` / ``clear_session``):
its fold in ``messages`` is pure and deletes only what the fact names, and the event round-trips the codec; the recall
rows fold it too, and the derived read models fold the enricher's ``SourcesWithdrawn`` (issue #26 item 6).

Top-level in tests/unit (cross-cutting, issue #31 item 5): one fact through the codec and every read
model's fold."""

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


# -- the derived side: SourcesWithdrawn (issue #26 item 6) ------------------------------------------------------------

from memengine.events import SourcesWithdrawn, decode_derived  # noqa: E402 - imports of the derived-side section, kept beside its tests
from memengine.projections import episodes, memory_items, summaries, vectors  # noqa: E402 - imports of the derived-side section, kept beside its tests
from memengine.projections.registry import DERIVED_PROJECTIONS, RECALL_PROJECTIONS  # noqa: E402 - imports of the derived-side section, kept beside its tests


def withdrawn(**kw) -> SourcesWithdrawn:  # type: ignore[no-untyped-def]
    return SourcesWithdrawn(**{"event_id": uuid.UUID(int=7), "tenant_id": "a", "thread_id": "b", "occurred_at": T,
                               "source_event_ids": [uuid.UUID(int=9)], "source_seq_range": [1, 12], "model": "rule",
                               "prompt_version": "withdraw-1", **kw})


def test_every_read_model_holding_turns_folds_the_withdrawal() -> None:
    assert [n for n, _ in handlers_for(TurnsWithdrawn, RECALL_PROJECTIONS)] == ["vectors"]
    assert [n for n, _ in handlers_for(SourcesWithdrawn, DERIVED_PROJECTIONS)] == [
        "summaries", "memory_items", "episodes", "derived_events"]


def test_sources_are_marked_and_orphans_retracted_with_the_fact_as_evidence() -> None:
    ev = withdrawn(withdrawn_event_ids=IDS, retracted=["m1"], reason="source turns withdrawn (pop_item)")
    ops = memory_items.on_sources_withdrawn(ev, Position(3, "d"), CFG)
    assert ops == memory_items.on_sources_withdrawn(ev, Position(3, "d"), CFG)  # pure
    mark, retract, link = ops
    assert mark.table == "memory_item_sources" and mark.args == ("a", IDS, ev.event_id)
    assert retract.table == "memory_items" and retract.args[:2] == ("a", ["m1"]) and "'retracted'" in retract.sql
    assert link.args == ("a", "m1", ev.event_id, uuid.UUID(int=9), "retract", "source turns withdrawn (pop_item)")
    # nothing left without evidence: only the marks
    assert [op.table for op in memory_items.on_sources_withdrawn(withdrawn(withdrawn_event_ids=IDS),
                                                                  Position(3, "d"), CFG)] == ["memory_item_sources"]


def test_episodes_and_summary_quoting_the_turns_go() -> None:
    ops = episodes.on_sources_withdrawn(withdrawn(withdrawn_event_ids=IDS), Position(3, "d"), CFG)
    assert len(ops) == 1 and "DELETE FROM episodes" in ops[0].sql and ops[0].args == ("a", "b", IDS)
    assert summaries.on_sources_withdrawn(withdrawn(withdrawn_event_ids=IDS), Position(3, "d"), CFG) == []
    reset = summaries.on_sources_withdrawn(withdrawn(withdrawn_event_ids=IDS, summary_reset=True), Position(3, "d"),
                                           CFG)
    assert [op.table for op in reset] == ["conversation_summaries", "memory_topics"]


def test_recall_rows_withdrawal_is_bounded_by_the_facts_position() -> None:
    [op] = vectors.on_turns_withdrawn(make(event_ids=IDS), Position(12, "s"), CFG)
    assert op.table == "memory_vectors" and op.args == ("a", "b", 12, False, IDS)
    [op] = vectors.on_turns_withdrawn(make(all_before=True), Position(12, "s"), CFG)
    assert op.args == ("a", "b", 12, True, [])


def test_sources_withdrawn_round_trips_and_is_bounded() -> None:
    ev = withdrawn(withdrawn_event_ids=IDS, retracted=["m1"], summary_reset=True)
    assert decode_derived(encode(ev)) == ev
    raw = msgspec.json.decode(encode(ev))
    raw["withdrawn_event_ids"] = [str(uuid.UUID(int=i)) for i in range(1001)]
    with pytest.raises(EventDecodeError):
        decode_derived(msgspec.json.encode(raw))
