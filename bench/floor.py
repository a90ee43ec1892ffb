"""The floor under ingest and rebuild: the raw yardsticks chained, with no memengine code between them.

Issue #13 asks ingest (publish -> projected into ``messages``) for >= 0.5 of a raw publish and a rebuild for >= 0.5 of
a raw ordered replay, on this 2-core machine. Any implementation of either moves each turn through at least these
steps, so their CPU per turn, added up, bounds what the two cores can do, whatever memengine's own code costs:

- ``publish``: plain nats-py ``publish_async`` of the turns (the encoded ``TurnRecorded`` bytes, the Nats-Msg-Id
  header) to a bare JetStream stream, acks awaited (the ingest bench's yardstick);
- ``consume``: a plain nats-py ordered consumer receiving them all, nothing decoded (the rebuild bench's yardstick);
- ``copy_messages``: binary ``COPY`` (asyncpg ``copy_records_to_table``) of the rows the messages fold makes of those
  turns (values prepared beforehand: no decode, no fold, no tokenizer) into a table created ``LIKE messages INCLUDING
  ALL`` (same keys and indexes), one transaction per ``--batch`` rows;
- ``copy_applied``: the same for the exactly-once dedupe's ``applied_events`` row of each event (a fold must record
  which event ids it applied, DESIGN.md "Projector contract");
- ``copy_recall``: the least a full-text recall row needs: binary ``COPY`` of each turn's piece (``speaker: text``,
  as ``projections.vectors.texts`` makes it) into a table whose one ``tsvector`` column PostgreSQL computes from it
  (``to_tsvector('english', piece)``, generated) under a GIN index, keyed like ``memory_vectors``. The real recall row
  also has the window columns, a second GIN, five B-trees and its predecessors' window updates: more, never less.

Each step runs alone and is measured with ``bench/_cpu.py`` (this process, PostgreSQL's backends, nats-server); its
``us_per_turn`` is their CPU microseconds per turn. Then, for 2 cores (``--cores``):

- ``ingest_floor_per_s`` = cores / (publish + consume + copy_messages + copy_applied), and its ratio to the raw
  publish rate of the same run;
- ``ingest_recall_floor_per_s``: the same with ``copy_recall`` added (memengine folds the recall rows beside the
  transcript on the same cores; ``bench/ingest.py`` runs both);
- ``rebuild_floor_per_s`` = cores / (consume + copy_messages + copy_applied), and its ratio to the raw replay rate
  (``bench/rebuild.py`` rebuilds the core read models, no recall rows).

These are upper bounds for a perfect pipeline that overlaps every step and spends nothing between them: the real
one also decodes, validates, folds, counts tokens, writes ``thread_activity`` and (ingest) the recall rows.

    python bench/floor.py --turns 50000 [--batch 1000] [--cores 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from typing import Any

import msgspec
from _common import bench_settings, machine, raw_publish, raw_replay_rate, synthetic_turns
from _cpu import CpuSplit, per_unit
from nats.js.api import StreamConfig

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import lifespan
from memengine.events import content_digest, encode, msg_id
from memengine.projections.messages import on_turn_recorded
from memengine.projections.ops import FoldConfig, Position
from memengine.projections.vectors import texts

THREADS = 50
STREAM, SUBJECT = "FLOORBENCH", "floorbench"


def _ours(step: dict[str, Any]) -> float:
    """CPU us per unit of the processes the step runs in (this one, PostgreSQL, nats-server), not the rest."""
    return round(sum(g["us_per_unit"] for name, g in step["groups"].items() if name != "other"), 1)


async def copy_rows(engine: Any, table: str, columns: list[str], rows: list[tuple[Any, ...]], batch: int) -> float:
    t0 = time.perf_counter()
    async with engine.pool.acquire() as conn:
        for i in range(0, len(rows), batch):
            async with conn.transaction():
                await conn.copy_records_to_table(table, records=rows[i:i + batch], columns=columns)
    return len(rows) / (time.perf_counter() - t0)


def message_rows(turns: list[Any]) -> list[tuple[Any, ...]]:
    """The messages fold's row for each turn, as COPY takes it (the fold's JSON id lists as lists)."""
    cfg = FoldConfig()
    out = []
    for seq, t in enumerate(turns, 1):
        a = list(on_turn_recorded(t, Position(seq, ""), cfg)[0].args)
        a[13], a[14] = msgspec.json.decode(a[13]), msgspec.json.decode(a[14])
        out.append(tuple(a))
    return out


MESSAGE_COLUMNS = ["tenant_id", "thread_id", "seq", "event_id", "role", "user_id", "session_id", "occurred_at",
                   "content", "content_condensed", "text", "tokens_full", "tokens_condensed", "tool_use_ids",
                   "tool_result_ids", "metadata"]


async def main(n: int, batch: int, cores: float) -> dict[str, Any]:
    configure_logging("warning")
    turns = synthetic_turns(n, threads=THREADS)
    payloads = [(f"t{i % THREADS}", d, msg_id(t.tenant_id, t.event_id, d))
                for i, t in enumerate(turns) for d in (encode(t),)]
    msg_rows = message_rows(turns)
    applied_rows = [("core", t.tenant_id, t.event_id, seq, content_digest(t)) for seq, t in enumerate(turns, 1)]
    suffix = uuid.uuid4().hex[:8]
    msg_table, applied_table = f"floor_messages_{suffix}", f"floor_applied_{suffix}"
    recall_table = f"floor_recall_{suffix}"
    recall_rows = [(t.tenant_id, t.thread_id, seq, texts(t)[1]) for seq, t in enumerate(turns, 1)]
    steps: dict[str, dict[str, Any]] = {}
    rates: dict[str, float] = {}
    async with lifespan(bench_settings(), roles=set()) as engine:
        await engine.js.add_stream(StreamConfig(name=STREAM, subjects=[SUBJECT + ".>"], duplicate_window=86400))
        try:
            await engine.pool.execute(f"CREATE TABLE {msg_table} (LIKE messages INCLUDING ALL)")
            await engine.pool.execute(f"CREATE TABLE {applied_table} (LIKE applied_events INCLUDING ALL)")
            await engine.pool.execute(
                f"CREATE TABLE {recall_table} (tenant_id text NOT NULL, thread_id text NOT NULL, seq bigint NOT NULL,"
                " piece text NOT NULL, tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', piece)) STORED,"
                " PRIMARY KEY (tenant_id, thread_id, seq))")
            await engine.pool.execute(f"CREATE INDEX ON {recall_table} USING gin (tsv)")
            for name, run in (
                    ("publish", lambda: raw_publish(engine.js, payloads, SUBJECT)),
                    ("consume", lambda: raw_replay_rate(engine, n, stream=STREAM, subject=f"{SUBJECT}.>")),
                    ("copy_messages", lambda: copy_rows(engine, msg_table, MESSAGE_COLUMNS, msg_rows, batch)),
                    ("copy_applied", lambda: copy_rows(engine, applied_table,
                                                       ["projector", "tenant_id", "event_id", "seq", "digest"],
                                                       applied_rows, batch)),
                    ("copy_recall", lambda: copy_rows(engine, recall_table, ["tenant_id", "thread_id", "seq", "piece"],
                                                      recall_rows, batch))):
                async with CpuSplit(engine, every=0.2) as split:
                    rates[name] = await run()
                steps[name] = per_unit(split.result(), n)
        finally:
            await engine.pool.execute(f"DROP TABLE IF EXISTS {msg_table}, {applied_table}, {recall_table}")
            await engine.js.delete_stream(STREAM)
    us = {name: _ours(step) for name, step in steps.items()}
    ingest_us = us["publish"] + us["consume"] + us["copy_messages"] + us["copy_applied"]
    rebuild_us = us["consume"] + us["copy_messages"] + us["copy_applied"]
    ingest_floor, rebuild_floor = cores * 1e6 / ingest_us, cores * 1e6 / rebuild_us
    recall_floor = cores * 1e6 / (ingest_us + us["copy_recall"])
    return {
        "bench": "floor", "turns": n, "batch": batch, "cores": cores,
        "rate_per_s": {k: round(v) for k, v in rates.items()},
        "us_per_turn": us,
        "ingest_floor_per_s": round(ingest_floor),
        "ingest_floor_ratio_to_raw": round(ingest_floor / rates["publish"], 3),
        "ingest_recall_floor_per_s": round(recall_floor),
        "ingest_recall_floor_ratio_to_raw": round(recall_floor / rates["publish"], 3),
        "rebuild_floor_per_s": round(rebuild_floor),
        "rebuild_floor_ratio_to_raw": round(rebuild_floor / rates["consume"], 3),
        "steps": steps, "machine": machine(),
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=1000, help="rows per COPY transaction")
    ap.add_argument("--cores", type=float, default=2.0, help="cores the floor is computed for")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = asyncio.run(main(args.turns, args.batch, args.cores))
    if args.json:
        print(json.dumps(out))
    else:
        print(f"CPU us per turn (this process + PostgreSQL + nats-server): {out['us_per_turn']}")
        print(f"rates/s: {out['rate_per_s']}")
        print(f"ingest floor on {args.cores:g} cores: {out['ingest_floor_per_s']:,}/s = "
              f"{out['ingest_floor_ratio_to_raw']} of raw publish; with the recall rows "
              f"{out['ingest_recall_floor_per_s']:,}/s = {out['ingest_recall_floor_ratio_to_raw']}")
        print(f"rebuild floor on {args.cores:g} cores: {out['rebuild_floor_per_s']:,}/s = "
              f"{out['rebuild_floor_ratio_to_raw']} of raw replay")
