"""The query handler's FastStream decoder is a coroutine (issue #13 item 3): FastStream runs a plain-function
decoder in a worker thread (``faststream._internal.utils.functions.to_async``), a thread hop on every request."""

from __future__ import annotations

from faststream._internal.utils.functions import to_async

from memengine.engine.read.serving import _raw_msg


def test_decoder_runs_on_the_event_loop() -> None:
    assert to_async(_raw_msg) is _raw_msg  # not wrapped for the thread pool


async def test_decoder_hands_the_endpoint_the_raw_message() -> None:
    # the broker injects nothing (apply_types=False): the endpoint gets the decoder's value, which must be the nats-py
    # message itself (its reply subject and bytes), never a parsed body
    from nats.aio.msg import Msg

    raw = Msg(None, subject="mem.rpc.context", reply="_INBOX.x", data=b'{"tenant": "t"}')  # type: ignore[arg-type]

    class Wrapped:
        raw_message = raw
        body = raw.data

    assert await _raw_msg(Wrapped()) is raw  # type: ignore[arg-type]
