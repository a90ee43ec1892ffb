"""Garbage-collector settings for a long-running engine process (``memengine up``; issue #13 item 6, the soak).

Measured in the soak (``bench/soak.py``, 1,000 turns/s, 3 min, bench/RESULTS.md "Soak"): with the interpreter's
defaults (generation-0 threshold 700) the projectors' batches (a fetched batch of up to ``batch_size`` messages,
their decoded events and SQL operations: tens of thousands of container objects alive for one batch) survive
young collections and get promoted, which triggers full collections every ~5 s; each scans every tracked object of
the process, the ~90k of its imported modules included. 44 full collections took 22 s of the 200 s (pauses up to
1.5 s on the loaded machine), and every pause stalls the event loop that the core projector, the recall projector
and the query handler share: it lands directly in the publish -> read model lag tail.

Two changes, applied once after start-up:

- ``gc.freeze()``: what start-up allocated (modules, the wiring, the servers' clients) is never garbage; moved to
  the permanent generation, no collection scans it again.
- a generation-0 threshold of ``GEN0_THRESHOLD`` (instead of 700): a batch's temporaries mostly die before a young
  collection runs, so far fewer are promoted and full collections become rare (soak: 25 young, 2 middle and no
  full collection in 3 minutes, GC time 3.4 s instead of 32 s). Memory cost: at most that many more objects alive
  between collections (a few MB).

Reference cycles are still collected (the collector is tuned, not disabled). Python's own guidance for
``gc.freeze``: https://docs.python.org/3/library/gc.html#gc.freeze (call after start-up, before the steady state).
"""

from __future__ import annotations

import gc

#: Generation-0 threshold of a tuned process (the interpreter's default is 700 allocations net of deallocations).
GEN0_THRESHOLD = 20_000


def tune_after_startup(gen0: int = GEN0_THRESHOLD) -> tuple[int, int, int]:
    """Collect once, freeze what survived (``gc.freeze``) and set the generation-0 threshold to ``gen0``, keeping
    the older generations' thresholds. ``gen0 <= 0`` changes nothing. Returns the thresholds as they were before,
    for ``restore``. Process-wide: call from a process entry point (``memengine up``), not from a library."""
    before = gc.get_threshold()
    if gen0 <= 0:
        return before
    gc.collect()
    gc.freeze()
    gc.set_threshold(gen0, before[1], before[2])
    return before


def restore(thresholds: tuple[int, int, int]) -> None:
    """Undo ``tune_after_startup``: thresholds back to ``thresholds``, frozen objects back into the oldest
    generation (``gc.unfreeze``)."""
    gc.set_threshold(*thresholds)
    gc.unfreeze()
