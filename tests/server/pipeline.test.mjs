// The handler on a pool in node-postgres' pipeline mode (`new pg.Pool({ pipeline: true })`,
// docs/design.md "A commit's statements"): BEGIN leaves in the same socket write as a
// transaction's first statement, and COMMIT in the same write as a commit's last; what is
// stored and answered is what it is without it (make test-server also runs store.test.mjs
// with GATEHOUSE_PG_PIPELINE=1). Counted on the client's own socket: the calls that reach the
// kernel (`_write`/`_writev`), per commit.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture, stored } from "./util.mjs";

const { transaction } = await import("../../pkg/server/postgres.js");

let s;
before(async () => {
  s = await startStoreServer({
    // One connection, so that every statement goes through the socket counted here.
    makePool: (connectionString) => new pg.Pool({ connectionString, max: 1, pipeline: true }),
  });
});
after(async () => { await s?.close(); });

/** Counts the socket writes of the pool's one client while `f` runs. */
async function socketWrites(pool, f) {
  const c = await pool.connect();
  const socket = c.connection.stream;
  c.release();
  let writes = 0;
  const w = socket._write, wv = socket._writev;
  socket._write = function (...a) { writes++; return w.apply(this, a); };
  socket._writev = function (...a) { writes++; return wv.apply(this, a); };
  try {
    await f();
  } finally {
    socket._write = w;
    socket._writev = wv;
  }
  return writes;
}

test("a commit to a thread that exists is two socket writes: BEGIN with the lock, the write with COMMIT", async () => {
  const a = client(s, "alice");
  const run = fixture("approved-run.json");
  await applyAll(a, "alice:p1", run.slice(0, 3)); // the third is a decision (POST /decide)
  const writes = await socketWrites(s.pool, async () => {
    const r = await a.commit("alice:p1", run[3]);
    assert.equal(r.status, 200, r.text);
  });
  assert.equal(writes, 2);
  // And the same thread, written the same way, holds what it holds without the pipeline.
  const rest = await applyAll(a, "alice:p1", run.slice(4));
  assert.equal(rest.body.record.version, 6);
  const db = await stored(s.pool, "alice:p1");
  assert.deepEqual(db.commits, ["phone:d1", "w1:0", "w1:1", "w1:2", "w1:3", "w1:4"]);
  assert.equal(JSON.parse(db.audit[0][1]).decidedBy, "alice");
});

test("a replayed commit and a stale one are answered as without the pipeline", async () => {
  const a = client(s, "alice");
  const chat = fixture("long-chat.json");
  const first = await a.commit("alice:p2", chat[0]);
  assert.equal(first.status, 200, first.text);
  const again = await a.commit("alice:p2", chat[0]);
  assert.equal(again.status, 200);
  assert.deepEqual(again.body.record, first.body.record);
  const stale = await a.commit("alice:p2", { ...structuredClone(chat[1]), commitId: "stale:1", expectedVersion: 0 });
  assert.equal(stale.status, 409, stale.text);
  assert.equal((await stored(s.pool, "alice:p2")).version, 1);
});

test("a last statement that fails takes the whole transaction back, COMMIT sent with it or not", async () => {
  await s.pool.query("CREATE TABLE IF NOT EXISTS pipeline_t (id int PRIMARY KEY)");
  const attempt = transaction(s.pool, async (c, tx) => {
    await c.query("INSERT INTO pipeline_t VALUES (1)");
    await tx.last("INSERT INTO pipeline_t VALUES (1)"); // a duplicate key: fails
    return { value: "no", write: true };
  });
  await assert.rejects(attempt, (e) => e.code === "23505");
  assert.equal((await s.pool.query("SELECT count(*)::int AS n FROM pipeline_t")).rows[0].n, 0);
  // The connection is usable after it (it was given back broken, and a new one is made).
  const ok = await transaction(s.pool, async (c, tx) => {
    await c.query("INSERT INTO pipeline_t VALUES (2)");
    await tx.last("INSERT INTO pipeline_t VALUES (3)");
    return { value: "yes", write: true };
  });
  assert.equal(ok, "yes");
  assert.deepEqual((await s.pool.query("SELECT id FROM pipeline_t ORDER BY id")).rows.map((r) => r.id), [2, 3]);
  // After tx.last there is no rolling back: asking for it is an error, not a silent commit.
  await assert.rejects(transaction(s.pool, async (c, tx) => {
    await tx.last("INSERT INTO pipeline_t VALUES (4)");
    return { value: null, write: false };
  }), /tx\.last\(\) was used/);
});

test("a BEGIN that fails: nothing fn sends after it goes out", async () => {
  await s.pool.query("CREATE TABLE IF NOT EXISTS pipeline_u (id int PRIMARY KEY)");
  const attempt = transaction(s.pool, async (c) => {
    await c.query("SELECT 1").catch(() => {}); // sent with BEGIN, before its answer came
    await c.query("INSERT INTO pipeline_u VALUES (1)");
    return { value: null, write: true };
  }, "BEGIN ISOLATION LEVEL NOT A LEVEL");
  await assert.rejects(attempt, (e) => e.code === "42601");
  assert.equal((await s.pool.query("SELECT count(*)::int AS n FROM pipeline_u")).rows[0].n, 0);
});
