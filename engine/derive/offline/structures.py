"""What the offline deriver takes and gives: conversation turns in; memory candidates, merge verdicts and episodes
out (frozen msgspec Structs; times are timezone-aware ``datetime``).

Sources: seed 001 candidate shape (type, text, importance 0..1, tags, ``dedupe_hash`` in ``data``), seed 004 §4
priority/confidence and "情节记忆 (Episode)", seed 002 §4.1 merge actions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from memengine.events.derived import MergeAction


class Turn(msgspec.Struct, frozen=True):
    """One conversation turn as the deriver sees it (text only; thinking and tool payloads already flattened)."""

    event_id: str
    seq: int
    role: str  # user | assistant | system | tool
    user_id: str | None
    text: str
    occurred_at: datetime
    tools: list[str] = []
    #: what the same user said just before in the thread's session (their previous turn's text; "" when unknown):
    #: a Chinese sentence led by 他 / 她 is about the person named there (``zh_people``, issue #29)
    before: str = ""


class Candidate(msgspec.Struct, frozen=True):
    """A typed memory proposed by extraction (seed 001 candidate shape + seed 004 priority/confidence)."""

    memory_type: str
    text: str
    importance: float
    confidence: float
    tags: list[str]
    priority: str
    user_id: str | None
    source_event_ids: list[str]
    data: dict[str, Any] = {}


class ExistingItem(msgspec.Struct, frozen=True):
    """An active memory item of the same user, as decide_merge needs it."""

    memory_id: str
    memory_type: str
    text: str
    user_id: str | None
    #: the date (ISO) the item's statement was made (its ``valid_at``), ``None`` when unknown: a statement of the same
    #: day is no later change of it (``kept_words``)
    said_on: str | None = None
    #: whether the item has no lifetime (``expires_at`` unset): an event or a plan has one and states no attribute a
    #: later statement could change ("Caroline just contacted their mentor", ``kept_words``)
    lasting: bool = True
    #: the item's lifetime in days (``expires_at`` - ``valid_at``; ``None``: none, it lasts): a month-long statement
    #: ("works the 7-3 shift", 30 days) states an attribute a later one may change, a plan or a mood (3 days or less)
    #: none (``same_slot``)
    lifetime_days: int | None = None


class MergeVerdict(msgspec.Struct, frozen=True):
    """Seed 002 §4.1 decision: ``add`` | ``merge`` | ``replace`` | ``keep_both`` | ``ignore`` + the items it touches.

    ``text``: for a ``replace`` decided when unsure (``zh_revision``), the text the new item takes instead of the
    candidate's (the newer words, dated, with the older item's words after them: issue #29 item 1); ``None`` else."""

    action: MergeAction
    target_ids: list[str]
    reason: str
    #: a ``replace`` that keeps the target's text with the newer words beside it, dated (``fold``, issue #29 item 1)
    fold: bool = False
    text: str | None = None


class Episode(msgspec.Struct, frozen=True):
    """Seed 004 §4 "情节记忆 (Episode)": what one stretch of conversation was about and how it ended."""

    summary: str
    goal: str | None
    outcome: str | None
    entities: list[str]
    tools_used: list[str]
    started_at: datetime
    ended_at: datetime
    source_event_ids: list[str]
