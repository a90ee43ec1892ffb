/**
 * `@memengine/client`: what an agent written in TypeScript uses to talk to memengine. A port of the Python
 * `MemoryClient` (engine/client/memory_client.py), same subjects, encodings and error objects:
 *
 *   const mem = await MemoryClient.connect("nats://127.0.0.1:4222", { tenant: "acme" });
 *   const ack = await mem.recordTurn("thread-1", "user", "I prefer aisle seats", { userId: "maya" });
 *   const ctx = await mem.context("thread-1", { window: 32_000, afterSeq: ack.seq }); // read-your-writes
 *
 * Turns go to `<root>.fact.<tenant>.<thread>.TurnRecorded` (JetStream, `Nats-Msg-Id` =
 * `<tenant>:<event_id>:<digest>`, the digest keyed by the tenant's dedup key from `rpc.dedup_key`; a duplicate
 * acknowledgement is checked with `rpc.published`, as the Python client does: issue #26 item 2);
 * requests go to the tenant-scoped `<root>.rpc.<method>.<tenant>` and reject with `RpcError` (a typed `code`) on
 * an error reply. `connect` uses the inbox prefix `_INBOX.<tenant>`, so a NATS user of one tenant needs only
 * `_INBOX.<tenant>.>` to receive replies.
 *
 * A client bound to a user (`{ user: "maya" }` or `mem.forUser("maya")`, issue #26 item 4; the Python client's
 * `for_user`) sends `bound_user` with every request, so the query handler answers that user's scope only
 * (engine/read/scope.py: another user's thread is `forbidden`, `threads` lists theirs, recall and the context's user
 * memory are theirs). It also refuses on its side what the server cannot see: a turn for another `userId`, a write
 * into another user's thread (asked with `rpc.summary` before publishing), a recall naming another `user`, a pushed
 * context holding another user's turns. The binding is the application's: give an untrusted caller a bound client.
 */

import { createHash, createHmac, randomBytes } from "node:crypto";
import {
  connect as natsConnect,
  ConnectionOptions,
  ErrorCode as NatsErrorCode,
  JetStreamClient,
  NatsConnection,
  NatsError,
  Subscription,
} from "nats";

import {
  Block,
  ContextResult,
  ContextWanted,
  ErrorCode,
  HistoryResult,
  MAX_BLOCKS,
  MAX_EVENT_BYTES,
  MAX_ID_BYTES,
  MAX_TEXT,
  PushedContext,
  RecallResult,
  RecallSource,
  Role,
  ThreadsResult,
  TOKEN_PATTERN,
  TurnRecorded,
} from "./contract";

export * from "./contract";

/** A typed error: `code` (see `ErrorCode`) and a human `message`; the Python client's `RpcError`. */
export class RpcError extends Error {
  readonly code: ErrorCode;
  readonly detail: string;

  constructor(code: ErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = "RpcError";
    this.code = code;
    this.detail = message;
  }
}

/** A tenant, thread or method id that cannot be a subject token (events.subjects.InvalidToken). */
export class InvalidToken extends Error {
  readonly what: string;
  readonly value: unknown;

  constructor(what: string, value: unknown) {
    super(`invalid ${what} ${JSON.stringify(value)}: expected 1-128 characters of [A-Za-z0-9_-]`);
    this.name = "InvalidToken";
    this.what = what;
    this.value = value;
  }
}

export function checkToken(what: string, value: unknown): string {
  if (typeof value !== "string" || !TOKEN_PATTERN.test(value)) throw new InvalidToken(what, value);
  return value;
}

/** Subject builders of one deployment root (events.subjects.Subjects). */
export class Subjects {
  readonly root: string;

  constructor(root = "mem") {
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(root)) throw new InvalidToken("subject root", root);
    this.root = root;
  }

  fact(tenant: string, thread: string, eventType: string): string {
    return `${this.root}.fact.${checkToken("tenant", tenant)}.${checkToken("thread", thread)}.${checkToken("event type", eventType)}`;
  }

  context(tenant: string, thread: string): string {
    return `${this.root}.ctx.${checkToken("tenant", tenant)}.${checkToken("thread", thread)}`;
  }

  rpc(method: string): string {
    return `${this.root}.rpc.${checkToken("method", method)}`;
  }

  rpcScoped(method: string, tenant: string): string {
    return `${this.rpc(method)}.${checkToken("tenant", tenant)}`;
  }
}

/** Result of a publish: the stream `seq` (pass it as `afterSeq`), the `eventId`, and `duplicate` (the server
 * had this message id already and stored nothing). */
export interface Recorded {
  seq: number;
  eventId: string;
  duplicate: boolean;
}

export interface MemoryClientOptions {
  tenant?: string;
  /** MEMENGINE_SUBJECT_ROOT of the deployment (default `mem`). */
  subjectRoot?: string;
  /** MEMENGINE_STREAM_PREFIX of the deployment (default `MEMORY`: the facts stream is `MEMORY_FACTS`). */
  streamPrefix?: string;
  /** Publish-ack and request timeout in milliseconds (default 10 s). */
  timeoutMs?: number;
  /** Bind the client to this user (module comment): every request is answered in that user's scope. */
  user?: string;
}

export interface RecordTurnOptions {
  userId?: string;
  sessionId?: string;
  metadata?: Record<string, unknown>;
  /** A UUID; default a fresh UUIDv7. Pass the same id on a retry: the server stores the turn once. */
  eventId?: string;
  occurredAt?: Date;
  model?: string;
  wantContext?: ContextWanted;
}

export interface ContextOptions {
  window?: number;
  query?: string;
  systemTokens?: number;
  afterSeq?: number;
  wait?: number;
}

export interface HistoryOptions {
  limit?: number;
  fromSeq?: number;
  afterSeq?: number;
}

export interface ThreadsOptions {
  limit?: number;
  offset?: number;
}

export interface RecallOptions {
  thread?: string;
  user?: string;
  /** How many hits (1-100; default MEMORY_RECALL_TOP_K). */
  limit?: number;
  /** Old name of `limit`, still accepted. */
  k?: number;
  since?: Date;
  until?: Date;
  afterSeq?: number;
  sources?: RecallSource[];
  types?: string[];
  tags?: string[];
  status?: string[];
  includeExpired?: boolean;
  asOf?: Date;
}

/** Pushed context of one thread: iterate it (`for await`), stop it with `unsubscribe()`. */
export interface ContextSubscription extends AsyncIterable<PushedContext> {
  unsubscribe(): void;
  /** Resolves once the subscription is registered with the server: publish the turn after this. */
  ready: Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A fresh UUIDv7 (RFC 9562 §5.7): 48-bit Unix milliseconds, version 7, variant 10, random bits. */
export function uuid7(now = Date.now()): string {
  const b = randomBytes(16);
  let ms = BigInt(now);
  for (let i = 5; i >= 0; i--) {
    b[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The `result` of a reply; throws `RpcError` for an error reply or a reply that is not an envelope
 * (engine.wire.protocol.decode_reply). */
export function decodeReply<T = unknown>(data: Uint8Array): T {
  let obj: unknown;
  try {
    obj = JSON.parse(decoder.decode(data));
  } catch (exc) {
    throw new RpcError("internal", `reply is not JSON: ${(exc as Error).message}`);
  }
  if (obj === null || typeof obj !== "object" || Array.isArray(obj) || !("ok" in obj)) {
    throw new RpcError("internal", "reply is not an envelope");
  }
  const env = obj as { ok: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } };
  if (env.ok) return (env.result ?? null) as T;
  const err = env.error ?? {};
  throw new RpcError(String(err.code ?? "internal"), String(err.message ?? ""));
}

/** A real `\u0000` escape in JSON text (an even run of backslashes before it; `\\u0000` is a backslash and the
 * letters u0000): JSON.stringify writes U+0000 so, anywhere in the event. */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;
/** A lone surrogate: JSON.stringify (well-formed since ES2019) writes one as a `\udXXX` escape, a pair as is. */
const SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/i;

/** The bytes of `event`, checked against the limits the engine enforces (engine.client.checks.check_event):
 * `RpcError("payload_too_large")` over the stream's max message size, `RpcError("invalid_event")` for what the
 * projector would dead-letter (no blocks or too many, a text over MAX_TEXT, U+0000 or a lone surrogate in any
 * string, a `user_id` or `session_id` over MAX_ID_BYTES bytes: events.codec, issue #26), `InvalidToken` for a bad
 * id. */
export function checkEvent(event: TurnRecorded): Uint8Array {
  checkToken("tenant", event.tenant_id);
  checkToken("thread", event.thread_id);
  if (!Array.isArray(event.content) || event.content.length < 1 || event.content.length > MAX_BLOCKS) {
    throw new RpcError("invalid_event", `a turn needs 1..${MAX_BLOCKS} content blocks, got ${event.content?.length}`);
  }
  for (const block of event.content) {
    const text = block.type === "text" ? block.text : block.type === "thinking" ? block.thinking
      : block.type === "tool_result" ? block.content ?? "" : "";
    if (typeof text !== "string" || text.length > MAX_TEXT) {
      throw new RpcError("invalid_event", `a ${block.type} block's text must be a string of at most ${MAX_TEXT} characters`);
    }
  }
  for (const [name, id] of [["user_id", event.user_id], ["session_id", event.session_id]] as const) {
    if (typeof id === "string" && encoder.encode(id).length > MAX_ID_BYTES) {
      throw new RpcError("invalid_event", `${name} is over ${MAX_ID_BYTES} bytes in UTF-8: the read models index it`);
    }
  }
  const json = JSON.stringify(event);
  if (NUL_ESCAPE.test(json)) {
    throw new RpcError("invalid_event", "a string contains U+0000 (NUL); PostgreSQL text and jsonb cannot store it");
  }
  if (SURROGATE_ESCAPE.test(json)) {
    throw new RpcError("invalid_event", "a string is not valid Unicode text (a lone surrogate); events are UTF-8");
  }
  const data = encoder.encode(json);
  if (data.length > MAX_EVENT_BYTES) {
    throw new RpcError("payload_too_large", `event of ${data.length} bytes exceeds ${MAX_EVENT_BYTES}`);
  }
  return data;
}

/** A user id as the Python client checks it (`_check_user`, the requests' limits): 1-1024 characters, no NUL;
 * `RpcError("invalid_request")` otherwise. */
function checkUser(user: string): string {
  if (typeof user !== "string" || user.length === 0 || user.length > 1024 || user.includes("\u0000")) {
    throw new RpcError("invalid_request", `bad user id ${JSON.stringify(user)}: 1-1024 characters, no NUL`);
  }
  return user;
}

export class MemoryClient {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly tenant: string;
  readonly subjects: Subjects;
  readonly factsStream: string;
  readonly streamPrefix: string;
  readonly timeoutMs: number;
  /** The user this client is bound to (`null`: operator scope, the whole tenant). */
  readonly user: string | null;
  private readonly owns: boolean;
  /** The tenant's dedup key (`rpc.dedup_key`): `undefined` not asked yet, `null` the deployment has none. */
  private dedupKey: Buffer | null | undefined = undefined;

  constructor(nc: NatsConnection, opts: MemoryClientOptions = {}, ownsConnection = false) {
    this.nc = nc;
    this.js = nc.jetstream();
    this.tenant = checkToken("tenant", opts.tenant ?? "default");
    this.subjects = new Subjects(opts.subjectRoot ?? "mem");
    this.streamPrefix = opts.streamPrefix ?? "MEMORY";
    this.factsStream = `${this.streamPrefix}_FACTS`;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.user = opts.user === undefined || opts.user === null ? null : checkUser(opts.user);
    this.owns = ownsConnection;
  }

  /** A client on the same connection bound to `user`. Binding only narrows: a client bound to another user throws
   * `RpcError("forbidden")`. The new client does not own the connection (`close()` on it leaves it open). */
  forUser(user: string): MemoryClient {
    const bound = this.scope(checkUser(user));
    const clone = new MemoryClient(this.nc, {
      tenant: this.tenant, subjectRoot: this.subjects.root, streamPrefix: this.streamPrefix, timeoutMs: this.timeoutMs,
      user: bound ?? undefined,
    });
    clone.dedupKey = this.dedupKey;
    return clone;
  }

  /** The user a request is scoped to: `user` when unbound (`undefined`: every user); the bound user when `user` is
   * absent or equal to it; `RpcError("forbidden")` when it names another user (the Python client's `_scope`). */
  private scope(user: string | null | undefined): string | undefined {
    if (this.user === null) return user ?? undefined;
    if (user !== undefined && user !== null && user !== this.user) {
      throw new RpcError("forbidden", `this client is bound to user '${this.user}'; it cannot act for '${user}'`);
    }
    return this.user;
  }

  /** Connect to NATS at `url` (reconnecting forever) and return a client that closes it on `close()`.
   * `natsOptions` go to `nats.connect` (credentials, ...). */
  static async connect(url = "nats://127.0.0.1:4222",
                       opts: MemoryClientOptions & { natsOptions?: ConnectionOptions } = {}): Promise<MemoryClient> {
    const tenant = checkToken("tenant", opts.tenant ?? "default");
    const nc = await natsConnect({ servers: url, maxReconnectAttempts: -1, inboxPrefix: `_INBOX.${tenant}`,
                                   ...(opts.natsOptions ?? {}) });
    return new MemoryClient(nc, opts, true);
  }

  async close(): Promise<void> {
    if (this.owns && !this.nc.isClosed()) await this.nc.drain();
  }

  // -- facts ----------------------------------------------------------------------------------------------------

  /** The `TurnRecorded` event `recordTurn` would publish (every field, as the Python codec encodes it). */
  buildTurn(thread: string, role: Role, content: string | Block[], opts: RecordTurnOptions = {}): TurnRecorded {
    return {
      type: "TurnRecorded",
      v: 2,
      event_id: opts.eventId ?? uuid7(),
      tenant_id: this.tenant,
      thread_id: checkToken("thread", thread),
      occurred_at: (opts.occurredAt ?? new Date()).toISOString(),
      user_id: opts.userId ?? null,
      session_id: opts.sessionId ?? null,
      producer: "memengine-client-ts",
      causation_id: null,
      correlation_id: null,
      metadata: opts.metadata ?? {},
      role,
      content: typeof content === "string" ? [{ type: "text", text: content }] : [...content],
      model: opts.model ?? null,
      usage: null,
      want_context: opts.wantContext ?? null,
    };
  }

  /** The tenant's dedup key, asked once from the query handler (`rpc.dedup_key` on the tenant's subject); `null`
   * when the deployment has none, or (not kept) when no handler answers: the publish then uses the plain digest. */
  async tenantDedupKey(): Promise<Buffer | null> {
    if (this.dedupKey !== undefined) return this.dedupKey;
    try {
      const reply = await this.request<{ key: string | null }>("dedup_key", {});
      this.dedupKey = reply.key ? Buffer.from(reply.key, "hex") : null;
      return this.dedupKey;
    } catch (exc) {
      if (exc instanceof RpcError && exc.code === "unavailable") return null;
      throw exc;
    }
  }

  /** Publish any fact event on its subject, with `Nats-Msg-Id` = `<tenant>:<event_id>:<32 hex digits of
   * HMAC-SHA256(dedup key, body)>` (sha256 without a key): the server drops a byte-identical repeat inside the
   * stream's duplicate window. `duplicate` is true only when the acknowledged message is this event: another
   * tenant's message under this id (a forged header) is detected through `rpc.published` and the event published
   * again under `<id>:r1`, `:r2`, ... (issue #26 item 2, engine/client/publishing.py). `expectedLastSubjectSeq`:
   * optimistic concurrency on the subject. */
  async publish(event: TurnRecorded, expectedLastSubjectSeq?: number): Promise<Recorded> {
    const subject = this.subjects.fact(event.tenant_id, event.thread_id, event.type);
    const data = checkEvent(event);
    const expect: { streamName: string; lastSubjectSequence?: number } = { streamName: this.factsStream };
    if (expectedLastSubjectSeq !== undefined) expect.lastSubjectSequence = expectedLastSubjectSeq;
    const key = await this.tenantDedupKey();
    const digest = (key ? createHmac("sha256", key) : createHash("sha256")).update(data).digest("hex").slice(0, 32);
    const dedupId = `${event.tenant_id}:${event.event_id}:${digest}`;
    let ack = await this.js.publish(subject, data, { msgID: dedupId, timeout: this.timeoutMs, expect });
    for (let step = 1; ack.duplicate; step++) {
      const owned = await this.request<{ owned: boolean }>("published", {
        seq: ack.seq, thread: event.thread_id, event_type: event.type,
        digest: createHash("sha256").update(data).digest("hex"),
      });
      if (owned.owned) break;
      const retry = step <= 8 ? `${dedupId}:r${step}` : `${dedupId}:${randomBytes(16).toString("hex")}`;
      ack = await this.js.publish(subject, data, { msgID: retry, timeout: this.timeoutMs, expect });
    }
    return { seq: ack.seq, eventId: event.event_id, duplicate: Boolean(ack.duplicate) };
  }

  /** Record one turn (`content`: a string, or text/thinking/tool_use/tool_result blocks). Resolves once JetStream
   * acknowledged it, with the stream sequence: pass it as `afterSeq` to read your own write. */
  async recordTurn(thread: string, role: Role, content: string | Block[],
                   opts: RecordTurnOptions = {}): Promise<Recorded> {
    if (this.user !== null) {
      // a bound client records only its user's turns, into threads that are its user's or nobody's yet: the
      // query handler answers `forbidden` for another user's thread (rpc.summary: a scope check and two index reads)
      opts = { ...opts, userId: this.scope(opts.userId) };
      await this.request("summary", { thread: checkToken("thread", thread) });
    }
    return this.publish(this.buildTurn(thread, role, content, opts));
  }

  // -- queries --------------------------------------------------------------------------------------------------

  /** The body `request` sends: `tenant` first, fields that are `undefined` / `null` left out. */
  requestBody(body: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = { tenant: this.tenant };
    for (const [k, v] of Object.entries(body)) if (v !== undefined && v !== null) out[k] = v;
    if (this.user !== null) out.bound_user = this.user;  // the server holds the request to this user's scope
    return out;
  }

  /** Send `body` to `<root>.rpc.<method>.<tenant>` and return the reply's `result` (`RpcError` on an error reply,
   * `RpcError("unavailable")` when no query handler answers). */
  async request<T = unknown>(method: string, body: Record<string, unknown>, timeoutMs?: number): Promise<T> {
    const subject = this.subjects.rpcScoped(method, this.tenant);
    const timeout = timeoutMs ?? this.timeoutMs;
    let msg;
    try {
      msg = await this.nc.request(subject, encoder.encode(JSON.stringify(this.requestBody(body))), { timeout });
    } catch (exc) {
      if (exc instanceof NatsError && exc.code === NatsErrorCode.NoResponders) {
        throw new RpcError("unavailable", "no memengine query handler is running (start `memengine up`)");
      }
      if (exc instanceof NatsError && exc.code === NatsErrorCode.Timeout) {
        throw new RpcError("unavailable", `no reply to ${method} within ${timeout / 1000}s`);
      }
      throw exc;
    }
    return decodeReply<T>(msg.data);
  }

  /** Tiered context for `thread` (`ContextResult`). */
  context(thread: string, opts: ContextOptions = {}): Promise<ContextResult> {
    return this.request("context", {
      thread, window: opts.window, query: opts.query, system_tokens: opts.systemTokens || undefined,
      after_seq: opts.afterSeq, wait: opts.wait,
    });
  }

  /** The transcript oldest first, `limit` messages after `fromSeq`. */
  history(thread: string, opts: HistoryOptions = {}): Promise<HistoryResult> {
    return this.request("history", {
      thread, limit: opts.limit ?? 100, from_seq: opts.fromSeq || undefined, after_seq: opts.afterSeq,
    });
  }

  /** The tenant's threads, most recently active first. */
  threads(opts: ThreadsOptions = {}): Promise<ThreadsResult> {
    return this.request("threads", { limit: opts.limit ?? 50, offset: opts.offset || undefined });
  }

  /** The hits most relevant to `query` (`RecallResult`), optionally within `thread`, by `user`, in
   * `[since, until)`; `sources` `["turns"]` (default) and/or `"memories"` (typed memory items). */
  async recall(query: string, opts: RecallOptions = {}): Promise<RecallResult> {
    return this.request("recall", {
      query, thread: opts.thread, user: this.scope(opts.user), limit: opts.limit ?? opts.k, since: opts.since?.toISOString(),
      until: opts.until?.toISOString(), after_seq: opts.afterSeq, sources: opts.sources, types: opts.types,
      tags: opts.tags, status: opts.status, include_expired: opts.includeExpired, as_of: opts.asOf?.toISOString(),
    });
  }

  /** The context the engine pushes for `thread` after each turn recorded with `wantContext`. Subscribe (and await
   * `ready`) before publishing the turn. Each item is the context plus `seq` (the turn's stream sequence); an error
   * reply makes the iteration throw `RpcError`. */
  subscribeContext(thread: string): ContextSubscription {
    const sub: Subscription = this.nc.subscribe(this.subjects.context(this.tenant, thread));
    const ready = this.nc.flush();
    const bound = this.user;
    return {
      ready,
      unsubscribe: () => sub.unsubscribe(),
      async *[Symbol.asyncIterator]() {
        try {
          for await (const msg of sub) {
            const result = decodeReply<PushedContext>(msg.data);
            const seq = msg.headers?.get("Memengine-Seq");
            if (result && typeof result === "object" && seq) result.seq = Number(seq);
            // a push is a NATS subject, not a request the query handler scopes: a bound client checks it itself
            const others = bound === null ? [] : [...result.messages.map((m) => m.user_id),
                                                  result.user_memory?.user ?? null]
              .filter((u) => u !== null && u !== undefined && u !== bound);
            if (others.length) {
              throw new RpcError("forbidden", `thread '${thread}' holds turns of another user than '${bound}'`);
            }
            yield result;
          }
        } finally {
          sub.unsubscribe();
        }
      },
    };
  }
}
