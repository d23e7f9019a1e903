// Hostile and broken input gets a clear error and changes nothing: oversized bodies (counted
// as they arrive, whatever Content-Length says), malformed JSON, unknown keys, wrong types,
// SQL metacharacters in ids (stored verbatim, harmless), bad routes and queries; CORS; the
// handler's own options.

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, test } from "node:test";
import { startStoreServer } from "../support/store-server.mjs";
import { applyAll, client, everything, fixture, stored, variant } from "./util.mjs";

let s;
before(async () => {
  s = await startStoreServer({ maxBodyBytes: 64 * 1024 });
});
after(async () => {
  await s?.close();
});

const run = fixture("approved-run.json");

/** A raw request: `chunks` written one by one (chunked, no Content-Length unless given). */
function raw(method, path, chunks, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${s.url}${path}`, {
      method, headers: { authorization: "Bearer alice", ...headers },
    }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(text || "null") }));
    });
    req.on("error", reject);
    (async () => {
      for (const c of chunks) {
        if (!req.write(c)) await new Promise((r) => req.once("drain", r));
      }
      req.end();
    })().catch(() => {});
  });
}

test("oversized bodies are refused with 413, counted as they arrive", async () => {
  await applyAll(client(s, "alice"), "alice:big", run.slice(0, 1));
  const before = await everything(s.pool);
  const big = JSON.stringify(variant(run[1], { commitId: "x".repeat(70 * 1024) }));
  // Declared: refused before reading.
  const declared = await client(s, "alice").commit("alice:big", big);
  assert.equal(declared.status, 413);
  assert.equal(declared.body.error.code, "too_large");
  // Not declared (chunked): counted while reading.
  const chunked = await raw("POST", "/threads/alice%3Abig/commit",
    Array.from({ length: 40 }, () => "x".repeat(4096)), { "content-type": "application/json" });
  assert.equal(chunked.status, 413);
  assert.equal(chunked.body.error.code, "too_large");
  const json = { "content-type": "application/json" };
  const lease = await raw("POST", "/threads/alice%3Abig/lease", [big], json);
  assert.equal(lease.status, 413);
  assert.deepEqual(await everything(s.pool), before);
  // Just under the limit is read (and judged on its content).
  const fits = await raw("POST", "/threads/alice%3Abig/commit", ["{" + " ".repeat(60 * 1024) + "}"],
    json);
  assert.equal(fits.status, 400);
});

test("malformed bodies, unknown keys and wrong types are invalid_request and change nothing", async () => {
  const a = client(s, "alice");
  await applyAll(a, "alice:bad", run.slice(0, 2));
  const before = await everything(s.pool);
  const body = run[3]; // a commit (run[2] is a decision)
  const bad = [
    "",
    "not json",
    "{",
    "[]",
    "null",
    JSON.stringify({ ...body, extra: 1 }),
    JSON.stringify({ ...body, commit: { ...body.commit, apend: [] } }),
    JSON.stringify({ ...body, expectedVersion: "2" }),
    JSON.stringify({ ...body, expectedVersion: -1 }),
    JSON.stringify({ ...body, expectedVersion: 2.5 }),
    JSON.stringify({ ...body, keep: "yes" }),
    JSON.stringify({ ...body, commitId: 7 }),
    JSON.stringify({ ...body, commit: { ...body.commit, status: "hacked" } }),
    JSON.stringify({ ...body, commit: { ...body.commit, append: [{ role: "user" }] } }),
    JSON.stringify(Object.fromEntries(Object.entries(body).filter(([k]) => k !== "owner"))),
    JSON.stringify({ ...body, commitId: "é".repeat(300) }),
    JSON.stringify({ ...body, commitId: "a\u0000b" }),
  ];
  for (const text of bad) {
    const r = await a.commit("alice:bad", text);
    assert.equal(r.status, 400, `${text.slice(0, 80)}: ${r.text}`);
    assert.equal(r.body.error.code, "invalid_request");
    assert.equal(typeof r.body.error.message, "string");
  }
  const notUtf8 = await raw("POST", "/threads/alice%3Abad/commit", [Buffer.from([0x7b, 0xff, 0x7d])],
    { "content-type": "application/json" });
  assert.equal(notUtf8.status, 400);
  for (const lease of ['{"owner":"w1","op":"steal"}', '{"owner":"w1"}',
    '{"owner":"w1","op":"renew","until":1e30}', '{"owner":1,"op":"renew"}']) {
    const r = await a.call("POST", "/threads/alice%3Abad/lease", lease);
    assert.equal(r.status, 400, lease);
    assert.equal(r.body.error.code, "invalid_request");
  }
  assert.deepEqual(await everything(s.pool), before);
});

test("SQL metacharacters in ids and commit ids are stored verbatim and harmless", async () => {
  const a = client(s, "alice");
  const ids = [
    "alice:'; DROP TABLE gatehouse_threads; --",
    'alice:" OR 1=1 --',
    "alice:%_\\*?[]$1",
    "alice:/../threads/x?y=1#z",
    "alice:😀 ünïcode\t\n",
  ];
  for (const id of ids) {
    const r = await a.commit(id, variant(run[0], { commitId: `'); DELETE FROM gatehouse_commits; --${id}`,
      owner: "o'wner\"; --" }));
    assert.equal(r.status, 200, `${id}: ${r.text}`);
    assert.equal(r.body.record.id, id);
    assert.equal((await a.load(id)).body.record.id, id);
    assert.equal((await a.rows(id, "messages", "?limit=5")).body.rows.length, 1);
    const db = await stored(s.pool, id);
    assert.equal(db.version, 1);
    assert.deepEqual(db.commits, [`'); DELETE FROM gatehouse_commits; --${id}`]);
    assert.equal(db.record.lease.owner, "o'wner\"; --");
  }
  const listed = (await a.list()).body.threads.map((t) => t.id);
  for (const id of ids) assert.ok(listed.includes(id), id);
  for (const id of ids) assert.equal((await a.remove(id)).status, 200);
  const left = (await a.list()).body.threads.map((t) => t.id);
  assert.ok(left.length > 0 && ids.every((id) => !left.includes(id)));
  assert.ok((await s.pool.query("SELECT count(*) FROM gatehouse_commits")).rows[0].count > 0);
});

test("bad routes, queries and ids are refused with a clear code", async () => {
  const a = client(s, "alice");
  const before = await everything(s.pool);
  const cases = [
    ["GET", "/nothing", 404, "not_found"],
    ["GET", "/threads/alice%3Ax/nothing", 404, "not_found"],
    ["PUT", "/threads/alice%3Ax", 404, "not_found"],
    ["GET", "/threads/alice%3Ax/commit", 404, "not_found"],
    ["GET", "/threads/%E0%A4%A", 400, "invalid_request"],
    ["GET", "/threads/alice%3A%00", 400, "invalid_request"],
    ["GET", `/threads/alice%3A${"x".repeat(1000)}`, 400, "invalid_request"],
    ["GET", `/threads/alice%3A${"%F0%9F%98%80".repeat(200)}`, 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?limit=abc", 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?limit=-1", 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?limit=99999999999", 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?before=1e3", 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?limit=1&limit=2", 400, "invalid_request"],
    ["GET", "/threads/alice%3Ax/messages?order=desc", 400, "invalid_request"],
    ["GET", "/threads?x=1", 400, "invalid_request"],
    ["GET", "/changes?poll=2", 400, "invalid_request"],
    ["GET", "/changes?since=1", 400, "invalid_request"],
  ];
  for (const [method, path, status, code] of cases) {
    const r = await a.call(method, path);
    assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.error.code, code, path);
  }
  // Outside the base path: not the handler's.
  const outside = await fetch(`${s.origin}/threads`, { headers: { authorization: "Bearer alice" } });
  assert.equal(outside.status, 404);
  assert.deepEqual(await everything(s.pool), before);
});

test("CORS: preflight and allow headers for the configured origins only", async () => {
  const pre = await fetch(`${s.url}/threads/x/commit`, {
    method: "OPTIONS",
    headers: { origin: "http://other.example", "access-control-request-method": "POST",
      "access-control-request-headers": "content-type, authorization" },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get("access-control-allow-origin"), "*");
  assert.match(pre.headers.get("access-control-allow-headers"), /content-type, authorization/);
  assert.match(pre.headers.get("access-control-allow-methods"), /POST/);
  const { createStoreHandler } = await import("../../pkg/server.js");
  const h = createStoreHandler({ pool: s.pool, authorize: () => "u",
    cors: { origin: ["https://app.example"] } });
  const ok = await h(new Request("http://h/threads", { headers: { origin: "https://app.example" } }));
  assert.equal(ok.headers.get("access-control-allow-origin"), "https://app.example");
  const other = await h(new Request("http://h/threads", { headers: { origin: "https://evil.example" } }));
  assert.equal(other.headers.get("access-control-allow-origin"), null);
  await h.close();
});

test("options: an unknown key or a missing pool or authorize is invalid_config", async () => {
  const { createStoreHandler } = await import("../../pkg/server.js");
  const base = { pool: s.pool, authorize: () => "u" };
  const refused = (opts, key) => assert.throws(() => createStoreHandler(opts),
    (e) => e.name === "GatehouseError" && e.code === "invalid_config" && e.message.includes(key));
  refused({ ...base, authorise: () => "u" }, "authorise");
  refused({ ...base, cors: { origins: "*" } }, "cors.origins");
  refused({ authorize: () => "u" }, "pool");
  refused({ pool: s.pool }, "authorize");
  refused({ ...base, maxBodyBytes: -1 }, "maxBodyBytes");
  refused({ ...base, basePath: "api" }, "basePath");
});

test("authorize that throws refuses nothing silently: the request fails and nothing changes", async () => {
  const { createStoreHandler } = await import("../../pkg/server.js");
  const h = createStoreHandler({ pool: s.pool, authorize: () => { throw new Error("auth down"); } });
  const before = await everything(s.pool);
  const r = await h(new Request("http://h/threads/alice%3Athrows/commit",
    { method: "POST", body: JSON.stringify(run[0]), headers: { "content-type": "application/json" } }));
  assert.equal(r.status, 500);
  const text = await r.text();
  assert.doesNotMatch(text, /auth down/, "the app's error text is not sent");
  assert.match(JSON.parse(text).error.message, /authorize failed/);
  assert.equal(JSON.parse(text).error.code, "authorize_failed", "not a retryable storage error");
  assert.deepEqual(await everything(s.pool), before);
  await h.close();
});
