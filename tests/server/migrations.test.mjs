// The handler creates and migrates its own tables: idempotent, safe when several handlers
// start at once (an advisory lock inside the migration's transaction), and refusing tables a
// newer release migrated.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { startPostgres } from "../support/postgres.mjs";
import { fixture } from "./util.mjs";

const { createStoreHandler, STORE_SCHEMA_VERSION } = await import("../../pkg/server.js");

let cluster;
const pools = [];
before(async () => {
  cluster = await startPostgres();
});
after(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => {})));
  await cluster?.stop();
});

async function database(name) {
  const admin = new pg.Pool({ connectionString: cluster.connectionString, max: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return `postgresql://${cluster.user}@127.0.0.1:${cluster.port}/${name}`;
}

function pool(connectionString) {
  const p = new pg.Pool({ connectionString, max: 3 });
  p.on("error", () => {});
  pools.push(p);
  return p;
}

const authorize = () => "alice";

test("eight handlers starting at once on a fresh database migrate it once", async () => {
  const url = await database("concurrent");
  const handlers = Array.from({ length: 8 }, () =>
    createStoreHandler({ pool: pool(url), authorize }));
  await Promise.all(handlers.map((h) => h.migrate()));
  const p = pool(url);
  const schema = await p.query("SELECT id, version FROM gatehouse_schema");
  assert.deepEqual(schema.rows, [{ id: 1, version: STORE_SCHEMA_VERSION }]);
  const tables = await p.query(`SELECT tablename FROM pg_tables
    WHERE tablename LIKE 'gatehouse%' ORDER BY tablename`);
  assert.deepEqual(tables.rows.map((r) => r.tablename), ["gatehouse_approvals", "gatehouse_audit", "gatehouse_change_counter",
    "gatehouse_changes", "gatehouse_commits", "gatehouse_grants", "gatehouse_keys", "gatehouse_links", "gatehouse_messages",
    "gatehouse_push", "gatehouse_receipts", "gatehouse_requests", "gatehouse_schema", "gatehouse_threads"]);
  const counter = await p.query("SELECT * FROM gatehouse_change_counter");
  assert.equal(counter.rows.length, 1, "the counter row is inserted once");
  const keys = await p.query("SELECT name FROM gatehouse_keys ORDER BY name");
  assert.deepEqual(keys.rows, [{ name: "cursor" }, { name: "links" }],
    "one cursor key and one decision links' key, each made by one handler");
  // A cursor one handler gave, another reads: they share the database's key.
  const start = await handlers[0](new Request("http://h/changes?poll=1"));
  const { cursor } = await start.json();
  const next = await handlers[7](new Request(`http://h/changes?poll=1&since=${cursor}`));
  assert.equal(next.status, 200, await next.clone().text());
  await Promise.all(handlers.map((h) => h.close()));
});

test("migrating again keeps the data; the first request migrates by itself", async () => {
  const url = await database("again");
  const first = createStoreHandler({ pool: pool(url), authorize });
  const body = fixture("approved-run.json")[0];
  const r = await first(new Request("http://h/threads/t/commit",
    { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } }));
  assert.equal(r.status, 200, await r.clone().text());
  const second = createStoreHandler({ pool: pool(url), authorize });
  await second.migrate();
  await second.migrate();
  const loaded = await second(new Request("http://h/threads/t"));
  assert.equal((await loaded.json()).record.version, 1);
  await first.close();
  await second.close();
});

test("threads created before owners were kept (schema 2) are still listed, each asked of authorize", async () => {
  const url = await database("owners");
  const p = pool(url);
  const h = createStoreHandler({ pool: p, authorize });
  const body = fixture("approved-run.json")[0];
  for (const id of ["old", "new"]) {
    const r = await h(new Request(`http://h/threads/${id}/commit`, { method: "POST",
      body: JSON.stringify(body), headers: { "content-type": "application/json" } }));
    assert.equal(r.status, 200);
  }
  // "old" as schema 2 left it: no owner. The other user's list asks authorize about it.
  await p.query("UPDATE gatehouse_threads SET owner = NULL WHERE id = 'old'");
  const asked = [];
  const bob = createStoreHandler({ pool: pool(url), authorize: (_, { threadId }) => {
    asked.push(threadId);
    return "bob";
  } });
  const listed = await (await bob(new Request("http://h/threads"))).json();
  assert.deepEqual(listed.threads.map((t) => t.id), ["old"]);
  assert.deepEqual(asked, [null, "old"], "asked about the list, then the thread without owner");
  await h.close();
  await bob.close();
});

test("tables of a newer release are refused, and left as they are", async () => {
  const url = await database("newer");
  const p = pool(url);
  await createStoreHandler({ pool: p, authorize }).migrate();
  await p.query("UPDATE gatehouse_schema SET version = 99");
  const h = createStoreHandler({ pool: pool(url), authorize });
  await assert.rejects(h.migrate(), /newer release/);
  const r = await h(new Request("http://h/threads/t"));
  assert.equal(r.status, 500);
  const refused = await r.json();
  assert.equal(refused.error.code, "storage");
  assert.match(refused.error.message, /newer release/);
  assert.equal((await p.query("SELECT version FROM gatehouse_schema")).rows[0].version, 99);
});
