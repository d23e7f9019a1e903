// The change stream: SSE notices of another client's commits through another handler on the
// same Postgres (NOTIFY), only for threads the user may read; the polling fallback without
// NOTIFY, plain and long-polled, and SSE fed by polling.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, fixture } from "./util.mjs";

const run = fixture("approved-run.json");
let a; // the handler alice writes through
let b; // another handler (its own pool and server) on the same Postgres
let quiet; // a handler without NOTIFY
before(async () => {
  a = await startStoreServer();
  b = await startStoreServer({ postgres: a.postgres, pingMs: 300 });
  quiet = await startStoreServer({ postgres: a.postgres, notify: false, pollMs: 200 });
  a.grants.set("alice:shared", ["bob"]);
  b.grants.set("alice:shared", ["bob"]);
  quiet.grants.set("alice:shared", ["bob"]);
});
after(async () => {
  await quiet?.close();
  await b?.close();
  await a?.close();
});

/** Opens `GET changes` as `user`; `next()` resolves to the next event (data or comment). */
async function subscribe(s, user) {
  const controller = new AbortController();
  const r = await fetch(`${s.url}/changes`, {
    headers: { authorization: `Bearer ${user}` }, signal: controller.signal,
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("content-type"), "text/event-stream");
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const events = [];
  const next = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6)).join("\n");
        const event = data ? { data: JSON.parse(data), block } : { comment: block };
        events.push(event);
        return event;
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      const chunk = await Promise.race([reader.read(),
        new Promise((resolve) => setTimeout(() => resolve(null), left))]);
      if (chunk === null) return null;
      if (chunk.done) return { end: true };
      buffer += chunk.value;
    }
  };
  /** The next data event, skipping comments. */
  const nextData = async (ms = 3000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const e = await next(Math.max(deadline - Date.now(), 0));
      if (!e || e.end || e.data) return e;
    }
  };
  return { next, nextData, close: () => controller.abort() };
}

test("SSE: another client's commits reach a reader within a second, only threads it may read", async () => {
  const bob = await subscribe(b, "bob");
  assert.match((await bob.next()).comment, /connected/);
  const alice = client(a, "alice");
  const t0 = Date.now();
  await applyAll(alice, "alice:private", run.slice(0, 1));
  await applyAll(alice, "alice:shared", run.slice(0, 1));
  const first = await bob.nextData(1000);
  assert.ok(first?.data, "a notice within a second");
  assert.deepEqual(first.data, { threadId: "alice:shared", version: 1 },
    "the private thread's notice is not sent to bob");
  assert.ok(Date.now() - t0 < 1000);
  // No `id:` line: the handler's position in its feed would tell its write count.
  assert.doesNotMatch(first.block, /^id:/m);
  await applyAll(alice, "alice:shared", run.slice(1, 2));
  assert.deepEqual((await bob.nextData()).data, { threadId: "alice:shared", version: 2 });
  await alice.remove("alice:shared");
  assert.deepEqual((await bob.nextData()).data, { threadId: "alice:shared", version: null });
  // An idle stream gets comments, so proxies keep it open.
  const ping = await bob.next(2000);
  assert.match(ping.comment, /ping/);
  bob.close();
});

test("polling without NOTIFY: since a cursor, and long-polled", async () => {
  const bob = client(quiet, "bob");
  const start = await bob.call("GET", "/changes?poll=1");
  assert.equal(start.status, 200);
  assert.deepEqual(start.body.changes, []);
  const cursor = start.body.cursor;
  const alice = client(a, "alice");
  await applyAll(alice, "alice:private", run.slice(1, 2));
  await applyAll(alice, "alice:shared", run.slice(0, 2));
  const got = await bob.call("GET", `/changes?poll=1&since=${cursor}`);
  assert.deepEqual(got.body.changes, [{ threadId: "alice:shared", version: 2 }],
    "one notice per thread (its latest), only what bob may read");
  assert.equal(typeof got.body.cursor, "string");
  assert.notEqual(got.body.cursor, cursor);
  const empty = await bob.call("GET", `/changes?poll=1&since=${got.body.cursor}`);
  assert.deepEqual(empty.body.changes, []);
  // Cursors are sealed: a new one at every answer, even where nothing was written.
  assert.notEqual(empty.body.cursor, got.body.cursor);
  const again = await bob.call("GET", `/changes?poll=1&since=${empty.body.cursor}`);
  assert.deepEqual(again.body.changes, []);
  // A long poll waits for the next change.
  const t0 = Date.now();
  const waiting = bob.call("GET", `/changes?poll=1&since=${got.body.cursor}&wait=5000`);
  await new Promise((r) => setTimeout(r, 300));
  await applyAll(alice, "alice:shared", run.slice(2, 3));
  const woke = await waiting;
  assert.deepEqual(woke.body.changes, [{ threadId: "alice:shared", version: 3 }]);
  assert.ok(Date.now() - t0 < 2000, `answered ${Date.now() - t0} ms after it was asked`);
  // With nothing to tell, it answers when the wait is over.
  const idle = await bob.call("GET", `/changes?poll=1&since=${woke.body.cursor}&wait=400`);
  assert.deepEqual(idle.body.changes, []);
});

test("SSE without NOTIFY is fed by polling the change table", async () => {
  const bob = await subscribe(quiet, "bob");
  await bob.next();
  await applyAll(client(a, "alice"), "alice:shared", run.slice(3, 4));
  assert.deepEqual((await bob.nextData(1500)).data, { threadId: "alice:shared", version: 4 });
  bob.close();
});

test("the LISTEN connection goes back to the pool once no stream is left: pool.end() returns", async () => {
  const { createStoreHandler } = await import("../../pkg/server.js");
  const pool = new pg.Pool({ connectionString: a.postgres.connectionString, max: 2 });
  pool.on("error", () => {});
  const handle = createStoreHandler({ pool, authorize: () => "bob" });
  for (let i = 0; i < 2; i++) {
    const r = await handle(new Request("http://h/changes"));
    const reader = r.body.getReader();
    assert.match(new TextDecoder().decode((await reader.read()).value), /connected/);
    const listening = await a.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE query = 'LISTEN gatehouse_changes'`);
    assert.ok(listening.rows[0].n >= 1, "a LISTEN connection while the stream is open");
    await reader.cancel();
  }
  const ended = await Promise.race([pool.end().then(() => "ended"),
    new Promise((r) => setTimeout(() => r("still waiting"), 3000))]);
  assert.equal(ended, "ended");
});

test("pruned notices: a poll from before them is told to reload (reset)", async () => {
  const bob = client(quiet, "bob");
  const start = (await bob.call("GET", "/changes?poll=1")).body.cursor;
  await applyAll(client(a, "alice"), "alice:shared", run.slice(4, 5));
  const seen = await bob.call("GET", `/changes?poll=1&since=${start}`);
  assert.deepEqual(seen.body.changes, [{ threadId: "alice:shared", version: 5 }]);
  assert.equal(seen.body.reset, undefined);
  const deleted = await quiet.handle.pruneChanges(0);
  assert.ok(deleted >= 1, `${deleted} deleted`);
  assert.equal((await a.pool.query("SELECT count(*)::int AS n FROM gatehouse_changes")).rows[0].n, 0);
  const stale = await bob.call("GET", `/changes?poll=1&since=${start}`);
  assert.equal(stale.body.reset, true);
  // A cursor at or after the pruned notices reads on as before.
  const fresh = await bob.call("GET", `/changes?poll=1&since=${seen.body.cursor}`);
  assert.deepEqual(fresh.body.changes, []);
  assert.equal(fresh.body.reset, undefined);
  assert.equal(await quiet.handle.pruneChanges(), 0, "nothing an hour old");
});

test("a database that refuses LISTEN (CockroachDB's 0A000): the stream polls instead, and says why", async () => {
  const { createStoreHandler } = await import("../../pkg/server.js");
  const real = new pg.Pool({ connectionString: a.postgres.connectionString, max: 4 });
  real.on("error", () => {});
  // Real clients, except that LISTEN fails as CockroachDB answers it.
  let listens = 0;
  const wrapped = new WeakSet();
  const pool = {
    query: (...args) => real.query(...args),
    async connect() {
      const c = await real.connect();
      if (!wrapped.has(c)) {
        wrapped.add(c);
        const query = c.query;
        c.query = function (text, ...rest) {
          if (typeof text === "string" && text.startsWith("LISTEN")) {
            listens++;
            return Promise.reject(Object.assign(new Error("unimplemented: this syntax"),
              { code: "0A000" }));
          }
          return query.call(this, text, ...rest);
        };
      }
      return c;
    },
  };
  const handle = createStoreHandler({ pool, authorize: () => "bob", pollMs: 200 });
  const open = async () => {
    const r = await handle(new Request("http://h/changes"));
    assert.equal(r.status, 200);
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    return {
      /** Reads until `pattern` matches what came so far; the time it took, or null. */
      async until(pattern, ms) {
        const t0 = Date.now();
        while (!pattern.test(text)) {
          const chunk = await Promise.race([reader.read(),
            new Promise((resolve) => setTimeout(() => resolve(null), ms - (Date.now() - t0)))]);
          if (chunk === null || chunk.done) return null;
          text += chunk.value;
        }
        return Date.now() - t0;
      },
      close: () => reader.cancel(),
    };
  };
  try {
    const first = await open();
    assert.notEqual(await first.until(/: the database refused LISTEN \(0A000: unimplemented: this syntax\); polling every 200 ms/, 2000), null,
      "the stream says why it polls");
    // Another handler writes: only this handler's polling can bring the notice (its safety
    // net alone would take 5 s).
    await applyAll(client(a, "alice"), "alice:listen", run.slice(0, 1));
    const took = await first.until(/"threadId":"alice:listen","version":1/, 3000);
    assert.notEqual(took, null, "the notice arrives");
    assert.ok(took < 1500, `the notice took ${took} ms`);
    const second = await open();
    assert.notEqual(await second.until(/refused LISTEN/, 1000), null);
    assert.equal(listens, 1, "LISTEN is not tried again");
    await applyAll(client(a, "alice"), "alice:listen", run.slice(1, 2));
    assert.notEqual(await second.until(/"threadId":"alice:listen","version":2/, 1500), null);
    await Promise.all([first.close(), second.close()]);
  } finally {
    await handle.close();
    await real.end();
  }
});

test("SSE: a write made while the feed's LISTEN is still connecting reaches the stream", async () => {
  // The stream has read its starting position; LISTEN has not taken effect, so the NOTIFY of
  // a write through another handler wakes nobody. The feed reads once when LISTEN is on (the
  // handler has no periodic read while NOTIFY works).
  let release;
  const gate = new Promise((r) => (release = r));
  let entered;
  const connecting = new Promise((r) => (entered = r));
  const c = await startStoreServer({ postgres: a.postgres, onListen: () => { entered(); return gate; } });
  c.grants.set("alice:while-listening", ["bob"]);
  try {
    const opening = subscribe(c, "bob"); // answered once LISTEN is on
    await connecting;
    await applyAll(client(a, "alice"), "alice:while-listening", run.slice(0, 1));
    release();
    const bob = await opening;
    assert.deepEqual((await bob.nextData())?.data, { threadId: "alice:while-listening", version: 1 });
    bob.close();
  } finally {
    release();
    await c.close();
  }
});

test("a notice held back by an older transaction still running is sent once it ends, though it ends in a rollback that wakes nobody", async () => {
  for (const s of [a, b, quiet]) s.grants.set("alice:held", ["bob"]);
  await applyAll(client(a, "alice"), "alice:held", run.slice(0, 1));
  const bob = await subscribe(b, "bob");
  assert.match((await bob.next()).comment, /connected/);
  // Another transaction of the database takes a transaction id and stays open: nothing
  // written after it can be read past it (a reader must never skip a change that commits
  // later with a lower number).
  const other = new pg.Client({ connectionString: a.postgres.connectionString });
  await other.connect();
  await other.query("BEGIN");
  await other.query("SELECT pg_current_xact_id()");
  // A long poll from before the write, to check the same on the polling side.
  const poll0 = await client(quiet, "bob").call("GET", "/changes?poll=1");
  try {
    await applyAll(client(a, "alice"), "alice:held", run.slice(1, 2));
    const early = await bob.nextData(400);
    assert.equal(early, null, "held back while the older transaction runs");
    const held = await client(quiet, "bob").call("GET", `/changes?poll=1&since=${poll0.body.cursor}`);
    assert.deepEqual(held.body.changes, []);
    // It ends without a NOTIFY: the reader looks again by itself.
    await other.query("ROLLBACK");
    const t0 = Date.now();
    const got = await bob.nextData(3000);
    assert.deepEqual(got?.data, { threadId: "alice:held", version: 2 });
    assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
    const polled = await client(quiet, "bob").call("GET", `/changes?poll=1&since=${held.body.cursor}`);
    assert.deepEqual(polled.body.changes, [{ threadId: "alice:held", version: 2 }]);
  } finally {
    await other.end();
    bob.close();
  }
});

test("a cursor sealed before schema 6 (a change count, not a transaction id) is answered reset: the client reloads", async () => {
  // Sealed as a handler before schema 6 did: the count alone, under the database's cursor key.
  const key = (await a.pool.query("SELECT key FROM gatehouse_keys WHERE name = 'cursor'")).rows[0].key;
  const aes = await crypto.subtle.importKey("raw", Buffer.from(key, "hex"), "AES-GCM", false, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, aes, new TextEncoder().encode("41")));
  const old = Buffer.concat([iv, sealed]).toString("base64url");
  const r = await client(quiet, "alice").call("GET", `/changes?poll=1&since=${old}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.reset, true);
  // Its new cursor is of the new numbering: the next poll is not a reset.
  const next = await client(quiet, "alice").call("GET", `/changes?poll=1&since=${r.body.cursor}`);
  assert.equal(next.body.reset, undefined);
});
