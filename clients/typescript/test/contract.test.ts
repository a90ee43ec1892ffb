/** The client's types and messages against the contract documents; needs no engine. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Budget, checkEvent, ContextRequest, ContextResult, decodeReply, HistoryRequest, InvalidToken, MemoryClient, MessageOut,
  RecallHit, RecallRequest, RecallResult, RpcError, ThreadsRequest, TurnRecorded, UserMemoryOut, uuid7,
} from "../src";
import { errors, loadDoc, properties } from "./schema";

// A Record over `keyof T` fails to compile when a property of the TypeScript type is missing here; the test then
// compares these keys with the schema's, so a property added to or removed from either side fails.
type Keys<T> = Record<keyof T, true>;
const keys = (k: object) => Object.keys(k).sort();

const TYPES: [string, string, object][] = [
  ["events", "TurnRecorded", { type: true, v: true, event_id: true, tenant_id: true, thread_id: true, occurred_at: true,
    user_id: true, session_id: true, producer: true, causation_id: true, correlation_id: true, metadata: true,
    role: true, content: true, model: true, usage: true, want_context: true } satisfies Keys<TurnRecorded>],
  ["rpc", "ContextRequest", { tenant: true, bound_user: true, thread: true, window: true, system_tokens: true,
    query: true, after_seq: true, wait: true } satisfies Keys<ContextRequest>],
  ["rpc", "HistoryRequest", { tenant: true, bound_user: true, thread: true, limit: true, from_seq: true,
    after_seq: true, wait: true } satisfies Keys<HistoryRequest>],
  ["rpc", "ThreadsRequest", { tenant: true, bound_user: true, limit: true, offset: true
  } satisfies Keys<ThreadsRequest>],
  ["rpc", "RecallRequest", { tenant: true, bound_user: true, query: true, thread: true, user: true, limit: true,
    k: true, since: true, until: true, after_seq: true, sources: true, types: true, tags: true, status: true,
    include_expired: true, as_of: true } satisfies Keys<RecallRequest>],
  ["rpc", "ContextResult", { tenant: true, thread: true, mode: true, budget: true, tokens: true, tokenizer: true,
    messages: true, event_ids: true, dropped: true, applied_seq: true, stale: true,
    waited_ms: true, user_memory: true } satisfies Keys<ContextResult>],
  ["rpc", "UserMemoryOut", { user: true, tokens: true, memory_ids: true, event_ids: true,
    left_out: true } satisfies Keys<UserMemoryOut>],
  ["rpc", "MessageOut", { tier: true, seq: true, event_id: true, role: true, user_id: true, session_id: true,
    occurred_at: true, tokens: true, condensed: true, content: true, metadata: true,
    chosen_by: true } satisfies Keys<MessageOut>],
  ["rpc", "Budget", { window: true, margin: true, reserve: true, system: true, total: true, tier1: true, tier2: true,
    tier3: true } satisfies Keys<Budget>],
  ["rpc", "RecallResult", { tenant: true, query: true, mode: true, embedder: true, hits: true, applied_seq: true,
    took_ms: true } satisfies Keys<RecallResult>],
  ["rpc", "RecallHit", { kind: true, seq: true, event_id: true, thread: true, user_id: true, session_id: true,
    occurred_at: true, text: true, score: true, relevance: true, recency: true, importance: true,
    source_event_ids: true, memory_id: true, type: true, tags: true, status: true,
    expires_at: true, role: true, tool: true } satisfies Keys<RecallHit>],
];

for (const [doc, def, k] of TYPES) {
  test(`TypeScript ${def} has the schema's properties`, () => {
    assert.deepEqual(keys(k), properties(doc as "events" | "rpc", def));
  });
}

test("the error codes are the schema's", () => {
  const codes: string[] = loadDoc("rpc.schema.json").$defs.ErrorCode.enum;
  const known: RpcError["code"][] = ["invalid_request", "invalid_token", "payload_too_large", "unknown_thread",
    "unknown_user", "unknown_memory", "forbidden", "rate_limited", "invalid_event", "unavailable", "internal", "not_found", "busy"];
  assert.deepEqual([...known].sort(), [...codes].sort());
});

// A client over no connection: buildTurn and requestBody touch no server.
const offline = new MemoryClient({ jetstream: () => ({}) } as any, { tenant: "acme" });

test("a built turn is a valid TurnRecorded", () => {
  const turn = offline.buildTurn("t-1", "assistant", [
    { type: "text", text: "checking" },
    { type: "tool_use", id: "c1", name: "search", input: { q: "aisle" } },
    { type: "tool_result", tool_use_id: "c1", content: "ok" },
  ], { userId: "maya", wantContext: { window: 8000, query: "seats" }, metadata: { k: 1 } });
  assert.deepEqual(errors("events", "TurnRecorded", turn), []);
  assert.deepEqual(errors("events", "Fact", turn), []);
  const plain = offline.buildTurn("t-1", "user", "hi");
  assert.deepEqual(plain.content, [{ type: "text", text: "hi" }]);
  assert.deepEqual(errors("events", "TurnRecorded", plain), []);
  assert.notDeepEqual(errors("events", "TurnRecorded", { ...plain, thread_id: "a.b" }), []);
});

test("bad input is refused before anything is sent", () => {
  assert.throws(() => offline.buildTurn("a.b", "user", "x"), InvalidToken);
  assert.throws(() => offline.buildTurn("a>", "user", "x"), InvalidToken);
  assert.throws(() => new MemoryClient({ jetstream: () => ({}) } as any, { tenant: "*" }), InvalidToken);
  assert.throws(() => offline.subjects.rpcScoped("context", "a b"), InvalidToken);
});

test("request bodies are valid requests", () => {
  assert.deepEqual(errors("rpc", "ContextRequest", offline.requestBody({ thread: "t", window: 8000, after_seq: 3,
    query: undefined })), []);
  assert.deepEqual(errors("rpc", "HistoryRequest", offline.requestBody({ thread: "t", limit: 100 })), []);
  assert.deepEqual(errors("rpc", "ThreadsRequest", offline.requestBody({ limit: 50 })), []);
  assert.deepEqual(errors("rpc", "RecallRequest", offline.requestBody({ query: "aisle", sources: ["turns", "memories"],
    since: new Date(0).toISOString() })), []);
  assert.notDeepEqual(errors("rpc", "ContextRequest", offline.requestBody({ thread: "t", windw: 1 })), []);
});

test("uuid7 is a version-7 UUID in time order", () => {
  const a = uuid7(1_700_000_000_000), b = uuid7(1_700_000_000_001);
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.ok(a < b);
});

test("replies decode like engine.wire.protocol.decode_reply", () => {
  const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
  assert.deepEqual(decodeReply(enc({ ok: true, result: { a: 1 } })), { a: 1 });
  assert.throws(() => decodeReply(enc({ ok: false, error: { code: "unknown_thread", message: "no" } })),
    (e: unknown) => e instanceof RpcError && e.code === "unknown_thread" && e.detail === "no");
  assert.throws(() => decodeReply(enc([1])), (e: unknown) => e instanceof RpcError && e.code === "internal");
  assert.throws(() => decodeReply(new Uint8Array([0xff])), (e: unknown) => e instanceof RpcError && e.code === "internal");
});

test("docs/contract/asyncapi.json is a valid AsyncAPI 3.0.0 document", () => {
  // the official JSON Schema of the spec (@asyncapi/specs); it bundles its own draft-07 meta-schema, hence meta: false
  const Ajv = require("ajv").default;
  const addFormats = require("ajv-formats").default;
  const specs = require("@asyncapi/specs");
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, meta: false });
  addFormats(ajv);
  const validate = ajv.compile(specs.schemas["3.0.0"]);
  const doc = loadDoc("asyncapi.json");
  assert.ok(validate(doc), JSON.stringify(validate.errors?.slice(0, 5), null, 1));
  const broken = structuredClone(doc);
  broken.operations.receiveFact.action = "publish"; // AsyncAPI 2 wording: not valid in 3.0
  assert.equal(validate(broken), false);
});

test("checkEvent refuses what no projection can store (events.codec, issue #26), and keeps the rest", () => {
  const client = new MemoryClient({ jetstream: () => ({}) } as never, { tenant: "acme" });
  const turn = (content: string, opts: { userId?: string; sessionId?: string; metadata?: Record<string, unknown> } = {}) =>
    client.buildTurn("t", "user", content, opts);
  const refused = (e: unknown) => e instanceof RpcError && e.code === "invalid_event";
  for (const ev of [turn("a\u0000b"), turn("ok", { userId: "\u0000" }), turn("ok", { metadata: { a: [{ b: "x\u0000" }] } }),
                    turn("ok", { metadata: { "k\u0000": 1 } }), turn("half \ud83d emoji"), turn("\udc00"),
                    turn("ok", { userId: "\u4e00".repeat(342) }), turn("ok", { sessionId: "\u4e00".repeat(400) })]) {
    assert.throws(() => checkEvent(ev), refused, JSON.stringify(ev.content));
  }
  for (const ev of [turn("tab\tnl\n\u0001\u001b[31m\u007f\u202e\u2028"), turn("a literal \\u0000 and \\ud800"),
                    turn("emoji \ud83d\ude00"), turn("ok", { userId: "u".repeat(1024) }),
                    turn("ok", { userId: "\u4e00".repeat(341) })]) {
    const back = JSON.parse(new TextDecoder().decode(checkEvent(ev)));
    assert.deepEqual(back.content, ev.content);
  }
});
