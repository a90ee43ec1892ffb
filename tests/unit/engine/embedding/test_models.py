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


def test_auto_picks_minilm_use_for_a_new_store_and_follows_an_existing_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MEMENGINE_EMBEDDER=auto`` (session 23, issue #28): a new store gets MiniLM and USE in one space when both
    are installed; a store whose active model is a local one keeps it (an upgrade never refuses to start); a model
    that is not installed here, or a remote one, is not followed."""
    from memengine.engine.embedding import models

    monkeypatch.setattr(models, "minilm_available", lambda: True)
    monkeypatch.setattr(models, "use_available", lambda: True)
    monkeypatch.setattr(models, "e5_available", lambda: False)
    assert models.auto_choice(None) == "minilm+use"
    assert models.auto_choice(models.MINILM_NAME) == "minilm"
    assert models.auto_choice(models.USE_NAME) == "use"
    assert models.auto_choice(models.MODEL_ALIASES["minilm+use"]) == "minilm+use"
    assert models.auto_choice(models.E5_NAME) == "minilm+use"  # e5 not installed here: the default, then refused
    assert models.auto_choice("text-embedding-3-small") == "minilm+use"
    monkeypatch.setattr(models, "use_available", lambda: False)
    assert models.auto_choice(None) == "minilm"
    assert models.auto_choice(models.MODEL_ALIASES["minilm+use"]) == "minilm"
    monkeypatch.setattr(models, "minilm_available", lambda: False)
    assert models.auto_choice(None) is None
