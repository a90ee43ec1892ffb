"""Answering as the read models stood at an earlier point of the log (issue #5 §3; storage time, not event time).

One place for what the CLI's ``--as-of`` / ``--as-of-seq`` and the HTTP API's ``as_of`` / ``as_of_seq`` do: resolve
the point (``engine.ops.rebuild.resolve_as_of``), fold the log up to it into scratch tables
(``engine.ops.rebuild.as_of_pool``), and answer with a ``QueryService`` on them whose validity clock is the point's
time (an item expired then is left out as a reader then would have seen it; issue #15 item 2).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from memengine.engine.ops import rebuild as rb
from memengine.engine.read.progress import ProgressWatcher
from memengine.engine.read.recall import Recaller
from memengine.engine.read.service import QueryService
from memengine.engine.wire.errors import RpcError

if TYPE_CHECKING:
    from memengine.engine.bootstrap import Engine


async def point_of(engine: Engine, as_of: str | None, as_of_seq: int | None) -> rb.AsOf:
    """The point named by ``as_of`` (ISO 8601 storage time) or ``as_of_seq`` (facts-stream sequence). Raises
    ``RpcError("invalid_request")`` for an unparsable time or a point outside the log (the reason says which)."""
    try:
        return await rb.resolve_as_of(engine, seq=as_of_seq, at=rb.parse_time(as_of) if as_of is not None else None)
    except rb.TimeTravelError as exc:
        raise RpcError("invalid_request", str(exc)) from None


@contextlib.asynccontextmanager
async def service_at(engine: Engine, point: rb.AsOf, *, recall: bool = False) -> AsyncIterator[QueryService]:
    """A query service over the log folded up to ``point`` (scratch tables, dropped on exit). ``recall``: fold the
    recall rows too, so a context with a query picks Tier 2 as it would have then (issue #14); recall uses the
    engine's embedder either way."""
    async with rb.as_of_pool(engine, point, recall=recall) as pool:
        live = engine.service.recaller
        svc = QueryService(pool, engine.settings, ProgressWatcher(pool),
                           Recaller(pool, live.embedder, live.default_k, live.weights))
        svc.memory.clock = point.at  # validity (expiry) judged at the point, as a reader then would have
        yield svc


def stamp(point: rb.AsOf) -> dict[str, Any]:
    """What an as-of answer carries as ``as_of``: ``{facts_seq, derived_seq, at (ISO 8601), fold_seconds}``."""
    return {"facts_seq": point.facts_seq, "derived_seq": point.derived_seq, "at": point.at.isoformat(),
            "fold_seconds": point.seconds}
