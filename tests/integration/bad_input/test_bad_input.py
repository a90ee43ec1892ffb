"""Bad input gets a typed error and loses nothing: poison events go to the DLQ with the reason and the projector goes
on; bad RPC requests get typed error replies and the handler keeps answering."""

from __future__ import annotations

import msgspec
import pytest

from memengine.engine.bootstrap import Engine
from memengine.engine.wire.errors import RpcError
from tests.conftest import wait_until
from tests.integration.poison import UNAPPLIABLE, refuse_in_folds

pytestmark = pytest.mark.integration


async def _dead_letters(engine: Engine) -> list[dict]:
    # every consumer of the facts dead-letters on its own subject; the core projector's are checked here
    rows = await engine.pool.fetch("SELECT stream_seq, subject, error, payload, status FROM dead_letters"
                                   " WHERE consumer = 'core' ORDER BY id")
    return [dict(r) for r in rows]


async def test_malformed_events_go_to_dlq_and_projector_goes_on(engine: Engine) -> None:
    js, subj = engine.js, engine.subjects
    client = engine.client()
    good1 = await client.record_turn("th", "user", "before the poison")
    bad_json = await js.publish(subj.fact("default", "th", "TurnRecorded"), b"{not json", headers={"Nats-Msg-Id": "b1"})
    unknown = await js.publish(subj.fact("default", "th", "TurnRecorded"),
                               b'{"type":"NoSuchEvent","v":1}', headers={"Nats-Msg-Id": "b2"})
    # valid event, but published under another thread's subject: rejected, never mis-filed
    mismatch_ev = msgspec.json.encode({
        "type": "TurnRecorded", "v": 2, "event_id": "01890a5d-ac96-774b-bcce-b302099a8057", "tenant_id": "default",
        "thread_id": "other", "occurred_at": "2026-01-01T00:00:00Z", "role": "user",
        "content": [{"type": "text", "text": "x"}]})
    mismatch = await js.publish(subj.fact("default", "th", "TurnRecorded"), mismatch_ev, headers={"Nats-Msg-Id": "b3"})
    good2 = await client.record_turn("th", "user", "after the poison")

    # wait: the server's default read-your-writes wait (2 s) can pass on a loaded machine while the core projector
    # dead-letters the three; the reply comes as soon as good2 is applied
    ctx = await client.context("th", after_seq=good2.seq, wait=30)
    assert [m.content[0]["text"] for m in ctx.messages] == ["before the poison", "after the poison"]
    dead = await wait_until(lambda: _dead_letters(engine))
    assert [d["stream_seq"] for d in dead] == [bad_json.seq, unknown.seq, mismatch.seq]
    assert dead[0]["error"].startswith("decode:") and dead[0]["payload"] == b"{not json"
    assert "NoSuchEvent" in dead[1]["error"]
    assert dead[2]["error"].startswith("subject:")
    assert all(d["status"] == "open" for d in dead)

    # the DLQ stream holds the same three, with the error in a header and the original bytes as payload
    psub = await js.pull_subscribe(subj.dlq("core"), stream=engine.streams.dlq)
    msgs = await psub.fetch(10, timeout=2)
    assert len(msgs) == 3
    assert msgs[0].data == b"{not json"
    assert msgs[0].headers["Memengine-Stream-Seq"] == str(bad_json.seq)
    assert msgs[0].headers["Memengine-Error"].startswith("decode:")
    assert good1.seq < bad_json.seq


async def test_apply_error_isolates_one_event(engine: Engine) -> None:
    """An event that decodes but fails in PostgreSQL (``UNAPPLIABLE``, refused by a trigger: a NUL character, the
    example before issue #26, is now refused by the contract) is dead-lettered alone; the rest of its batch is
    applied."""
    client = engine.client()
    await refuse_in_folds(engine)
    await engine.runner.stop()  # hold the projector so all three land in one batch
    await client.record_turn("iso", "user", "first")
    bad = await client.record_turn("iso", "user", UNAPPLIABLE)
    last = await client.record_turn("iso", "user", "third")
    await engine.runner.try_start()
    # wait: isolating the refused event (the batch again, one by one) can outlast the default 2 s under load
    ctx = await client.context("iso", after_seq=last.seq, wait=30)
    assert [m.content[0]["text"] for m in ctx.messages] == ["first", "third"]
    dead = await _dead_letters(engine)
    assert [d["stream_seq"] for d in dead] == [bad.seq]
    assert dead[0]["error"].startswith("apply:")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"tenant":"default","thread":"nope"}', "unknown_thread"),
        (b'{"tenant":"a.*","thread":"x"}', "invalid_token"),
        (b'{"tenant":"default","thread":"x>"}', "invalid_token"),
        (b'{"tenant":"default","thread":"x","window":-5}', "invalid_request"),
        (b'{"tenant":"default","thread":"x","window":"big"}', "invalid_request"),
        (b'{"tenant":"default","thread":"x","bogus":1}', "invalid_request"),
        (b"not json at all", "invalid_request"),
        (b"\xff\xfe\xfd", "invalid_request"),
        (b'{"tenant":"default","thread":"x","query":"' + b"a" * 100_000 + b'"}', "payload_too_large"),
    ],
)
async def test_bad_rpc_input_gets_typed_error(engine: Engine, body: bytes, code: str) -> None:
    msg = await engine.nc.request(engine.subjects.rpc("context"), body, timeout=5)
    reply = msgspec.json.decode(msg.data)
    assert reply["ok"] is False
    assert reply["error"]["code"] == code, reply
    assert reply["error"]["message"]
    # and the handler is still up
    ok = msgspec.json.decode((await engine.nc.request(engine.subjects.rpc("threads"), b"{}", timeout=5)).data)
    assert ok["ok"] is True


async def test_client_raises_typed_errors(engine: Engine) -> None:
    client = engine.client()
    with pytest.raises(RpcError) as info:
        await client.context("missing-thread")
    assert info.value.code == "unknown_thread"
    with pytest.raises(RpcError) as info:
        await client.history("missing-thread")
    assert info.value.code == "unknown_thread"
