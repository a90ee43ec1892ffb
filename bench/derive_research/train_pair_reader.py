"""Train the offline deriver's learned change reader (``engine/derive/offline/change_reader.py``, issue #29 item 1:
"a change is recognised from what the new statement means and the item it contradicts, not from a list of verbs")
and write its weights to ``engine/data/change_reader.json``.

The question it answers: does a newer statement of the user's give a new value of the attribute an older statement
of theirs holds (a change: supersede), or is it about something else (keep both)?

Data: the statement sets we have read (``train_statement_reader.SETS``; never a test split or a set held back for a
blind figure). The weights in the repository were written in session 22 from the first eight of them (their
``sets``); with all twelve, leave one set out at 0.8 reads en precision 0.851 / recall 0.464 and zh 0.752 / 0.457,
and a quarter (en) to two fifths (zh) of the keep pairs as changes, so the weights were not written again and the
reader still reads only items kept in the user's words (session 25). Pairs of a case's user sentences, cut as the
deriver cuts them, that hold one of its values (``statements_suite.holds``):

- an update case (``stale`` values said in an earlier session, ``active`` ones in a later one): (old, new) is a
  change;
- a keep case (``kept`` and ``active`` values, both current): (earlier, later) is no change, the hard negative;
- a statement of one case with a statement of another case of the same language and set: no change (``RANDOM``
  such pairs for each change, the easy negatives the cosine bar of session 22 let through a third of the time).

Features (``change_reader.features``): the two sentences' multilingual USE vectors ``a``, ``b`` as ``a * b`` and
``|a - b|`` (symmetric) and their cosine. L2-regularised logistic regression, classes balanced, full-batch gradient
descent in numpy, fixed steps and a fixed seed for the random pairs: the same data gives the same weights.

Before writing, each set is read by a model trained on the others (leave one set out): precision / recall of
changes at a few thresholds, against the session-22 bar (USE cosine >= 0.15) on the same pairs.

    python bench/derive_research/train_pair_reader.py [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.derive_research.train_statement_reader import SETS  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline import sentences_en, use_vectors  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.change_reader import WEIGHTS, features  # noqa: E402 - after the sys.path line that makes the repo importable
from memengine.engine.derive.offline.text import clean_text  # noqa: E402 - after the sys.path line that makes the repo importable
from tests.integration.statements_suite import holds  # noqa: E402 - after the sys.path line that makes the repo importable

STEPS = 2000
RATE = 1.0
L2 = 1e-3
RANDOM = 4
SEED = 23
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def _statements(case: dict[str, object], values: list[str]) -> list[tuple[int, str]]:
    """``(session index, sentence)`` for each user sentence of ``case`` that holds one of ``values``."""
    out = []
    for i, sess in enumerate(case["sessions"]):  # type: ignore[arg-type] - a case's sessions are lists of turns
        for t in sess:
            if t["role"] != "user":
                continue
            for s in sentences_en.apart(t["text"]):
                sent = clean_text(s)
                if sent.strip() and any(v and holds(sent, v) for v in values):
                    out.append((i, sent))
    return out


def pairs() -> list[dict[str, object]]:
    """``{"set", "lang", "old", "new", "change"}`` for every pair (module docstring)."""
    rng = random.Random(SEED)
    out: list[dict[str, object]] = []
    for name, path in SETS.items():
        cases = [json.loads(line) for line in (ROOT / path).read_text().splitlines()
                 if line.strip() and not line.startswith("//")]
        pool: dict[str, list[tuple[str, str]]] = {"en": [], "zh": []}  # (case id, sentence)
        mine: list[dict[str, object]] = []
        for c in cases:
            lang = "zh" if c.get("lang") in ("zh", "mixed") else "en"
            every = _statements(c, [str(v) for k in ("active", "stale", "kept") for v in c.get(k, [])])
            pool[lang].extend((c["id"], s) for _, s in every)
            if c.get("kind") == "update" and c.get("stale"):
                olds = _statements(c, [str(v) for v in c["stale"]])
                news = _statements(c, [str(v) for v in c.get("active", [])])
                label = True
            elif c.get("kind") == "keep" and c.get("kept"):
                olds = _statements(c, [str(v) for v in c["kept"]])
                news = _statements(c, [str(v) for v in c.get("active", [])])
                label = False
            else:
                continue
            for i, o in olds:
                for j, n in news:
                    if j > i and o != n:
                        mine.append({"set": name, "lang": lang, "old": o, "new": n, "change": label,
                                     "case": c["id"], "hard": not label})
        for p in list(mine):
            if not p["change"]:
                continue
            others = [s for cid, s in pool[str(p["lang"])] if cid != p["case"]]
            for s in rng.sample(others, min(RANDOM, len(others))):
                mine.append({"set": name, "lang": p["lang"], "old": s, "new": p["new"], "change": False,
                             "case": p["case"], "hard": False})
        out.extend(mine)
    return out


def matrices(data: list[dict[str, object]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels (1 = change) and the USE cosine of each pair."""
    x, y, cos = [], [], []
    for p in data:
        a, b = use_vectors.vector(str(p["old"])), use_vectors.vector(str(p["new"]))
        assert a is not None and b is not None, "the embed-multilingual extra is needed"
        f = features(a, b)
        x.append(f)
        y.append(1.0 if p["change"] else 0.0)
        cos.append(f[2 * len(a)])
    return np.array(x), np.array(y), np.array(cos)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression, classes balanced: ``(weights, bias)``."""
    w, b = np.zeros(x.shape[1]), 0.0
    sw = np.where(y > 0, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    for _ in range(STEPS):
        g = (_sigmoid(x @ w + b) - y) * sw
        w -= RATE * (x.T @ g / len(y) + L2 * w)
        b -= RATE * float(g.mean())
    return w, b


def _pr(pred: np.ndarray, y: np.ndarray, hard: np.ndarray) -> dict[str, float]:
    tp = float((pred & (y > 0)).sum())
    return {"precision": round(tp / max(1, pred.sum()), 3), "recall": round(tp / max(1, (y > 0).sum()), 3),
            "false_random": round(float((pred & (y == 0) & ~hard).sum()) / max(1, ((y == 0) & ~hard).sum()), 3),
            "false_keep": round(float((pred & hard).sum()) / max(1, hard.sum()), 3)}


def leave_one_out(data: list[dict[str, object]], x: np.ndarray, y: np.ndarray,
                  cos: np.ndarray) -> dict[str, dict[str, object]]:
    """Per language: each set read by a model trained on the others, pooled; the cosine bar beside it."""
    sets = np.array([p["set"] for p in data])
    langs = np.array([p["lang"] for p in data])
    hard = np.array([bool(p["hard"]) for p in data])
    prob = np.zeros(len(y))
    for s in SETS:
        held = sets == s
        if not held.any() or (y[~held] > 0).sum() == 0:
            continue
        w, b = fit(x[~held], y[~held])
        prob[held] = _sigmoid(x[held] @ w + b)
    out: dict[str, dict[str, object]] = {}
    for lang in ("en", "zh"):
        m = langs == lang
        out[lang] = {"pairs": int(m.sum()), "changes": int((y[m] > 0).sum()), "keeps": int(hard[m].sum()),
                     "cosine>=0.15": _pr(cos[m] >= 0.15, y[m], hard[m]),
                     **{f"p>={t}": _pr(prob[m] >= t, y[m], hard[m]) for t in THRESHOLDS},
                     **{f"p>={t}&cosine>=0.15": _pr((prob[m] >= t) & (cos[m] >= 0.15), y[m], hard[m])
                        for t in (0.4, 0.5, 0.6)}}
    return out


def main(write: bool) -> dict[str, object]:
    data = pairs()
    x, y, cos = matrices(data)
    report: dict[str, object] = {"pairs": len(data), "changes": int(y.sum()),
                                 "leave_one_set_out": leave_one_out(data, x, y, cos)}
    if write:
        w, b = fit(x, y)
        body = json.dumps({"w": [round(float(v), 6) for v in w], "b": round(b, 6), "sets": sorted(SETS),
                           "steps": STEPS, "l2": L2, "random": RANDOM, "seed": SEED}, separators=(",", ":"))
        WEIGHTS.write_text(body)
        report["sha256"] = hashlib.sha256(body.encode()).hexdigest()
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the weights (engine/data/change_reader.json)")
    print(json.dumps(main(ap.parse_args().write), indent=1))
