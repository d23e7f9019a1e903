// The store handler over real Postgres through a real pg.Pool and a real http server: every
// store operation of src/store/wire.rs with commit bodies the engine made
// (tests/server/fixtures), the commit id's exactly-once answer, leases at the server's clock,
// pages, the list as authorize filters it, delete, and the audit trail's identity.

import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import pg from "pg";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored, variant } from "./util.mjs";

let s;
before(async () => {
  s = await startStoreServer();
});
after(async () => {
  await s?.close();
});

const run = fixture("approved-run.json");
const chat = fixture("long-chat.json");

test("engine commits apply in order; decidedBy is authorize's identity, not what a write says", async () => {
  const a = client(s, "alice");
  assert.deepEqual((await a.load("alice:run")).body, { record: null, tail: null });
  assert.match(JSON.stringify(run.slice(3)), /"decidedBy":"bob"/, "the device's writes name bob");
  s.calls.length = 0;
  for (const [i, body] of run.entries()) {
    const r = await a.commit("alice:run", body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.record.version, i + 1);
  }
  // The decision is an intent (POST /decide): authorize was asked to `decide` it, the rest to
  // `write`.
  assert.deepEqual(s.calls.map((c) => c.action), ["write", "write", "decide", "write", "write", "write"]);
  const loaded = (await a.load("alice:run")).body;
  assert.equal(loaded.record.version, 6);
  assert.equal(loaded.record.messageCount, 4);
  assert.equal(loaded.record.lease, null, "the last commit ends the run");
  assert.equal(JSON.parse(loaded.tail).content[0].content, "deleted");
  const audit = (await a.rows("alice:run", "audit")).body.rows;
  assert.equal(audit.length, 1);
  const entry = JSON.parse(audit[0].json);
  assert.equal(entry.decidedBy, "alice", "the handler decided as alice; the writes' bob is not kept");
  assert.equal(entry.outcome, "ok");
  const db = await stored(s.pool, "alice:run");
  assert.doesNotMatch(JSON.stringify(db.audit), /bob/);
  assert.deepEqual(db.commits, ["phone:d1", "w1:0", "w1:1", "w1:2", "w1:3", "w1:4"]);
  // Messages keep their JSON text exactly as the engine wrote it (the call's, as the
  // handler's engine decided it).
  const thread = [];
  for (const { commit } of run.filter((b) => b.commit)) {
    if (commit.replaceTail) thread[thread.length - 1] = commit.replaceTail;
    thread.push(...commit.append);
  }
  thread[1] = structuredClone(thread[1]);
  thread[1].tools[0].approval = "approved";
  assert.deepEqual(db.messages.map(([, json]) => JSON.parse(json)), thread);
});

test("a stale commit is a conflict, writes nothing of the thread, and is refused again under its id", async () => {
  const a = client(s, "alice");
  await applyAll(a, "alice:stale", run.slice(0, 2));
  const before = await stored(s.pool, "alice:stale");
  const r = await a.commit("alice:stale", variant(run[1], { commitId: "other:1" }));
  assert.equal(r.status, 409);
  assert.deepEqual(r.body.error.code, "conflict");
  assert.deepEqual([r.body.error.expected, r.body.error.found], [1, 2]);
  const now = await stored(s.pool, "alice:stale");
  assert.deepEqual({ ...now, commits: null }, { ...before, commits: null }, "the thread is as it was");
  assert.deepEqual(now.commits, [...before.commits, "other:1"].sort(), "only the refusal is kept, under its id");
  // Sent again under the same id (its answer lost, or a copy delivered late): the same refusal.
  const again = await a.commit("alice:stale", variant(run[1], { commitId: "other:1" }));
  assert.deepEqual([again.status, again.body], [r.status, r.body]);
});

test("a commit retried with its id is answered as it was, and applied once", async () => {
  const a = client(s, "alice");
  const first = await a.commit("alice:retry", run[0]);
  assert.equal(first.status, 200);
  const again = await a.commit("alice:retry", run[0]);
  assert.equal(again.status, 200, "never a false conflict");
  assert.equal(again.text, first.text);
  await applyAll(a, "alice:retry", run.slice(1, 3));
  // Long after, the thread has moved on: the log kept the version it left, not its record,
  // so the commit is answered `conflict` (the client reloads and finds it), and not applied
  // again.
  const late = await a.commit("alice:retry", run[0]);
  assert.equal(late.status, 409, late.text);
  assert.equal(late.body.error.code, "conflict");
  assert.deepEqual([late.body.error.expected, late.body.error.found], [1, 3]);
  // ... saying it was applied, so that a device takes it as landed, not refused.
  assert.equal(late.body.error.applied, true);
  // A commit that was refused, sent again after the thread moved on, is not "applied".
  const stale = await a.commit("alice:retry", { ...run[1], commitId: "never-applied", expectedVersion: 0 });
  assert.equal(stale.status, 409, stale.text);
  assert.equal(stale.body.error.applied, undefined, stale.text);
  const db = await stored(s.pool, "alice:retry");
  assert.equal(db.version, 3);
  assert.equal(db.messages.length, 2);
});

/** Sends a commit over a raw socket and closes it as soon as the request is written. */
function commitAndHangUp(id, body) {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const url = new URL(`${s.url}/threads/${encodeURIComponent(id)}/commit`);
    const sock = net.connect(Number(url.port), url.hostname, () => {
      sock.end(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n` +
        `Authorization: Bearer alice\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
      sock.destroy();
      resolve();
    });
    sock.on("error", reject);
  });
}

test("a commit whose answer was lost is answered on retry as the success it was", async () => {
  const a = client(s, "alice");
  await commitAndHangUp("alice:lost", run[0]);
  // The handler applies it although nobody waits for the answer.
  const deadline = Date.now() + 10_000;
  while ((await stored(s.pool, "alice:lost")).version !== 1) {
    assert.ok(Date.now() < deadline, "the commit was applied");
    await new Promise((r) => setTimeout(r, 20));
  }
  const retry = await a.commit("alice:lost", run[0]);
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.body.record.version, 1);
  const db = await stored(s.pool, "alice:lost");
  assert.equal(db.version, 1, "applied once");
  assert.equal(db.messages.length, 1);
  // A retry racing the original: both answers are the one commit's.
  // (The run's next write carries its lease's secret, as the browser's does.)
  const next = { ...run[1], leaseToken: retry.body.leaseToken };
  await commitAndHangUp("alice:lost", next);
  const raced = await a.commit("alice:lost", next);
  assert.equal(raced.status, 200, raced.text);
  assert.equal(raced.body.record.version, 2);
  assert.equal((await stored(s.pool, "alice:lost")).version, 2);
});

test("20 commits at one version at once: exactly one wins, the rest are conflicts", async () => {
  const a = client(s, "alice");
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    a.commit("alice:race", variant(run[0], { commitId: `device-${i}:0`, owner: `device-${i}` }))));
  const won = answers.filter((r) => r.status === 200);
  assert.equal(won.length, 1, answers.map((r) => r.status).join(","));
  for (const r of answers.filter((x) => x.status !== 200)) {
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, "conflict", r.text);
  }
  const db = await stored(s.pool, "alice:race");
  assert.equal(db.version, 1);
  assert.equal(db.messages.length, 1);
  // The winner's commit id and the 19 refusals, each kept under its own id.
  assert.equal(db.commits.length, 20);
  assert.equal(db.record.lease.owner, won[0].body.record.lease.owner);
});

test("leases: renewed and released by compare-and-set at the server's clock", async () => {
  const a = client(s, "alice");
  const t = 1_900_000_000_000;
  const at = (ms) => ({ "x-test-now": String(ms) });
  const first = await a.commit("alice:lease", run[0], at(t));
  assert.deepEqual(first.body.record.lease, { owner: "w1", until: t + 30_000, locked: false });
  const renewed = await a.lease("alice:lease", "w1", "renew", at(t + 10_000));
  assert.deepEqual(renewed.body, { ok: true });
  let db = await stored(s.pool, "alice:lease");
  assert.equal(db.record.lease.until, t + 40_000);
  assert.equal(db.version, 1, "a renewal bumps no version");
  // A forged owner renews nothing and cannot write while the lease is live.
  const forged = await a.lease("alice:lease", "mallory", "renew", at(t + 10_000));
  assert.deepEqual(forged.body, { ok: false });
  assert.deepEqual(await a.lease("alice:lease", "mallory", "release", at(t)), forged);
  const busy = await a.commit("alice:lease",
    variant(run[1], { commitId: "w2:1", owner: "w2" }), at(t + 39_999));
  assert.equal(busy.status, 409);
  assert.deepEqual([busy.body.error.code, busy.body.error.owner], ["busy", "w1"]);
  db = await stored(s.pool, "alice:lease");
  assert.equal(db.record.lease.owner, "w1");
  assert.equal(db.version, 1);
  // The refused commit is remembered under its id: a copy of it arriving late (a network
  // that delivers twice) is refused again, even once the lease has lapsed.
  const again = await a.commit("alice:lease",
    variant(run[1], { commitId: "w2:1", owner: "w2" }), at(t + 50_000));
  assert.equal(again.status, 409);
  assert.deepEqual(again.body, busy.body, "refused as it was");
  assert.equal((await stored(s.pool, "alice:lease")).version, 1);
  // Once it lapsed at the server's clock, another device takes the thread over.
  const taken = await a.commit("alice:lease",
    variant(run[1], { commitId: "w2:2", owner: "w2", keep: true }), at(t + 40_000));
  assert.equal(taken.status, 200, taken.text);
  assert.equal(taken.body.record.lease.owner, "w2");
  assert.deepEqual((await a.lease("alice:lease", "w1", "renew", at(t + 40_001))).body, { ok: false });
  // A release names the version its run last saw: a late one from an earlier run of the same
  // owner (version 1) leaves the lease its next run's write took (version 2).
  assert.deepEqual((await a.lease("alice:lease", "w2", "release", at(t + 40_002), 1)).body, { ok: false });
  assert.equal((await stored(s.pool, "alice:lease")).record.lease.owner, "w2");
  assert.deepEqual((await a.lease("alice:lease", "w2", "release", at(t + 40_002), 2)).body, { ok: true });
  db = await stored(s.pool, "alice:lease");
  assert.equal(db.record.lease, null);
  assert.equal(db.version, 2);
  assert.deepEqual((await a.lease("alice:never", "w1", "renew")).body, { ok: false });
});

test("pages read backwards from the tail, oldest first, as page::window says", async () => {
  const a = client(s, "alice");
  await applyAll(a, "alice:long", chat);
  const seqs = async (q) => {
    const r = await a.rows("alice:long", "messages", q);
    assert.equal(r.status, 200, r.text);
    return r.body.rows.map((row) => row.seq);
  };
  const range = (x, y) => Array.from({ length: y - x + 1 }, (_, i) => x + i);
  assert.deepEqual(await seqs("?limit=10"), range(15, 24));
  assert.deepEqual(await seqs("?before=15&limit=10"), range(5, 14));
  assert.deepEqual(await seqs("?before=5&limit=10"), range(1, 4));
  assert.deepEqual(await seqs("?before=1&limit=10"), []);
  assert.deepEqual(await seqs("?before=0&limit=10"), []);
  assert.deepEqual(await seqs("?limit=0"), []);
  assert.deepEqual(await seqs("?before=1000&limit=3"), [22, 23, 24]);
  assert.deepEqual(await seqs("?limit=1000"), range(1, 24));
  const page = (await a.rows("alice:long", "messages", "?before=2&limit=1")).body.rows[0];
  assert.equal(JSON.parse(page.json).content[0].content, "message 1");
  assert.deepEqual((await a.rows("alice:long", "audit", "?limit=5")).body, { rows: [] });
  assert.deepEqual((await a.rows("alice:nothing", "messages", "?limit=5")).body, { rows: [] });
});

test("the list holds only the threads authorize lets the user read, newest first", async () => {
  const a = client(s, "alice");
  const b = client(s, "bob");
  for (const id of ["alice:l2", "alice:l1"]) await applyAll(a, id, chat.slice(0, 1));
  await applyAll(b, "bob:l1", chat.slice(0, 1));
  s.grants.set("alice:l2", ["bob"]);
  const ids = async (c) =>
    (await c.list()).body.threads.map((r) => r.id).filter((id) => /:l\d$/.test(id));
  assert.deepEqual(await ids(b), ["bob:l1", "alice:l2"]);
  assert.deepEqual(await ids(a), ["alice:l1", "alice:l2"]);
  const records = (await a.list()).body.threads;
  const all = records.map((r) => r.id);
  assert.ok(all.length > 2 && all.every((id) => id.startsWith("alice:")), all.join());
  const times = records.map((r) => r.updatedAt);
  assert.deepEqual(times, [...times].sort((x, y) => y - x), "newest first");
  const nobody = await client(s, null).list();
  assert.equal(nobody.status, 403);
  assert.equal(nobody.body.error.code, "unauthorized");
});

test("delete removes everything of the thread; it starts again at version 0", async () => {
  const a = client(s, "alice");
  await applyAll(a, "alice:gone", run);
  await applyAll(a, "alice:gone-neighbour", chat.slice(0, 2));
  const r = await a.remove("alice:gone");
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, {});
  assert.deepEqual(await stored(s.pool, "alice:gone"),
    { version: null, record: null, messages: [], audit: [], commits: [] });
  assert.deepEqual((await a.load("alice:gone")).body, { record: null, tail: null });
  assert.equal((await stored(s.pool, "alice:gone-neighbour")).messages.length, 2);
  assert.equal((await a.remove("alice:gone")).status, 200, "deleting twice is fine");
  const again = await a.commit("alice:gone", run[0]);
  assert.equal(again.status, 200);
  assert.equal(again.body.record.version, 1);
});

test("a user refused by authorize is refused at every action, and nothing changes", async () => {
  const a = client(s, "alice");
  await applyAll(a, "alice:private", run.slice(0, 2));
  const before = await stored(s.pool, "alice:private");
  for (const eve of [client(s, "eve"), client(s, null)]) {
    const refused = [
      await eve.load("alice:private"),
      await eve.rows("alice:private", "messages", "?limit=5"),
      await eve.rows("alice:private", "audit", "?limit=5"),
      await eve.commit("alice:private", run[2]),
      await eve.commit("alice:private", variant(run[2], { commitId: "eve:1" })),
      await eve.lease("alice:private", "w1", "release"),
      await eve.lease("alice:private", "w1", "renew"),
      await eve.remove("alice:private"),
    ];
    for (const r of refused) {
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body.error.code, "unauthorized");
    }
    const listed = await eve.list();
    if (listed.status === 200) {
      assert.ok(!listed.body.threads.some((t) => t.id === "alice:private"));
    }
  }
  assert.deepEqual(await stored(s.pool, "alice:private"), before);
  // A known commit id is not an answer for somebody else either.
  const known = await client(s, "eve").commit("alice:private", run[0]);
  assert.equal(known.status, 403);
});

test("a user who may only decide cannot change the tool policies", async () => {
  const [chat0, chat1, policy] = fixture("policy-change.json");
  const a = client(s, "alice");
  await applyAll(a, "alice:approver", [chat0, chat1]);
  s.grants.set("alice:approver", ["bob/read", "bob/decide"]);
  const before = await stored(s.pool, "alice:approver");
  const refused = await client(s, "bob").commit("alice:approver", policy);
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.error.code, "unauthorized");
  assert.deepEqual(await stored(s.pool, "alice:approver"), before);
  // Bob's decisions go through (as intents, to /decide), and so does the owner's policy
  // change.
  await applyAll(a, "alice:approver2", run.slice(0, 2));
  s.grants.set("alice:approver2", ["bob/read", "bob/decide"]);
  const decided = await client(s, "bob").commit("alice:approver2", run[2]);
  assert.equal(decided.status, 200, decided.text);
  const own = await a.commit("alice:approver", policy);
  assert.equal(own.status, 200, own.text);
  assert.deepEqual(own.body.record.policies, { delete_file: { autoApprove: true } });
});

test("the list by page: newest first, `next` until the last page; a cursor that is not one is refused", async () => {
  const c = client(s, "pager");
  const ids = Array.from({ length: 7 }, (_, i) => `pager:p${i}`);
  // Written one after another, each a millisecond later by the handler's clock.
  for (const [i, id] of ids.entries()) {
    const r = await c.commit(id, chat[0], { "x-test-now": String(1_800_000_000_000 + i) });
    assert.equal(r.status, 200, r.text);
  }
  const pages = [];
  let next = null;
  do {
    const r = await c.call("GET", `/threads?limit=3${next ? `&before=${next}` : ""}`);
    assert.equal(r.status, 200, r.text);
    pages.push(r.body.threads.map((t) => t.id));
    next = r.body.next;
  } while (next);
  assert.deepEqual(pages, [["pager:p6", "pager:p5", "pager:p4"], ["pager:p3", "pager:p2", "pager:p1"], ["pager:p0"]]);
  const whole = await c.list();
  assert.deepEqual(whole.body.threads.map((t) => t.id), [...ids].reverse());
  assert.equal(whole.body.next, null);
  for (const bad of ["nonsense", Buffer.from('["x","y"]').toString("base64url"), Buffer.from("[1,2]").toString("base64url")]) {
    const r = await c.call("GET", `/threads?before=${bad}`);
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.error.code, "invalid_request");
  }
  assert.equal((await c.call("GET", "/threads?limit=4097")).status, 400);
  assert.equal((await c.call("GET", "/threads?limit=0")).status, 400);
});

test("a commit sent twice at once while the thread is locked: applied once, both copies answered as that success", async () => {
  const alice = client(s, "alice");
  const id = "alice:twice";
  await applyAll(alice, id, chat.slice(0, 1));
  // Another session holds the thread's row: both copies wait for the lock, inside their
  // transactions; the second reads what the first wrote only once it has the lock.
  const holder = new pg.Client({ connectionString: s.postgres.connectionString });
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query("SELECT 1 FROM gatehouse_threads WHERE id = $1 FOR UPDATE", [id]);
  const copies = [alice.commit(id, chat[1]), alice.commit(id, chat[1])];
  for (const deadline = Date.now() + 5000; ;) {
    const waiting = await s.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF t%'`);
    if (waiting.rows[0].n === 2) break;
    assert.ok(Date.now() < deadline, "both copies reached the row lock");
    await new Promise((r) => setTimeout(r, 20));
  }
  await holder.query("COMMIT");
  await holder.end();
  const [a, b] = await Promise.all(copies);
  assert.equal(a.status, 200, a.text);
  assert.equal(b.status, 200, b.text);
  assert.equal(a.body.record.version, 2);
  assert.equal(b.body.record.version, 2);
  const db = await stored(s.pool, id);
  assert.deepEqual([db.version, db.messages.length, db.commits.length], [2, 2, 2]);
});
