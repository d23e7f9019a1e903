// Approver rules (docs/design.md, "Approver rules"): per tool, who may decide (`may`), how many
// distinct approvers it takes (`quorum`), and whether the requester may approve their own call
// (`selfApproval`, false by default with a quorum). A refused decision is a 403 with a stable
// code and writes nothing; below the quorum an approval is counted and the thread is not
// written; an edit restarts the count; one allowed rejection rejects; the engine still judges
// every decision (expiry). The receipt of a call approved by a quorum lists its approvers.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored } from "./util.mjs";

const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
const { verifyApproval, createStoreHandler } = await import("../../pkg/server.js");

const asked = [];
let s;
before(async () => {
  s = await startStoreServer({
    signingKey: pair.privateKey,
    approvers: {
      // Anyone but mallory may decide; two distinct approvers, never the requester.
      delete_file: {
        may: (identity, call) => {
          asked.push({ identity, call });
          if (identity === "dave" && call.threadId === "alice:may-throws") throw new Error("directory down");
          return identity !== "mallory";
        },
        quorum: 2,
      },
      // One approver, who may be the requester (the default without a quorum).
      list_files: (identity) => identity !== "mallory",
    },
  });
});
after(async () => {
  await s?.close();
});

const [ask, gate] = fixture("approved-run.json");
// gate: alice's model asks for delete_file (call c1) on /tmp/a.txt; ask: alice's message.

async function gated(id, tool = "delete_file") {
  const call = structuredClone(gate);
  call.commit.append[0].tools[0].name = tool;
  call.commit.audit[0].tool = tool;
  await applyAll(client(s, "alice"), id, [ask, call]);
  s.grants.set(id, ["bob/decide", "carol/decide", "dave/decide", "mallory/decide", "bob/read",
    "carol/read", "mallory/read"]);
  return id;
}

const decide = (user, id, decisions, commitId = `${user}-${Math.random()}`, now) =>
  client(s, user).decide(id, { commitId, decisions }, now ? { "x-test-now": String(now) } : {});
const tail = async (id) => JSON.parse((await client(s, "alice").load(id)).body.tail);

test("may: someone the rule does not name is refused with not_an_approver, and nothing changes", async () => {
  const id = await gated("alice:may");
  const before = await stored(s.pool, id);
  const r = await decide("mallory", id, { c1: "approve" });
  assert.deepEqual([r.status, r.body.error.code, r.body.error.callId], [403, "not_an_approver", "c1"]);
  assert.deepEqual(await stored(s.pool, id), before);
  const seen = asked.find((a) => a.identity === "mallory" && a.call.threadId === id);
  assert.deepEqual(seen.call, { threadId: id, callId: "c1", tool: "delete_file",
    inputs: { path: "/tmp/a.txt" }, decision: "approve", requester: "alice" });
  // A rejection is a decision too: mallory may not make it either.
  assert.equal((await decide("mallory", id, { c1: "reject" })).body.error.code, "not_an_approver");
});

test("the requester may not approve their own call under a quorum; without one they may", async () => {
  const id = await gated("alice:self");
  const before = await stored(s.pool, id);
  const r = await decide("alice", id, { c1: "approve" });
  assert.deepEqual([r.status, r.body.error.code], [403, "self_approval"]);
  assert.deepEqual(await stored(s.pool, id), before);
  const own = await gated("alice:self-single", "list_files");
  const ok = await decide("alice", own, { c1: "approve" });
  assert.equal(ok.status, 200, ok.text);
  assert.equal((await tail(own)).tools[0].approval, "approved");
});

test("a quorum of two: the first approval is counted and writes nothing, the same approver twice counts once, the second applies it", async () => {
  const id = await gated("alice:quorum");
  const before = await stored(s.pool, id);
  const t0 = 1_800_000_000_000;
  const first = await decide("bob", id, { c1: "approve" }, "b1", t0);
  assert.equal(first.status, 200, first.text);
  assert.equal(JSON.parse(first.body.tail).tools[0].approval, "pending");
  // Only the commit id is logged (a retry of it gets the same answer).
  const { commits, ...after } = await stored(s.pool, id);
  assert.deepEqual({ ...after, commits: before.commits }, before, "the thread is not written below the quorum");
  assert.deepEqual(commits, [...before.commits, "b1"].sort());
  // The same request again is the same answer; bob approving again is still one approval.
  assert.equal((await decide("bob", id, { c1: "approve" }, "b1", t0)).status, 200);
  assert.equal((await decide("bob", id, { c1: "approve" }, "b2", t0 + 1)).status, 200);
  assert.equal((await tail(id)).tools[0].approval, "pending");
  const second = await decide("carol", id, { c1: "approve" }, "c1", t0 + 2);
  assert.equal(second.status, 200, second.text);
  assert.equal((await tail(id)).tools[0].approval, "approved");
  const receipt = (await client(s, "alice").call("GET", `/threads/${encodeURIComponent(id)}/receipts/c1`)).body;
  assert.deepEqual(receipt.approvals, [{ by: "bob", at: t0 }, { by: "carol", at: t0 + 2 }]);
  assert.equal(receipt.decidedBy, "carol");
  await verifyApproval(receipt, { path: "/tmp/a.txt" }, pair.publicKey, { now: t0 + 3 });
  const audit = (await client(s, "alice").rows(id, "audit")).body.rows.map((r) => JSON.parse(r.json));
  assert.deepEqual([audit[0].decision, audit[0].decidedBy], ["approved", "carol"]);
});

test("an edit restarts the count; the quorum applies inputs only when that many approved exactly them", async () => {
  const id = await gated("alice:edit");
  assert.equal((await decide("bob", id, { c1: "approve" })).status, 200);
  const edit = await decide("carol", id, { c1: ["edit", { path: "/tmp/b.txt" }] });
  assert.equal(edit.status, 200, edit.text);
  assert.equal((await tail(id)).tools[0].approval, "pending", "bob approved other inputs: carol's edit is one of two");
  // The same edit from a second approver reaches the quorum: the edited inputs run.
  assert.equal((await decide("dave", id, { c1: ["edit", { path: "/tmp/b.txt" }] })).status, 200);
  const t = await tail(id);
  assert.deepEqual([t.tools[0].approval, t.tools[0].inputs], ["approved", { path: "/tmp/b.txt" }]);
  const receipt = (await client(s, "alice").call("GET", `/threads/${encodeURIComponent(id)}/receipts/c1`)).body;
  assert.deepEqual([receipt.decision, receipt.approvals.map((a) => a.by)], ["edit", ["carol", "dave"]]);
  await verifyApproval(receipt, { path: "/tmp/b.txt" }, pair.publicKey);

  // An approval after an unapplied edit is of the inputs the approver saw (the call's): it
  // restarts the count for those, and the edit's approval no longer counts.
  const other = await gated("alice:edit-then-approve");
  await decide("bob", other, { c1: ["edit", { path: "/tmp/b.txt" }] });
  assert.equal((await decide("carol", other, { c1: "approve" })).status, 200);
  assert.equal((await tail(other)).tools[0].approval, "pending");
  assert.equal((await decide("dave", other, { c1: "approve" })).status, 200);
  const t2 = await tail(other);
  assert.deepEqual([t2.tools[0].approval, t2.tools[0].inputs], ["approved", { path: "/tmp/a.txt" }]);
  const r2 = (await client(s, "alice").call("GET", `/threads/${encodeURIComponent(other)}/receipts/c1`)).body;
  assert.deepEqual([r2.decision, r2.approvals.map((a) => a.by)], ["approve", ["carol", "dave"]]);
});

test("one allowed rejection rejects, whatever was counted", async () => {
  const id = await gated("alice:reject");
  assert.equal((await decide("bob", id, { c1: "approve" })).status, 200);
  const r = await decide("carol", id, { c1: ["reject", "not this one"] });
  assert.equal(r.status, 200, r.text);
  const t = await tail(id);
  assert.deepEqual([t.tools[0].approval, t.tools[0].rejectReason], ["rejected", "not this one"]);
  const left = await s.pool.query("SELECT count(*) FROM gatehouse_approvals WHERE thread = $1", [id]);
  assert.equal(Number(left.rows[0].count), 0);
});

test("the engine still judges a decision below the quorum: an unknown call or a malformed one is refused and not counted", async () => {
  const id = await gated("alice:judged");
  const unknown = await decide("bob", id, { c1: "approve", c9: "approve" });
  assert.equal(unknown.status, 409, unknown.text);
  const bad = await decide("bob", id, { c1: ["edit", "not an object"] });
  assert.equal(bad.status, 400, bad.text);
  const counted = await s.pool.query("SELECT count(*) FROM gatehouse_approvals WHERE thread = $1", [id]);
  assert.equal(Number(counted.rows[0].count), 0);
});

test("approvers that are not rules are refused when the handler is made", () => {
  const base = { pool: { query() {}, connect() {} }, authorize: () => "u" };
  for (const approvers of ["x", [], { t: 3 }, { t: { quorum: 0 } }, { t: { quorum: 1.5 } },
    { t: { may: "yes" } }, { t: { selfApproval: "no" } }, { t: { quorom: 2 } }]) {
    assert.throws(() => createStoreHandler({ ...base, approvers }),
      (e) => e.name === "GatehouseError" && e.code === "invalid_config", JSON.stringify(approvers));
  }
});

test("a read says how far each pending call is, and why this reader may not decide it", async () => {
  const id = await gated("alice:progress");
  const t0 = 1_800_000_000_000;
  assert.equal((await decide("bob", id, { c1: "approve" }, "b1", t0)).status, 200);
  const seen = async (user) => (await client(s, user).load(id)).body.approvals;
  const mark = [{ by: "bob", at: t0 }];
  assert.deepEqual(await seen("alice"), [{ callId: "c1", approvals: mark, needed: 2, blocked: "self_approval" }]);
  assert.deepEqual(await seen("carol"), [{ callId: "c1", approvals: mark, needed: 2, blocked: null }]);
  assert.deepEqual(await seen("mallory"), [{ callId: "c1", approvals: mark, needed: 2, blocked: "not_an_approver" }]);
  // A decision's answer carries it too; once decided, the call is no longer pending.
  const done = await decide("carol", id, { c1: "approve" }, "c1", t0 + 1);
  assert.equal(done.body.approvals, undefined);
  // The counted approval was announced: a change notice without a version (every device reads
  // the thread again).
  const changes = await s.pool.query("SELECT version FROM gatehouse_changes WHERE thread = $1 ORDER BY seq", [id]);
  assert.ok(changes.rows.some((r) => r.version === null), JSON.stringify(changes.rows));
});

test("expiry still applies: an approval after the call's deadline is refused with expired and not counted", async () => {
  const id = "alice:expiry";
  const call = structuredClone(gate);
  const deadline = 1_800_000_000_000;
  call.commit.run.deadlines = [{ callId: "c1", at: deadline }];
  await applyAll(client(s, "alice"), id, [ask, call]);
  s.grants.set(id, ["bob/decide", "carol/decide"]);
  assert.equal((await decide("bob", id, { c1: "approve" }, "b1", deadline - 10)).status, 200);
  const late = await decide("carol", id, { c1: "approve" }, "c1", deadline + 1);
  assert.equal(late.body?.error?.code, "expired", late.text);
  assert.equal((await tail(id)).tools[0].approval, "pending", "not applied by the late approval");
  const counted = await s.pool.query("SELECT approver FROM gatehouse_approvals WHERE thread = $1", [id]);
  assert.deepEqual(counted.rows.map((r) => r.approver), ["bob"]);
});

test("a rule that throws refuses the decision with approver_rule_failed, writing nothing", async () => {
  const id = await gated("alice:may-throws");
  const before = await stored(s.pool, id);
  const r = await decide("dave", id, { c1: "approve" });
  assert.deepEqual([r.status, r.body.error.code], [500, "approver_rule_failed"], r.text);
  assert.ok(!r.text.includes("directory down"), "the app's error stays on the server");
  assert.deepEqual(await stored(s.pool, id), before);
});

test("approvals counted on a deleted thread do not count for the thread made again under its id", async () => {
  const id = await gated("alice:again");
  assert.equal((await decide("bob", id, { c1: "approve" })).status, 200);
  assert.equal((await client(s, "alice").remove(id)).status, 200);
  await gated(id);
  assert.equal((await decide("carol", id, { c1: "approve" })).status, 200);
  assert.equal((await tail(id)).tools[0].approval, "pending", "carol's is the first approval of the new call");
  const seen = (await client(s, "carol").load(id)).body.approvals;
  assert.deepEqual(seen[0].approvals.map((a) => a.by), ["carol"]);
});
