"""The embedding backlog: turns recallable by their words but not yet by meaning (issue #13 item 5).

A turn is recallable lexically as soon as the recall projector folds it into ``memory_vectors`` (its
``turn_tsv`` / ``win_tsv``); its vector follows when the embedder worker (``engine.embedding.worker``) gets to it.
When embedding is slower than ingest (about 35 texts/s for the local MiniLM on 2 CPU cores) the difference waits
here, and recall sheds its dense half for those turns instead of failing (seed 002 §4.1 "向量检索": the vector list
is one of the fused lists). ``embedding_backlog`` measures the wait for ``memengine status`` and ``/metrics``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import asyncpg
import structlog

log = structlog.get_logger("memengine.embedder")

#: ``texts_per_s`` older than this is reported as 0: no worker is running for the model.
STALE_RATE_S = 30.0


async def embedding_backlog(pool: asyncpg.Pool, js: Any = None, facts_stream: str | None = None
                            ) -> list[dict[str, Any]]:
    """Per embedding model registered in ``embedding_models`` (the active one first): ``{"model", "dim",
    "checksum", "state", "table", "waiting", "oldest_seq", "oldest_age_s", "texts_per_s", "progress_at"}``.

    ``dim``, ``checksum`` (sha256 of the local weights, ``None`` for a remote model), ``state`` (active | building
    | retired) and ``table`` identify the vectors of each table (engine.embedding.registry, issue #28 item 3).

    ``waiting``: ``memory_vectors`` rows with a text whose current ``emb_sha`` has no vector in the model's table
    (counted among rows changed after the worker's published watermark ``done_seq``). ``oldest_seq``: the facts
    sequence of the event that last changed the longest-waiting row; ``oldest_age_s``: seconds since the log stored
    that event (``js`` and ``facts_stream`` given; ``None`` without them, when nothing waits, or if the message is
    gone). ``texts_per_s``: texts embedded per second over the worker's last 30 s (0 when no worker published
    progress in the last ``STALE_RATE_S`` seconds)."""
    out = []
    models = await pool.fetch(
        "SELECT model, dim, checksum, state, table_name, done_seq, texts_per_s, progress_at FROM embedding_models"
        " ORDER BY state = 'active' DESC, model")
    for m in models:
        row = await pool.fetchrow(
            f"""SELECT count(*) AS n, min(v.changed_seq) AS oldest
                  FROM memory_vectors v LEFT JOIN {m["table_name"]} e
                    ON e.tenant_id = v.tenant_id AND e.thread_id = v.thread_id AND e.seq = v.seq
                 WHERE v.changed_seq > $1 AND v.emb_text <> '' AND (e.seq IS NULL OR e.emb_sha <> v.emb_sha)""",
            m["done_seq"])
        at = m["progress_at"]
        fresh = at is not None and (datetime.now(UTC) - at).total_seconds() <= STALE_RATE_S
        oldest = row["oldest"]
        age = await _age_of(js, facts_stream, int(oldest)) if oldest is not None and js is not None else None
        out.append({"model": m["model"], "dim": m["dim"], "checksum": m["checksum"], "state": m["state"],
                    "table": m["table_name"], "waiting": int(row["n"]), "oldest_seq": oldest,
                    "oldest_age_s": age, "texts_per_s": round(float(m["texts_per_s"]), 2) if fresh else 0.0,
                    "progress_at": at.isoformat() if at is not None else None})
    return out


async def _age_of(js: Any, stream: str | None, seq: int) -> float | None:
    """Seconds since the log stored message ``seq`` of ``stream``; ``None`` if it cannot be read."""
    if stream is None:
        return None
    try:
        msg = await js.get_msg(stream, seq)
    except Exception as exc:  # noqa: BLE001 - a purged message or a server hiccup: the count still stands
        log.debug("backlog: no stored time", seq=seq, error=repr(exc))
        return None
    stored = msg.time
    if isinstance(stored, str):
        stored = _parse_time(stored)
    if not isinstance(stored, datetime):
        return None
    return round(max(0.0, time.time() - stored.timestamp()), 3)


def _parse_time(text: str) -> datetime | None:
    """NATS' RFC 3339 time with nanoseconds (``2026-11-23T17:38:34.123456789Z``) -> an aware datetime."""
    head, _, frac = text.rstrip("Z").partition(".")
    try:
        base = datetime.fromisoformat(head).replace(tzinfo=UTC)
    except ValueError:
        return None
    digits = "".join(ch for ch in frac if ch.isdigit())[:6].ljust(6, "0")
    return base.replace(microsecond=int(digits))
