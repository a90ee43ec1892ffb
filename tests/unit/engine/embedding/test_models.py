"""The multilingual USE runs its forward pass on one BLAS thread (issue #28, session 13): OpenBLAS's own threads,
the package's default 4, made each small matmul wait on the thread hand-off on 2 busy cores (0.7 s per query)."""

from __future__ import annotations

from typing import Any

import pytest

from memengine.engine.embedding.models import UseEmbedder, use_available


def test_forward_pass_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    if not use_available():
        pytest.skip("memengine[embed-multilingual] not installed")
    from threadpoolctl import threadpool_info

    emb = UseEmbedder()
    backend = emb._get()._model
    seen: list[int] = []
    inner = backend._encode_batch

    def spy(*a: Any) -> Any:
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return inner(*a)

    monkeypatch.setattr(backend, "_encode_batch", spy)
    vecs = emb._encode(["我对花生过敏", "What is the user allergic to?"])
    assert len(vecs) == 2 and len(vecs[0]) == 512
    assert seen and set(seen) == {1}, seen
