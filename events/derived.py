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

from memengine.events.model import Event, ShortText, Text

MemoryType = Literal["PROFILE", "PREFERENCE", "FACT", "TASK", "PATTERN", "SKILL", "RULE", "ERROR", "EPISODIC"]
Priority = Literal["TRANSIENT", "SHORT_TERM", "LONG_TERM", "PERMANENT"]
MergeAction = Literal["add", "merge", "replace", "keep_both", "ignore"]
Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]


class Derived(Event, frozen=True, kw_only=True):
    """Envelope of every derived event: the fact envelope plus provenance."""

    source_event_ids: list[uuid.UUID]
    source_seq_range: Annotated[list[int], msgspec.Meta(min_length=2, max_length=2)]
    model: ShortText
    prompt_version: ShortText


class SummaryUpdated(Derived, frozen=True, kw_only=True):
    """The rolling summary of a thread (seed 000 §3.1): ``summary`` replaces the previous one and covers the
    thread's messages up to ``source_seq_range[1]``; ``message_count`` = messages summarised so far."""

    summary: Text
    message_count: int


class TopicMention(msgspec.Struct, frozen=True, kw_only=True):
    topic: ShortText
    mentions: int = 1


class TopicsExtracted(Derived, frozen=True, kw_only=True):
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


class MemoriesExtracted(Derived, frozen=True, kw_only=True):
    """Typed memories extracted from one or more turns, each with its merge decision."""

    memories: list[ExtractedMemory]


class EpisodeRecorded(Derived, frozen=True, kw_only=True):
    """One episode (seed 004 §4): a session's summary, goal, outcome, entities, tools used, start and end."""

    episode_id: ShortText
    summary: Text
    goal: Text | None = None
    outcome: Text | None = None
    entities: list[ShortText] = []
    tools_used: list[ShortText] = []
    started_at: datetime
    ended_at: datetime
    #: what closed the episode (seed 004 §4): the session's ``SessionEnded`` fact, or ``idle``: a turn of the same
    #: session came more than ``MEMENGINE_EPISODE_IDLE_SECONDS`` after the previous one (event time, not wall clock).
    closed_by: Literal["session_ended", "idle"] = "session_ended"


ChangeAction = Literal["retract", "promote", "merge", "decay", "delete", "demote", "expire", "compress"]


class MemoryChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change to an existing memory item, and why (``reason``). Absolute values, so a replay needs no clock.

    - ``retract`` (fact ``MemoryRetracted``): status ``retracted``, ``invalid_at`` = the event time;
    - ``promote`` (fact ``MemoryPromoted``, seed 003): status ``quarantined`` -> ``active``;
    - ``merge`` (consolidation dedupe, seed 004 §7 "语义去重合并"): status ``superseded``, ``superseded_by`` = the
      surviving item, which gains this item's sources and the higher importance;
    - ``decay`` (seed 004 §7 ``compute_decay``): ``importance`` becomes the given value;
    - ``delete`` (importance < 0.1): status ``deleted`` (kept, with ``invalid_at``: nothing is destroyed);
    - ``demote`` (importance < 0.3): ``priority`` TRANSIENT and the given ``expires_at``;
    - ``expire`` (``expires_at`` passed, seed 004 ``cleanup_expired``): status ``expired``, ``invalid_at`` =
      ``expires_at``;
    - ``compress`` (seed 002 §4.1 ``compress_old_memories``): status ``superseded`` by the compressed item
      ``superseded_by``.
    """

    memory_id: ShortText
    action: ChangeAction
    reason: ShortText = ""
    importance: Unit | None = None
    priority: Priority | None = None
    expires_at: datetime | None = None
    superseded_by: ShortText | None = None


class MemoriesRevised(Derived, frozen=True, kw_only=True):
    """Explicit changes asked for by a fact (``MemoryRetracted``, ``MemoryPromoted``): ``source_event_ids`` is that
    fact, so ``memengine audit`` shows who retracted or promoted an item and when."""

    changes: list[MemoryChange]


class MemoriesConsolidated(Derived, frozen=True, kw_only=True):
    """One consolidation run (seed 004 §7 daily consolidation, seed 002 §4.1 ``compress_old_memories``).

    ``as_of`` is the clock the decision used (also ``occurred_at``); ``policy`` the thresholds; ``changes`` what
    changed and why, in the order the fold applies them; ``created`` the items a compression made (decision ``add``,
    ``target_ids`` = the items compressed). The decision is computed once from the read models and the clock by
    ``memengine consolidate``; the fold applies this event, so a rebuild reproduces the run without recomputing it.
    ``source_event_ids`` are the derived events that last changed the items acted on; ``source_seq_range`` is the
    ``MEMORY_DERIVED`` range the plan read (``[1, last]``).
    """

    as_of: datetime
    scope_user: ShortText | None = None
    policy: dict[str, Any] = {}
    changes: list[MemoryChange] = []
    created: list[ExtractedMemory] = []


class MessagesPruned(Derived, frozen=True, kw_only=True):
    """Physical pruning of a thread's live transcript (seed 000 §3.1 ``_prune_thread_messages``): the turns with
    ``seq <= through_seq`` leave the ``messages`` read model. Published only once a summary covering them was
    published (``through_seq <= covers_until_seq``); the log keeps them, so ``history`` still reaches them."""

    through_seq: int
    pruned: int
    remaining: int


class Reworded(msgspec.Struct, frozen=True, kw_only=True):
    """An item's wording as if the withdrawn turns had never been merged into it (``SourcesWithdrawn.reworded``)."""

    memory_id: ShortText
    text: Text
    dedupe_hash: ShortText


class SourcesWithdrawn(Derived, frozen=True, kw_only=True):
    """What a ``TurnsWithdrawn`` fact (``source_event_ids`` = [that fact]) takes out of derived memory (issue #26
    item 6: withdrawn is not forgotten), decided once by the enricher so a rebuild replays it without reading the
    facts again:

    - ``withdrawn_event_ids``: the withdrawn turns, resolved from the log (the named ids that are turns of this
      thread recorded before the fact, or every such turn for ``all_before``); at most 1000 per event, a larger
      withdrawal is several events. Every ``memory_item_sources`` link to one of them is marked ``withdrawn_by``
      this event (kept: the provenance trail), and the thread's episodes that quote one of them are dropped;
    - ``retracted``: memory items whose every piece of evidence is now withdrawn: status ``retracted`` with
      ``reason`` (an item with another live source keeps living, without the withdrawn one);
    - ``restored``: items a retracted one had replaced (status ``superseded`` by it) that keep live evidence: active
      again, as if the withdrawn turn had never overturned them;
    - ``reworded``: items that keep living but whose wording a merge took from a withdrawn turn: the wording they
      would have without it;
    - ``summary_reset``: the thread's rolling summary (and its topics) covered a withdrawn turn: dropped, and
      re-summarised from the turns left (a ``SummaryUpdated`` published after this event).
    """

    withdrawn_event_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=1000)] = []
    retracted: Annotated[list[ShortText], msgspec.Meta(max_length=10_000)] = []
    restored: Annotated[list[ShortText], msgspec.Meta(max_length=10_000)] = []
    reworded: Annotated[list[Reworded], msgspec.Meta(max_length=1000)] = []
    summary_reset: bool = False
    reason: ShortText = ""


DERIVED_TYPES: tuple[type[Event], ...] = (SummaryUpdated, TopicsExtracted, MemoriesExtracted, EpisodeRecorded,
                                          MemoriesRevised, MemoriesConsolidated, MessagesPruned, SourcesWithdrawn)
AnyDerived = Union[SummaryUpdated, TopicsExtracted, MemoriesExtracted, EpisodeRecorded, MemoriesRevised,
                   MemoriesConsolidated, MessagesPruned, SourcesWithdrawn]
DERIVED_VERSION: dict[str, int] = {t.__name__: 1 for t in DERIVED_TYPES}


def derived_event_id(*parts: str) -> uuid.UUID:
    """Deterministic id of a derived event from what it was derived from (``events.ids.stable_event_id``)."""
    from memengine.events.ids import stable_event_id

    return stable_event_id("derived", *parts)
