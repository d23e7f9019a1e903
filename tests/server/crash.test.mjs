// Postgres killed (SIGKILL, the postmaster and every backend) in the middle of commits, then
// restarted: each commit was applied once or not at all, and its retry with the same commit
// id lands exactly once, answered as the success it was.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored } from "./util.mjs";

const run = fixture("approved-run.json");
let s;
before(async () => {
  s = await startStoreServer();
});
after(async () => {
  await s?.close();
});

/** Retries `fn` until it answers 200 (Postgres is coming back), for up to 20 s. */
async function untilOk(fn) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await fn();
    if (r.status === 200) return r;
    assert.equal(r.status, 500, r.text);
    assert.equal(r.body.error.code, "storage");
    assert.ok(Date.now() < deadline, `still failing: ${r.text}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

test("a commit waiting inside its transaction when Postgres dies is not applied; its retry is, once", async () => {
  const alice = client(s, "alice");
  await applyAll(alice, "alice:held", run.slice(0, 1));
  // Another session holds the thread's row, so the commit waits inside its transaction.
  const holder = new pg.Client({ connectionString: s.postgres.connectionString });
  holder.on("error", () => {});
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query("SELECT 1 FROM gatehouse_threads WHERE id = $1 FOR UPDATE", ["alice:held"]);
  const pending = alice.commit("alice:held", run[1]);
  const deadline = Date.now() + 5000;
  for (;;) {
    // (Asked outside the holder's transaction: pg_stat_activity is read once per transaction.)
    const waiting = await s.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`);
    if (waiting.rows[0].n > 0) break;
    assert.ok(Date.now() < deadline, "the commit reached the row lock");
    await new Promise((r) => setTimeout(r, 20));
  }
  s.postgres.kill();
  const failed = await pending;
  assert.equal(failed.status, 500, failed.text);
  assert.equal(failed.body.error.code, "storage");
  await s.postgres.restart();
  await holder.end().catch(() => {});
  const first = await untilOk(() => alice.load("alice:held"));
  assert.equal(first.body.record.version, 1, "the interrupted commit was not applied");
  const retried = await untilOk(() => alice.commit("alice:held", run[1]));
  assert.equal(retried.body.record.version, 2);
  const again = await alice.commit("alice:held", run[1]);
  assert.equal(again.text, retried.text);
  const db = await stored(s.pool, "alice:held");
  assert.deepEqual([db.version, db.messages.length, db.commits.length], [2, 2, 2]);
});

test("30 commits in flight when Postgres is killed: after restart and retry, each landed once", async () => {
  const alice = client(s, "alice");
  const ids = Array.from({ length: 30 }, (_, i) => `alice:crash-${i}`);
  for (const round of [10, 150, 600]) {
    const tag = `r${round}`;
    const inFlight = ids.map((id) => alice.commit(`${id}-${tag}`, run[0]).catch((e) => ({ e })));
    await new Promise((r) => setTimeout(r, round));
    s.postgres.kill();
    const first = await Promise.all(inFlight);
    await s.postgres.restart();
    let answeredBefore = 0;
    for (const [i, id] of ids.entries()) {
      const retry = await untilOk(() => alice.commit(`${id}-${tag}`, run[0]));
      assert.equal(retry.body.record.version, 1);
      if (first[i].status === 200) {
        answeredBefore++;
        assert.equal(retry.text, first[i].text, "the retry is answered as the first was");
      }
      const db = await stored(s.pool, `${id}-${tag}`);
      assert.deepEqual([db.version, db.messages.length, db.commits], [1, 1, ["w1:0"]]);
    }
    console.log(`killed after ${round} ms: ${answeredBefore} of 30 answered before the kill`);
  }
});

test("a decision waiting inside its transaction when Postgres dies is not applied; its retry is, once, as its decider", async () => {
  const id = "alice:decide-crash";
  await applyAll(client(s, "alice"), id, run.slice(0, 2));
  s.grants.set(id, ["bob/read", "bob/decide"]);
  const bob = client(s, "bob");
  const decision = { commitId: "bob:d1", decisions: { c1: "approve" } };
  const holder = new pg.Client({ connectionString: s.postgres.connectionString });
  holder.on("error", () => {});
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query("SELECT 1 FROM gatehouse_threads WHERE id = $1 FOR UPDATE", [id]);
  const pending = bob.decide(id, decision);
  const deadline = Date.now() + 5000;
  for (;;) {
    const waiting = await s.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`);
    if (waiting.rows[0].n > 0) break;
    assert.ok(Date.now() < deadline, "the decision reached the row lock");
    await new Promise((r) => setTimeout(r, 20));
  }
  s.postgres.kill();
  const failed = await pending;
  assert.equal(failed.status, 500, failed.text);
  assert.equal(failed.body.error.code, "storage");
  await s.postgres.restart();
  await holder.end().catch(() => {});
  const first = await untilOk(() => bob.load(id));
  assert.equal(first.body.record.version, 2, "the interrupted decision was not applied");
  const retried = await untilOk(() => bob.decide(id, decision));
  assert.equal(retried.body.record.version, 3);
  const again = await bob.decide(id, decision);
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.body, retried.body, "the same answer, not a second decision");
  const db = await stored(s.pool, id);
  assert.equal(db.version, 3);
  // One decision, by bob, in the journal's open audit record of c1 (and in no row twice).
  const open = db.record.run.audit.map((a) => [a.callId, a.decidedBy]);
  assert.deepEqual(open, [["c1", "bob"]]);
  assert.deepEqual(db.commits, ["bob:d1", "w1:0", "w1:1"]);
});
