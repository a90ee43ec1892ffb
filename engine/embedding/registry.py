"""Which embedding model the store's vectors are of (issue #28 item 3: changing the model is a rebuild, never a mix).

Each model has its own vector tables (``memory_embeddings_<hash>``, ``memory_item_embeddings_<hash>``), recorded in
``embedding_models`` with its dimension, a checksum of its weights (``checksum_of``; ``None`` for a remote model)
and a ``state`` (schema 0043): one model is ``active``, a model being embedded by ``memengine rebuild vectors
--model`` is ``building`` (its shadow table), a former active one is ``retired``. A query embeds its text with the
process's configured embedder and compares it with that model's table only (``engine.read.recall``), so a ranking
never mixes two models; what this module adds is that a process configured with a model other than the active one
(or with the same name and other weights) is refused at start (``EmbeddingModelMismatch``, naming the rebuild
command) instead of starting a second, empty table beside the first and answering from it.
"""

from __future__ import annotations

from typing import Any

import asyncpg

#: The one lock every change of ``embedding_models``' states takes (registration, the swap).
REGISTRY_LOCK = "memengine_embedding_models"


class EmbeddingModelMismatch(RuntimeError):
    """The configured embedder is not the store's active model (another name, or the same name with other
    weights). The message names both models and the command that switches the store:
    ``memengine rebuild vectors --model <configured>``."""


def rebuild_command(model: str) -> str:
    """The command that re-embeds the store with ``model`` and makes it the active one."""
    return f"memengine rebuild vectors --model {model}"


def checksum_of(embedder: Any) -> str | None:
    """``embedder.checksum()`` (``"sha256:<hex>"`` of the local weights, computed once per process) or ``None`` for
    an embedder without one (a remote model: identified by name and dimension only)."""
    fn = getattr(embedder, "checksum", None)
    return fn() if callable(fn) else None


def check_against(active: Any, model: str, checksum: str | None) -> None:
    """Raise ``EmbeddingModelMismatch`` unless ``model`` (with ``checksum``) may use the store whose active
    registry row is ``active`` (``None``: no active model yet, anything may start)."""
    if active is None:
        return
    if active["model"] != model:
        raise EmbeddingModelMismatch(
            f"the store's vectors are of embedding model {active['model']!r} (dim {active['dim']}, checksum"
            f" {active['checksum'] or 'none'}), but the configured embedder is {model!r}: a query would compare"
            f" vectors of two models. Run `{rebuild_command(model)}` to embed the store with {model!r} and switch"
            f" (queries are answered meanwhile), or configure {active['model']!r} again (MEMENGINE_EMBEDDER)")
    if active["checksum"] and checksum and active["checksum"] != checksum:
        raise EmbeddingModelMismatch(
            f"the weights of embedding model {model!r} changed (stored vectors: {active['checksum']}, configured"
            f" weights: {checksum}): run `{rebuild_command(model)}` to embed the store again with these weights")


async def active_model(conn: asyncpg.Connection | asyncpg.Pool) -> Any:
    """The active registry row (``model``, ``dim``, ``checksum``, ``table_name``) or ``None``."""
    return await conn.fetchrow(
        "SELECT model, dim, checksum, table_name FROM embedding_models WHERE state = 'active'")


async def check_model(pool: asyncpg.Pool, embedder: Any) -> None:
    """Raise ``EmbeddingModelMismatch`` if ``embedder`` is not the store's active model (start-up check of every
    process that embeds or answers queries; the checksum is computed only when the names agree)."""
    active = await active_model(pool)
    if active is None:
        return
    checksum = checksum_of(embedder) if active["model"] == embedder.name else None
    check_against(active, embedder.name, checksum)


async def models(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    """Every registered model with its vector table: ``{"model", "dim", "checksum", "state", "table",
    "vectors"}`` (``vectors``: the planner's row estimate of the turn table, 0 before its first ANALYZE), active
    first (``memengine status``)."""
    rows = await pool.fetch(
        """SELECT m.model, m.dim, m.checksum, m.state, m.table_name,
                  greatest(coalesce((SELECT c.reltuples FROM pg_class c
                                      WHERE c.oid = to_regclass(m.table_name)), 0), 0)::bigint AS vectors
             FROM embedding_models m ORDER BY m.state = 'active' DESC, m.model""")
    return [{"model": r["model"], "dim": r["dim"], "checksum": r["checksum"], "state": r["state"],
             "table": r["table_name"], "vectors": int(r["vectors"])} for r in rows]
