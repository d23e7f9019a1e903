// Remembered grants at the store handler (docs/design.md, "Remembered grants"), against the
// real handler and Postgres: made by the identity authorize returns (which sees the tool and
// the scope), listed per thread and identity, cited by a device's commit and checked there
// (the grant must be held, in force, the writer's own when it is a user grant, and cover the
// call), revoked by its maker only; every refusal a stable code that writes nothing.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startStoreServer } from "../support/store-server.mjs";
import { client, fixture, stored } from "./util.mjs";

let s;
before(async () => {
  s = await startStoreServer();
});
after(async () => {
  await s?.close();
});

// w1:0 the user's message, w1:1 the model's call c1 (delete_file /tmp/a.txt) approved by the
// grant `GRANT_ID` and started, w1:2 its result, w1:3 the answer.
const run = fixture("granted-run.json");
const citing = (id) => run.map((b) => JSON.parse(JSON.stringify(b).replaceAll("GRANT_ID", id)));

const makeGrant = (user, body) => client(s, user).call("POST", "/grants", body);
const grantsOf = (user, thread) => client(s, user).call("GET", `/threads/${encodeURIComponent(thread)}/grants`);
const revoke = (user, id) => client(s, user).call("DELETE", `/grants/${encodeURIComponent(id)}`);
const rowsOf = async () => (await s.pool.query("SELECT id, revoked_at FROM gatehouse_grants ORDER BY id")).rows;

async function applyAs(user, thread, bodies) {
  const c = client(s, user, {}, new Map());
  const out = [];
  for (const b of bodies) out.push(await c.commit(thread, b));
  return out;
}

test("a grant is made by the identity authorize returns, listed for its threads, and approves the call it covers as its maker", async () => {
  const r = await makeGrant("alice", { tool: "delete_file", scope: "user", match: { path: "/tmp/**" }, expiresIn: 3_600_000 });
  assert.equal(r.status, 200, r.text);
  const g = r.body.grant;
  assert.match(g.id, /^grant_/);
  assert.deepEqual([g.tool, g.scope, g.createdBy, g.match], ["delete_file", "user", "alice", { path: "/tmp/**" }]);
  assert.equal(g.expiresAt - g.createdAt, 3_600_000);
  const asked = s.calls.filter((c) => c.action === "grant");
  assert.ok(asked.length >= 1 && asked.at(-1).user === "alice" && asked.at(-1).threadId === null);
  // Listed on alice's threads, not on carol's.
  assert.deepEqual((await grantsOf("alice", "alice:g-list")).body.grants, [g]);
  assert.deepEqual((await grantsOf("carol", "carol:g-list")).body.grants, []);
  assert.equal((await grantsOf("mallory", "alice:g-list")).status, 403, "a thread one may not read");

  // Alice's device runs the granted call: every write is legal, and the trail says she decided.
  const answers = await applyAs("alice", "alice:g-run", citing(g.id));
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200], answers.map((a) => a.text).join("\n"));
  const { audit } = await stored(s.pool, "alice:g-run");
  const rec = JSON.parse(audit[0][1]);
  assert.deepEqual([rec.decision, rec.grantId, rec.decidedBy, rec.outcome], ["approved", g.id, "alice", "ok"]);
});

test("a commit citing a grant the handler does not hold for this writer, thread and call is illegal, and writes nothing", async () => {
  const alice = (await makeGrant("alice", { tool: "delete_file", scope: "user" })).body.grant;
  const narrow = (await makeGrant("alice", { tool: "delete_file", scope: "user", match: { path: "/home/*" } })).body.grant;
  const other = (await makeGrant("alice", { tool: "delete_file", scope: "thread", threadId: "alice:elsewhere" })).body.grant;
  const cases = [
    ["another user's user grant", "carol", "carol:g-theft", alice.id],
    ["a grant that does not exist", "alice", "alice:g-forged", "grant_made_up"],
    ["a grant whose pattern does not cover the call", "alice", "alice:g-narrow", narrow.id],
    ["another thread's grant", "alice", "alice:g-other", other.id],
  ];
  for (const [why, user, thread, id] of cases) {
    const [first, second] = await applyAs(user, thread, citing(id).slice(0, 2));
    assert.equal(first.status, 200, `${why}: ${first.text}`);
    assert.equal(second.status, 403, `${why}: ${second.text}`);
    assert.equal(second.body.error.code, "illegal_write", why);
    const st = await stored(s.pool, thread);
    assert.equal(st.version, 1, `${why}: only the user's message was written`);
    assert.deepEqual(st.audit, [], why);
  }
});

test("revoking: only a user grant's maker; then no commit may cite it; an app grant is for anyone, as authorize allows", async () => {
  const g = (await makeGrant("alice", { tool: "delete_file", scope: "user" })).body.grant;
  const theft = await revoke("mallory", g.id);
  assert.deepEqual([theft.status, theft.body.error.code], [404, "unknown_grant"]);
  const nope = await revoke("mallory", "grant_nope");
  assert.deepEqual([nope.status, nope.body.error.code], [404, "unknown_grant"], "unknown and another's answer alike");
  const ok = await revoke("alice", g.id);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual([(await revoke("alice", g.id)).status], [404], "revoked once");
  const row = (await rowsOf()).find((r) => r.id === g.id);
  assert.ok(row.revoked_at, "a revoked grant is kept, with when");
  assert.ok(!(await grantsOf("alice", "alice:g-x")).body.grants.some((x) => x.id === g.id));
  const [, cited] = await applyAs("alice", "alice:g-revoked", citing(g.id).slice(0, 2));
  assert.deepEqual([cited.status, cited.body.error.code], [403, "illegal_write"]);

  // An app grant: authorize was asked with the scope; any writer may cite it.
  const app = await makeGrant("admin", { tool: "delete_file", scope: "app" });
  assert.equal(app.status, 200, app.text);
  const answers = await applyAs("carol", "carol:g-app", citing(app.body.grant.id));
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
  const rec = JSON.parse((await stored(s.pool, "carol:g-app")).audit[0][1]);
  assert.equal(rec.decidedBy, "admin", "decided by the grant's maker, not the writer");
});

test("bad grant requests are refused with stable codes before anything is stored; authorize sees tool and scope", async () => {
  const before = await rowsOf();
  const seen = [];
  const cases = [
    [{ tool: "delete_file", scope: "session" }, 400, "invalid_grant"],
    [{ tool: "delete_file", scope: "user", mach: {} }, 400, "invalid_grant"],
    [{ tool: "delete file", scope: "user" }, 400, "invalid_grant"],
    [{ tool: "delete_file", scope: "thread" }, 400, "invalid_grant"],
    [{ tool: "delete_file", scope: "user", threadId: "alice:t" }, 400, "invalid_grant"],
    [{ tool: "delete_file", scope: "user", expiresIn: 0 }, 400, "invalid_grant"],
    [{ tool: "delete_file", scope: "user", match: { p: "x".repeat(2000) } }, 400, "invalid_grant"],
    ["not json", 400, "invalid_grant"],
    // A thread grant on a thread the user may not use.
    [{ tool: "delete_file", scope: "thread", threadId: "bob:private" }, 403, "unauthorized"],
  ];
  for (const [body, status, code] of cases) {
    const r = await makeGrant("alice", body);
    seen.push([r.status, r.body?.error?.code]);
    assert.deepEqual([r.status, r.body?.error?.code], [status, code], `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
  }
  const anon = await makeGrant(null, { tool: "delete_file", scope: "user" });
  assert.equal(anon.status, 403);
  const form = await client(s, "alice").call("POST", "/grants", "tool=x", { "content-type": "application/x-www-form-urlencoded" });
  assert.equal(form.status, 415, form.text);
  assert.deepEqual(await rowsOf(), before, "nothing was stored");
  const last = s.calls.filter((c) => c.action === "grant").at(-1);
  assert.equal(last.threadId, null);
});

test("at most 500 grants in force per identity (too_many_grants); revoking one makes room", async () => {
  const c = client(s, "hoarder");
  const ids = [];
  for (let i = 0; i < 500; i += 25) {
    const batch = await Promise.all(Array.from({ length: 25 }, () =>
      c.call("POST", "/grants", { tool: "delete_file", scope: "user" })));
    for (const r of batch) {
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.grant.id);
    }
  }
  const over = await c.call("POST", "/grants", { tool: "delete_file", scope: "user" });
  assert.deepEqual([over.status, over.body.error.code, over.body.error.limit], [429, "too_many_grants", 500]);
  assert.equal((await revoke("hoarder", ids[0])).status, 200);
  assert.equal((await c.call("POST", "/grants", { tool: "delete_file", scope: "user" })).status, 200);
});

test("deleting a thread revokes its thread grants", async () => {
  const alice = client(s, "alice", {}, new Map());
  await alice.commit("alice:g-del", run[0]);
  const g = (await makeGrant("alice", { tool: "delete_file", scope: "thread", threadId: "alice:g-del" })).body.grant;
  const threadGrants = async () => (await grantsOf("alice", "alice:g-del")).body.grants
    .filter((x) => x.scope === "thread").map((x) => x.id);
  assert.deepEqual(await threadGrants(), [g.id]);
  assert.equal((await alice.remove("alice:g-del")).status, 200);
  assert.deepEqual(await threadGrants(), []);
});

test("a keyed grant request answers the grant it made to a retry or a replay, never revives a revoked one, and is its maker's key only", async () => {
  const key = `k-${Math.random().toString(36).slice(2)}`;
  const body = { tool: "delete_file", scope: "user", match: { path: "/tmp/**" }, expiresIn: 60_000 };
  const keyed = (user, b = body, k = key) => client(s, user).call("POST", "/grants", b, { "idempotency-key": k });
  const before = (await rowsOf()).length;
  const first = await keyed("alice");
  assert.equal(first.status, 200, first.text);
  const g = first.body.grant;
  // The response was lost; the device retries, and a captured copy is replayed, at once.
  const again = await Promise.all(Array.from({ length: 5 }, () => keyed("alice")));
  for (const r of again) assert.deepEqual([r.status, r.body.grant], [200, g], r.text);
  assert.equal((await rowsOf()).length, before + 1, "one grant for six requests");
  // The same key with another body is refused, and makes nothing.
  const other = await keyed("alice", { ...body, match: { path: "/**" } });
  assert.deepEqual([other.status, other.body.error.code], [409, "idempotency_key_reused"], other.text);
  // Another identity's same key is its own request.
  const bobs = await keyed("bob");
  assert.equal(bobs.status, 200, bobs.text);
  assert.notEqual(bobs.body.grant.id, g.id);
  assert.equal(bobs.body.grant.createdBy, "bob");
  assert.equal((await rowsOf()).length, before + 2);

  // Revoked: the replay of the request that made it does not bring it back.
  assert.equal((await revoke("alice", g.id)).status, 200);
  const revokedAt = (await rowsOf()).find((r) => r.id === g.id).revoked_at;
  const replay = await keyed("alice");
  assert.deepEqual([replay.status, replay.body.error.code], [409, "grant_revoked"], replay.text);
  assert.equal((await rowsOf()).length, before + 2, "nothing was made");
  assert.deepEqual((await grantsOf("alice", "alice:g-key")).body.grants.filter((x) => x.id === g.id), []);
  // A replayed revocation changes nothing: the first revoker and time stay.
  const twice = await revoke("alice", g.id);
  assert.deepEqual([twice.status, twice.body.error.code], [404, "unknown_grant"]);
  assert.deepEqual((await rowsOf()).find((r) => r.id === g.id).revoked_at, revokedAt);

  // A malformed key is refused before anything is asked or stored.
  const asked = s.calls.length;
  for (const bad of ["two words", "x".repeat(129), "tab\there"]) {
    const r = await keyed("alice", body, bad);
    assert.deepEqual([r.status, r.body?.error?.code], [400, "invalid_grant"], `${bad}: ${r.text}`);
  }
  assert.equal(s.calls.length, asked, "authorize was not asked");
  assert.equal((await rowsOf()).length, before + 2);
});

test("grant routes from an origin the handler does not list are refused before anything happens", async () => {
  const listed = await startStoreServer({ postgres: s.postgres, cors: { origin: ["https://app.example"],
    credentials: true } });
  try {
    const evil = { origin: "https://evil.example" };
    const app = { origin: "https://app.example" };
    const as = (h) => ({ make: (b) => client(listed, "alice").call("POST", "/grants", b, h),
      list: (t) => client(listed, "alice").call("GET", `/threads/${encodeURIComponent(t)}/grants`, undefined, h),
      revoke: (id) => client(listed, "alice").call("DELETE", `/grants/${encodeURIComponent(id)}`, undefined, h) });
    const before = await rowsOf();
    const made = await as(evil).make({ tool: "delete_file", scope: "user" });
    assert.deepEqual([made.status, made.body.error.code], [403, "origin_refused"], made.text);
    assert.equal(listed.calls.length, 0, "authorize was not asked");
    assert.deepEqual(await rowsOf(), before, "nothing was stored");
    const g = (await as(app).make({ tool: "delete_file", scope: "user" })).body.grant;
    assert.match(g.id, /^grant_/);
    const listedEvil = await as(evil).list("alice:g-origin");
    assert.deepEqual([listedEvil.status, listedEvil.body.error.code], [403, "origin_refused"]);
    const gone = await as(evil).revoke(g.id);
    assert.deepEqual([gone.status, gone.body.error.code], [403, "origin_refused"]);
    assert.deepEqual((await as(app).list("alice:g-origin")).body.grants.map((x) => x.id).filter((id) => id === g.id), [g.id],
      "still in force");
    assert.equal((await as(app).revoke(g.id)).status, 200);
  } finally {
    await listed.close();
  }
});

test("a keyed replay is authorized again: once its maker may no longer use the thread, it is refused and learns nothing", async () => {
  const thread = "carol:g-shared";
  s.grants.set(thread, ["bob"]);
  const keyed = () => client(s, "bob").call("POST", "/grants", { tool: "delete_file", scope: "thread", threadId: thread },
    { "idempotency-key": "k-shared" });
  const first = await keyed();
  assert.equal(first.status, 200, first.text);
  const before = (await rowsOf()).length;
  s.grants.set(thread, []);
  const replay = await keyed();
  assert.deepEqual([replay.status, replay.body?.grant], [403, undefined], replay.text);
  assert.equal((await rowsOf()).length, before);
});
