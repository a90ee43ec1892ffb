/** Against a live engine (`NATS_URL`; scripts/with-engine.sh starts one): a turn published from TypeScript comes
 * back through the engine's read models, and every reply is valid against docs/contract/rpc.schema.json. */
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";

import { ContextResult, InvalidToken, MemoryClient, PushedContext, Recorded, RpcError } from "../src";
import { errors } from "./schema";

const url = process.env.NATS_URL;
const root = process.env.MEMENGINE_SUBJECT_ROOT || "mem";
const prefix = process.env.MEMENGINE_STREAM_PREFIX || "MEMORY";
const tag = randomBytes(4).toString("hex");
const tenant = `ts_${tag}`;
const thread = `ts-thread-${tag}`;
let mem: MemoryClient;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await fn();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const text = (m: { content: { type: string; text?: string }[] }) =>
  m.content.filter((b) => b.type === "text").map((b) => b.text).join(" ");

before(async () => {
  assert.ok(url, "NATS_URL is not set: run `npm run test:engine` (starts `memengine up`) or point it at an engine");
  mem = await MemoryClient.connect(url, { tenant, subjectRoot: root, streamPrefix: prefix });
});

after(async () => {
  await mem?.close();
});

let first: Recorded;
let pushed: Promise<PushedContext>;

test("recordTurn is acknowledged by JetStream, once per event id", async () => {
  const sub = mem.subscribeContext(thread);
  await sub.ready;
  pushed = (async () => {
    for await (const ctx of sub) {
      sub.unsubscribe();
      return ctx;
    }
    throw new Error("subscription ended without a pushed context");
  })();
  const eventId = "0190f0e0-0000-7000-8000-" + randomBytes(6).toString("hex");
  const occurredAt = new Date();  // a retry is the byte-identical event (the dedup id carries a content digest)
  first = await mem.recordTurn(thread, "user", "I prefer aisle seats on long flights to Lisbon",
    { userId: "maya", sessionId: "s1", eventId, occurredAt, wantContext: { window: 8000, query: "seats" } });
  assert.ok(first.seq > 0);
  assert.equal(first.duplicate, false);
  const again = await mem.recordTurn(thread, "user", "I prefer aisle seats on long flights to Lisbon",
    { userId: "maya", sessionId: "s1", eventId, occurredAt, wantContext: { window: 8000, query: "seats" } });
  assert.equal(again.duplicate, true, "the same event id is stored once (Nats-Msg-Id)");
  assert.equal(again.seq, first.seq);
});

test("a forged Nats-Msg-Id of another tenant cannot drop a turn (issue #26 item 2)", async () => {
  // the attacker knows everything, the victim's dedup key included (a leak): its message takes the victim's id first
  const eventId = "0190f0e0-0000-7000-8000-" + randomBytes(6).toString("hex");
  const event = mem.buildTurn(`${thread}-forged`, "user", "yes", { eventId });
  const data = Buffer.from(JSON.stringify(event));
  const key = await mem.tenantDedupKey();
  assert.ok(key, "the engine's facts stream carries a dedup secret");
  const digest = createHmac("sha256", key).update(data).digest("hex").slice(0, 32);
  const theirs = { ...event, tenant_id: `${tenant}x`, content: [{ type: "text", text: "attacker" }] };
  const forged = await mem.js.publish(`${root}.fact.${tenant}x.${thread}-forged.TurnRecorded`, JSON.stringify(theirs),
    { msgID: `${tenant}:${eventId}:${digest}` });
  const rec = await mem.publish(event);
  assert.equal(rec.duplicate, false);
  assert.notEqual(rec.seq, forged.seq);
  const again = await mem.publish(event);
  assert.equal(again.duplicate, true, "a retry is still the duplicate of the victim's own write");
  assert.equal(again.seq, rec.seq);
});

test("context reads the turn back through the engine", async () => {
  const ctx: ContextResult = await mem.context(thread, { window: 8000, afterSeq: first.seq });
  assert.equal(ctx.stale, false);
  assert.ok(ctx.applied_seq >= first.seq);
  const turn = ctx.messages.find((m) => m.event_id === first.eventId);
  assert.ok(turn, `turn ${first.eventId} not in ${JSON.stringify(ctx.event_ids)}`);
  assert.match(text(turn), /aisle seats/);
  assert.equal(turn.user_id, "maya");
  assert.ok(ctx.tokens.total <= ctx.budget.total);
  assert.deepEqual(errors("rpc", "ContextReply", { ok: true, result: ctx }), []);
});

test("subscribeContext receives the context pushed for the turn", async () => {
  const ctx = await Promise.race([pushed, new Promise<never>((_, rej) =>
    setTimeout(() => rej(new Error("no pushed context within 20 s")), 20_000))]);
  assert.equal(ctx.seq, first.seq);
  assert.ok(ctx.event_ids.includes(first.eventId));
});

test("history, threads and recall", async () => {
  const second = await mem.recordTurn(thread, "assistant", [
    { type: "text", text: "Noted: aisle seat." },
    { type: "tool_use", id: "call-1", name: "book_seat", input: { seat: "12C" } },
  ]);
  const hist = await mem.history(thread, { afterSeq: second.seq });
  assert.deepEqual(hist.messages.map((m) => m.event_id), [first.eventId, second.eventId]);
  assert.equal(hist.messages[1].content[1].type, "tool_use");
  assert.equal(hist.next_from_seq, null);
  assert.deepEqual(errors("rpc", "HistoryReply", { ok: true, result: hist }), []);

  const page = await mem.history(thread, { limit: 1 });
  assert.equal(page.messages.length, 1);
  const rest = await mem.history(thread, { fromSeq: page.next_from_seq! });
  assert.deepEqual(rest.messages.map((m) => m.event_id), [second.eventId]);

  const threads = await mem.threads();
  assert.equal(threads.tenant, tenant);
  const mine = threads.threads.find((t) => t.thread === thread);
  assert.ok(mine && mine.message_count === 2, JSON.stringify(threads));
  assert.deepEqual(errors("rpc", "ThreadsReply", { ok: true, result: threads }), []);

  // the recall read model (memory_vectors) is not among the projections after_seq waits for: poll
  const recall = await waitFor("a recall hit", async () => {
    const r = await mem.recall("Lisbon aisle seats", { thread, afterSeq: second.seq });
    return r.hits.some((h) => h.event_id === first.eventId) ? r : undefined;
  });
  assert.equal(recall.tenant, tenant);
  assert.deepEqual(errors("rpc", "RecallReply", { ok: true, result: recall }), []);
});

test("typed errors from the error replies", async () => {
  await assert.rejects(mem.context(`missing-${tag}`),
    (e: unknown) => e instanceof RpcError && e.code === "unknown_thread");
  await assert.rejects(mem.request("context", { thread, windw: 1 }),
    (e: unknown) => e instanceof RpcError && e.code === "invalid_request");
  // the tenant-scoped subject refuses a payload naming another tenant
  await assert.rejects(mem.request("threads", { tenant: "someone_else" }),
    (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  await assert.rejects(mem.request("no_such_method", {}),
    (e: unknown) => e instanceof RpcError && e.code === "unavailable");
  // like the Python client, queries leave the thread's token to the handler (a publish checks it client-side)
  await assert.rejects(mem.context("bad.thread"),
    (e: unknown) => e instanceof RpcError && e.code === "invalid_token");
  await assert.rejects(mem.recordTurn("bad.thread", "user", "x"), InvalidToken);
  const err = { ok: false, error: { code: "unknown_thread", message: "x" } };
  assert.deepEqual(errors("rpc", "ContextReply", err), []);
});

test("a client bound to a user is answered in that user's scope only (issue #26 item 4)", async () => {
  const maya = mem.forUser("maya");  // `thread` is maya's: its first turn names her
  const bo = new MemoryClient(mem.nc, { tenant, subjectRoot: root, streamPrefix: prefix, user: "bo" });
  assert.equal(maya.user, "maya");
  assert.throws(() => maya.forUser("bo"), (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  // the server refuses another user's thread, and lists only the bound user's
  const ctx = await maya.context(thread, { window: 4000 });
  assert.ok(ctx.messages.length > 0);
  await assert.rejects(bo.context(thread), (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  await assert.rejects(bo.history(thread), (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  assert.ok(!(await bo.threads()).threads.some((t) => t.thread === thread));
  // what the server cannot see, the client refuses: acting for another user, writing into their thread
  await assert.rejects(bo.recall("aisle seats", { user: "maya" }),
    (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  await assert.rejects(bo.recordTurn(thread, "user", "I am maya now"),
    (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  await assert.rejects(bo.recordTurn(`bo-${tag}`, "user", "hi", { userId: "maya" }),
    (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  // its own thread: the turn is recorded as bo's, and it reads it back
  const own = await bo.recordTurn(`bo-${tag}`, "user", "I prefer window seats");
  const back = await bo.history(`bo-${tag}`, { afterSeq: own.seq });
  assert.deepEqual(back.messages.map((m) => m.user_id), ["bo"]);
  assert.ok((await bo.threads()).threads.some((t) => t.thread === `bo-${tag}`));
  await assert.rejects(maya.context(`bo-${tag}`), (e: unknown) => e instanceof RpcError && e.code === "forbidden");
  await bo.close();  // not its connection: `mem` stays open
  assert.ok(!mem.nc.isClosed());
});
