"""memengine's event vocabulary: event types, subjects, streams, codec and upcasters.

This package imports nothing else of memengine; agents may depend on it alone.
"""

from memengine.events.codec import (
    EventDecodeError,
    EventEncodeError,
    SubjectMismatch,
    content_digest,
    decode,
    decode_derived,
    decode_derived_msg,
    decode_fact,
    encode,
    retry_digest,
)
from memengine.events.derived import (
    DERIVED_TYPES,
    AnyDerived,
    Derived,
    EpisodeRecorded,
    ExtractedMemory,
    MemoriesConsolidated,
    MemoriesExtracted,
    MemoriesRevised,
    MemoryChange,
    MergeDecision,
    MessagesPruned,
    Reworded,
    SourcesWithdrawn,
    SummaryUpdated,
    TopicMention,
    TopicsExtracted,
    derived_event_id,
)
from memengine.events.ids import idempotency_event_id, msg_id, new_event_id, stable_event_id
from memengine.events.model import (
    CURRENT_VERSION,
    FACT_TYPES,
    AnyFact,
    Block,
    ContextWanted,
    Event,
    MemoryAsserted,
    MemoryPromoted,
    MemoryRetracted,
    SessionEnded,
    TextBlock,
    ThinkingBlock,
    ThreadDeleted,
    ThreadLabelled,
    TokenUsage,
    ToolResultBlock,
    ToolUseBlock,
    TurnRecorded,
    TurnsWithdrawn,
    UserForgotten,
)
from memengine.events.streams import DEDUP_SECRET_KEY, StreamNames, StreamSpec, stream_specs
from memengine.events.subjects import InvalidToken, Subjects, check_token

__all__ = [
    "DEDUP_SECRET_KEY",
    "DERIVED_TYPES", "AnyDerived", "Derived", "EpisodeRecorded", "ExtractedMemory", "MemoriesExtracted",
    "MergeDecision", "SummaryUpdated", "MemoriesConsolidated", "MemoriesRevised", "MemoryChange", "Reworded",
    "SourcesWithdrawn", "MessagesPruned",
    "MemoryPromoted", "TopicMention", "TopicsExtracted", "decode_derived", "derived_event_id",
    "CURRENT_VERSION", "FACT_TYPES", "AnyFact", "Block", "ContextWanted", "Event", "EventDecodeError",
    "EventEncodeError",
    "InvalidToken", "MemoryAsserted", "MemoryRetracted", "SessionEnded", "StreamNames", "StreamSpec", "Subjects",
    "TextBlock", "ThinkingBlock", "ThreadDeleted", "ThreadLabelled", "TokenUsage", "ToolResultBlock",
    "ToolUseBlock", "TurnRecorded", "TurnsWithdrawn", "UserForgotten", "check_token", "content_digest", "decode",
    "encode", "idempotency_event_id", "msg_id",
    "new_event_id", "SubjectMismatch", "decode_fact", "decode_derived_msg",
    "stable_event_id", "stream_specs", "retry_digest",
]
