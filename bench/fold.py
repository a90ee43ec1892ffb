"""Per-event Python cost of decode + fold on the facts path (issue #13 item 1), no servers involved.

For each turn: ``events.decode`` of its bytes, the runner's ``content_digest`` (dedupe), the core folds
(``thread_activity``, ``messages``, ``tombstones``) and the client-side encoding of the bulk parameters
(``SqlOp.rows`` documents, else asyncpg's column arrays, transposed here). Reports the best of ``--rounds`` in
microseconds per event: ``decode`` alone, ``cold`` (token-count memo emptied before the round: every text new to
the process) and ``warm`` (the memo kept from the previous round: a rebuild of repeated texts).

    python bench/fold.py [--data synthetic|PATH_TO_LOCOMO.json ...] [--rounds 7] [--json]

The LoCoMo files are read where they lie (e.g. /work/shared/data/locomo-dev/26.json); nothing is copied.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import msgspec
from _common import machine, synthetic_turns

import memengine.projections.tokens as tokens
from memengine.engine.ops.ingest import read_locomo
from memengine.events import TurnRecorded, content_digest, decode, encode
from memengine.projections.ops import FoldConfig, Position, SqlOp
from memengine.projections.registry import PROJECTIONS, handlers_for

_rows = msgspec.json.Encoder()


def payloads(data: list[str]) -> list[bytes]:
    if data == ["synthetic"]:
        return [encode(t) for t in synthetic_turns(2000, threads=50)]
    return [encode(e) for path in data for e in read_locomo(path, "t1") if isinstance(e, TurnRecorded)]


def fold_all(items: list[bytes], cfg: FoldConfig, *, decode_only: bool = False) -> None:
    folds = handlers_for(TurnRecorded, PROJECTIONS)
    ops: list[SqlOp] = []
    for seq, data in enumerate(items, start=1):
        ev = decode(data)
        if decode_only:
            continue
        content_digest(ev)
        pos = Position(seq, "s")
        for _, fold in folds:
            ops.extend(fold(ev, pos, cfg))
    runs: dict[str, list[SqlOp]] = {}
    for op in ops:
        runs.setdefault(op.sql, []).append(op)
    for run in runs.values():
        if getattr(run[0], "rows", False):
            _rows.encode([op.args for op in run]).decode()
        else:
            [list(col) for col in zip(*(op.args for op in run), strict=True)]


def main(data: list[str], rounds: int) -> dict[str, object]:
    items = payloads(data)
    cfg = FoldConfig()
    fold_all(items, cfg)  # loads the tokenizer
    best: dict[str, float] = {}
    for _ in range(rounds):
        for stage in ("decode", "cold", "warm"):
            if stage != "warm" and hasattr(tokens, "_counts"):
                tokens._counts.clear()
            t0 = time.perf_counter()
            fold_all(items, cfg, decode_only=stage == "decode")
            us = (time.perf_counter() - t0) / len(items) * 1e6
            best[stage] = min(best.get(stage, us), us)
    return {"bench": "fold", "data": data, "events": len(items),
            **{f"{k}_us_per_event": round(v, 1) for k, v in best.items()}, "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["synthetic"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = main(a.data, a.rounds)
    if a.json:
        json.dump(result, sys.stdout)
        print()
    else:
        for k, v in result.items():
            print(f"{k:>22}: {v}")
