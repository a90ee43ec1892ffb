"""C allocator settings for a long-running engine process (``memengine up``; issue #13 item 6, the soak's RSS).

What the soak showed (``bench/soak.py``, 1,000 turns/s, bench/RESULTS.md "Soak: the allocator's high-water marks"):
the process's RSS rose in steps with minutes flat between them while the Python heap (tracemalloc) did not grow
with the turns folded. The steps are glibc's: memory that the projectors' batches (fetched NATS messages, decoded
events, SQL arguments: megabytes of short-lived ``bytes`` per batch) freed stays in the allocator's arenas, and
each larger batch in flight raises the high-water mark. Two settings, applied once after start-up:

- ``mallopt(M_ARENA_MAX, n)``: glibc gives each thread that allocates concurrently an arena of its own (up to
  8 x cores); the worker threads (``asyncio.to_thread``: embedding, decoding) each keep a partly empty heap. A small
  cap makes them share, so freed memory is reused instead of kept per thread (the same remedy as the
  ``MALLOC_ARENA_MAX`` environment variable, which must be set before the process starts; ``mallopt`` works after).
- a periodic ``malloc_trim(0)`` from the event loop (every ``trim_s`` seconds): returns the free pages at the top
  of the heap *and* whole free pages inside it (``MADV_DONTNEED``) to the kernel, so a high-water mark does not stay
  resident. It costs one call that walks the arenas' free lists (well under a millisecond at this process's size).

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
#: Default arena cap of a tuned process.
ARENA_MAX = 2
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


def cap_arenas(n: int = ARENA_MAX) -> bool:
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
