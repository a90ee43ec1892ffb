"""The one de-duplication key rule (issue #17 defect 4): ``events.msg_id`` and ``events.content_digest``."""

from __future__ import annotations

import uuid

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from memengine.engine.client.publishing import tenant_dedup_key
from memengine.events import TextBlock, TurnRecorded, content_digest, decode, encode, msg_id

tokens = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


@given(a=tokens, b=tokens, eid=st.uuids(), data=st.binary(max_size=64), other=st.binary(max_size=64))
def test_message_ids_never_collide_across_tenants_or_contents(a: str, b: str, eid: uuid.UUID, data: bytes,
                                                             other: bytes) -> None:
    assert msg_id(a, eid, data).startswith(f"{a}:{eid}:")
    assert (msg_id(a, eid, data) == msg_id(b, eid, data)) == (a == b)
    assert (msg_id(a, eid, data) == msg_id(a, eid, other)) == (data == other)
    assert msg_id(a, eid) == f"{a}:{eid}"  # derived events: no content digest (first recorded model output wins)
    assert (msg_id(a, eid) == msg_id(b, eid)) == (a == b)


@given(a=tokens, b=tokens, eid=st.uuids(), data=st.binary(max_size=64), secret=st.text(min_size=1, max_size=64),
       other_secret=st.text(min_size=1, max_size=64))
def test_keyed_message_ids_are_not_the_public_ones(a: str, b: str, eid: uuid.UUID, data: bytes, secret: str,
                                                   other_secret: str) -> None:
    """Issue #26 item 2: with the tenant's dedup key (HMAC of the deployment secret and the tenant) the id differs
    from what anyone computes from public data, from the other tenants' and from another deployment's."""
    key_a, key_b = tenant_dedup_key(secret, a), tenant_dedup_key(secret, b)
    assert msg_id(a, eid, data, key=key_a).startswith(f"{a}:{eid}:")
    assert msg_id(a, eid, data, key=key_a) != msg_id(a, eid, data)
    assert (key_a == key_b) == (a == b)
    assert (tenant_dedup_key(other_secret, a) == key_a) == (other_secret == secret)
    assert msg_id(a, eid, data, key=key_a) == msg_id(a, eid, data, key=tenant_dedup_key(secret, a))  # stable


def test_the_content_digest_is_that_of_the_upcast_event() -> None:
    v1 = msgspec.json.encode({"type": "TurnRecorded", "v": 1, "event_id": str(uuid.uuid4()), "tenant_id": "acme",
                              "thread_id": "t", "occurred_at": "2025-05-01T12:00:00Z", "role": "user",
                              "text": "I live in Lisbon"})
    current = decode(v1)
    assert isinstance(current, TurnRecorded) and encode(current) != v1
    assert content_digest(decode(v1)) == content_digest(decode(encode(current))) == content_digest(current)
    changed = msgspec.structs.replace(current, content=[TextBlock(text="I live in Porto")])
    assert content_digest(changed) != content_digest(current)
    assert content_digest(msgspec.structs.replace(current, tenant_id="globex")) != content_digest(current)
