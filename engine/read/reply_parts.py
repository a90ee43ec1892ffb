"""Small parts of the query service's context path (``engine.read.service``): the reply's form of a placed row and
the cancellation of the statements a context request runs side by side. Kept apart so the service stays under
issue #10's 600-line limit."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec

from memengine.engine.read.context import Placed
from memengine.engine.wire.replies import MessageOut


def message_out(p: Placed) -> MessageOut:
    """The reply's form of a placed row: ``Placed.tokens`` / ``Placed.content`` inlined (a Python call each less,
    ~83 rows a request at 8K)."""
    row = p.row
    shown = row.content_condensed if p.tier == 2 else None  # the condensed form shown, if any
    return MessageOut(tier=p.tier, seq=row.seq, event_id=row.event_id, role=row.role, user_id=row.user_id,
                      session_id=row.session_id, occurred_at=row.occurred_at.isoformat(),
                      tokens=row.tokens_condensed if p.tier == 2 else row.tokens_full, condensed=shown is not None,
                      content=msgspec.Raw((row.content if shown is None else shown).encode()), chosen_by=p.chosen_by)


async def cancel_all(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel ``tasks`` (``None`` skipped) and wait for each to end, whatever it raised."""
    for task in tasks:
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
