"""The lifecycle of a memory item in numbers: its types, priorities and lifetimes, quarantine, decay, delete, demote.

One copy of each constant; the extractors (``engine.derive.offline``, ``engine.derive.llm``), the enricher and
consolidation (``engine.derive.consolidate``) import them from here. Pure: no I/O, no clock.

Sources (requirement seeds in ``shared/seeds``):

* ``001_*.txt`` "字段定义：memory_items", ``002_*.txt`` §3.2 and ``004_*.txt`` §4 "记忆类型": the memory types;
* ``004_*.txt`` §4 "保留时长机制 (expires_at)": priorities TRANSIENT 1 d, SHORT_TERM 3 d, LONG_TERM 30 d, PERMANENT
  never (``expires_at = now + lifetime``); the extractor's ``duration`` (``permanent|7d|24h|session``, ERROR kept 7 d);
  which priority a derived fact gets follows what the fact is (``engine.derive.lifetimes``, issue #29 item 1), and
  ``now`` is when it was said (the turn's ``occurred_at``), validity being judged at the reader's clock;
* ``003_*.txt`` "工作记忆": the inbound filter's 0.8 confidence threshold (below it content waits in quarantine);
* ``004_*.txt`` §7 "每日归纳流程": importance < 0.1 deleted, < 0.3 demoted to TRANSIENT;
  ``002_*.txt`` §2.2 time decay ``exp(-days / 30)`` and §4.1 ``compress_old_memories(days_threshold=90)``
  (``access_count < 5``, groups of 3 or more).
"""

from __future__ import annotations

from datetime import timedelta

#: Memory types: seed 001 (PROFILE/TASK/FACT/EPISODIC), seed 002 §3.2 (preference/fact/pattern/skill),
#: seed 004 §4 (FACT/PREFERENCE/SKILL/ERROR/RULE).
MEMORY_TYPES = ("PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC")

#: Priorities, shortest-lived first (seed 004 §4). The order is the rank consolidation compares.
PRIORITIES = ("TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT")
#: Priority -> rank in ``PRIORITIES`` (0 = TRANSIENT .. 3 = PERMANENT).
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
#: Priority -> retention in days (seed 004 §4 "保留时长机制"); ``None`` = never expires.
PRIORITY_DAYS: dict[str, int | None] = {"TRANSIENT": 1, "SHORT_TERM": 3, "LONG_TERM": 30, "PERMANENT": None}
#: Priority -> lifetime: ``expires_at = occurred_at + PRIORITY_TTL[priority]``; PERMANENT (and any unknown
#: priority) has no entry and never expires.
PRIORITY_TTL = {p: timedelta(days=d) for p, d in PRIORITY_DAYS.items() if d is not None}
#: Priority -> the seed 004 ``duration`` label recorded in an extracted candidate's ``data`` (1 day reads ``24h``).
PRIORITY_DURATION = {p: "permanent" if d is None else "24h" if d == 1 else f"{d}d" for p, d in PRIORITY_DAYS.items()}
#: Seed 004 §4: ERROR memories are kept 7 days whatever their priority (the ``duration`` label only).
ERROR_DURATION = "7d"

#: Seed 003 "工作记忆" (阈值0.8): a candidate under this confidence is quarantined rather than promoted.
QUARANTINE_CONFIDENCE = 0.8

#: Seed 002 §2.2: importance decays as ``exp(-days / DECAY_DAYS)``.
DECAY_DAYS = 30.0
#: Seed 004 §7: importance under this is deleted.
DELETE_BELOW = 0.1
#: Seed 004 §7: importance under this (and not deleted) is demoted to TRANSIENT.
DEMOTE_BELOW = 0.3
#: Seed 002 §4.1 ``compress_old_memories(days_threshold=90)``: items older than this may be compressed ...
COMPRESS_AFTER_DAYS = 90.0
#: ... when their access count (here: evidence count) is under this ...
COMPRESS_MAX_EVIDENCE = 5
#: ... in groups of at least this many items of one type.
COMPRESS_MIN_GROUP = 3
