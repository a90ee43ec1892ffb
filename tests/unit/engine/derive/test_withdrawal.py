"""The enricher does not mine a turn that a later fact of the same batch withdraws (issue #26 item 6): the rule of
``engine.derive.withdrawal.is_withdrawn`` is the rule of the read models (``messages``, recall rows): a withdrawal
reaches the turns of its own thread recorded before it, named by id or all of them (``all_before``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.derive.withdrawal import is_withdrawn, withdrawn_ahead
from memengine.events import TextBlock, TurnRecorded, TurnsWithdrawn

T = datetime(2026, 1, 1, tzinfo=UTC)


def _turn(i: int, thread: str) -> TurnRecorded:
    return TurnRecorded(event_id=uuid.UUID(int=i), tenant_id="a", thread_id=thread, occurred_at=T, role="user",
                        content=[TextBlock(text="x")])


BATCH = st.lists(st.one_of(
    st.tuples(st.just("turn"), st.integers(1, 8), st.sampled_from(["t", "u"])),
    st.tuples(st.just("withdraw"), st.sets(st.integers(1, 8), max_size=3), st.sampled_from(["t", "u"]),
              st.booleans())), max_size=12)


@given(batch=BATCH)
def test_a_turn_is_withdrawn_ahead_exactly_when_a_later_fact_of_its_thread_reaches_it(batch: list) -> None:  # type: ignore[type-arg]
    facts = []
    for seq, item in enumerate(batch, start=1):
        if item[0] == "turn":
            facts.append((seq, None, _turn(item[1], item[2])))
        else:
            _, ids, thread, clear = item
            facts.append((seq, None, TurnsWithdrawn(event_id=uuid.UUID(int=100 + seq), tenant_id="a",
                                                    thread_id=thread, occurred_at=T, all_before=clear,
                                                    event_ids=[uuid.UUID(int=i) for i in sorted(ids)])))
    ahead = withdrawn_ahead(facts)
    for seq, _, ev in facts:
        if isinstance(ev, TurnRecorded):
            expected = any(isinstance(w, TurnsWithdrawn) and s > seq and w.thread_id == ev.thread_id
                           and (w.all_before or ev.event_id in w.event_ids) for s, _, w in facts)
            assert is_withdrawn(seq, ev, ahead) == expected
