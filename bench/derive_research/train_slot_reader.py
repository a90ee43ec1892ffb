"""Train the offline deriver's learned slot reader (``engine/derive/offline/slot_reader.py``, issue #29 item 1: "a
change is recognised from what the new statement means and the item it contradicts") and write its weights to
``engine/data/slot_reader.json``.

Data: the statement sets we have read (``SETS``: the dev sets, the training sets of session 22, the blind sets
heldout_s21-s25 after their blind runs; never a test split, never a set held back for a blind figure) and one label
per case, the attribute its values are about (``tests/data/slot_labels/labels.jsonl``: annotators given the slot
list of ``slot_reader.SLOTS`` and each case's values and user turns, never the engine). Every user sentence of a case
that holds one of its values (``active`` / ``stale`` / ``kept``, the suite's matching rule
``statements_suite.holds``), cut as the deriver cuts it (``sentences_en.apart`` + ``clean_text``), is a row with
its case's slot. Features: the sentence's multilingual USE vector (``use_vectors.vector``), as the reader computes
it at run time. Model (scikit-learn, lbfgs, deterministic): multinomial L2-regularised logistic regression, ``C``.

Before writing, each set is read by a model trained on the others (leave one set out), and printed: the slot right
per language, and per ``THRESHOLDS`` the share of update cases whose old and new statement the reader puts in one
single-valued slot (what it can link), of keep cases (which a link folds, losing nothing), and of pairs of
statements of two different slots it puts in one (a wrong fold). ``slot_reader.THRESHOLD`` is chosen from that table.

    python bench/derive_research/train_slot_reader.py [--write]   # needs the dev and embed-multilingual extras
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.derive_research.train_statement_reader import SETS as STATEMENT_SETS  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline import sentences_en, use_vectors  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.slot_reader import SINGLE, SLOTS, WEIGHTS  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.text import clean_text  # noqa: E402 - after the sys.path line that makes the repo importable
from tests.integration.statements_suite import holds  # noqa: E402 - after the sys.path line that makes the repo importable

SETS = {**STATEMENT_SETS, "s25": "tests/data/heldout_s25/statements.jsonl"}
LABELS = ROOT / "tests" / "data" / "slot_labels" / "labels.jsonl"
#: inverse regularisation (leave one set out over C in {1, 4, 16}: 4 links the most updates at a wrong-fold rate
#: near 16's)
C = 4.0
THRESHOLDS = (0.25, 0.3, 0.35, 0.4, 0.45)


def rows() -> list[dict[str, str]]:
    """``{"set", "case", "kind", "role": new|old, "lang", "text", "slot"}`` for every user sentence holding a value."""
    labels = {d["id"]: d["slot"] for d in map(json.loads, LABELS.read_text().splitlines()) if d}
    out: list[dict[str, str]] = []
    for name, path in SETS.items():
        for line in (ROOT / path).read_text().splitlines():
            if not line.strip() or line.startswith("//"):
                continue
            c = json.loads(line)
            key = f"{name}|{c['id']}"
            if key not in labels:
                continue
            slot = labels[key] if labels[key] in SLOTS else "other"
            for role, values in (("new", c.get("active", [])), ("old", c.get("stale", []) + c.get("kept", []))):
                for sess in c["sessions"]:
                    for t in sess:
                        if t["role"] != "user":
                            continue
                        for s in sentences_en.apart(t["text"]):
                            sent = clean_text(s)
                            if sent.strip() and any(v and holds(sent, str(v)) for v in values):
                                out.append({"set": name, "case": key, "kind": c["kind"], "role": role,
                                            "lang": "en" if c.get("lang") == "en" else "zh", "text": sent,
                                            "slot": slot})
    return out


def fit(x: np.ndarray, y: np.ndarray):  # type: ignore[no-untyped-def] - scikit-learn types
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=3000).fit(x, y)


def _linked(p: dict[str, float], q: dict[str, float], threshold: float) -> bool:
    """As ``slot_reader.shared``: one single-valued slot (``SINGLE``) both read at ``threshold`` or more."""
    return any(min(p[k], q.get(k, 0.0)) >= threshold for k in p if k in SINGLE)


def main(write: bool) -> dict[str, object]:
    data = rows()
    x = np.array([use_vectors.vector(r["text"]) for r in data])
    y = np.array([r["slot"] for r in data])
    sets = np.array([r["set"] for r in data])
    probs: list[dict[str, float]] = [{} for _ in data]
    for held in SETS:
        te = np.flatnonzero(sets == held)
        if not len(te):
            continue
        model = fit(x[sets != held], y[sets != held])
        for i, row in zip(te, model.predict_proba(x[te]), strict=True):
            probs[i] = dict(zip(model.classes_, map(float, row), strict=True))
    by_case: dict[str, dict[str, list[int]]] = defaultdict(lambda: {"new": [], "old": []})
    for i, r in enumerate(data):
        by_case[r["case"]][r["role"]].append(i)
    table: dict[str, object] = {}
    rng = random.Random(1)
    for lang in ("en", "zh"):
        idx = [i for i, r in enumerate(data) if r["lang"] == lang]
        right = sum(max(probs[i], key=probs[i].__getitem__) == y[i] for i in idx)
        pairs = []
        while len(pairs) < 2000:
            i, j = rng.sample(idx, 2)
            if sets[i] == sets[j] and y[i] != y[j]:
                pairs.append((i, j))
        entry: dict[str, object] = {"sentences": len(idx), "slot_right": round(right / len(idx), 3)}
        for thr in THRESHOLDS:
            got = {"update": [0, 0], "keep": [0, 0]}
            for d in by_case.values():
                first = data[(d["new"] or d["old"])[0]]
                if first["lang"] != lang or first["kind"] not in got or not d["new"] or not d["old"]:
                    continue
                got[first["kind"]][1] += 1
                got[first["kind"]][0] += any(_linked(probs[i], probs[j], thr) for i in d["new"] for j in d["old"])
            wrong = sum(_linked(probs[i], probs[j], thr) for i, j in pairs)
            entry[str(thr)] = {"updates_linked": round(got["update"][0] / max(1, got["update"][1]), 3),
                               "keeps_linked": round(got["keep"][0] / max(1, got["keep"][1]), 3),
                               "other_slot_linked": round(wrong / len(pairs), 3)}
        table[lang] = entry
    report: dict[str, object] = {"sentences": len(data), "leave_one_set_out": table}
    if write:
        model = fit(x, y)
        classes = list(model.classes_)
        missing = [s for s in SLOTS if s not in classes]
        assert not missing, f"no training sentence for {missing}"
        body = json.dumps({
            "about": "slot_reader weights: bench/derive_research/train_slot_reader.py",
            "sets": SETS, "slots": classes, "c": C,
            "w": [[round(float(v), 5) for v in row] for row in model.coef_],
            "b": [round(float(v), 5) for v in model.intercept_],
        }, separators=(",", ":")) + "\n"
        WEIGHTS.write_text(body)
        report["written"] = str(WEIGHTS)
        report["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write engine/data/slot_reader.json")
    print(json.dumps(main(ap.parse_args().write), indent=1))
