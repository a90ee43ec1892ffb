"""The query handler's FastStream decoder is a coroutine (issue #13 item 3): FastStream runs a plain-function
decoder in a worker thread (``faststream._internal.utils.functions.to_async``), a thread hop on every request."""

from __future__ import annotations

from faststream._internal.utils.functions import to_async

from memengine.engine.read.serving import _raw_body


def test_decoder_runs_on_the_event_loop() -> None:
    assert to_async(_raw_body) is _raw_body  # not wrapped for the thread pool
