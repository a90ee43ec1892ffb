"""A local OpenAI-compatible embeddings server for bench/embed_lag.py (issue #13 item 5).

``POST /v1/embeddings`` (``{"model", "input": str | [str], "encoding_format": "float" | "base64"}``) answers the
OpenAI reply shape; ``GET /health`` answers 200 once the model is loaded. Modes:

- ``minilm``: all-MiniLM-L6-v2 on this machine's CPU (the same weights as the engine's local embedder, 384-d,
  normalised), one ``encode`` at a time in a worker thread (torch already uses every core for one batch);
- ``hash``: a deterministic cheap 384-d vector per text (seeded by its sha256): costs almost nothing, so what a run
  measures is the engine's own ceiling (batching, pipelining, storing), not the model.

    python bench/embed_server.py --mode hash|minilm [--port 8088] [--host 127.0.0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
from typing import Any

import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

DIM = 384


def hash_vectors(texts: list[str]) -> np.ndarray:
    """``len(texts) x 384`` float32, unit length, a pure function of each text."""
    out = np.empty((len(texts), DIM), dtype=np.float32)
    for i, t in enumerate(texts):
        seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        out[i] = v / np.linalg.norm(v)
    return out


def build_app(mode: str) -> FastAPI:
    app = FastAPI()
    lock = asyncio.Lock()
    model: Any = None
    if mode == "minilm":
        from memengine.engine.embedding.models import _load_minilm

        model = _load_minilm("cpu")
        model.encode(["warm up"], normalize_embeddings=True)

    def encode(texts: list[str]) -> np.ndarray:
        if model is None:
            return hash_vectors(texts)
        # batch 16, as the engine's local embedder (engine.embedding.models.MiniLMEmbedder)
        return np.asarray(model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True,
                                       show_progress_bar=False), dtype=np.float32)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "mode": mode}

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> Response:
        import json

        body = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if mode == "minilm":
            async with lock:  # one encode at a time: a second one would only share the same cores
                vecs = await asyncio.to_thread(encode, texts)
        else:
            vecs = encode(texts)
        if body.get("encoding_format") == "base64":
            data = [{"object": "embedding", "index": i, "embedding": base64.b64encode(v.tobytes()).decode()}
                    for i, v in enumerate(vecs)]
        else:
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
        n = sum(len(t) for t in texts) // 4
        return Response(json.dumps({"object": "list", "data": data, "model": body.get("model", mode),
                                    "usage": {"prompt_tokens": n, "total_tokens": n}}),
                        media_type="application/json")

    return app


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8088)
    args = ap.parse_args()
    uvicorn.run(build_app(args.mode), host=args.host, port=args.port, log_level="warning")
