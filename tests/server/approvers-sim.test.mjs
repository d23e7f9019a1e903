// Approver rules under concurrency (issue 35, "exactly once still holds"): on each of many
// threads, allowed approvers, the requester and a hostile identity send approvals, edits,
// rejections and replays at once, in a seeded random order. Whatever interleaving Postgres
// picks, the invariants hold: no call is applied without `quorum` distinct allowed approvals
// of the inputs it runs; its receipt names exactly those approvers, verifies for those inputs
// only, and is the call's only one; the hostile identity and the requester are always
// refused; a call left pending has fewer counted approvals than its quorum.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture } from "./util.mjs";

const { verifyApproval } = await import("../../pkg/server.js");
const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
const QUORUM = 3;
const ALLOWED = ["bob", "carol", "dave", "erin"];

let s;
before(async () => {
  s = await startStoreServer({
    signingKey: pair.privateKey,
    approvers: { delete_file: { may: (identity) => identity !== "mallory", quorum: QUORUM } },
  });
});
after(async () => {
  await s?.close();
});

const [ask, gate] = fixture("approved-run.json");
const PROPOSED = { path: "/tmp/a.txt" };

/** A small seeded generator (mulberry32): the same seed, the same actions. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function simulate(seed) {
  const rnd = random(seed);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const id = `alice:sim-${seed}`;
  await applyAll(client(s, "alice"), id, [ask, gate]);
  s.grants.set(id, [...ALLOWED, "mallory"].map((u) => `${u}/decide`).concat("bob/read"));
  const log = [];
  const act = async (user) => {
    const sent = [];
    for (let i = 0; i < 2 + Math.floor(rnd() * 3); i++) {
      const r = rnd();
      const decision = user === "mallory" || user === "alice" ? "approve"
        : r < 0.6 ? "approve"
        : r < 0.85 ? ["edit", { path: pick(["/tmp/a.txt", "/tmp/b.txt"]) }]
        : r < 0.9 ? ["reject", "no"]
        : null; // a replay of an earlier request
      const body = decision === null && sent.length ? pick(sent)
        : { commitId: `${user}-${i}`, decisions: { c1: decision ?? "approve" } };
      sent.push(body);
      await new Promise((res) => setTimeout(res, Math.floor(rnd() * 8)));
      const res = await client(s, user).decide(id, body);
      log.push({ user, decision: body.decisions.c1, status: res.status, code: res.body?.error?.code ?? null });
    }
  };
  // Some threads get fewer allowed approvers than the quorum: they must stay pending.
  const active = ALLOWED.filter(() => rnd() < 0.7);
  await Promise.all(["alice", "mallory", ...active].map(act));
  const tail = JSON.parse((await client(s, "alice").load(id)).body.tail).tools[0];
  const receipts = (await s.pool.query("SELECT receipt FROM gatehouse_receipts WHERE thread = $1", [id]))
    .rows.map((r) => JSON.parse(r.receipt));
  const counted = Number((await s.pool.query(
    "SELECT count(*) FROM gatehouse_approvals WHERE thread = $1", [id])).rows[0].count);
  return { id, log, tail, receipts, counted };
}

test("approvals, edits, rejections and replays from seven identities at once: every interleaving keeps the quorum's promise", async () => {
  const outcomes = { approved: 0, rejected: 0, pending: 0 };
  for (let seed = 1; seed <= 32; seed++) {
    const { id, log, tail, receipts, counted } = await simulate(seed);
    const why = `seed ${seed}: ${JSON.stringify(log)}`;
    // The hostile identity and the requester never get a decision through.
    for (const e of log.filter((x) => x.user === "mallory")) assert.equal(e.code, "not_an_approver", why);
    for (const e of log.filter((x) => x.user === "alice")) assert.equal(e.code, "self_approval", why);
    outcomes[tail.approval] = (outcomes[tail.approval] ?? 0) + 1;
    if (tail.approval === "approved") {
      assert.equal(receipts.length, 1, `one receipt for the call; ${why}`);
      const [r] = receipts;
      const by = r.approvals.map((a) => a.by);
      assert.equal(new Set(by).size, QUORUM, `quorum distinct approvers; ${why}`);
      for (const b of by) {
        assert.ok(ALLOWED.includes(b), `${b} is allowed; ${why}`);
        // Each approver in the receipt had a decision of theirs accepted.
        assert.ok(log.some((x) => x.user === b && x.status === 200 && x.decision !== "reject" &&
          !(Array.isArray(x.decision) && x.decision[0] === "reject")), `${b} approved; ${why}`);
      }
      assert.equal(r.decidedBy, by[by.length - 1], why);
      await verifyApproval(r, tail.inputs, pair.publicKey, { thread: id, tool: "delete_file" });
      const other = tail.inputs.path === "/tmp/a.txt" ? { path: "/tmp/b.txt" } : PROPOSED;
      await assert.rejects(verifyApproval(r, other, pair.publicKey), (e) => e.code === "receipt_inputs", why);
      assert.equal(r.decision, tail.inputs.path === PROPOSED.path ? "approve" : "edit", why);
    } else if (tail.approval === "rejected") {
      assert.equal(receipts.length, 0, why);
      assert.ok(log.some((x) => x.status === 200 && Array.isArray(x.decision) && x.decision[0] === "reject"), why);
    } else {
      assert.equal(tail.approval, "pending", why);
      assert.equal(receipts.length, 0, why);
      assert.ok(counted < QUORUM, `fewer than the quorum counted (${counted}); ${why}`);
    }
  }
  // The seeds reach every outcome, so each branch above was checked.
  console.log(`outcomes over 32 seeds: ${JSON.stringify(outcomes)}`);
  assert.ok(outcomes.approved > 0 && outcomes.pending > 0 && outcomes.rejected > 0, JSON.stringify(outcomes));
});
