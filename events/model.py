"""The event vocabulary: what agents and users said and did (facts).

Every event is a frozen msgspec Struct tagged by its class name in the ``type``
field and versioned by ``v``. The JSON shape is the public contract for agents
written in any language (docs/agents/event-contract.md).

Sources: ../shared/DESIGN.md "Events" (envelope fields, fact names);
seed 000 §4.3 (content blocks text / thinking / tool_use / tool_result, the
shapes the condenser works on).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, Union

import msgspec

#: ids that end up in subjects: letters, digits, ``_`` and ``-``, 1..128 chars (DESIGN.md "Subjects"). The end is
#: ``(?![\s\S])``, not ``$``: msgspec applies the pattern with ``re.search`` and ``$`` also matches before a final
#: newline, so ``"A\n"`` passed (issue #17 defect 9); Python's ``\Z`` would fix that but is no ECMA-262 regex, and the
#: pattern is published in docs/contract's JSON Schema for clients in other languages (JSON Schema 2020-12 §6.3.3).
TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,128}(?![\s\S])"
Token = Annotated[str, msgspec.Meta(pattern=TOKEN_PATTERN)]
#: free text fields are bounded so that one event never exceeds the stream's max message size.
MAX_TEXT = 256 * 1024
MAX_BLOCKS = 256
#: Every string of every event, at any depth (``metadata`` and tool ``input`` keys and values included), is refused
#: by the codec when it holds U+0000 or a lone surrogate: no projection can store it (PostgreSQL ``text`` and
#: ``jsonb``). Every other character is kept (``events.codec`` says why).
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
ShortText = Annotated[str, msgspec.Meta(max_length=1024)]
#: ``user_id`` and ``session_id`` are also at most this many bytes in UTF-8 (``events.codec``; issue #26 item 3): the
#: read models index them in B-trees, whose entries hold at most 2704 bytes, so 1024 CJK characters (3072 bytes) were
#: acknowledged and then dead-lettered by the recall and memory folds. 1024 ASCII characters still fit.
MAX_ID_BYTES = 1024


class _Block(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of content blocks; the tag is the block's ``type``."""


class TextBlock(_Block, frozen=True, kw_only=True, tag="text"):
    """Plain text. ``{"type": "text", "text": "..."}``"""

    text: Text


class ThinkingBlock(_Block, frozen=True, kw_only=True, tag="thinking"):
    """Model reasoning. Dropped from Tier 2 (seed 000 §4.3). ``{"type": "thinking", "thinking": "..."}``"""

    thinking: Text
    signature: ShortText | None = None


class ToolUseBlock(_Block, frozen=True, kw_only=True, tag="tool_use"):
    """A tool call made by the assistant. ``id`` pairs it with the ``tool_result`` that answers it."""

    id: ShortText
    name: ShortText
    input: dict[str, Any] = {}


class ToolResultBlock(_Block, frozen=True, kw_only=True, tag="tool_result"):
    """A tool's output. Cut to ``MEMORY_CONDENSED_TOOL_MAX`` characters in Tier 2 (seed 000 §4.3)."""

    tool_use_id: ShortText
    content: Text = ""
    is_error: bool = False


Block = Union[TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock]
Role = Literal["user", "assistant", "system", "tool"]


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Token usage a model reported for the turn (optional, informational)."""

    input_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0
    output_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0


class ContextWanted(msgspec.Struct, frozen=True, kw_only=True):
    """Asks the engine to push assembled context on ``mem.ctx.<tenant>.<thread>`` once the turn is projected.

    ``window`` is the model's context window in tokens (0 = ``MEMORY_CONTEXT_WINDOW``);
    ``system_tokens`` is the size of the agent's own system prompt (seed 000 §4.1).
    """

    window: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] = 0
    query: ShortText | None = None
    system_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag=True):
    """Common envelope of every event (DESIGN.md "Events").

    Fields: ``event_id`` (UUIDv7 for live events, UUIDv5 for imports so that a re-import deduplicates; used as
    ``Nats-Msg-Id``), ``tenant_id`` and ``thread_id`` (subject tokens), ``user_id``, ``session_id``,
    ``occurred_at`` (timezone-aware, UTC on the wire), ``producer``, ``causation_id``, ``correlation_id``,
    ``metadata`` (free JSON object kept verbatim), ``v`` (schema version, see ``events.upcasters``).
    """

    event_id: uuid.UUID
    tenant_id: Token
    thread_id: Token
    occurred_at: Annotated[datetime, msgspec.Meta(tz=True)]
    user_id: ShortText | None = None
    session_id: ShortText | None = None
    producer: ShortText | None = None
    causation_id: uuid.UUID | None = None
    correlation_id: uuid.UUID | None = None
    metadata: dict[str, Any] = {}
    v: int = 1


class TurnRecorded(Event, frozen=True, kw_only=True):
    """One conversation turn: a message of ``role`` made of content ``blocks`` (seed 000 §4.3).

    v2 (current): ``content`` is a list of blocks. v1 was the plain-text shape ``{"text": "..."}``; it is still
    accepted and upcast (``events.upcasters.upcast_turn_v1_v2``), so the simplest agent can publish plain text.
    """

    role: Role
    content: Annotated[list[Block], msgspec.Meta(min_length=1, max_length=MAX_BLOCKS)]
    model: ShortText | None = None
    usage: TokenUsage | None = None
    want_context: ContextWanted | None = None
    v: int = 2


class ThreadLabelled(Event, frozen=True, kw_only=True):
    """Gives a thread its display name (seed 000 §1.2 ``thread_activity.label``)."""

    label: ShortText


class SessionEnded(Event, frozen=True, kw_only=True):
    """Closes a session of a thread; derivations (episodes, seed 004 §4) hang off it."""

    reason: ShortText | None = None


class MemoryAsserted(Event, frozen=True, kw_only=True):
    """An explicit "remember this" from an agent or user (seed 001 "写入", seed 004 §6)."""

    memory_type: ShortText = "FACT"
    text: Text
    importance: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.5
    tags: list[ShortText] = []


class MemoryRetracted(Event, frozen=True, kw_only=True):
    """Withdraws a memory item by id; the item keeps its history (bi-temporal ``invalid_at``)."""

    memory_id: ShortText
    reason: ShortText | None = None


class MemoryPromoted(Event, frozen=True, kw_only=True):
    """An operator or agent lets a quarantined memory item into memory (seed 003 "隔离区 ... 提升").

    Candidates under the confidence threshold wait with status ``quarantined``; this fact is the only way out: the
    enricher turns it into a derived ``MemoriesRevised`` (action ``promote``) and the fold sets the item ``active``.
    """

    memory_id: ShortText
    reason: ShortText | None = None


class ThreadDeleted(Event, frozen=True, kw_only=True):
    """The user deleted the thread: every read model drops it (seed 000 §1.3, §2.2)."""

    reason: ShortText | None = None


class TurnsWithdrawn(Event, frozen=True, kw_only=True):
    """Turns of the thread are withdrawn from its transcript (an agent framework's "undo": the OpenAI Agents SDK's
    ``Session.pop_item`` / ``clear_session``, engine/integrations/openai_agents.py). A compensating fact: the withdrawn
    ``TurnRecorded`` facts stay in the log, the ``messages`` read model drops them.

    ``event_ids``: the withdrawn turns (event ids of ``TurnRecorded`` facts of this thread, at most 1000);
    ``all_before``: also every turn of the thread recorded before this fact in the log (a clear). Turns recorded
    after it are kept. Withdrawn is not forgotten from the log, but from every read model (issue #26 item 6):
    ``messages`` and the recall rows drop the turns, and the enricher turns the fact into ``SourcesWithdrawn``
    (``events.derived``): memories left without live evidence are retracted, episodes and the rolling summary that
    quoted them are dropped (the summary re-derived). ``ThreadDeleted`` / ``UserForgotten`` purge the log as well.
    """

    event_ids: Annotated[list[uuid.UUID], msgspec.Meta(max_length=1000)] = []
    all_before: bool = False
    reason: ShortText | None = None


class UserForgotten(Event, frozen=True, kw_only=True):
    """Right to be forgotten for ``user_id`` across the tenant (published on the thread token ``_``)."""

    reason: ShortText | None = None


#: Every fact event type, in one place: the decoder's tagged union.
FACT_TYPES: tuple[type[Event], ...] = (
    TurnRecorded,
    ThreadLabelled,
    SessionEnded,
    MemoryAsserted,
    MemoryRetracted,
    MemoryPromoted,
    ThreadDeleted,
    UserForgotten,
    TurnsWithdrawn,
)
AnyFact = Union[
    TurnRecorded, ThreadLabelled, SessionEnded, MemoryAsserted, MemoryRetracted, MemoryPromoted, ThreadDeleted,
    UserForgotten, TurnsWithdrawn,
]
#: Current schema version per event type name (the default of each type's ``v`` field).
CURRENT_VERSION: dict[str, int] = {
    t.__name__: next(f.default for f in msgspec.structs.fields(t) if f.name == "v") for t in FACT_TYPES
}
