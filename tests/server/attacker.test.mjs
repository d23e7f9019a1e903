// The server decides (docs/design.md, "Threat model"): each test plays one attacker against
// the real handler and Postgres. Alice owns her threads; bob may only read and decide on
// them ("bob/read", "bob/decide"); carol may write her own threads; mallory may do nothing;
// anonymous requests carry no identity. Every refusal is a stable code, and writes nothing.

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored, variant } from "./util.mjs";

let s;
before(async () => {
  s = await startStoreServer({ maxRecordBytes: 64 * 1024, maxMessageBytes: 16 * 1024,
    maxFeedsPerIdentity: 3, logQueries: true });
});
after(async () => {
  await s?.close();
});

const run = fixture("approved-run.json");
// run[0] the user's message, run[1] the model's gated call c1 (delete_file /tmp/a.txt),
// run[2] the decision (POST /decide), run[3] the call's "started" mark, run[4] its result,
// run[5] the answer.
const [ask, gate, decision, start, result, answer] = run;

/** A thread of alice's, at the gated call, on which bob may only read and decide. */
async function gated(id) {
  await applyAll(client(s, "alice"), id, [ask, gate]);
  s.grants.set(id, ["bob/read", "bob/decide"]);
  return id;
}

const audit = async (id) =>
  (await client(s, "alice").rows(id, "audit", "?limit=100")).body.rows.map((r) => JSON.parse(r.json));

test("a decide-only user cannot commit anything: rewriting a call, adding one, or a commit that appends nothing", async () => {
  const id = await gated("alice:decide-only");
  const bob = client(s, "bob");
  const before = await stored(s.pool, id);
  // The old way of deciding (a commit that only rewrites the tail), with the inputs changed.
  const forged = structuredClone(start);
  forged.commitId = "bob:1";
  forged.expectedVersion = 2;
  forged.commit.replaceTail = structuredClone(JSON.parse(JSON.stringify(gate.commit.append[0])));
  forged.commit.replaceTail.tools[0].inputs = { path: "/etc" };
  forged.commit.replaceTail.tools[0].approval = "approved";
  for (const body of [forged, variant(ask, { commitId: "bob:2", expectedVersion: 2 }),
    variant(answer, { commitId: "bob:3", expectedVersion: 2 })]) {
    const r = await bob.commit(id, body);
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, "unauthorized");
  }
  assert.deepEqual(await stored(s.pool, id), before);
});

test("a decision is an intent: applied by the server, attributed to who authorize says", async () => {
  const id = await gated("alice:intent");
  const r = await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.record.status, "awaiting_device");
  assert.equal(JSON.parse(r.body.tail).tools[0].approval, "approved");
  const [a] = await audit(id);
  assert.equal(a.decision, "approved");
  assert.equal(a.decidedBy, "bob");
  // Alice's device runs it: the started mark, the result and the answer are legal writes.
  const alice = client(s, "alice");
  await applyAll(alice, id, [start, result, answer]);
  const [done] = await audit(id);
  assert.equal(done.outcome, "ok");
  assert.equal(done.decidedBy, "bob");
});

test("an edit decision is recorded as edited; a body that is not decisions changes nothing", async () => {
  const id = await gated("alice:edit");
  const bob = client(s, "bob");
  const before = await stored(s.pool, id);
  for (const [body, code] of [
    [{ commitId: "x1", decisions: { c1: "maybe" } }, "invalid_decision"],
    [{ commitId: "x2", decisions: {} }, "invalid_decision"],
    [{ commitId: "x3", decisions: { c1: "approve" }, commit: {} }, "invalid_request"],
    [{ commitId: "x4", decisions: { nope: "approve" } }, "unknown_call_id"],
    [{ commitId: "x5", decisions: { c1: "approve" }, resumeToken: "run_stale" }, "not_suspended"],
  ]) {
    const r = await bob.decide(id, body);
    assert.equal(r.body?.error?.code, code, r.text);
  }
  assert.deepEqual((await stored(s.pool, id)).record, before.record);
  const r = await bob.decide(id, { commitId: "b2", decisions: { c1: ["edit", { path: "/tmp/b" }] } });
  assert.equal(r.status, 200, r.text);
  const [a] = await audit(id);
  assert.equal(a.decision, "edited");
  assert.deepEqual(a.proposedInputs, { path: "/tmp/a.txt" });
});

test("decidedBy follows the person who last changed a decision", async () => {
  // Partial decisions stay revisable while another call waits: a thread with two calls.
  const two = structuredClone(gate);
  const c2 = structuredClone(two.commit.append[0].tools[0]);
  c2.callId = "c2";
  two.commit.append[0].tools.push(c2);
  two.commit.run.gated.push("c2");
  two.commit.run.audit.push({ ...two.commit.run.audit[0], seq: 2, callId: "c2" });
  two.commit.audit.push({ ...two.commit.audit[0], seq: 2, callId: "c2" });
  await applyAll(client(s, "alice"), "alice:revise2", [ask, variant(two, {})]);
  s.grants.set("alice:revise2", ["bob/decide", "carol/decide"]);
  assert.equal((await client(s, "bob").decide("alice:revise2",
    { commitId: "b", decisions: { c1: "approve" } })).status, 200);
  assert.equal((await client(s, "carol").decide("alice:revise2",
    { commitId: "c", decisions: { c1: ["reject", "no"] } })).status, 200);
  const rec = (await stored(s.pool, "alice:revise2")).record;
  assert.equal(rec.run.audit.find((a) => a.callId === "c1").decidedBy, "carol");
});

test("a writer cannot forge an approval, clear a started mark, or rewrite the audit trail", async () => {
  // Carol writes her own thread, and lies.
  const id = "carol:liar";
  const carol = client(s, "carol");
  await applyAll(carol, id, [ask, gate]);
  const before = await stored(s.pool, id);
  // An approval recorded in the journal by a commit.
  const forged = structuredClone(start);
  forged.commitId = "carol:f1";
  forged.expectedVersion = 2;
  let r = await carol.commit(id, forged);
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.error.code, "illegal_write");
  // An audit record numbered 10^12 (the owner's audit page must keep working).
  const inflate = structuredClone(forged);
  inflate.commitId = "carol:f2";
  inflate.commit.run = before.record.run;
  inflate.commit.audit = [{ ...gate.commit.audit[0], seq: 1e12 }];
  r = await carol.commit(id, inflate);
  assert.equal(r.body.error.code, "illegal_write", r.text);
  assert.deepEqual(await stored(s.pool, id), before);
  assert.equal((await carol.rows(id, "audit", "?limit=10")).status, 200);

  // Decided properly; the run starts; a liar clears the mark to make the call run again.
  s.grants.set(id, ["bob/decide"]);
  assert.equal((await client(s, "bob").decide(id, { commitId: "b", decisions: { c1: "approve" } })).status, 200);
  await applyAll(carol, id, [start]);
  const started = await stored(s.pool, id);
  assert.equal(started.record.run.started, "c1");
  const clear = structuredClone(start);
  clear.commitId = "carol:f3";
  clear.expectedVersion = started.version;
  clear.commit.run = { ...started.record.run, started: undefined };
  delete clear.commit.run.started;
  r = await carol.commit(id, clear);
  assert.equal(r.body.error.code, "illegal_write", r.text);
  assert.equal((await stored(s.pool, id)).record.run.started, "c1");
});

test("a lease is its holder's: naming the owner, renewing or releasing it needs its secret", async () => {
  const id = "carol:lease";
  const carol = client(s, "carol");
  const r0 = await carol.commit(id, ask);
  assert.equal(r0.status, 200);
  assert.equal(typeof r0.body.leaseToken, "string", "the holder gets the secret");
  assert.ok(!JSON.stringify(r0.body.record).includes(r0.body.leaseToken));
  const row = (await s.pool.query("SELECT record FROM gatehouse_threads WHERE id = $1", [id])).rows[0];
  assert.ok(!row.record.includes(r0.body.leaseToken), "never in the record");
  // Another writer (another device of carol's, or a script) names the live owner.
  const other = client(s, "carol", {}, new Map()); // a device without the secret
  const r = await other.commit(id, variant(gate, { commitId: "x:1" }));
  assert.equal(r.status, 409, r.text);
  assert.equal(r.body.error.code, "busy");
  for (const op of ["renew", "release"]) {
    const l = await other.lease(id, "w1", op);
    assert.deepEqual(l.body, { ok: false }, op);
  }
  assert.ok((await stored(s.pool, id)).record.lease, "still held");
  // A leaked secret is no use to another identity: the lease is bound to who took it.
  s.grants.set(id, ["bob/write"]);
  const thief = client(s, "bob", {}, new Map([[`${id}\nw1`, r0.body.leaseToken]]));
  const stolen = await thief.commit(id, variant(gate, { commitId: "bob:1" }));
  assert.equal(stolen.body.error.code, "busy", stolen.text);
  assert.deepEqual((await thief.lease(id, "w1", "release")).body, { ok: false });
  // The holder goes on, and lets go.
  assert.equal((await carol.lease(id, "w1", "renew")).body.ok, true);
  assert.equal((await carol.commit(id, gate)).status, 200);
  assert.equal((await stored(s.pool, id)).record.lease, null);
});

test("a replayed commit id answers only its maker, for the same body", async () => {
  const id = "carol:replay";
  const carol = client(s, "carol");
  await applyAll(carol, id, [ask]);
  s.grants.set(id, ["bob/write"]);
  // Bob may write too, but a captured commit id is not his to replay.
  const r = await client(s, "bob").commit(id, ask);
  assert.equal(r.status, 409, r.text);
  assert.equal(r.body.error.code, "commit_id_reused");
  assert.equal(r.body.record, undefined);
  const changed = await carol.commit(id, variant(ask, { keep: false }));
  assert.equal(changed.body.error.code, "commit_id_reused");
  carol.tokens.clear(); // the retry is the very body first sent
  const same = await carol.commit(id, ask);
  assert.equal(same.status, 200, "the maker's retry gets its answer");
});

test("authorize runs first, never under a lock, and a throw is authorize_failed", async () => {
  const gate_ = {};
  const own = await startStoreServer({
    postgres: s.postgres,
    authorize: async (request, { threadId }) => {
      const user = (request.headers.get("authorization") ?? "").slice(7);
      if (user === "slow") await new Promise((r) => (gate_.release = r));
      if (user === "boom") throw new Error("the identity provider is down");
      if (user === "denied") throw Object.assign(new Error("expired token"), { status: 401 });
      return user && threadId?.startsWith("alice:") ? "alice" : user || null;
    },
  });
  try {
    const id = "alice:slow-idp";
    // A slow identity provider holds up only its own request, not the thread's writers.
    const waiting = client(own, "slow").commit(id, variant(ask, { commitId: "slow:0" }));
    while (!gate_.release) await new Promise((r) => setTimeout(r, 5)); // it is in authorize
    const fast = await client(own, "alice").commit(id, ask);
    assert.equal(fast.status, 200, fast.text);
    gate_.release();
    // Authorized at last, it meets the thread as alice left it: her run's lease.
    assert.equal((await waiting).body.error.code, "busy");
    const boom = await client(own, "boom").commit(id, variant(gate, { commitId: "b" }));
    assert.equal(boom.status, 500);
    assert.equal(boom.body.error.code, "authorize_failed");
    const denied = await client(own, "denied").commit(id, variant(gate, { commitId: "d" }));
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, "authorize_failed");
    // The body is not read for a user who may not write: a huge one is refused as 403.
    const anon = await client(own, null).commit(id, { junk: "x".repeat(4 * 1024 * 1024) });
    assert.equal(anon.status, 403);
  } finally {
    await own.close();
  }
});

test("feeds: the connection is authorized, capped per identity, and an idle long poll or stream makes no queries", async () => {
  const anon = await client(s, null).call("GET", "/changes?poll=1");
  assert.equal(anon.status, 403);
  // Not even a cursor is opened for it: a forged one is refused as unauthorized, not checked.
  const probe = await client(s, null).call("GET", "/changes?poll=1&since=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(probe.status, 403);
  assert.equal(anon.body.error.code, "unauthorized");
  const sse = await fetch(`${s.url}/changes`);
  assert.equal(sse.status, 403);
  await sse.text();
  // Three idle long polls of mallory's: the fourth is refused.
  const ctl = new AbortController();
  const first = await client(s, "mallory").call("GET", "/changes?poll=1");
  const cursor = first.body.cursor;
  const polls = [0, 1, 2].map(() => fetch(`${s.url}/changes?poll=1&since=${cursor}&wait=10000`,
    { headers: { authorization: "Bearer mallory" }, signal: ctl.signal }).catch(() => null));
  await new Promise((r) => setTimeout(r, 300));
  const fourth = await client(s, "mallory").call("GET", `/changes?poll=1&since=${cursor}&wait=100`);
  assert.equal(fourth.status, 429);
  assert.equal(fourth.body.error.code, "too_many_feeds");
  // And an SSE stream of sally's, open and connected (there was a read every 5 s).
  const stream = await fetch(`${s.url}/changes`, { headers: { authorization: "Bearer sally" },
    signal: ctl.signal });
  const reader = stream.body.getReader();
  assert.match(new TextDecoder().decode((await reader.read()).value), /connected/);
  await new Promise((r) => setTimeout(r, 300));
  const from = s.queries.length;
  await new Promise((r) => setTimeout(r, 6000));
  const made = s.queries.slice(from).filter((q) => !/^(LISTEN|UNLISTEN)/.test(q));
  assert.deepEqual(made, [], "idle polls and an idle stream made no queries in 6 s");
  ctl.abort();
  await Promise.all(polls);
  await reader.cancel().catch(() => {});
});

test("a poll's cursor tells nothing global: sealed, new at every answer, and a forged one is refused", async () => {
  // (oscar: mallory's aborted polls of the test before may hold its feeds for a few ms)
  const m = client(s, "oscar");
  const first = (await m.call("GET", "/changes?poll=1")).body.cursor;
  assert.ok(!/^\d+$/.test(first), `not a number: ${first}`);
  // Writes oscar may not see move nothing oscar can observe: no notice, and a cursor
  // that is new at every answer whether or not anything was written.
  const quietA = (await m.call("GET", `/changes?poll=1&since=${first}`)).body;
  await applyAll(client(s, "alice"), "alice:counted", [ask]);
  const busyA = (await m.call("GET", `/changes?poll=1&since=${quietA.cursor}`)).body;
  for (const got of [quietA, busyA]) {
    assert.deepEqual(got.changes, []);
    assert.equal(got.cursor.length, first.length, "the same length, whatever the position");
  }
  assert.equal(new Set([first, quietA.cursor, busyA.cursor]).size, 3);
  // A number (the old cursor), a tampered cursor, or one from another database: refused.
  const tampered = first.slice(0, -2) + (first.endsWith("AA") ? "BB" : "AA");
  for (const since of ["0", "12345", tampered, "x".repeat(80), "%00"]) {
    const r = await m.call("GET", `/changes?poll=1&since=${since}`);
    assert.equal(r.status, 400, `${since}: ${r.text}`);
    assert.equal(r.body.error.code, "invalid_request");
  }
  // SSE notices carry no position either (no `id:` line).
  const sse = await fetch(`${s.url}/changes`, { headers: { authorization: "Bearer alice" } });
  const reader = sse.body.getReader();
  await reader.read();
  await applyAll(client(s, "alice"), "alice:counted", [gate]);
  let text = "";
  while (!/data:/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  assert.doesNotMatch(text, /^id:/m, text);
});

test("a list comes from the owner index: another user's threads are not even asked about", async () => {
  await applyAll(client(s, "alice"), "alice:owned", [ask]);
  const from = s.calls.length;
  const r = await client(s, "mallory").list();
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.threads, []);
  const asked = s.calls.slice(from).filter((c) => c.threadId !== null);
  assert.deepEqual(asked, [], "authorize was asked about no thread of someone else");
  // Threads shared with a user (sharedWith) are listed too, each still authorized.
  s.grants.set("alice:owned", ["mallory/decide"]);
  try {
    const shared = await client(s, "mallory").list();
    assert.deepEqual(shared.body.threads.map((t) => t.id), []);
    s.grants.set("alice:owned", ["mallory"]);
    const readable = await client(s, "mallory").list();
    assert.deepEqual(readable.body.threads.map((t) => t.id), ["alice:owned"]);
  } finally {
    s.grants.delete("alice:owned");
  }
  // The owner is who created the thread; stored, not claimed by a later writer.
  const owner = await s.pool.query("SELECT owner FROM gatehouse_threads WHERE id = 'alice:owned'");
  assert.equal(owner.rows[0].owner, "alice");
});

test("a list reads no record the user may not read, and pages are capped", async () => {
  await applyAll(client(s, "alice"), "alice:listed", [ask]);
  const from = s.queries.length;
  const r = await client(s, "mallory").list();
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.threads, []);
  // (The ids come from indexes: their query names `record` only to skip placeholders.)
  const read = s.queries.slice(from).filter((q) => /SELECT[^]*record/.test(q) && !/^SELECT id, at FROM/.test(q));
  assert.deepEqual(read, [], "no record was read");
  const big = await client(s, "alice").rows("alice:listed", "messages", "?limit=4097");
  assert.equal(big.status, 400);
  assert.equal(big.body.error.code, "invalid_request");
  // Listed records leave the MCP tool lists out.
  const mine = (await client(s, "alice").list()).body.threads.find((t) => t.id === "alice:listed");
  assert.ok(mine && !("mcpTools" in mine));
});

test("records and messages over the caps are 413 with the limit, and write nothing", async () => {
  const id = "alice:caps";
  const a = client(s, "alice");
  await applyAll(a, id, [variant(ask, { keep: false })]);
  const before = await stored(s.pool, id);
  const big = structuredClone(ask);
  big.commitId = "w1:big";
  big.expectedVersion = 1;
  big.keep = false;
  big.commit.append[0].__id = "msg_999999999999999999";
  big.commit.append[0].content[0].content = "x".repeat(20 * 1024);
  const r = await a.commit(id, big);
  assert.equal(r.status, 413, r.text);
  assert.equal(r.body.error.code, "too_large");
  assert.equal(r.body.error.limit, 16 * 1024);
  assert.deepEqual(await stored(s.pool, id), before);
});

test("the commit log keeps no copy of the record: 30 small commits on a large thread add bytes, not records", async () => {
  const id = "alice:log";
  const a = client(s, "alice");
  const big = structuredClone(ask);
  big.keep = false;
  big.commit.policies = Object.fromEntries(Array.from({ length: 400 }, (_, i) =>
    [`tool_${i}_${"x".repeat(60)}`, { enabled: true }]));
  assert.equal((await a.commit(id, big)).status, 200);
  let version = 1;
  for (let i = 0; i < 30; i++) {
    const small = structuredClone(big);
    small.commitId = `w1:log${i}`;
    small.expectedVersion = version;
    small.commit.append[0].__id = `msg_${400000000000000000 + i}`;
    const r = await a.commit(id, small);
    assert.equal(r.status, 200, r.text);
    version = r.body.record.version;
  }
  const record = (await s.pool.query("SELECT length(record) AS n FROM gatehouse_threads WHERE id = $1",
    [id])).rows[0].n;
  const log = (await s.pool.query(`SELECT coalesce(sum(length(coalesce(answer, ''))), 0) AS n,
    count(*) AS c FROM gatehouse_commits WHERE thread = $1`, [id])).rows[0];
  assert.ok(record > 30_000, `the record is large (${record} B)`);
  assert.equal(Number(log.c), 31);
  assert.equal(Number(log.n), 0, "no answer (record) is logged for an applied commit");
});

test("the web's rules: JSON only, no credentials with *, path-only routing, no dot segments", async () => {
  const id = "alice:web";
  for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
    const r = await client(s, "alice").call("POST", `/threads/${encodeURIComponent(id)}/commit`,
      JSON.stringify(ask), { "content-type": type });
    assert.equal(r.status, 415, type);
    assert.equal(r.body.error.code, "unsupported_media_type");
  }
  assert.equal((await stored(s.pool, id)).version, null);
  const { createStoreHandler } = await import("../../pkg/server.js");
  assert.throws(() => createStoreHandler({ pool: s.pool, authorize: () => "x",
    cors: { origin: "*", credentials: true } }), { code: "invalid_config" });
  // A Host header that looks like a path routes nothing; dot segments are refused.
  const port = new URL(s.url).port;
  const raw = (path, headers = {}) => new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "GET",
      headers: { authorization: "Bearer alice", ...headers } }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("error", reject);
    req.end();
  });
  const hosted = await raw("/nothing", { host: `x/api/gatehouse/threads/alice%3Aweb?` });
  assert.equal(hosted.status, 404, hosted.text);
  for (const path of ["/api/gatehouse/threads/../threads", "/api/gatehouse/%2e%2e/api/gatehouse/threads",
    "/api/gatehouse/threads/%2E/x"]) {
    const r = await raw(path);
    assert.equal(r.status, 400, path);
  }
  // An origin the handler does not list is refused before anything happens.
  const listed = await startStoreServer({ postgres: s.postgres, cors: { origin: ["https://app.example"],
    credentials: true } });
  try {
    const r = await client(listed, "alice").commit("alice:origin", ask,
      { origin: "https://evil.example" });
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, "origin_refused");
    assert.equal((await stored(s.pool, "alice:origin")).version, null);
    const ok = await client(listed, "alice").commit("alice:origin", ask, { origin: "https://app.example" });
    assert.equal(ok.status, 200, ok.text);
  } finally {
    await listed.close();
  }
});
