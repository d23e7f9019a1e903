// Approval requests that reach the approver (README, "Approval requests that reach the
// approver"): the onApprovalRequested hook, called once per gated call from an outbox written
// in the commit; retries; reminders and escalation; cancellation by a decision; signed
// single-use decision links (GET shows, only POST decides; forged, expired, used, decided and
// changed links decide nothing); push subscriptions owned by one identity.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { freePort, startPostgres } from "../support/postgres.mjs";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored } from "./util.mjs";

const run = fixture("approved-run.json");
const [userMessage, gatedCall] = run;

let postgres;
before(async () => {
  postgres = await startPostgres();
});
after(async () => {
  await postgres?.stop();
});

/** A handler whose hook records its calls (and may be told to fail). */
async function server(options = {}) {
  const port = await freePort();
  // Every handler on the database delivers every thread's requests: each test reads its own.
  const all = [];
  const seen = { of: (id) => all.filter((x) => x.threadId === id) };
  const control = { fail: 0 };
  const s = await startStoreServer({
    postgres, port, publicUrl: `http://127.0.0.1:${port}/api/gatehouse`,
    onApprovalRequested: async (args) => {
      all.push({ ...args, at: Date.now() });
      if (control.fail > 0) {
        control.fail--;
        throw new Error("mail server down");
      }
    },
    ...options,
  });
  return { s, seen, control };
}

/** Waits until `f()` is true, for up to `ms`. */
async function until(f, ms = 8000, what = "the condition") {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const requests = async (pool, thread) => (await pool.query(`SELECT kind, n, state, attempts
  FROM gatehouse_requests WHERE thread = $1 ORDER BY kind, n`, [thread])).rows;

test("the hook is called once per gated call, after the commit, with the call and its approvers", async () => {
  const { s, seen } = await server({ approvalRequests: { to: (call) => [`lead-of-${call.requester}`] } });
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:once", [userMessage]);
    assert.equal(seen.of("alice:once").length, 0, "a user message requests nothing");
    await applyAll(alice, "alice:once", [gatedCall]);
    await until(() => seen.of("alice:once").length === 1, 8000, "the hook");
    const [r] = seen.of("alice:once");
    assert.equal(r.reason, "request");
    assert.equal(r.attempt, 1);
    assert.equal(r.threadId, "alice:once");
    assert.deepEqual(r.approvers, ["lead-of-alice"]);
    assert.equal(r.requester, "alice");
    assert.equal(r.call.callId, "c1");
    assert.equal(r.call.tool, "delete_file");
    assert.deepEqual(r.call.inputs, { path: "/tmp/a.txt" });
    assert.match(r.requestId, /^req_[0-9a-f]{24}$/);
    // The commit replayed (the same commit id and body): no second request.
    const again = await alice.commit("alice:once", gatedCall);
    assert.equal(again.status, 200);
    await until(async () => (await requests(s.pool, "alice:once"))[0]?.state === "sent", 8000, "the row marked sent");
    await s.handle.deliverRequests();
    await new Promise((r2) => setTimeout(r2, 300));
    assert.equal(seen.of("alice:once").length, 1);
    assert.deepEqual((await requests(s.pool, "alice:once")).map((x) => [x.kind, x.state]), [["request", "sent"]]);
  } finally {
    await s.close();
  }
});

test("a hook that throws is retried with backoff, under the same requestId, until it succeeds", async () => {
  const { s, seen, control } = await server({ approvalRequests: { retryMs: 50 } });
  control.fail = 2;
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:retry", [userMessage, gatedCall]);
    await until(() => seen.of("alice:retry").length === 3, 8000, "two retries");
    assert.deepEqual(seen.of("alice:retry").map((x) => x.attempt), [1, 2, 3]);
    assert.equal(new Set(seen.of("alice:retry").map((x) => x.requestId)).size, 1);
    // Backoff: the second retry waited about twice the first.
    assert.ok(seen.of("alice:retry")[2].at - seen.of("alice:retry")[1].at >= 90, `${seen.of("alice:retry")[2].at - seen.of("alice:retry")[1].at} ms`);
    // Marked sent (just after the hook returned), its error cleared.
    const row = async () => (await s.pool.query("SELECT state, error FROM gatehouse_requests WHERE thread = $1",
      ["alice:retry"])).rows[0];
    await until(async () => (await row()).state === "sent", 8000, "the row marked sent");
    assert.deepEqual(await row(), { state: "sent", error: null });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(seen.of("alice:retry").length, 3, "nothing after it succeeded");
  } finally {
    await s.close();
  }
});

test("reminders and escalation follow the first delivery until the call is decided", async () => {
  const { s, seen } = await server({
    approvalRequests: { to: () => ["bob"], remind: [150, 300], escalateTo: () => ["carol"], escalateAfterMs: 450, pollMs: 25 },
  });
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:remind", [userMessage, gatedCall]);
    await until(() => seen.of("alice:remind").some((x) => x.reason === "escalation"), 8000, "the escalation");
    assert.deepEqual(seen.of("alice:remind").map((x) => [x.reason, x.approvers]), [
      ["request", ["bob"]], ["reminder", ["bob"]], ["reminder", ["bob"]], ["escalation", ["carol"]],
    ]);
    assert.equal(new Set(seen.of("alice:remind").map((x) => x.requestId)).size, 4);
  } finally {
    await s.close();
  }
  {
    // Once decided, nothing more; what was still due is cancelled.
    const { s: s2, seen: seen2 } = await server({
      approvalRequests: { to: () => ["bob"], remind: [300, 600], pollMs: 25 },
    });
    try {
      const a2 = client(s2, "alice");
      await applyAll(a2, "alice:decided", [userMessage, gatedCall]);
      await until(() => seen2.of("alice:decided").length === 1, 8000, "the request");
      await until(async () => (await requests(s2.pool, "alice:decided")).length === 3, 8000, "the reminders due");
      const d = await a2.decide("alice:decided", { commitId: "alice:d1", decisions: { c1: "approve" } });
      assert.equal(d.status, 200, d.text);
      await new Promise((r) => setTimeout(r, 800));
      assert.equal(seen2.of("alice:decided").length, 1, "no reminder after the decision");
      assert.deepEqual((await requests(s2.pool, "alice:decided")).map((x) => [x.kind, x.n, x.state]),
        [["reminder", 1, "cancelled"], ["reminder", 2, "cancelled"], ["request", 0, "sent"]]);
    } finally {
      await s2.close();
    }
  }
});

test("a deleted thread's requests go with it; one decided before delivery is never delivered", async () => {
  const { s, seen } = await server({ approvalRequests: { pollMs: 60_000 } });
  try {
    const alice = client(s, "alice");
    // Delivery held back: the outbox's own pass is stopped for this test.
    s.handle.close();
    await applyAll(alice, "alice:early", [userMessage, gatedCall]);
    const d = await alice.decide("alice:early", { commitId: "alice:d1", decisions: { c1: "reject" } });
    assert.equal(d.status, 200, d.text);
    assert.deepEqual((await requests(s.pool, "alice:early")).map((x) => x.state), ["cancelled"]);
    await applyAll(alice, "alice:gone", [userMessage, gatedCall]);
    assert.equal((await alice.remove("alice:gone")).status, 200);
    assert.deepEqual(await requests(s.pool, "alice:gone"), []);
    assert.equal(seen.of("alice:early").length, 0);
  } finally {
    await s.close();
  }
});

const form = (decision) => ({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
  body: `decision=${decision}` });

test("a decision link: GET shows the call and decides nothing; its POST decides once, as the approver", async () => {
  const { s, seen } = await server({ approvalRequests: { to: () => ["bob"] } });
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:link", [userMessage, gatedCall]);
    await until(() => seen.of("alice:link").length === 1, 8000, "the request");
    const url = await seen.of("alice:link")[0].decideUrl("bob");
    assert.ok(url.startsWith(`${s.url}/links/`), url);
    // A link previewer or a mail scanner fetches it: nothing is decided.
    for (let i = 0; i < 3; i++) {
      const g = await fetch(url);
      assert.equal(g.status, 200);
      const html = await g.text();
      assert.match(html, /delete_file/);
      assert.match(html, /\/tmp\/a\.txt/);
      assert.match(html, /<form method="post">/);
      // The token never leaves in a Referer to another site; the form's own POST keeps its Origin.
      assert.equal(g.headers.get("referrer-policy"), "same-origin");
      assert.equal(g.headers.get("cache-control"), "no-store");
    }
    const before = await stored(s.pool, "alice:link");
    assert.match(before.messages.at(-1)[1], /"approval":"pending"/);
    const p = await fetch(url, form("approve"));
    assert.equal(p.status, 200);
    assert.match(await p.text(), /Approved/);
    const after1 = await stored(s.pool, "alice:link");
    assert.match(after1.messages.at(-1)[1], /"approval":"approved"/);
    // Attributed to the approver the link names.
    assert.match(JSON.stringify(after1), /decidedBy[^,]*bob/);
    // Used: the same link again decides nothing, and says so.
    const p2 = await fetch(url, form("reject"));
    assert.equal(p2.status, 409);
    assert.match(await p2.text(), /already used/);
    const g2 = await fetch(url);
    assert.equal(g2.status, 409);
    assert.deepEqual(await stored(s.pool, "alice:link"), after1);
  } finally {
    await s.close();
  }
});

test("forged, expired, decided and changed links decide nothing and say which", async () => {
  const { s } = await server();
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:bad", [userMessage, gatedCall]);
    const call = { threadId: "alice:bad", callId: "c1" };
    const url = await s.handle.decisionLink(call, "bob");
    const snapshot = await stored(s.pool, "alice:bad");
    const [body, sig] = url.slice(url.lastIndexOf("/") + 1).split(".");
    // Another approver written into the claims, signature kept: forged.
    const claims = JSON.parse(Buffer.from(body, "base64url"));
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, a: "mallory" })).toString("base64url");
    for (const bad of [`${forgedBody}.${sig}`, `${body}.${sig.slice(0, -2)}AA`, "nonsense", `${body}`]) {
      const r = await fetch(`${s.url}/links/${bad}`, form("approve"));
      assert.equal(r.status, 400, bad);
      assert.match(await r.text(), /not valid/);
    }
    // Expired.
    const short = await s.handle.decisionLink(call, "bob", { expiresIn: 1 });
    await new Promise((r) => setTimeout(r, 10));
    const e = await fetch(short, form("approve"));
    assert.equal(e.status, 410);
    assert.match(await e.text(), /expired/);
    // A POST that is not the form's decides nothing.
    const odd = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: '{"decision":"approve"}' });
    assert.equal(odd.status, 400);
    const odd2 = await fetch(url, form("yes"));
    assert.equal(odd2.status, 400);
    assert.deepEqual(await stored(s.pool, "alice:bad"), snapshot);
    // Decided elsewhere first.
    const d = await alice.decide("alice:bad", { commitId: "alice:d1", decisions: { c1: "reject" } });
    assert.equal(d.status, 200);
    const late = await fetch(url, form("approve"));
    assert.equal(late.status, 409);
    assert.match(await late.text(), /already decided/);
    await assert.rejects(s.handle.decisionLink(call, "bob"), { code: "not_pending" });
    // Changed: the call's inputs differ from those the link was made for.
    await applyAll(alice, "alice:edited", [userMessage, gatedCall]);
    const link = await s.handle.decisionLink({ threadId: "alice:edited", callId: "c1" }, "bob");
    await s.pool.query(`UPDATE gatehouse_messages SET json = replace(json, '/tmp/a.txt', '/etc/passwd')
      WHERE thread = 'alice:edited'`);
    const changed = await fetch(link, form("approve"));
    assert.equal(changed.status, 409);
    assert.match(await changed.text(), /changed since/);
    assert.match((await stored(s.pool, "alice:edited")).messages.at(-1)[1], /"approval":"pending"/);
  } finally {
    await s.close();
  }
});

test("a link obeys the approver rules: a link for someone who may not approve decides nothing", async () => {
  const { s } = await server({ approvers: { delete_file: { may: (who) => who.startsWith("lead-"), quorum: 2 } } });
  try {
    const alice = client(s, "alice");
    await applyAll(alice, "alice:rules", [userMessage, gatedCall]);
    const call = { threadId: "alice:rules", callId: "c1" };
    const before = await stored(s.pool, "alice:rules");
    const r = await fetch(await s.handle.decisionLink(call, "intern"), form("approve"));
    assert.equal(r.status, 403);
    assert.match(await r.text(), /not_an_approver/);
    assert.deepEqual(await stored(s.pool, "alice:rules"), before);
    const first = await fetch(await s.handle.decisionLink(call, "lead-a"), form("approve"));
    assert.equal(first.status, 200);
    assert.match(await first.text(), /1 of 2/);
    const second = await fetch(await s.handle.decisionLink(call, "lead-b"), form("approve"));
    assert.equal(second.status, 200);
    assert.match(await second.text(), /Approved/);
    assert.match((await stored(s.pool, "alice:rules")).messages.at(-1)[1], /"approval":"approved"/);
  } finally {
    await s.close();
  }
});

test("options are checked when the handler is made", async () => {
  const { createStoreHandler } = await import("../../pkg/server.js");
  const base = { pool: { query() {}, connect() {} }, authorize: () => "a" };
  for (const [bad, re] of [
    [{ onApprovalRequested: "yes" }, /onApprovalRequested must be a function/],
    [{ approvalRequests: { to: () => [] } }, /needs onApprovalRequested or webPush/],
    [{ onApprovalRequested() {}, approvalRequests: { remind: [0] } }, /remind/],
    [{ onApprovalRequested() {}, approvalRequests: { remnd: [10] } }, /unknown option "approvalRequests.remnd"/],
    [{ onApprovalRequested() {}, approvalRequests: { escalateAfterMs: 10 } }, /needs escalateTo/],
    [{ publicUrl: "/api" }, /publicUrl must be the absolute URL/],
    [{ webPush: { subject: "me", publicKey: "x", privateKey: "y" } }, /webPush.subject/],
    [{ webPush: { subject: "mailto:a@b.c", publicKey: "x", privateKey: "y", ttl: 1 } }, /unknown option "webPush.ttl"/],
  ]) {
    assert.throws(() => createStoreHandler({ ...base, ...bad }), (e) => e.code === "invalid_config" && re.test(e.message), JSON.stringify(bad));
  }
  // Without publicUrl a link cannot be made.
  const h = createStoreHandler({ ...base, onApprovalRequested() {} });
  await assert.rejects(h.decisionLink({ threadId: "a:1", callId: "c1" }, "bob"), { code: "invalid_config" });
});

test("a link one handler made is taken by another on the same database (one shared key)", async () => {
  const { s: a } = await server();
  const { s: b } = await server();
  try {
    await applyAll(client(a, "alice"), "alice:shared", [userMessage, gatedCall]);
    const url = await a.handle.decisionLink({ threadId: "alice:shared", callId: "c1" }, "bob");
    const atB = url.replace(a.url, b.url);
    assert.notEqual(atB, url);
    const r = await fetch(atB, form("reject"));
    assert.equal(r.status, 200, await r.text());
    assert.match((await stored(b.pool, "alice:shared")).messages.at(-1)[1], /"approval":"rejected"/);
  } finally {
    await a.close();
    await b.close();
  }
});

test('expireFrom "delivery": the deadline counts from the first delivery, once', async () => {
  const timed = (requestedAt, timeout) => {
    const body = structuredClone(gatedCall);
    body.commit.run.audit[0].requestedAt = requestedAt;
    body.commit.run.deadlines = [{ callId: "c1", at: requestedAt + timeout }];
    return body;
  };
  // Requested 5 s ago with a 60 s timeout; the hook delivers now.
  const requestedAt = Date.now() - 5000;
  const { s, seen } = await server({ approvalRequests: { expireFrom: "delivery", remind: [100] } });
  try {
    const alice = client(s, "alice");
    const committed = await applyAll(alice, "alice:expiry", [userMessage, timed(requestedAt, 60_000)]);
    const version = committed.body.record.version;
    await until(() => seen.of("alice:expiry").length === 2, 8000, "the request and its reminder");
    const delivered = seen.of("alice:expiry")[0].at;
    const after1 = await stored(s.pool, "alice:expiry");
    assert.equal(after1.version, version + 1, "one version on: the devices reload");
    const moved = after1.record.run.deadlines[0].at;
    assert.ok(moved >= requestedAt + 60_000 + (delivered - requestedAt) - 50 && moved <= delivered + 60_000 + 200,
      `deadline ${moved - delivered} ms after delivery`);
    assert.equal((await stored(s.pool, "alice:expiry")).record.run.deadlines[0].at, moved, "a reminder does not move it again");
    // A decision after the first deadline and before the moved one is in time.
    const late = await alice.decide("alice:expiry", { commitId: "alice:d1", decisions: { c1: "approve" } },
      { "x-test-now": String(requestedAt + 60_000 + 1000) });
    assert.equal(late.status, 200, late.text);
  } finally {
    await s.close();
  }
  // Without it the same decision is too late.
  const { s: s2 } = await server({ approvalRequests: {} });
  try {
    const alice = client(s2, "alice");
    await applyAll(alice, "alice:expiry2", [userMessage, timed(requestedAt, 60_000)]);
    const late = await alice.decide("alice:expiry2", { commitId: "alice:d1", decisions: { c1: "approve" } },
      { "x-test-now": String(requestedAt + 60_000 + 1000) });
    assert.equal(late.status, 409, late.text);
    assert.equal(late.body.error.code, "expired");
  } finally {
    await s2.close();
  }
});

test("a link's form answers only from its own page: another site's page, or a hidden origin, decides nothing", async () => {
  const { s } = await server();
  try {
    await applyAll(client(s, "alice"), "alice:csrf", [userMessage, gatedCall]);
    const url = await s.handle.decisionLink({ threadId: "alice:csrf", callId: "c1" }, "bob");
    const before = await stored(s.pool, "alice:csrf");
    for (const origin of ["https://evil.example", "null", "http://127.0.0.1:1"]) {
      const r = await fetch(url, { ...form("approve"), headers: { ...form("approve").headers, origin } });
      assert.equal(r.status, 403, origin);
      assert.match(await r.text(), /origin_refused/);
    }
    assert.deepEqual(await stored(s.pool, "alice:csrf"), before);
    // From its own page (the handler's origin): decided, and the link spent.
    const own = await fetch(url, { ...form("reject"), headers: { ...form("reject").headers, origin: s.origin } });
    assert.equal(own.status, 200, await own.text());
    assert.match((await stored(s.pool, "alice:csrf")).messages.at(-1)[1], /"approval":"rejected"/);
  } finally {
    await s.close();
  }
});
