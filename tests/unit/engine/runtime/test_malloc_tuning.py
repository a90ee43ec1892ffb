"""The long-running process's C allocator settings (engine.runtime.malloc_tuning, issue #13 item 6): freed heap
memory goes back to the kernel when trimmed, the trimmer runs on the loop, the arena cap is accepted; configured
by ``MEMENGINE_MALLOC_TRIM_S`` and ``MEMENGINE_MALLOC_ARENA_MAX``."""

from __future__ import annotations

import asyncio
import ctypes
import time
from pathlib import Path

import pytest

from memengine.engine.adapters.settings import Settings, SettingsError
from memengine.engine.runtime import malloc_tuning

glibc = pytest.mark.skipif(not malloc_tuning.available(), reason="needs glibc's mallinfo2 / malloc_trim")

_MB = 1024 * 1024


def _rss_anon_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def _freed_heap_hole(mb: int = 64) -> list[ctypes.Array[ctypes.c_char]]:
    """Allocate ``mb`` MB in 4 KB malloc chunks (above pymalloc's 512-byte limit, below the mmap threshold, so
    they come from the heap), touch them, and free all but every 64th: holes of 252 KB between live chunks, which
    free() alone cannot give back (it only trims the top of the heap). Returns the live chunks; keep them alive."""
    chunks = [ctypes.create_string_buffer(b"x" * 4000, 4096) for _ in range(mb * 256)]
    pins = chunks[::64]
    del chunks
    return pins


@glibc
def test_trim_gives_a_freed_hole_back_to_the_kernel() -> None:
    pin = _freed_heap_hole()
    before = _rss_anon_mb()
    malloc_tuning.trim()
    after = _rss_anon_mb()
    assert pin
    # without the trim the hole stays resident (glibc keeps freed chunks below the top of the heap)
    assert before - after >= 16, (before, after)


@glibc
async def test_the_periodic_trimmer_runs_on_the_loop() -> None:
    pin = _freed_heap_hole()
    before = _rss_anon_mb()
    task = asyncio.create_task(malloc_tuning.trim_periodically(0.05))
    try:
        deadline = time.monotonic() + 10
        while before - _rss_anon_mb() < 16 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert before - _rss_anon_mb() >= 16
    finally:
        task.cancel()
    assert pin


async def test_no_interval_no_trimmer() -> None:
    await asyncio.wait_for(malloc_tuning.trim_periodically(0), timeout=1)  # returns at once


@glibc
def test_stats_and_arena_cap() -> None:
    got = malloc_tuning.stats()
    assert got is not None and set(got) == {"arena", "in_use", "free", "mmapped", "top_pad"}
    assert got["in_use"] > _MB  # this interpreter has allocated more than a megabyte
    assert malloc_tuning.cap_arenas(0) is False
    assert malloc_tuning.cap_arenas(8) is True  # glibc's own default cap for 1 core; harmless in the test process


def test_settings_from_the_environment() -> None:
    default = Settings.from_env(env={"MEMENGINE_HOME": "/h"})
    assert (default.malloc_trim_s, default.malloc_arena_max) == (malloc_tuning.TRIM_INTERVAL_S, 0)
    set_ = Settings.from_env(env={"MEMENGINE_HOME": "/h", "MEMENGINE_MALLOC_TRIM_S": "0",
                                  "MEMENGINE_MALLOC_ARENA_MAX": "2"})
    assert (set_.malloc_trim_s, set_.malloc_arena_max) == (0, 2)
    for var in ("MEMENGINE_MALLOC_TRIM_S", "MEMENGINE_MALLOC_ARENA_MAX"):
        with pytest.raises(SettingsError) as info:
            Settings.from_env(env={"MEMENGINE_HOME": "/h", var: "-1"})
        assert var in str(info.value)
