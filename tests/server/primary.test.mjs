// primaryPool (gatehouse-agent/server, docs/design.md "Failover") against a real Postgres: the
// routing rules the README promises that need no standby (tests/failover has the formation).
// A host that refuses connections is passed over; a write refused as read-only (25006, what a
// demoted primary answers), whether through the pool's own query() (a callback inside
// node-postgres) or a checked-out client (a promise), sends the next connection to look for
// the primary again; the libpq-only parameter is not passed on; the password never appears.

import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import pg from "pg";
import { freePort, startPostgres } from "../support/postgres.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { primaryPool } = await import(path.join(root, "pkg/server.js"));

let cluster;
let dead;
before(async () => {
  cluster = await startPostgres();
  dead = await freePort();
});
after(() => cluster?.stop());

const uri = (...ports) => `postgres://${cluster.user}:secret@${ports.map((p) => `127.0.0.1:${p}`).join(",")}` +
  "/postgres?target_session_attrs=read-write&application_name=gh";
const readOnly = async (on) => {
  const c = new pg.Client({ connectionString: cluster.connectionString });
  await c.connect();
  await c.query(`ALTER SYSTEM SET default_transaction_read_only = ${on ? "on" : "off"}`);
  await c.query("SELECT pg_reload_conf()");
  await c.end();
};

test("a host that refuses connections is passed over; libpq's target_session_attrs is not passed on", async () => {
  const pool = primaryPool(pg, uri(dead, cluster.port), { max: 2 });
  try {
    const r = await pool.query("SELECT inet_server_port() AS port, current_setting('application_name') AS app");
    assert.deepEqual(r.rows[0], { port: cluster.port, app: "gh" });
    assert.deepEqual(pool.primary(), { host: `postgres://127.0.0.1:${cluster.port}/postgres?application_name=gh`, switches: 0 });
  } finally {
    await pool.end();
  }
});

test("a write refused as read-only (25006) sends the pool looking again, through pool.query and through a client", async () => {
  const pool = primaryPool(pg, uri(cluster.port, dead), { max: 1 });
  try {
    await pool.query("SELECT 1");
    assert.equal(pool.primary().host, `postgres://127.0.0.1:${cluster.port}/postgres?application_name=gh`);
    await readOnly(true);
    // pool.query: node-postgres calls the client with a callback.
    await assert.rejects(pool.query("CREATE TABLE t1 (a int)"), (e) => e.code === "25006");
    assert.equal(pool.primary().host, null, "after a 25006 the pool looks for the primary");
    await readOnly(false);
    // It looks from the next host (the dead one), then comes back round to this one.
    await pool.query("SELECT 1");
    assert.equal(pool.primary().host, `postgres://127.0.0.1:${cluster.port}/postgres?application_name=gh`);
    // A client checked out (a promise), as the handler's transactions use it.
    await readOnly(true);
    const c = await pool.connect();
    await assert.rejects(c.query("CREATE TABLE t2 (a int)"), (e) => e.code === "25006");
    c.release(true);
    assert.equal(pool.primary().host, null);
  } finally {
    await readOnly(false);
    await pool.end();
  }
});

test("a pool whose every host refuses fails with the connection error, naming no password", async () => {
  const pool = primaryPool(pg, uri(dead), { max: 1 });
  try {
    await assert.rejects(pool.query("SELECT 1"), (e) => e.code === "ECONNREFUSED" && !String(e.message).includes("secret"));
  } finally {
    await pool.end();
  }
});
