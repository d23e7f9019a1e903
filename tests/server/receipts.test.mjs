// Signed approval receipts (README "Approvals your backend can verify", docs/design.md
// "Receipts"): the handler signs every approved or edited call with its Ed25519 key, in the
// decision's transaction; `verifyApproval` refuses a bad signature, other inputs, another tool,
// another thread and an expired receipt, each with its own code; `consumeApproval` spends a
// receipt once, also under a race; and the example backend route (examples/receipt-backend)
// performs its action only with a valid, unused receipt.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import canonicalize from "canonicalize";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture } from "./util.mjs";

const { consumeApproval, createStoreHandler, verifyApproval } = await import("../../pkg/server.js");
// The example imports "gatehouse-agent/server" as an app does: here that is the built package.
const exampleModules = new URL("../../examples/receipt-backend/node_modules/", import.meta.url);
fs.mkdirSync(exampleModules, { recursive: true });
if (!fs.existsSync(new URL("gatehouse-agent", exampleModules))) {
  fs.symlinkSync(fileURLToPath(new URL("../../pkg", import.meta.url)),
    fileURLToPath(new URL("gatehouse-agent", exampleModules)), "dir");
}
const { transferRoute } = await import("../../examples/receipt-backend/transfer.mjs");

const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
const privateJwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
const publicJwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
const TTL = 60_000;

let s;
let unsigned;
before(async () => {
  s = await startStoreServer({ signingKey: privateJwk, receiptTtlMs: TTL });
  unsigned = await startStoreServer({ postgres: s.postgres });
});
after(async () => {
  await unsigned?.close();
  await s?.close();
});

const [ask, gate] = fixture("approved-run.json");

/** A thread of alice's whose model asked for `wire_transfer` (call c1), bob may decide on. */
async function gated(server, id, inputs = { to: "ana", amount: 100 }) {
  const call = structuredClone(gate);
  call.commit.append[0].tools[0].name = "wire_transfer";
  call.commit.append[0].tools[0].inputs = inputs;
  call.commit.audit[0].tool = "wire_transfer";
  call.commit.audit[0].proposedInputs = inputs;
  await applyAll(client(server, "alice"), id, [ask, call]);
  server.grants.set(id, ["bob/read", "bob/decide"]);
  return id;
}

const sha256 = (v) => createHash("sha256").update(canonicalize(v)).digest("hex");
// Alice owns the thread (she may write it: her device runs the calls).
const receiptOf = (server, user, id, callId = "c1") =>
  client(server, user).call("GET", `/threads/${encodeURIComponent(id)}/receipts/${callId}`);

/** The code a promise rejects with. */
async function codeOf(p) {
  try {
    await p;
  } catch (e) {
    assert.equal(e.name, "GatehouseError", String(e));
    return e.code;
  }
  return "resolved";
}

test("an approval is signed in its transaction: thread, call, tool, the inputs' canonical digest, who and when", async () => {
  const id = await gated(s, "alice:signed", { to: "ana", amount: 100, memo: { z: 1, a: [2, "é"] } });
  const at = 1_800_000_000_000;
  const r = await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } },
    { "x-test-now": String(at) });
  assert.equal(r.status, 200, r.text);
  const got = await receiptOf(s, "alice", id);
  assert.equal(got.status, 200, got.text);
  const rc = got.body;
  assert.deepEqual(Object.keys(rc), ["v", "id", "thread", "callId", "tool", "inputsSha256", "decision",
    "decidedBy", "approvals", "at", "expiresAt", "alg", "sig"]);
  assert.equal(rc.thread, id);
  assert.equal(rc.callId, "c1");
  assert.equal(rc.tool, "wire_transfer");
  // Key order does not change the digest (RFC 8785).
  assert.equal(rc.inputsSha256, sha256({ amount: 100, memo: { a: [2, "é"], z: 1 }, to: "ana" }));
  assert.deepEqual([rc.decision, rc.decidedBy, rc.at, rc.expiresAt], ["approve", "bob", at, at + TTL]);
  assert.deepEqual(rc.approvals, [{ by: "bob", at }]);
  assert.match(rc.id, /^rcpt_[0-9a-f]{32}$/);
  const ok = await verifyApproval(rc, { memo: { a: [2, "é"], z: 1 }, amount: 100, to: "ana" }, publicJwk,
    { tool: "wire_transfer", thread: id, now: at + 1 });
  assert.equal(ok.id, rc.id);
  // Bob, who may read the thread and decide, does not get it: a receipt spends an approval,
  // and only the identity that runs the thread's tools needs one. Mallory may do nothing.
  for (const user of ["bob", "mallory"]) {
    const r = await receiptOf(s, user, id);
    assert.deepEqual([r.status, r.body.error.code], [403, "unauthorized"], user);
  }
  const bad = await receiptOf(s, "alice", id, "%E0%A4%A");
  assert.deepEqual([bad.status, bad.body.error.code], [400, "invalid_request"]);
});

test("an edit's receipt binds the edited inputs; a rejection has none; nor has a handler without a key", async () => {
  const id = await gated(s, "alice:edited");
  const r = await client(s, "bob").decide(id, { commitId: "b1",
    decisions: { c1: ["edit", { to: "ana", amount: 5 }] } });
  assert.equal(r.status, 200, r.text);
  const rc = (await receiptOf(s, "alice", id)).body;
  assert.equal(rc.decision, "edit");
  assert.equal(rc.inputsSha256, sha256({ to: "ana", amount: 5 }));
  assert.equal(await codeOf(verifyApproval(rc, { to: "ana", amount: 100 }, publicJwk)), "receipt_inputs");

  const no = await gated(s, "alice:rejected");
  assert.equal((await client(s, "bob").decide(no, { commitId: "b1", decisions: { c1: "reject" } })).status, 200);
  const none = await receiptOf(s, "alice", no);
  assert.equal(none.status, 404, none.text);
  assert.equal(none.body.error.code, "no_receipt");

  const plain = await gated(unsigned, "alice:unsigned");
  assert.equal((await client(unsigned, "bob").decide(plain, { commitId: "b1",
    decisions: { c1: "approve" } })).status, 200);
  assert.equal((await receiptOf(unsigned, "alice", plain)).body.error.code, "no_receipt");
});

test("verifyApproval: each way a receipt can be wrong has its own code", async () => {
  const id = await gated(s, "alice:verify");
  const at = 1_800_000_000_000;
  await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } }, { "x-test-now": String(at) });
  const rc = (await receiptOf(s, "alice", id)).body;
  const inputs = { to: "ana", amount: 100 };
  const now = at + 1;
  assert.equal((await verifyApproval(rc, inputs, publicJwk, { now })).callId, "c1");
  // A field changed after signing (who decided), another key, a signature cut short.
  assert.equal(await codeOf(verifyApproval({ ...rc, decidedBy: "alice" }, inputs, publicJwk, { now })), "receipt_signature");
  const other = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  assert.equal(await codeOf(verifyApproval(rc, inputs, other.publicKey, { now })), "receipt_signature");
  assert.equal(await codeOf(verifyApproval({ ...rc, sig: rc.sig.slice(0, 20) }, inputs, publicJwk, { now })), "receipt_signature");
  // The same signature over other inputs, for another tool, of another thread, too late.
  assert.equal(await codeOf(verifyApproval(rc, { to: "ana", amount: 1000 }, publicJwk, { now })), "receipt_inputs");
  assert.equal(await codeOf(verifyApproval(rc, inputs, publicJwk, { now, tool: "delete_customer" })), "receipt_tool");
  assert.equal(await codeOf(verifyApproval(rc, inputs, publicJwk, { now, thread: "alice:other" })), "receipt_thread");
  assert.equal(await codeOf(verifyApproval(rc, inputs, publicJwk, { now: at + TTL })), "receipt_expired");
  // Not a receipt at all.
  for (const bad of [null, "x", {}, { ...rc, v: 2 }, { ...rc, sig: undefined }]) {
    assert.equal(await codeOf(verifyApproval(bad, inputs, publicJwk, { now })), "receipt_malformed");
  }
  // A private key is not a public one.
  assert.equal(await codeOf(verifyApproval(rc, inputs, pair.privateKey, { now })), "invalid_config");
});

test("a receipt outlives its thread: deleted, it can still be spent once", async () => {
  const id = await gated(s, "alice:deleted");
  await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } });
  const rc = (await receiptOf(s, "alice", id)).body;
  assert.equal((await client(s, "alice").remove(id)).status, 200);
  await verifyApproval(rc, { to: "ana", amount: 100 }, publicJwk);
  assert.equal(await codeOf(consumeApproval(s.pool, rc.id)), "resolved");
  assert.equal(await codeOf(consumeApproval(s.pool, rc.id)), "receipt_used");
});

test("consumeApproval spends a receipt once, also when ten backends race for it", async () => {
  const id = await gated(s, "alice:consume");
  await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } });
  const rc = (await receiptOf(s, "alice", id)).body;
  const codes = await Promise.all(Array.from({ length: 10 }, () => codeOf(consumeApproval(s.pool, rc.id))));
  assert.deepEqual(codes.filter((c) => c === "resolved").length, 1, JSON.stringify(codes));
  assert.deepEqual(new Set(codes.filter((c) => c !== "resolved")), new Set(["receipt_used"]));
  assert.equal(await codeOf(consumeApproval(s.pool, rc.id)), "receipt_used");
  assert.equal(await codeOf(consumeApproval(s.pool, "rcpt_never")), "receipt_unknown");
  assert.equal(await codeOf(consumeApproval(s.pool, "")), "receipt_malformed");
});

test("the example backend route: only a valid, unused receipt for these inputs moves money", async () => {
  const done = [];
  const route = transferRoute({
    pool: s.pool,
    publicKey: publicJwk,
    transfer: async (inputs, db) => {
      await db.query("SELECT 1");
      done.push(inputs);
      return done.length;
    },
  });
  const post = async (body) => {
    const r = await route(new Request("http://app.test/api/transfer", { method: "POST",
      headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    return { status: r.status, body: await r.json() };
  };
  const id = await gated(s, "alice:transfer");
  await client(s, "bob").decide(id, { commitId: "b1", decisions: { c1: "approve" } });
  const receipt = (await receiptOf(s, "alice", id)).body;
  const inputs = { to: "ana", amount: 100 };

  // Tampered inputs first: refused, and the receipt stays unspent.
  const tampered = await post({ receipt, inputs: { to: "mallory", amount: 100 }, thread: id });
  assert.deepEqual([tampered.status, tampered.body.error.code], [403, "receipt_inputs"]);
  // A receipt of another thread, for the same tool and inputs, sent for this one.
  const elsewhere = await gated(s, "alice:transfer-2");
  await client(s, "bob").decide(elsewhere, { commitId: "b1", decisions: { c1: "approve" } });
  const foreign = (await receiptOf(s, "alice", elsewhere)).body;
  const cross = await post({ receipt: foreign, inputs, thread: id });
  assert.deepEqual([cross.status, cross.body.error.code], [403, "receipt_thread"]);

  const first = await post({ receipt, inputs, thread: id });
  assert.deepEqual([first.status, first.body], [200, { ok: true, done: 1 }]);
  // The captured request, replayed.
  const replay = await post({ receipt, inputs, thread: id });
  assert.deepEqual([replay.status, replay.body.error.code], [409, "receipt_used"]);
  assert.deepEqual(done, [inputs], "the money moved once");
});

test("a signing key that is not an Ed25519 private key is refused when the handler is made", () => {
  const base = { pool: { query() {}, connect() {} }, authorize: () => "u" };
  for (const signingKey of ["secret", publicJwk, pair.publicKey, { ...privateJwk, crv: "P-256" }, null]) {
    assert.throws(() => createStoreHandler({ ...base, signingKey }),
      (e) => e.name === "GatehouseError" && e.code === "invalid_config", JSON.stringify(signingKey));
  }
  assert.equal(typeof createStoreHandler({ ...base, signingKey: pair.privateKey }), "function");
  assert.equal(typeof createStoreHandler({ ...base, signingKey: privateJwk }), "function");
});
