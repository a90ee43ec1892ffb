/**
 * The wire contract's types, written to match docs/contract/events.schema.json and docs/contract/rpc.schema.json
 * (generated from memengine's msgspec Structs by `python -m memengine.engine.wire.schemas`). test/contract.test.ts
 * fails when a property set here and the schema's disagree, and validates what this client sends and receives
 * against the schemas.
 */

/** A subject token: 1-128 characters of [A-Za-z0-9_-]. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
/** Free-text fields are bounded (events.model.MAX_TEXT) and a turn has at most MAX_BLOCKS blocks. */
export const MAX_TEXT = 256 * 1024;
export const MAX_BLOCKS = 256;
/** The facts stream's max_msg_size (events.streams.StreamSpec). */
export const MAX_EVENT_BYTES = 1024 * 1024;
/** `user_id` and `session_id` at most this many bytes in UTF-8 (events.model.MAX_ID_BYTES: B-tree keys). */
export const MAX_ID_BYTES = 1024;

export type Role = "user" | "assistant" | "system" | "tool";

export interface TextBlock {
  type: "text";
  text: string;
}
export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  signature?: string | null;
}
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input?: Record<string, unknown>;
}
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content?: string;
  is_error?: boolean;
}
export type Block = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock;

export interface TokenUsage {
  input_tokens?: number;
  output_tokens?: number;
}

/** Asks the engine to push context on `<root>.ctx.<tenant>.<thread>` once the turn is projected. */
export interface ContextWanted {
  window?: number;
  query?: string | null;
  system_tokens?: number;
}

/** The fact `TurnRecorded` v2 as published on `<root>.fact.<tenant>.<thread>.TurnRecorded`. */
export interface TurnRecorded {
  type: "TurnRecorded";
  v: 2;
  event_id: string;
  tenant_id: string;
  thread_id: string;
  occurred_at: string;
  user_id: string | null;
  session_id: string | null;
  producer: string | null;
  causation_id: string | null;
  correlation_id: string | null;
  metadata: Record<string, unknown>;
  role: Role;
  content: Block[];
  model: string | null;
  usage: TokenUsage | null;
  want_context: ContextWanted | null;
}

// -- requests (rpc.schema.json $defs) -------------------------------------------------------------------------

export interface ContextRequest {
  tenant?: string;
  /** The user the caller is bound to (issue #26): the server answers that user's scope only. */
  bound_user?: string | null;
  thread: string;
  window?: number | null;
  system_tokens?: number;
  query?: string | null;
  after_seq?: number | null;
  wait?: number | null;
}

export interface HistoryRequest {
  tenant?: string;
  /** The user the caller is bound to (issue #26): the server answers that user's scope only. */
  bound_user?: string | null;
  thread: string;
  limit?: number;
  from_seq?: number;
  after_seq?: number | null;
  wait?: number | null;
}

export interface ThreadsRequest {
  tenant?: string;
  /** The user the caller is bound to (issue #26): the server answers that user's scope only. */
  bound_user?: string | null;
  limit?: number;
  offset?: number;
}

export type RecallSource = "turns" | "memories";

export interface RecallRequest {
  tenant?: string;
  /** The user the caller is bound to (issue #26): the server answers that user's scope only. */
  bound_user?: string | null;
  query: string;
  thread?: string | null;
  user?: string | null;
  /** How many hits (1-100; default MEMORY_RECALL_TOP_K). */
  limit?: number | null;
  /** Old name of `limit`, still accepted. */
  k?: number | null;
  since?: string | null;
  until?: string | null;
  after_seq?: number | null;
  sources?: RecallSource[];
  types?: string[] | null;
  tags?: string[] | null;
  status?: string[];
  include_expired?: boolean;
  as_of?: string | null;
}

// -- replies ----------------------------------------------------------------------------------------------------

/** engine.wire.errors.ErrorCode; a code this client does not know is kept as a plain string. */
export type KnownErrorCode =
  | "not_found"
  | "busy"
  | "invalid_request"
  | "invalid_token"
  | "payload_too_large"
  | "unknown_thread"
  | "unknown_user"
  | "unknown_memory"
  | "forbidden"
  | "rate_limited"
  | "invalid_event"
  | "unavailable"
  | "internal";
export type ErrorCode = KnownErrorCode | (string & {});

export interface ErrorReply {
  ok: false;
  error: { code: string; message: string };
}
export interface OkReply<T> {
  ok: true;
  result: T;
}

export interface Budget {
  window: number;
  margin: number;
  reserve: number;
  system: number;
  total: number;
  tier1: number;
  tier2: number;
  tier3: number;
}

/** One message of a context or history reply; `content` is the stored block list, verbatim; `metadata` the turn's
 * metadata object, verbatim, in history replies (`{}` in context replies; absent from older servers). */
export interface MessageOut {
  tier: number;
  seq: number;
  event_id: string;
  role: string;
  user_id: string | null;
  session_id: string | null;
  occurred_at: string;
  tokens: number;
  condensed: boolean;
  content: Block[];
  metadata?: Record<string, unknown>;
  /** Context replies (issue #14): why a Tier-2/3 message is there; null in history replies and on Tier 1. */
  chosen_by?: "relevance" | "recency" | null;
}

/** What the user-memory part of a context's Tier-1 message holds (issue #18): the thread's user, the part's tokens,
 * the memory items placed (core first, then relevant), the user's own past turns from other threads placed
 * verbatim, and how many candidates the budget left out. */
export interface UserMemoryOut {
  user: string;
  tokens: number;
  memory_ids: string[];
  event_ids: string[];
  left_out?: number;
}

export interface ContextResult {
  tenant: string;
  thread: string;
  mode: "full" | "tiered" | (string & {});
  budget: Budget;
  tokens: Record<string, number>;
  tokenizer: string;
  messages: MessageOut[];
  event_ids: string[];
  dropped: number;
  applied_seq: number;
  stale: boolean;
  waited_ms: number;
  /** Absent when Tier 1 holds none of the user's memory, and from older servers. */
  user_memory?: UserMemoryOut | null;
}

/** What `subscribeContext` yields: a context plus the stream sequence of the turn that asked for it. */
export type PushedContext = ContextResult & { seq?: number };

/** `QueryService.history` (a plain dict on the engine side: no schema beyond "object" yet). */
export interface HistoryResult {
  tenant: string;
  thread: string;
  messages: MessageOut[];
  next_from_seq: number | null;
  applied_seq: number;
  stale: boolean;
  pruned_through_seq: number;
  from_log: number;
}

export interface ThreadInfo {
  thread: string;
  label: string | null;
  last_active_at: string;
  message_count: number;
  sessions_ended: number;
  last_seq: number;
  /** The thread's owner: the user of its first turn that names one (issue #26); absent from older servers. */
  user?: string | null;
}

/** `QueryService.threads` (a plain dict on the engine side). */
export interface ThreadsResult {
  tenant: string;
  threads: ThreadInfo[];
}

export interface RecallHit {
  kind: "turn" | "memory" | (string & {});
  seq: number | null;
  event_id: string;
  thread: string | null;
  user_id: string | null;
  session_id: string | null;
  occurred_at: string;
  text: string;
  score: number;
  relevance: number;
  recency: number;
  importance: number;
  source_event_ids: string[];
  memory_id: string | null;
  type: string | null;
  tags: string[] | null;
  status: string | null;
  expires_at: string | null;
  /** Who produced a turn hit's text (issue #18): user, assistant, system or tool; null for a memory hit. */
  role?: "user" | "assistant" | "system" | "tool" | (string & {}) | null;
  /** The tool's name when role is tool and the thread holds its call. */
  tool?: string | null;
}

export interface RecallResult {
  tenant: string;
  query: string;
  mode: "hybrid" | "fulltext" | (string & {});
  embedder: string | null;
  hits: RecallHit[];
  applied_seq: number;
  took_ms: number;
}
