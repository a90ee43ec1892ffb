"""Old event versions in the log are upcast before the typed decode and replay into today's read models
(events/upcasters.py; pyeventsourcing's upcast_v1_v2)."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from memengine.engine.bootstrap import Engine

pytestmark = pytest.mark.integration


async def test_v1_plain_text_turns_replay_into_current_read_models(engine: Engine) -> None:
    subject = engine.subjects.fact("default", "legacy", "TurnRecorded")
    last = 0
    for i, (role, text) in enumerate([("user", "I prefer window seats."), ("assistant", "Noted: window seats.")]):
        v1 = {"type": "TurnRecorded", "v": 1, "event_id": str(uuid.uuid4()), "tenant_id": "default",
              "thread_id": "legacy", "occurred_at": f"2024-01-01T00:00:0{i}Z", "role": role, "text": text}
        ack = await engine.js.publish(subject, msgspec.json.encode(v1), headers={"Nats-Msg-Id": v1["event_id"]})
        last = ack.seq
    ctx = await engine.client().context("legacy", after_seq=last)
    assert [m.content for m in ctx.messages] == [
        [{"type": "text", "text": "I prefer window seats."}], [{"type": "text", "text": "Noted: window seats."}]]
    assert await engine.pool.fetchval("SELECT count(*) FROM dead_letters") == 0
    version_in_log = msgspec.json.decode((await engine.js.get_msg(engine.streams.facts, last)).data)["v"]
    assert version_in_log == 1  # the log keeps what was published; only the read side sees v2
