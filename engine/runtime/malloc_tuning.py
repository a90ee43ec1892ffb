"""C allocator settings for a long-running engine process (``memengine up``; issue #13 item 6, the soak's RSS).

What the soak showed (``bench/soak.py``, 1,000 turns/s, bench/RESULTS.md "Soak, session 7"): the process's RSS
rises in steps with minutes flat between them, all of it anonymous memory (the mapped files stay flat), while
glibc's heap (``mallinfo2``: 33-38 MB taken, ~28 MB in use) stays flat; the steps follow Python's own objects
(pymalloc blocks) and the largest batches in flight. Settings applied once after start-up, so that freed memory
at least never accumulates in the C heap:

- a periodic ``malloc_trim(0)`` from the event loop (every ``MEMENGINE_MALLOC_TRIM_S``, default 10 s): returns the
  free pages at the top of the heap *and* whole free pages inside it (``MADV_DONTNEED``) to the kernel, so a
  high-water mark of freed chunks does not stay resident (``tests/unit/engine/runtime/test_malloc_tuning.py``: a 64 MB
  hole goes back). One call that walks the free lists: 0.1 ms with nothing to return, ~3 ms after 64 MB was freed
  beside a 30 MB live heap (measured here), i.e. at most 0.03 % of the event loop's time at 10 s.
- optionally ``mallopt(M_ARENA_MAX, n)`` (``MEMENGINE_MALLOC_ARENA_MAX``, default 0 = glibc's own cap of 8 x
  cores): fewer per-thread arenas for processes whose worker threads allocate a lot. Off by default: the soak's
  arenas stayed at 33-38 MB with or without it.

What it does not bound: Python objects that stay alive (pymalloc's blocks), the larger part of the process.

glibc only (``mallinfo2`` needs glibc >= 2.33); elsewhere every function here is a no-op that says so. References:
mallopt(3), malloc_trim(3), mallinfo2(3) (the Linux man-pages project).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
from typing import Any

#: mallopt(3) parameter number of M_ARENA_MAX (glibc malloc.h).
M_ARENA_MAX = -8
#: Default seconds between two ``malloc_trim(0)`` calls; 0 disables the trimmer.
TRIM_INTERVAL_S = 10.0


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


@functools.cache
def _libc() -> Any | None:
    """glibc, or None where the C library is another (musl, macOS): then nothing here applies."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
        lib.mallinfo2.restype = _Mallinfo2
        lib.malloc_trim.argtypes = [ctypes.c_size_t]
        lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return lib


def available() -> bool:
    """Whether this process runs on a glibc that has ``mallinfo2``, ``malloc_trim`` and ``mallopt``."""
    return _libc() is not None


def stats() -> dict[str, int] | None:
    """The main numbers of ``mallinfo2()``, bytes: ``arena`` (heap taken from the kernel with brk/mmap'ed arenas),
    ``in_use`` (allocated chunks), ``free`` (free chunks kept by the allocator), ``mmapped`` (large blocks served by
    their own mmap), ``top_pad`` (``keepcost``: releasable at the top of the main heap). None without glibc."""
    lib = _libc()
    if lib is None:
        return None
    m = lib.mallinfo2()
    return {"arena": m.arena, "in_use": m.uordblks, "free": m.fordblks, "mmapped": m.hblkhd, "top_pad": m.keepcost}


def trim() -> bool:
    """``malloc_trim(0)``: give free memory back to the kernel. True if some was released; False if none was or
    without glibc."""
    lib = _libc()
    return bool(lib is not None and lib.malloc_trim(0))


def cap_arenas(n: int) -> bool:
    """``mallopt(M_ARENA_MAX, n)``; ``n <= 0`` changes nothing. True if glibc accepted it. Process-wide: call from a
    process entry point, not from a library."""
    lib = _libc()
    return bool(n > 0 and lib is not None and lib.mallopt(M_ARENA_MAX, n))


async def trim_periodically(interval_s: float = TRIM_INTERVAL_S) -> None:
    """Call ``trim()`` every ``interval_s`` seconds until cancelled; returns at once if ``interval_s <= 0`` or
    without glibc. Runs on the event loop (one short C call; no thread, which would make an arena of its own)."""
    if interval_s <= 0 or not available():
        return
    while True:
        await asyncio.sleep(interval_s)
        trim()
