"""Train the gate's learned attack reader (``engine/derive/offline/attack_reader.py``, issue #29: "poisoning attack
success 0 ... in each language") and write its weights to ``engine/data/attack_reader.json``.

The question it answers: is this sentence of a user turn the payload of a memory-poisoning attack?

Data (``POISONING``: every poisoning set of ``tests/data``, each read already; never a set held back for a blind
figure): an attack case's user sentences that hold one of its ``planted`` phrases are attacks (its other sentences,
the chatter around a payload, are left out: they are neither); every user sentence of a benign case is not, and
neither is any user sentence of the self-statement dev sets (``NEGATIVES``: what users say about themselves).
Sentences are cut as the gate cuts them (``text.sentences`` + ``clean_text``, ``safety.canonical``).

Features (``attack_reader.grams`` and the multilingual USE vector), L2-regularised logistic regression with classes
balanced and a benign case's sentence weighted ``BENIGN_WEIGHT`` (scikit-learn's lbfgs, ``C``; deterministic).

Before writing, each poisoning set is read by a model trained on the others (leave one set out): per set, the attack
cases with a sentence read as an attack and the benign cases with one (a false quarantine), at a few thresholds,
and the share of LoCoMo dev and statements v2 test sentences (never trained on) read as attacks.
``attack_reader.THRESHOLD`` is chosen from that table.

    python bench/derive_research/train_attack_reader.py [--write]     # needs the dev and embed-multilingual extras
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

from memengine.engine.derive.offline import attack_reader, safety, use_vectors  # noqa: E402 - after the sys.path line that makes the repo importable

POISONING = {"suite": "tests/data/poisoning_suite.jsonl", "zhdev": "tests/data/poisoning_zh/dev.jsonl",
             "zhtest": "tests/data/poisoning_zh/test.jsonl",
             **{f"s{n}": f"tests/data/heldout_s{n}/poisoning.jsonl" for n in (17, 18, 19, 20, 21, 22, 23, 24)},
             "rt21": "tests/data/redteam_s21/poisoning.jsonl"}
NEGATIVES = ["tests/data/statements_v2/dev.jsonl", "tests/data/heldout_s15/statements_dev.jsonl",
             *(f"tests/data/heldout_s{n}/statements.jsonl" for n in (17, 18, 19, 20, 21, 22)),
             "tests/data/train_s22/a.jsonl", "tests/data/train_s22/b.jsonl"]
#: never trained on: the share of their sentences read as attacks is the false-alarm rate on ordinary talk
ORDINARY = ["tests/data/statements_v2/test.jsonl"]
C = 1.0
#: the weight of a benign case's sentence (a standing instruction that looks like an attack: the hard negatives)
BENIGN_WEIGHT = 3.0
THRESHOLDS = (0.8, 0.85, 0.9, 0.93, 0.95)


def cut(text: str) -> list[str]:
    """The sentences of ``text`` the reader reads (``attack_reader.sentences_of``)."""
    return attack_reader.sentences_of(text)


def _jsonl(path: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (ROOT / path).read_text().splitlines()
            if line.strip() and not line.startswith("//")]


def _user_sentences(cases: list[dict[str, object]]) -> list[str]:
    out = []
    for c in cases:
        for sess in c.get("sessions", []):  # type: ignore[attr-defined] - a case's sessions are lists of turns
            out += [s for t in sess if t["role"] == "user" for s in cut(t["text"])]
    return out


def rows() -> list[tuple[str, str, str, int | None, str]]:
    """``(set, case id, kind, label, sentence)``: label 1 an attack's payload, 0 benign, ``None`` neither."""
    out: list[tuple[str, str, str, int | None, str]] = []
    for name, path in POISONING.items():
        for c in _jsonl(path):
            planted = [safety.canonical(str(p)).lower() for p in c.get("planted", [])]  # type: ignore[attr-defined]
            for t in c["turns"]:  # type: ignore[attr-defined]
                if t["role"] != "user":
                    continue
                for s in cut(t["text"]):
                    label = (1 if any(p and p in s.lower() for p in planted) else None) if c["kind"] == "attack" else 0
                    out.append((name, str(c["id"]), str(c["kind"]), label, s))
    return out


def ordinary() -> list[str]:
    """Sentences never trained on: LoCoMo dev (both speakers) and the statements v2 test split's user turns."""
    out = _user_sentences([c for p in ORDINARY for c in _jsonl(p)])
    for f in sorted((ROOT.parent / "shared" / "data" / "locomo-dev").glob("*.json")):
        d = json.loads(f.read_text())
        conv = d.get("conversation", d)
        for k, v in conv.items():
            if k.startswith("session_") and isinstance(v, list):
                out += [s for t in v if isinstance(t, dict) and "text" in t for s in cut(t["text"])]
    return sorted(set(out))


def matrix(texts: list[str]):  # type: ignore[no-untyped-def] - a scipy sparse matrix
    """The features of ``texts`` as the reader computes them: hashed grams, then the USE vector."""
    from scipy import sparse

    data, ri, ci = [], [], []
    for i, t in enumerate(texts):
        for b, v in attack_reader.grams(t).items():
            data.append(v)
            ri.append(i)
            ci.append(b)
        vec = use_vectors.vector(t)
        assert vec is not None, "the embed-multilingual extra is needed"
        data.extend(vec)
        ri.extend([i] * len(vec))
        ci.extend(range(attack_reader.BUCKETS, attack_reader.BUCKETS + len(vec)))
    return sparse.csr_matrix((data, (ri, ci)), shape=(len(texts), attack_reader.BUCKETS + 512))


def fit(x, y, weights):  # type: ignore[no-untyped-def] - scikit-learn types
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, class_weight="balanced", max_iter=3000)
    model.fit(x, y, sample_weight=weights)
    return model


def main(write: bool) -> dict[str, object]:
    from scipy import sparse

    data = rows()
    neg = sorted(set(_user_sentences([c for p in NEGATIVES for c in _jsonl(p)])))
    usual = ordinary()
    x, xn, xo = matrix([r[4] for r in data]), matrix(neg), matrix(usual)
    labels = np.array([-1 if r[3] is None else r[3] for r in data])
    sets = np.array([r[0] for r in data])
    cases = np.array([r[1] for r in data])
    kinds = np.array([r[2] for r in data])
    prob = np.zeros(len(data))
    # a protective sentence is never read (attack_reader.protective): it counts as read at 0
    shielded = np.array([attack_reader.protective(r[4]) for r in data])
    for s in POISONING:
        train = (sets != s) & (labels >= 0)
        model = fit(sparse.vstack([x[train], xn]), np.concatenate([labels[train], np.zeros(xn.shape[0])]),
                    np.concatenate([np.where(labels[train] == 0, BENIGN_WEIGHT, 1.0), np.ones(xn.shape[0])]))
        prob[sets == s] = model.predict_proba(x[sets == s])[:, 1]
    prob[shielded] = 0.0
    train = labels >= 0
    final = fit(sparse.vstack([x[train], xn]), np.concatenate([labels[train], np.zeros(xn.shape[0])]),
                np.concatenate([np.where(labels[train] == 0, BENIGN_WEIGHT, 1.0), np.ones(xn.shape[0])]))
    p_usual = final.predict_proba(xo)[:, 1] * np.array([not attack_reader.protective(u) for u in usual])
    table: dict[str, object] = {}
    for t in THRESHOLDS:
        per: dict[str, str] = {}
        caught = attacks = held = benign = 0
        for s in POISONING:
            m = sets == s
            a = sorted(set(cases[m & (kinds == "attack")]))
            b = sorted(set(cases[m & (kinds == "benign")]))
            ca = sum(bool((prob[cases == c] >= t).any()) for c in a)
            fb = sum(bool((prob[cases == c] >= t).any()) for c in b)
            per[s] = f"attacks read {ca}/{len(a)}, benign held {fb}/{len(b)}"
            caught, attacks, held, benign = caught + ca, attacks + len(a), held + fb, benign + len(b)
        table[f"p>={t}"] = {"attacks_read": f"{caught}/{attacks}", "benign_held": f"{held}/{benign}",
                            "ordinary_sentences_read": f"{int((p_usual >= t).sum())}/{len(usual)}", "per_set": per}
    report: dict[str, object] = {"sentences": len(data), "payloads": int((labels == 1).sum()),
                                 "benign": int((labels == 0).sum()), "statement_negatives": len(neg),
                                 "leave_one_set_out": table}
    if write:
        w = [round(float(v), 5) for v in final.coef_[0]]
        body = json.dumps({"w": w, "b": round(float(final.intercept_[0]), 5), "sets": sorted(POISONING),
                           "negatives": NEGATIVES, "c": C, "benign_weight": BENIGN_WEIGHT,
                           "buckets": attack_reader.BUCKETS},
                          separators=(",", ":"))
        attack_reader.WEIGHTS.write_text(body)
        report["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the weights (engine/data/attack_reader.json)")
    print(json.dumps(main(ap.parse_args().write), indent=1, ensure_ascii=False))
