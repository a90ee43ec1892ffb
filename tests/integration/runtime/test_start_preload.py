"""A running engine loads the English parser (spaCy) at start, in a worker thread, not on its event loop at the
enricher's first derivation: that load takes seconds of CPU (12 s on a loaded 2-core machine), during which the
query handler of the same process answered nothing (flaky ``test_bad_input.py``: a context request after the
first recorded turns timed out after 10 s, or its read-your-writes wait came back stale without the last turn)."""

from __future__ import annotations

import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from memengine.engine.derive.offline import parse_en

pytestmark = pytest.mark.integration


async def test_parser_loaded_before_the_engine_answers(settings: Settings) -> None:
    parse_en._nlp.cache_clear()  # as in a fresh process
    async with lifespan(settings) as engine:
        # nothing was recorded, so no derivation ran: only the start can have loaded it
        assert parse_en._nlp.cache_info().currsize == 1
        assert (await engine.client().threads()) is not None
    assert not engine.stalled
