"""Research (issue #29 item 1): would a nearest-neighbour reader of sentence embeddings find the self-statements the
rules miss, on a set it was not tuned on? Leave-one-set-out over the DEV statement sets only (statements_v2 dev,
heldout_s17..s20): every user sentence of a case is labelled a statement (it holds one of the case's values) or
chatter; each set in turn is read with the others as exemplars. Reports, per held set and language, the rules'
recall (an offline candidate holds the value) beside the kNN reader's recall and precision at a few thresholds.

    python bench/derive_research/knn_statements.py [--embedder minilm|use|minilm+use] [--k 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memengine.engine.adapters.settings import Settings
from memengine.engine.derive import offline
from memengine.engine.derive.offline.structures import Turn
from memengine.engine.derive.offline.text import sentences
from memengine.engine.embedding.models import embedder_for_model

SETS = {"v2dev": "tests/data/statements_v2/dev.jsonl", "s17": "tests/data/heldout_s17/statements.jsonl",
        "s18": "tests/data/heldout_s18/statements.jsonl", "s19": "tests/data/heldout_s19/statements.jsonl",
        "s20": "tests/data/heldout_s20/statements.jsonl"}


def _rows(name: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for line in Path(SETS[name]).read_text().splitlines():
        if not line.strip() or line.startswith("//"):
            continue
        c = json.loads(line)
        values = [str(v).lower() for k in ("active", "stale", "kept") for v in c.get(k, [])]
        lang = "zh" if c.get("lang") in ("zh", "mixed") else "en"
        for si, sess in enumerate(c["sessions"]):
            turns = [Turn(event_id=f"e{si}{i}", seq=i + 1, role=t["role"], user_id="u", text=t["text"],
                          occurred_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=30 * si, minutes=i))
                     for i, t in enumerate(sess)]
            found = " ".join(x.text.lower() for x in offline.extract_memories(turns))
            for t in sess:
                if t["role"] != "user":
                    continue
                for s in sentences(t["text"]):
                    held = [v for v in values if v and v in s.lower()]
                    rows_value = held[0] if held else ""
                    out.append({"set": name, "lang": lang, "text": s, "pos": bool(held),
                                "type": (c.get("types") or ["FACT"])[0],
                                "rules": bool(rows_value) and rows_value in found})
    return out


async def main(embedder_name: str, k: int) -> dict[str, object]:
    rows = [r for name in SETS for r in _rows(name)]
    emb = embedder_for_model(Settings(), embedder_name)
    vecs = np.array(await emb.embed([str(r["text"]) for r in rows]), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
    report: dict[str, object] = {}
    for held in SETS:
        test = [i for i, r in enumerate(rows) if r["set"] == held]
        train = np.array([i for i, r in enumerate(rows) if r["set"] != held])
        sims = vecs[test] @ vecs[train].T
        for lang in ("en", "zh"):
            idx = [j for j, i in enumerate(test) if rows[i]["lang"] == lang]
            if not idx:
                continue
            pos = [j for j in idx if rows[test[j]]["pos"]]
            entry: dict[str, object] = {"sentences": len(idx), "statements": len(pos),
                                        "rules_recall": round(sum(bool(rows[test[j]]["rules"]) for j in pos)
                                                              / max(1, len(pos)), 3)}
            for thr in (0.5, 0.6, 0.7):
                flagged = []
                for j in idx:
                    top = np.argsort(-sims[j])[:k]
                    votes = [bool(rows[train[t]]["pos"]) for t in top if sims[j, t] >= thr]
                    if votes and sum(votes) > len(votes) / 2 and sum(votes) >= (k + 1) // 2:
                        flagged.append(j)
                tp = [j for j in flagged if rows[test[j]]["pos"]]
                missed_by_rules = [j for j in pos if not rows[test[j]]["rules"]]
                entry[f"knn@{thr}"] = {"recall": round(len(tp) / max(1, len(pos)), 3),
                                       "precision": round(len(tp) / max(1, len(flagged)), 3),
                                       "rules_misses_found": round(len(set(tp) & set(missed_by_rules))
                                                                   / max(1, len(missed_by_rules)), 3)}
            report[f"{held}/{lang}"] = entry
    return report


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", default="minilm+use")
    ap.add_argument("--k", type=int, default=5)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(main(a.embedder, a.k)), indent=1))
