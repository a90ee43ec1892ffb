"""One worker process of a parallel rebuild (issue #13 item 2; engine/ops/rebuild_parallel.py holds the design).

Run by the rebuild, never by hand: ``python -m memengine.engine.ops.rebuild_worker`` with a ``WorkerSpec`` as one
JSON line on stdin; stdin then stays open as the worker's lifeline (EOF: the parent died, exit at once). The worker
connects to NATS and PostgreSQL itself (its own ordered durable consumer and connection pool: the fold's Python runs in
this process, beside the other workers, so the rebuild scales with cores), folds its share of the facts stream up to
``until`` into the shadow schema with the ordinary ``ProjectorRunner``, and writes its bookkeeping (checkpoints, applied
event ids, dead letters) in its own schema ``bookkeeping``, which the parent merges. On stdout it writes one JSON object
a line: ``{"group", "done", "target"}`` progress (at most every 0.2 s and at the end of each group), then
``{"events": {group: n}}``. Any failure: traceback on stderr, exit status 1.

The share: the worker folds the events whose (tenant, thread) hashes to it (``worker_of``), decided from the
subject without decoding the body. Every fold of the facts groups is keyed by (tenant, thread) (projections/
registry.py: thread_activity, messages, tombstones, memory_vectors), so a thread's events stay in stream order in
one worker and the shares never write the same row.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import traceback
import zlib
from collections.abc import Callable

import asyncpg
import msgspec

from memengine.engine.adapters import jetstream as bus
from memengine.engine.adapters.logs import configure_logging
from memengine.engine.ops.scratch import SCRATCH_ANALYZE_TARGET
from memengine.engine.runtime.groups import GROUPS
from memengine.engine.runtime.runner import ProjectorRunner
from memengine.events import StreamNames, Subjects
from memengine.projections.ops import FoldConfig
from memengine.projections.registry import by_name


class WorkerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What one worker folds: ``groups`` (``{group: [projection names]}``, facts groups only) of the log up to
    stream sequence ``until``, the share ``worker`` of ``workers``; servers (``nats_url``, ``dsn``), naming
    (``subject_root``, ``stream_prefix``), ``batch_size`` and ``condensed_tool_max`` (the fold config, as the
    serial fold's: ``Settings``; no secret travels), the ``shadow`` schema written and the worker's ``bookkeeping``
    schema; ``consumer_prefix`` of its durable consumers (``<prefix><group>-w<i>``); ``filter_subjects``: the
    subjects of its share when the parent could list them (``rebuild_parallel.share_filters``), else ``None``
    (the consumer delivers every fact and the worker skips the others' by subject)."""

    nats_url: str
    dsn: str
    subject_root: str
    stream_prefix: str
    batch_size: int
    condensed_tool_max: int
    groups: dict[str, list[str]]
    worker: int
    workers: int
    until: int
    shadow: str
    bookkeeping: str
    consumer_prefix: str
    filter_subjects: list[str] | None = None


def worker_of(subject: str, prefix_len: int, workers: int) -> int:
    """The worker (``0..workers-1``) owning a stored fact subject ``<root>.fact.<tenant>.<thread>.<type>[.<p>]``:
    crc32 of ``<tenant>.<thread>`` modulo ``workers``. ``prefix_len`` is ``len("<root>.fact.")``. The same key as
    the facts partitions (``Subjects.partition_transform``: tenant and thread), another hash: a worker's share is
    independent of the stream's partition count, so one design serves both kinds of stream."""
    rest = subject[prefix_len:]
    cut = rest.find(".", rest.find(".") + 1)
    return zlib.crc32(rest[:cut].encode()) % workers


def share(subjects: Subjects, worker: int, workers: int) -> Callable[[str], bool]:
    """The predicate "this stored subject is worker ``worker``'s" (``ProjectorRunner(only=...)``)."""
    prefix_len = len(f"{subjects.root}.fact.")
    return lambda subject: worker_of(subject, prefix_len, workers) == worker


class _Lines:
    """Progress lines on stdout, at most one per ``every`` seconds per group (and always the last)."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.last = 0.0

    def emit(self, obj: dict[str, object], *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.every:
            self.last = now
            sys.stdout.write(msgspec.json.encode(obj).decode() + "\n")
            sys.stdout.flush()


async def run_worker(spec: WorkerSpec) -> dict[str, int]:
    """Fold this worker's share of each group in ``spec``; returns ``{group: events applied}``. Raises whatever
    the fold raises (the parent reports it and drops the shadow)."""
    s = spec
    subjects = Subjects(s.subject_root)
    streams = StreamNames.for_prefix(s.stream_prefix)
    nc = await bus.connect(spec.nats_url, name=f"memengine-rebuild-w{spec.worker}")
    pool = await asyncpg.create_pool(spec.dsn, min_size=1, max_size=4, server_settings={
        "jit": "off", "synchronous_commit": "off",  # a lost scratch fold is simply started again (rebuild.py)
        "application_name": f"memengine-rebuild-w{spec.worker}",  # pg_stat_activity names the worker's sessions
        "search_path": f'"{spec.bookkeeping}","{spec.shadow}",public'})
    lines = _Lines()
    events: dict[str, int] = {}
    try:
        js = nc.jetstream()
        for group, names in spec.groups.items():
            name = f"{spec.consumer_prefix}{group}-w{spec.worker}"
            source = GROUPS[group].source(streams, subjects)
            runner = ProjectorRunner(
                name=name, projections=by_name(names), nc=nc, js=js, pool=pool, streams=streams, subjects=subjects,
                fold_config=FoldConfig(condensed_tool_max=s.condensed_tool_max), batch_size=max(s.batch_size, 2000),
                source=source, publish_dead_letters=False, until_seq=spec.until,
                only=share(subjects, spec.worker, spec.workers), analyze_target=SCRATCH_ANALYZE_TARGET,
                # the shadow runner's dedupe key: the parent merges these rows into the shadow as they are
                dedupe_as=f"{spec.consumer_prefix}{group}", filter_subjects=spec.filter_subjects)
            if not await runner.try_start():
                raise RuntimeError(f"another process is folding {name}")
            def report(done: int, target: int, g: str = group) -> None:
                lines.emit({"group": g, "done": done, "target": target})

            try:
                await runner.catch_up(progress=report)
            finally:
                await runner.stop()
                try:
                    await js.delete_consumer(source.stream, name)
                except Exception:  # noqa: BLE001 - the parent drops leftover rebuild consumers too
                    pass
            lines.emit({"group": group, "done": runner.stats.last_seq, "target": spec.until}, force=True)
            events[group] = runner.stats.events
    finally:
        await pool.close()
        await nc.close()
    lines.emit({"events": events}, force=True)
    return events


def _lifeline() -> None:
    """Exit at once when stdin closes: the parent keeps it open while it supervises, so a rebuild killed with -9
    takes its workers with it (an orphan would go on writing into the next rebuild's shadow schema)."""
    sys.stdin.buffer.read()
    os._exit(3)


def main() -> None:
    """Entry point: the spec on stdin, progress and the result on stdout (see the module docstring)."""
    configure_logging("warning", json_lines=True)  # on stderr: stdout carries the progress lines
    spec = msgspec.json.decode(sys.stdin.buffer.readline(), type=WorkerSpec)
    threading.Thread(target=_lifeline, daemon=True).start()
    # os._exit either way: the lifeline thread is blocked reading stdin, and interpreter shutdown with it would abort
    try:
        asyncio.run(run_worker(spec))
    except BaseException:  # noqa: BLE001 - reported on stderr, the exit status tells the parent
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
