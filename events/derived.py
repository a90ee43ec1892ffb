"""Derived events: what the engine derived from facts with a model (or the offline extractive default).

Each carries its provenance (DESIGN.md "Why derived events"): ``source_event_ids`` (the facts it was derived
from), ``source_seq_range`` (``[first, last]`` MEMORY_FACTS sequences), ``model`` and ``prompt_version``. Model
output is not deterministic, so it is recorded once as an event; projections fold these events, and a rebuild calls
no model. Published on ``<root>.drv.<tenant>.<thread>.<Type>`` (thread ``_`` for user-level events) with a
deterministic ``Nats-Msg-Id`` so that a redelivered enricher run publishes nothing twice.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, Union

import msgspec

from events.model import Event, ShortText, Text

MemoryType = Literal["PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC"]
Priority = Literal["TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"]
MergeAction = Literal["add", "merge", "replace", "keep_both", "ignore"]
Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]


class Derived(Event, kw_only=True):
    """Envelope of every derived event: the fact envelope plus provenance."""

    source_event_ids: list[uuid.UUID]
    source_seq_range: Annotated[list[int], msgspec.Meta(min_length=2, max_length=2)]
    model: ShortText
    prompt_version: ShortText


class SummaryUpdated(Derived, kw_only=True):
    """The rolling summary of a thread (seed 000 §3.1): ``summary`` replaces the previous one and covers the
    thread's messages up to ``source_seq_range[1]``; ``message_count`` = messages summarised so far."""

    summary: Text
    message_count: int


class TopicMention(msgspec.Struct, frozen=True, kw_only=True):
    topic: ShortText
    mentions: int = 1


class TopicsExtracted(Derived, kw_only=True):
    """Topics of the messages in ``source_seq_range`` (seed 000 §1.2 ``memory_topics``)."""

    topics: list[TopicMention]


class MergeDecision(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 002 §4.1: what happens to a candidate against existing items: ``add`` | ``merge`` | ``replace`` |
    ``keep_both`` | ``ignore``, the existing items it acts on (``target_ids``) and why."""

    action: MergeAction
    target_ids: list[ShortText] = []
    reason: ShortText = ""


class ExtractedMemory(msgspec.Struct, frozen=True, kw_only=True):
    """One typed memory candidate (seed 001 ``memory_items``; seed 004 types and priorities) with its decision.

    ``memory_id`` is the item the decision creates (add, replace, keep_both) or updates (merge: the target).
    ``status`` is ``active`` or ``quarantined`` (seed 003: below the confidence threshold). ``expires_at`` follows
    the priority (TRANSIENT 1 d, SHORT_TERM 3 d, LONG_TERM 30 d, PERMANENT never; seed 004).
    """

    memory_id: ShortText
    user_id: ShortText | None
    memory_type: MemoryType
    text: Text
    importance: Unit = 0.5
    confidence: Unit = 0.5
    tags: list[ShortText] = []
    priority: Priority = "LONG_TERM"
    expires_at: datetime | None = None
    dedupe_hash: ShortText
    data: dict[str, Any] = {}
    status: Literal["active", "quarantined"] = "active"
    decision: MergeDecision
    source_event_ids: list[uuid.UUID] = []


class MemoriesExtracted(Derived, kw_only=True):
    """Typed memories extracted from one or more turns, each with its merge decision."""

    memories: list[ExtractedMemory]


class EpisodeRecorded(Derived, kw_only=True):
    """One episode (seed 004 §4): a session's summary, goal, outcome, entities, tools used, start and end."""

    episode_id: ShortText
    summary: Text
    goal: Text | None = None
    outcome: Text | None = None
    entities: list[ShortText] = []
    tools_used: list[ShortText] = []
    started_at: datetime
    ended_at: datetime


DERIVED_TYPES: tuple[type[Event], ...] = (SummaryUpdated, TopicsExtracted, MemoriesExtracted, EpisodeRecorded)
AnyDerived = Union[SummaryUpdated, TopicsExtracted, MemoriesExtracted, EpisodeRecorded]
DERIVED_VERSION: dict[str, int] = {t.__name__: 1 for t in DERIVED_TYPES}


def derived_event_id(*parts: str) -> uuid.UUID:
    """Deterministic id of a derived event from what it was derived from (``events.ids.stable_event_id``)."""
    from events.ids import stable_event_id

    return stable_event_id("derived", *parts)
