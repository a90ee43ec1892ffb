"""Train the offline deriver's learned statement reader (``engine/derive/offline/statement_reader.py``, issue #29
item 1) and write its weights to ``engine/data/statement_reader.json``.

Data: the statement sets we have read (``SETS``: the dev sets, the training sets of session 22, and the blind sets
heldout_s21-s24 after their blind runs; never a test split, never a set held back for a blind figure). Every user
sentence of a case, cut as the deriver cuts it (``sentences_en.apart`` + ``clean_text``), is labelled a statement
when it holds one of its case's values (``active`` / ``stale`` / ``kept``, the suite's matching rule
``statements_suite.holds``), else chatter; a statement's accepted types among ``TYPES`` are its type targets (one
row per accepted type). Features: the sentence's hashed character n-grams (``char_grams.grams``) and its
multilingual USE vector (``use_vectors.vector``), as the reader computes them at run time. Models (scikit-learn,
lbfgs, deterministic): L2-regularised logistic regression (statement or not, classes balanced, ``C``) and a
multinomial logistic regression over ``TYPES``.

Before writing, each set is read by a model trained on the others (leave one set out) and precision / recall at a
few thresholds and the type head's accuracy are printed: the threshold in ``statement_reader.THRESHOLD`` is chosen
from that table.

    python bench/derive_research/train_statement_reader.py [--write]   # needs the dev and embed-multilingual extras
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.derive_research.train_attack_reader import matrix  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline import char_grams, sentences_en  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.statement_reader import TYPES, WEIGHTS  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.text import clean_text  # noqa: E402 - after the sys.path line that makes the repo importable
from tests.integration.statements_suite import holds  # noqa: E402 - after the sys.path line that makes the repo importable

SETS = {"v2dev": "tests/data/statements_v2/dev.jsonl", "s15": "tests/data/heldout_s15/statements_dev.jsonl",
        "s17": "tests/data/heldout_s17/statements.jsonl", "s18": "tests/data/heldout_s18/statements.jsonl",
        "s19": "tests/data/heldout_s19/statements.jsonl", "s20": "tests/data/heldout_s20/statements.jsonl",
        "t22a": "tests/data/train_s22/a.jsonl", "t22b": "tests/data/train_s22/b.jsonl",
        **{f"s{n}": f"tests/data/heldout_s{n}/statements.jsonl" for n in (21, 22, 23, 24)}}
#: inverse regularisation of both heads (leave-one-set-out over C in {1, 4} and the USE vector alone: 1 was best)
C = 1.0
THRESHOLDS = (0.5, 0.6, 0.7, 0.8)


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


def fit(x, y, rows: np.ndarray):  # type: ignore[no-untyped-def] - scikit-learn types
    """``(statement head, type head)`` trained on ``rows`` of ``x`` (labels ``y``; type targets from ``DATA``)."""
    from sklearn.linear_model import LogisticRegression

    binary = LogisticRegression(C=C, class_weight="balanced", max_iter=3000).fit(x[rows], y[rows])
    typed = [(i, TYPES.index(t)) for i in rows if y[i] > 0 for t in DATA[i]["types"]]  # type: ignore[attr-defined]
    kinds = LogisticRegression(C=C, max_iter=3000).fit(x[np.array([i for i, _ in typed])],
                                                       np.array([k for _, k in typed]))
    return binary, kinds


DATA: list[dict[str, object]] = []


def main(write: bool) -> dict[str, object]:
    DATA[:] = rows()
    x = matrix([str(r["text"]) for r in DATA])
    y = np.array([1 if r["pos"] else 0 for r in DATA])
    sets = np.array([r["set"] for r in DATA])
    p = np.zeros(len(DATA))
    typed = np.zeros(len(DATA), dtype=bool)
    for held in SETS:
        binary, kinds = fit(x, y, np.flatnonzero(sets != held))
        te = np.flatnonzero(sets == held)
        p[te] = binary.predict_proba(x[te])[:, 1]
        pred = kinds.classes_[np.argmax(kinds.predict_proba(x[te]), axis=1)]
        typed[te] = [TYPES[k] in DATA[i]["types"] for k, i in zip(pred, te, strict=True)]  # type: ignore[operator]
    table: dict[str, object] = {}
    for lang in ("en", "zh"):
        idx = np.array([i for i, r in enumerate(DATA) if r["lang"] == lang])
        entry: dict[str, object] = {"sentences": len(idx), "statements": int(y[idx].sum()),
                                    "type_right": round(float(typed[idx][y[idx] > 0].mean()), 3)}
        for thr in THRESHOLDS:
            flag = idx[p[idx] >= thr]
            tp = int(y[flag].sum())
            entry[str(thr)] = {"precision": round(tp / max(1, len(flag)), 3),
                               "recall": round(tp / max(1, int(y[idx].sum())), 3)}
        table[lang] = entry
    report: dict[str, object] = {"sentences": len(DATA), "statements": int(y.sum()), "leave_one_set_out": table}
    if write:
        binary, kinds = fit(x, y, np.arange(len(DATA)))
        order = [list(kinds.classes_).index(k) for k in range(len(TYPES))]
        body = json.dumps({
            "about": "statement_reader weights: bench/derive_research/train_statement_reader.py",
            "sets": SETS, "types": list(TYPES), "c": C, "buckets": char_grams.BUCKETS,
            "w": [round(float(v), 5) for v in binary.coef_[0]], "b": round(float(binary.intercept_[0]), 5),
            "type_w": [[round(float(v), 5) for v in kinds.coef_[k]] for k in order],
            "type_b": [round(float(kinds.intercept_[k]), 5) for k in order],
        }, separators=(",", ":")) + "\n"
        WEIGHTS.write_text(body)
        report["written"] = str(WEIGHTS)
        report["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="fit on every set and write the weights file")
    print(json.dumps(main(ap.parse_args().write), indent=1))
