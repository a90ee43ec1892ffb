"""Projector groups in separate processes (issue #13 item 1): ``memengine up --projectors core,derived`` folds the
transcript and leaves the recall rows alone; ``up --projectors recall`` folds those (on other cores or machines), a
second process naming the same group stands by and takes over when the first dies, and the read models equal a
clean fold of the same log."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import msgspec
import pytest

from memengine.engine.adapters.settings import Settings
from memengine.engine.bootstrap import lifespan
from tests.integration.folds import diff, live_and_clean
from tests.integration.procs import conversation, hello, memengine_up, publish_retrying, stop_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_recall_rows_folded_by_their_own_process(settings: Settings, make_db, tmp_path: Path) -> None:
    settings = msgspec.structs.replace(settings, batch_size=100)
    events = conversation(600, threads=8, tag="groups")
    first, second = events[:400], events[400:]
    first_turns = sum(1 for e in first if type(e).__name__ == "TurnRecorded")
    logs = {k: tmp_path / f"{k}.log" for k in ("core", "recall", "standby")}
    procs = {}
    async with lifespan(settings, roles=set()) as engine:

        async def checkpoint(name: str) -> int:
            return int(await engine.pool.fetchval(
                "SELECT coalesce(min(last_seq), 0) FROM projection_checkpoints WHERE projection = $1", name))

        async def until(pred, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
            deadline = asyncio.get_running_loop().time() + timeout
            while not await pred():
                assert asyncio.get_running_loop().time() < deadline, _tails(logs)
                for p in procs.values():
                    assert p.poll() is None or p is procs.get("recall"), _tails(logs)
                await asyncio.sleep(0.05)

        async def rows(table: str) -> int:
            return int(await engine.pool.fetchval(f"SELECT count(*) FROM {table}"))

        try:
            procs["core"] = memengine_up(settings, logs["core"], "--role", "projector", "--projectors", "core,derived")
            await until(lambda: _said(logs["core"]))
            assert hello(logs["core"])["projectors"] == ["core", "derived"]  # type: ignore[index]
            stats: dict = {}
            await publish_retrying(engine.js, engine.subjects, first, stats=stats)
            last = stats["last_seq"]
            await until(lambda: _at(checkpoint("messages"), last))
            # the core process folded the transcript and not one recall row
            assert await rows("messages") == first_turns
            assert await rows("memory_vectors") == 0
            assert await checkpoint("vectors") == 0

            procs["recall"] = memengine_up(settings, logs["recall"], "--role", "projector", "--projectors", "recall")
            await until(lambda: _at(checkpoint("vectors"), last))
            assert hello(logs["recall"])["projectors"] == ["recall"]  # type: ignore[index]
            assert await rows("memory_vectors") == first_turns

            # a second recall process stands by behind the first's lock, then takes the group over when it dies
            procs["standby"] = memengine_up(settings, logs["standby"], "--role", "projector", "--projectors",
                                            "recall")
            await until(lambda: _said(logs["standby"], "projector standing by"))
            procs["recall"].send_signal(signal.SIGKILL)
            procs["recall"].wait()
            stats = {}
            await publish_retrying(engine.js, engine.subjects, second, stats=stats)
            last = stats["last_seq"]
            await until(lambda: _at(checkpoint("vectors"), last), timeout=90)
            await until(lambda: _at(checkpoint("messages"), last))
        finally:
            for p in procs.values():
                stop_process(p)
        live, live_recall, clean, clean_recall = await live_and_clean(engine.js, settings, await make_db())
    turns = sum(1 for e in events if type(e).__name__ == "TurnRecorded")
    assert len(live["messages"]) == turns and len(live_recall["memory_vectors"]) == turns
    assert diff(live, clean) == ""
    assert diff(live_recall, clean_recall) == ""


async def _said(log: Path, text: str = '{"event":"up"') -> bool:
    return log.exists() and text in log.read_text()


async def _at(position, last: int) -> bool:  # type: ignore[no-untyped-def]
    return int(await position) >= last


def _tails(logs: dict[str, Path]) -> str:
    return "\n".join(f"--- {k}\n{p.read_text()[-1500:] if p.exists() else ''}" for k, p in logs.items())
