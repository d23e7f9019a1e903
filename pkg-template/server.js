// gatehouse-agent/server: the store handler an app mounts in its backend, so that a thread's
// authority is the app's Postgres (docs/design.md, "Across devices"). A fetch-style handler,
// Request → Response. The protocol is src/store/wire.rs; the decisions (the commit rule, the
// lease rule, the page arithmetic) are the crate's own, built as wasm (server/core); this file
// does the I/O: the SQL, the transactions, the change stream.
//
// The pool is the app's: anything with node-postgres's `query()` and `connect()` (a client
// with `query()` and `release()`; `on("notification")` for LISTEN). Parameterized queries only.

import * as core from "./server/core.js";

export class GatehouseError extends Error {
  constructor(code, message, retryable = false) {
    super(message);
    this.name = "GatehouseError";
    this.code = code;
    this.retryable = retryable;
  }
}

const OPTIONS = new Set([
  "pool", "basePath", "authorize", "maxBodyBytes", "now", "cors", "notify", "pollMs", "pingMs",
  "wasm", "maxRecordBytes", "maxMessageBytes", "maxFeedsPerIdentity", "feedAuthorizeMs",
  "sharedWith",
]);
// A page of rows holds at most this many (src/store/wire.rs, MAX_PAGE: the browser's remote
// store reads a longer page as several).
const MAX_PAGE = 4096;
// A decide body is small: it is read before `authorize` (which gets its intent), so it is
// read only this far.
const MAX_DECIDE_BYTES = 64 * 1024;
// Ids are index keys: Postgres refuses a btree entry over ~2.7 KB, so both stay well below.
const MAX_ID_BYTES = 512;
const utf8Length = (text) => new TextEncoder().encode(text).length;
// Migrations run under this advisory lock (two handlers starting at once take turns).
const MIGRATION_LOCK = 1734439013;
const CHANNEL = "gatehouse_changes";
// Change notices are kept an hour; every PRUNE_EVERY writes a handler deletes older ones.
const CHANGE_RETENTION_MS = 3_600_000;
const PRUNE_EVERY = 1000;

// The tables, by schema version: the `gatehouse_schema` row holds the version applied.
// Ids sort byte-wise (COLLATE "C"), as the local stores list them.
const MIGRATIONS = [
  [
    `CREATE TABLE gatehouse_threads (id text COLLATE "C" PRIMARY KEY,
       version bigint NOT NULL DEFAULT 0, record text,
       updated_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE gatehouse_messages (thread text COLLATE "C" NOT NULL, seq bigint NOT NULL,
       json text NOT NULL, PRIMARY KEY (thread, seq))`,
    `CREATE TABLE gatehouse_audit (thread text COLLATE "C" NOT NULL, seq bigint NOT NULL,
       json text NOT NULL, PRIMARY KEY (thread, seq))`,
    `CREATE TABLE gatehouse_commits (thread text COLLATE "C" NOT NULL, commit_id text NOT NULL,
       answer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (thread, commit_id))`,
    // The change feed: one row per write, numbered in commit order (the counter row is
    // updated last in each transaction, so a later number never commits first).
    `CREATE TABLE gatehouse_changes (seq bigint PRIMARY KEY, thread text COLLATE "C" NOT NULL,
       version bigint, created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE gatehouse_change_counter (id int PRIMARY KEY, seq bigint NOT NULL,
       pruned bigint NOT NULL)`,
    `INSERT INTO gatehouse_change_counter (id, seq, pruned) VALUES (1, 0, 0)`,
  ],
  // The server decides (docs/design.md, "Threat model"): the run lease's secret and the
  // identity that holds it, beside the record and never in it; who made each commit, and a
  // digest of its body, so that a replayed commit id answers only its maker, for the same
  // body; and the version an applied commit left instead of its answer (the record), so that
  // the log grows by a few bytes a commit, not by the record.
  [
    `ALTER TABLE gatehouse_threads ADD COLUMN lease_token text, ADD COLUMN lease_who text`,
    `ALTER TABLE gatehouse_commits ADD COLUMN who text, ADD COLUMN digest text,
       ADD COLUMN version bigint, ALTER COLUMN answer DROP NOT NULL`,
  ],
  // Nothing global, and lists from an index (docs/design.md, "Threat model"): the key that
  // seals the change feed's cursors, so a poll learns nothing of the handler's write count;
  // and each thread's owner (the identity that created it), indexed, so a list reads the
  // user's own threads instead of every thread. Threads created before have none: they are
  // listed as before, by asking `authorize` about each.
  [
    `CREATE TABLE gatehouse_keys (name text PRIMARY KEY, key text NOT NULL)`,
    `ALTER TABLE gatehouse_threads ADD COLUMN owner text`,
    `CREATE INDEX gatehouse_threads_owner ON gatehouse_threads (owner, id)
       WHERE record IS NOT NULL`,
    `CREATE INDEX gatehouse_threads_unowned ON gatehouse_threads (id)
       WHERE owner IS NULL AND record IS NOT NULL`,
  ],
];
/** The schema version this release writes. */
export const STORE_SCHEMA_VERSION = MIGRATIONS.length;

// Serialization failures and deadlocks: the transaction is run again.
const RETRY_CODES = new Set(["40001", "40P01"]);

class Refusal {
  constructor(status, code, message, extra = {}) {
    this.status = status;
    this.body = { error: { code, message, ...extra } };
  }
}

/** The app's `authorize` threw: not the database's fault, and not worth retrying. */
function authorizeFailed(e) {
  const status = e && (e.status === 401 || e.status === 403) ? 403 : 500;
  return new Refusal(status, "authorize_failed",
    "authorize failed; nothing was read or written (the app's error stays on the server)");
}

function invalidConfig(message) {
  return new GatehouseError("invalid_config", `createStoreHandler: ${message}`);
}

let coreReady = null;
/**
 * Instantiates the wasm core once: from `wasm` (a Module or bytes), else the file beside this
 * module — read from disk where it is a file (Node, Deno, Bun; a bundler's copy), fetched where
 * it is not (a module served over HTTP). A Worker has neither: it passes `wasm`.
 */
function loadCore(wasm) {
  if (!coreReady) {
    coreReady = (async () => {
      let module = wasm;
      if (!module) {
        let url = "./server/core_bg.wasm";
        try {
          url = new URL(url, import.meta.url);
          if (url.protocol === "file:") {
            const { readFile } = await import("node:fs/promises");
            module = await readFile(url);
          } else {
            const r = await fetch(url);
            if (!r.ok) throw new Error(`HTTP ${r.status}`);
            module = new Uint8Array(await r.arrayBuffer());
          }
        } catch (e) {
          throw invalidConfig(`cannot read the core's wasm (${url}: ${e?.message ?? e}); ` +
            'pass it as the wasm option (on Workers: import wasm from ' +
            '"gatehouse-agent/server/core_bg.wasm")');
        }
      }
      try {
        core.initSync({ module });
      } catch (e) {
        throw invalidConfig(`the wasm is not the store handler's core (${e?.message ?? e})`);
      }
    })();
    coreReady.catch(() => {
      coreReady = null;
    });
  }
  return coreReady;
}

/** A core answer: a refusal (`{status, error}`) becomes a thrown Refusal. */
function answerOf(text) {
  const v = JSON.parse(text);
  if (v && typeof v.status === "number" && v.error) {
    const r = new Refusal(v.status, v.error.code, v.error.message);
    r.body = { error: v.error };
    throw r;
  }
  return v;
}

/**
 * The store handler: `(request: Request) => Promise<Response>`, with `handle.migrate()` and
 * `handle.close()` (ends the change streams and the LISTEN connection).
 */
export function createStoreHandler(options) {
  if (!options || typeof options !== "object") throw invalidConfig("options must be an object");
  for (const key of Object.keys(options)) {
    if (!OPTIONS.has(key)) throw invalidConfig(`unknown option "${key}"`);
  }
  const {
    pool, basePath = "/", authorize, maxBodyBytes = 1024 * 1024, now = () => Date.now(),
    cors, notify = true, pollMs = 1000, pingMs = 15_000, wasm,
    maxRecordBytes = 512 * 1024, maxMessageBytes = 256 * 1024, maxFeedsPerIdentity = 16,
    feedAuthorizeMs = 5000, sharedWith,
  } = options;
  if (!pool || typeof pool.query !== "function" || typeof pool.connect !== "function") {
    throw invalidConfig("pool must have query() and connect() (e.g. a pg.Pool)");
  }
  if (typeof authorize !== "function") throw invalidConfig("authorize must be a function");
  if (typeof now !== "function") throw invalidConfig("now must be a function");
  if (sharedWith !== undefined && typeof sharedWith !== "function") {
    throw invalidConfig("sharedWith must be a function (identity, request) => thread ids");
  }
  if (typeof basePath !== "string" || !basePath.startsWith("/")) {
    throw invalidConfig('basePath must be a path starting with "/"');
  }
  for (const [name, v] of [["maxBodyBytes", maxBodyBytes], ["pollMs", pollMs], ["pingMs", pingMs],
    ["maxRecordBytes", maxRecordBytes], ["maxMessageBytes", maxMessageBytes],
    ["maxFeedsPerIdentity", maxFeedsPerIdentity], ["feedAuthorizeMs", feedAuthorizeMs]]) {
    if (!Number.isInteger(v) || v <= 0) throw invalidConfig(`${name} must be a positive integer`);
  }
  if (cors !== undefined) {
    if (!cors || typeof cors !== "object") throw invalidConfig("cors must be { origin }");
    for (const k of Object.keys(cors)) {
      if (!["origin", "headers", "credentials"].includes(k)) {
        throw invalidConfig(`unknown option "cors.${k}"`);
      }
    }
    if (cors.headers !== undefined && !(Array.isArray(cors.headers) &&
        cors.headers.every((h) => typeof h === "string"))) {
      throw invalidConfig("cors.headers must be a list of header names");
    }
    const o = cors.origin;
    if (!(typeof o === "string" || (Array.isArray(o) && o.every((x) => typeof x === "string")))) {
      throw invalidConfig('cors.origin must be "*", an origin or a list of origins');
    }
    if (cors.credentials && (o === "*" || (Array.isArray(o) && o.includes("*")))) {
      throw invalidConfig('cors: "*" with credentials would let any site act as the user; ' +
        "list the origins");
    }
  }
  const base = basePath.length > 1 && basePath.endsWith("/") ? basePath.slice(0, -1) : basePath;

  let migrated = null;
  const migrate = () => {
    if (!migrated) {
      migrated = Promise.all([loadCore(wasm), runMigrations(pool)]).then(([, key]) => {
        ctx.cursorKey = key;
      });
      migrated.catch(() => {
        migrated = null;
      });
    }
    return migrated;
  };
  const feed = new ChangeFeed(pool, { notify, pollMs, pingMs });
  const ctx = { pool, authorize, maxBodyBytes, now, notify, feed, writes: 0, maxRecordBytes,
    maxMessageBytes, maxFeedsPerIdentity, feedAuthorizeMs, feeds: new Map(), cursorKey: null,
    sharedWith: sharedWith ?? null };

  async function handle(request) {
    const headers = corsHeaders(cors, request);
    if (request.method === "OPTIONS" && cors) {
      return new Response(null, {
        status: 204,
        headers: {
          ...headers,
          "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
          "access-control-allow-headers": ["content-type", "authorization",
            ...(cors.headers ?? [])].join(", "),
          "access-control-max-age": "600",
        },
      });
    }
    try {
      refuseOrigin(cors, request);
      const route = routeOf(base, request);
      await migrate();
      const out = await route.run(ctx, request);
      if (out instanceof Response) {
        for (const [k, v] of Object.entries(headers)) out.headers.set(k, v);
        return out;
      }
      return json(200, out, headers);
    } catch (e) {
      if (e instanceof Refusal) return json(e.status, e.body, headers);
      if (e instanceof GatehouseError) {
        return json(500, { error: { code: e.code, message: e.message } }, headers);
      }
      // Text Postgres cannot hold (a NUL in a JSON string is escaped; elsewhere it is refused).
      if (e?.code === "22021" || e?.code === "22P05") {
        return json(400, invalid("the body holds text the database cannot store").body, headers);
      }
      return json(500, storageError(e), headers);
    }
  }
  handle.migrate = migrate;
  handle.close = () => feed.close();
  handle.pruneChanges = async (olderThanMs = CHANGE_RETENTION_MS) => {
    await migrate();
    return pruneChanges(pool, olderThanMs);
  };
  return handle;
}

function storageError(e) {
  const code = e && typeof e.code === "string" ? ` (${e.code})` : "";
  return {
    error: {
      code: "storage",
      message: `the database failed${code}; a commit may or may not have been applied: retry it ` +
        "with the same commit id",
    },
  };
}

function json(status, body, headers) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return new Response(text, {
    status,
    headers: { ...headers, "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store" },
  });
}

/**
 * A credentialed request from a page on an origin `cors` does not list is refused before it
 * does anything (a browser would hide the answer, but a write would be done).
 */
function refuseOrigin(cors, request) {
  const origin = request.headers.get("origin");
  if (!cors || cors.origin === "*" || origin === null) return;
  const listed = Array.isArray(cors.origin) ? cors.origin : [cors.origin];
  if (!listed.includes(origin)) {
    throw new Refusal(403, "origin_refused", `requests from ${origin} are not allowed`);
  }
}

function corsHeaders(cors, request) {
  if (!cors) return {};
  const origin = request.headers.get("origin");
  const allowed = cors.origin === "*"
    ? "*"
    : (Array.isArray(cors.origin) ? cors.origin : [cors.origin]).includes(origin) ? origin : null;
  if (!allowed) return {};
  const h = { "access-control-allow-origin": allowed, vary: "Origin" };
  if (cors.credentials) h["access-control-allow-credentials"] = "true";
  return h;
}

// ---------------------------------------------------------------------------------------------
// Routes (src/store/wire.rs)

function notFound() {
  return new Refusal(404, "not_found", "no such route");
}

function invalid(message) {
  return new Refusal(400, "invalid_request", message);
}

function routeOf(base, request) {
  const url = new URL(request.url);
  let rest = url.pathname;
  if (base !== "/") {
    if (!(rest === base || rest.startsWith(base + "/"))) throw notFound();
    rest = rest.slice(base.length);
  }
  const m = request.method;
  const query = (allowed) => readQuery(url.searchParams, allowed);
  if (rest === "/threads") {
    if (m !== "GET") throw notFound();
    query([]);
    return { run: list };
  }
  if (rest === "/changes") {
    if (m !== "GET") throw notFound();
    const q = query(["poll", "since", "wait"]);
    return { run: (ctx, req) => changes(ctx, req, q) };
  }
  if (!rest.startsWith("/threads/")) throw notFound();
  const after = rest.slice("/threads/".length);
  const slash = after.indexOf("/");
  const id = threadIdOf(slash < 0 ? after : after.slice(0, slash));
  const sub = slash < 0 ? null : after.slice(slash + 1);
  if (sub === null && m === "GET") {
    query([]);
    return { run: (ctx, req) => load(ctx, req, id) };
  }
  if (sub === null && m === "DELETE") {
    query([]);
    return { run: (ctx, req) => remove(ctx, req, id) };
  }
  if ((sub === "messages" || sub === "audit") && m === "GET") {
    const q = query(["before", "limit"]);
    const before = q.before === undefined ? null : integer(q.before, "before", 2 ** 53);
    const limit = q.limit === undefined ? 50 : integer(q.limit, "limit", MAX_PAGE);
    return { run: (ctx, req) => rows(ctx, req, id, sub, before, limit) };
  }
  if (sub === "commit" && m === "POST") {
    query([]);
    return { run: (ctx, req) => commit(ctx, req, id) };
  }
  if (sub === "decide" && m === "POST") {
    query([]);
    return { run: (ctx, req) => decide(ctx, req, id) };
  }
  if (sub === "lease" && m === "POST") {
    query([]);
    return { run: (ctx, req) => lease(ctx, req, id) };
  }
  throw notFound();
}

function readQuery(params, allowed) {
  const q = {};
  for (const [k, v] of params) {
    if (!allowed.includes(k)) throw invalid(`unknown query parameter "${k}"`);
    if (k in q) throw invalid(`query parameter "${k}" given twice`);
    q[k] = v;
  }
  return q;
}

function integer(text, name, max) {
  if (!/^\d{1,16}$/.test(text) || Number(text) > max) {
    throw invalid(`${name} must be an integer from 0 to ${max}`);
  }
  return Number(text);
}

function threadIdOf(raw) {
  let id;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw invalid("the thread id is not valid percent-encoded UTF-8");
  }
  if (utf8Length(id) > MAX_ID_BYTES) throw invalid(`a thread id has at most ${MAX_ID_BYTES} bytes`);
  // Postgres text cannot hold NUL.
  if (id.includes("\u0000")) throw invalid("a thread id cannot contain NUL");
  return id;
}

async function identityOf(ctx, request, threadId, action, intent) {
  let who;
  try {
    who = await ctx.authorize(request, intent ? { threadId, action, ...intent } : { threadId, action });
  } catch (e) {
    throw authorizeFailed(e);
  }
  if (typeof who !== "string" || who === "") {
    throw new Refusal(403, "unauthorized",
      threadId === null ? `not allowed to ${action}` : `not allowed to ${action} this thread`);
  }
  return who;
}

async function mayRead(ctx, request, threadId) {
  try {
    const who = await ctx.authorize(request, { threadId, action: "read" });
    return typeof who === "string" && who !== "";
  } catch {
    return false;
  }
}

function clock(ctx, request) {
  const t = ctx.now(request);
  if (typeof t !== "number" || !Number.isFinite(t)) throw new Error("now() must return a number");
  return t;
}

/** Writes take JSON only: a cross-site form or `text/plain` post cannot reach them. */
function requireJson(request) {
  const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    throw new Refusal(415, "unsupported_media_type",
      "the body must be sent as content-type: application/json");
  }
}

/** The body as text, at most `max` bytes counted as they arrive (Content-Length is a hint). */
async function readBody(request, max) {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw tooLarge(max);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      reader.cancel().catch(() => {});
      throw tooLarge(max);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid("the body is not UTF-8");
  }
}

function tooLarge(max) {
  return new Refusal(413, "too_large", `the body is larger than ${max} bytes`);
}

/** Runs `fn(client)` in a transaction; `fn` returns `{ value, write }` (false: roll back). */
async function transaction(pool, fn, begin = "BEGIN") {
  for (let attempt = 0; ; attempt++) {
    const client = await pool.connect();
    // A connection that dies mid-transaction fails the query under way; the client's own
    // `error` event must not become an uncaught exception in the app.
    const ignore = () => {};
    client.on?.("error", ignore);
    let broken = false;
    try {
      await client.query(begin);
      const { value, write } = await fn(client);
      await client.query(write ? "COMMIT" : "ROLLBACK");
      return value;
    } catch (e) {
      broken = !(e instanceof Refusal);
      await client.query("ROLLBACK").catch(() => {});
      if (RETRY_CODES.has(e?.code) && attempt < 4) continue;
      throw e;
    } finally {
      // A client that failed mid-transaction is not given back: it may be dead. It keeps its
      // error listener: a killed Postgres's "terminating connection" can still arrive on it
      // after the release, and with no listener it would be an uncaught exception in the app.
      if (!broken) client.off?.("error", ignore);
      client.release(broken ? true : undefined);
    }
  }
}

async function runMigrations(pool) {
  return transaction(pool, async (c) => {
    await c.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await c.query(`CREATE TABLE IF NOT EXISTS gatehouse_schema (id int PRIMARY KEY,
      version int NOT NULL)`);
    const r = await c.query("SELECT version FROM gatehouse_schema WHERE id = 1");
    const from = r.rows.length ? Number(r.rows[0].version) : 0;
    if (from > MIGRATIONS.length) {
      throw new GatehouseError("storage", `the Gatehouse tables are at schema ${from}, ` +
        `written by a newer release (this one knows ${MIGRATIONS.length})`);
    }
    for (let v = from; v < MIGRATIONS.length; v++) {
      for (const sql of MIGRATIONS[v]) await c.query(sql);
    }
    await c.query(`INSERT INTO gatehouse_schema (id, version) VALUES (1, $1)
      ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, [MIGRATIONS.length]);
    // The first handler makes the cursor key; every handler on the database uses that one,
    // so a cursor one handler gave is read by any other.
    await c.query(`INSERT INTO gatehouse_keys (name, key) VALUES ('cursor', $1)
      ON CONFLICT (name) DO NOTHING`, [hex(crypto.getRandomValues(new Uint8Array(32)))]);
    const key = await c.query("SELECT key FROM gatehouse_keys WHERE name = 'cursor'");
    return { value: await cursorKey(key.rows[0].key), write: true };
  });
}

// ---------------------------------------------------------------------------------------------
// Cursors of the change feed: the position in `gatehouse_changes`, sealed (AES-GCM, a fresh
// nonce each time) so that a client learns nothing from it. A plain number would tell every
// signed-in user how many writes the handler saw, and when: a sealed one differs at every
// poll, whether anything was written or not, and one that was tampered with does not open.

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** The AES-GCM key of the database's `cursor` key (hex). */
function cursorKey(text) {
  const bytes = Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
  return crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
}

const base64url = (bytes) => btoa(String.fromCharCode(...bytes))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** A cursor for position `seq`. */
async function sealCursor(key, seq) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const plain = new TextEncoder().encode(String(seq));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain));
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv);
  out.set(sealed, 12);
  return base64url(out);
}

/** The position a cursor holds; `invalid_request` for anything this database did not seal. */
async function openCursor(key, text) {
  const refuse = () => invalid("since is not a cursor this handler gave (pass the `cursor` " +
    "of the previous answer, or leave since out to start from now)");
  if (typeof text !== "string" || text.length > 64 || !/^[A-Za-z0-9_-]+$/.test(text)) {
    throw refuse();
  }
  let bytes;
  try {
    bytes = Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  } catch {
    throw refuse();
  }
  if (bytes.length <= 28) throw refuse();
  let plain;
  try {
    plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, 12) }, key,
      bytes.subarray(12));
  } catch {
    throw refuse();
  }
  const seq = Number(new TextDecoder().decode(plain));
  if (!Number.isSafeInteger(seq) || seq < 0) throw refuse();
  return seq;
}

/** The stored record of `id` as the core reads it, or null (never written). */
function recordOf(id, text) {
  return text === null || text === undefined ? null : answerOf(core.readRecord(id, text));
}

async function load(ctx, request, id) {
  await identityOf(ctx, request, id, "read");
  return transaction(ctx.pool, async (c) => {
    const r = await c.query("SELECT record FROM gatehouse_threads WHERE id = $1", [id]);
    const rec = recordOf(id, r.rows[0]?.record);
    if (!rec) return { value: '{"record":null,"tail":null}', write: false };
    let tail = null;
    if (rec.messageCount > 0) {
      const t = await c.query("SELECT json FROM gatehouse_messages WHERE thread = $1 AND seq = $2",
        [id, rec.messageCount]);
      tail = t.rows[0]?.json ?? null;
    }
    return { value: `{"record":${rec.record},"tail":${JSON.stringify(tail)}}`, write: false };
  }, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

async function rows(ctx, request, id, kind, before, limit) {
  await identityOf(ctx, request, id, "read");
  return transaction(ctx.pool, async (c) => {
    const r = await c.query("SELECT record FROM gatehouse_threads WHERE id = $1", [id]);
    const text = r.rows[0]?.record;
    if (text === null || text === undefined) return { value: '{"rows":[]}', write: false };
    const w = answerOf(core.rowsWindow(id, text, kind, before ?? undefined, limit));
    if (w.first > w.last) return { value: '{"rows":[]}', write: false };
    const table = kind === "messages" ? "gatehouse_messages" : "gatehouse_audit";
    const got = await c.query(`SELECT seq, json FROM ${table}
      WHERE thread = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`, [id, w.first, w.last]);
    const out = [];
    for (let seq = w.first; seq <= w.last; seq++) {
      const row = got.rows[seq - w.first];
      if (!row || Number(row.seq) !== seq) answerOf(core.missingRow(id, kind, seq));
      out.push({ seq, json: row.json });
    }
    return { value: { rows: out }, write: false };
  }, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

/**
 * Locks the thread's row (a placeholder while it has never been written): its record and the
 * lease's secret.
 */
async function lockThread(c, id) {
  await c.query(`INSERT INTO gatehouse_threads (id, version, record) VALUES ($1, 0, NULL)
    ON CONFLICT (id) DO NOTHING`, [id]);
  const r = await c.query(`SELECT record, lease_token, lease_who FROM gatehouse_threads
    WHERE id = $1 FOR UPDATE`, [id]);
  const row = r.rows[0];
  return { record: row?.record ?? null, token: row?.lease_token ?? null, leaseWho: row?.lease_who ?? null };
}

/** The record's tail and whether a row follows it, read under the thread's lock. */
async function tailOf(c, id, rec) {
  if (!rec) return { tail: null, after: false };
  const t = await c.query(`SELECT
    (SELECT json FROM gatehouse_messages WHERE thread = $1 AND seq = $2) AS tail,
    EXISTS (SELECT 1 FROM gatehouse_messages WHERE thread = $1 AND seq > $2) AS after`,
  [id, rec.messageCount]);
  return { tail: t.rows[0].tail, after: t.rows[0].after };
}

// Node's own hash where there is one (synchronous, no trip through Web Crypto's thread pool);
// Web Crypto elsewhere (Deno, Bun, Workers).
const nodeCrypto = globalThis.process?.getBuiltinModule?.("node:crypto") ?? null;

/** A SHA-256 of the body, hex: a replayed commit id is answered only for the same body. */
async function digestOf(body) {
  if (nodeCrypto) return nodeCrypto.createHash("sha256").update(body).digest("hex");
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body));
  return hex(new Uint8Array(bytes));
}

/** Compares two secrets in time that does not depend on where they differ. */
function sameSecret(a, b) {
  if (typeof a !== "string" || typeof b !== "string" || a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const newSecret = () => crypto.randomUUID();

/**
 * The commit log: a commit id already seen on this thread. Its maker, with the same body,
 * gets the answer it was given: a refusal again, or, for an applied commit, the record as the
 * thread stands while it is still at the version that commit left (the log keeps the version,
 * not the record). Once the thread has moved on, the applied commit is answered `conflict`: the
 * client reloads, and finds it there. Anyone else, or another body under the same id, is
 * refused, learning nothing. `{ answer }` (a refusal, or an answer logged before schema 2) or
 * `{ version }`, or null for a new commit id.
 */
async function replayed(c, id, commitId, who, digest) {
  const done = await c.query(`SELECT answer, who, digest, version FROM gatehouse_commits
    WHERE thread = $1 AND commit_id = $2`, [id, commitId]);
  if (!done.rows.length) return null;
  const row = done.rows[0];
  // Rows written before the maker was kept (schema 1) have none: any identity may replay.
  if ((row.who !== null && row.who !== who) || (row.digest !== null && row.digest !== digest)) {
    throw new Refusal(409, "commit_id_reused",
      "this commit id was used for another request; send a new commit with a new id");
  }
  if (row.answer !== null) {
    answerOf(row.answer); // a remembered refusal throws
    return { answer: row.answer };
  }
  return { version: Number(row.version) };
}

/**
 * The stored record `rec`, for a replay of the applied commit that left `version`. Once the
 * thread moved on, `conflict` with `applied: true` and `expected` the version that commit
 * left: the client knows its write landed (a plain conflict's `expected` is the version the
 * commit was made from), reloads, and goes on from there.
 */
function replayedRecord(rec, version) {
  if (!rec || rec.version !== version) {
    throw new Refusal(409, "conflict", "this commit was applied; the thread has changed since. " +
      "Nothing more was written: reload the thread",
    { expected: version, found: rec?.version ?? 0, applied: true });
  }
  return rec;
}

/**
 * Whether `text` takes more than `max` bytes as UTF-8, encoding it only when its length cannot
 * tell (a UTF-16 unit is 1 to 3 bytes).
 */
function overBytes(text, max) {
  if (text.length * 3 <= max) return false;
  if (text.length > max) return true;
  return utf8Length(text) > max;
}

/** Refuses a planned write whose record or messages exceed the handler's caps (413). */
function checkSizes(ctx, plan) {
  if (overBytes(plan.record, ctx.maxRecordBytes)) {
    throw new Refusal(413, "too_large",
      `the thread record would exceed ${ctx.maxRecordBytes} bytes`, { limit: ctx.maxRecordBytes });
  }
  for (const r of plan.rows) {
    if (overBytes(r.json, ctx.maxMessageBytes)) {
      throw new Refusal(413, "too_large",
        `a message exceeds ${ctx.maxMessageBytes} bytes`, { limit: ctx.maxMessageBytes });
    }
  }
}

/**
 * Writes a plan's record, the lease's secret and its holder, and the rows (messages, and audit
 * records the server numbered).
 */
async function writePlan(c, id, plan, token, holder, creator = null) {
  // A thread's owner is the identity whose commit created it (or created it again after a
  // delete): the list's index.
  await c.query(`UPDATE gatehouse_threads SET version = $2, record = $3, lease_token = $4,
    lease_who = $5, updated_at = now(),
    owner = CASE WHEN record IS NULL THEN $6 ELSE owner END WHERE id = $1`,
  [id, plan.version, plan.record, token, token === null ? null : holder, creator]);
  for (const [table, list] of [["gatehouse_messages", plan.rows], ["gatehouse_audit", plan.audit]]) {
    if (list.length === 0) continue;
    await c.query(`INSERT INTO ${table} (thread, seq, json)
      SELECT $1, * FROM unnest($2::bigint[], $3::text[])
      ON CONFLICT (thread, seq) DO UPDATE SET json = EXCLUDED.json`,
    [id, list.map((r) => r.seq), list.map((r) => r.json)]);
  }
}

/** Appends to the change feed and wakes the listeners: last in the transaction. */
async function announce(ctx, c, id, version) {
  const r = await c.query(`UPDATE gatehouse_change_counter SET seq = seq + 1 WHERE id = 1
    RETURNING seq`);
  const seq = r.rows[0].seq;
  await c.query("INSERT INTO gatehouse_changes (seq, thread, version) VALUES ($1, $2, $3)",
    [seq, id, version]);
  if (ctx.notify) {
    await c.query("SELECT pg_notify($1, $2)", [CHANNEL, JSON.stringify({ seq: String(seq) })]);
  }
}

/** Runs a writing transaction; this handler's own readers are woken once it committed. */
async function writing(ctx, fn) {
  const value = await transaction(ctx.pool, fn);
  ctx.feed.wrote();
  // The change feed is pruned by the writers themselves, now and then.
  if (++ctx.writes % PRUNE_EVERY === 0) pruneChanges(ctx.pool, CHANGE_RETENTION_MS).catch(() => {});
  return value;
}

/**
 * Deletes the change notices older than `olderThanMs` (a reader whose cursor is older gets
 * `reset: true`: it reloads what it shows). Answers how many were deleted.
 */
async function pruneChanges(pool, olderThanMs) {
  return transaction(pool, async (c) => {
    const cut = await c.query(`SELECT max(seq) AS seq FROM gatehouse_changes
      WHERE created_at <= now() - $1 * interval '1 millisecond'`, [olderThanMs]);
    const seq = cut.rows[0].seq;
    if (seq === null) return { value: 0, write: false };
    await c.query(`UPDATE gatehouse_change_counter SET pruned = greatest(pruned, $1)
      WHERE id = 1`, [seq]);
    const gone = await c.query("DELETE FROM gatehouse_changes WHERE seq <= $1", [seq]);
    return { value: gone.rowCount, write: true };
  });
}

async function commit(ctx, request, id) {
  // Who may write is asked before anything is read (docs/design.md, "Threat model").
  requireJson(request);
  const who = await identityOf(ctx, request, id, "write");
  const body = await readBody(request, ctx.maxBodyBytes);
  const { commitId, owner, leaseToken } = answerOf(core.commitAction(body));
  checkCommitId(commitId);
  const digest = await digestOf(body);
  const at = clock(ctx, request);
  const answer = await writing(ctx, async (c) => {
    const { record: stored, token, leaseWho } = await lockThread(c, id);
    const rec = recordOf(id, stored);
    const seen = await replayed(c, id, commitId, who, digest);
    if (seen !== null) {
      // The answer the maker lost: its lease's secret again, if the lease is still its own.
      const mine = token !== null && leaseWho === who && rec?.leaseOwner === owner;
      const text = seen.answer ?? `{"record":${replayedRecord(rec, seen.version).record}}`;
      return { value: withToken(text, mine ? token : null), write: false };
    }
    // The lease is its holder's: the secret it was given, and the identity it was given to.
    const holder = token !== null && leaseWho === who && sameSecret(leaseToken, token);
    const { tail, after } = await tailOf(c, id, rec);
    const planned = core.planCommit(id, stored ?? undefined, tail ?? undefined, after, body, at, who,
      holder);
    let plan;
    try {
      plan = answerOf(planned);
    } catch (e) {
      if (!(e instanceof Refusal) || e.status !== 409) throw e;
      // A stale commit (`conflict`) or one another run's lease keeps out (`busy`) is refused,
      // and remembered under its id: a delayed copy of it (a network may deliver a request
      // twice, late) is refused again, never planned afresh once the thread has moved on
      // (docs/design.md, "Across devices").
      await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, answer, who, digest)
        VALUES ($1, $2, $3, $4, $5)`, [id, commitId, planned, who, digest]);
      return { value: e, write: true };
    }
    checkSizes(ctx, plan);
    // The lease's secret: kept by its holder, new for a writer that takes the lease, none
    // once it is let go.
    const next = plan.leased ? (holder ? token : newSecret()) : null;
    await writePlan(c, id, plan, next, who, who);
    await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, who, digest, version)
      VALUES ($1, $2, $3, $4, $5)`, [id, commitId, who, digest, plan.version]);
    await announce(ctx, c, id, plan.version);
    return { value: withToken(plan.answer, next), write: true };
  });
  if (answer instanceof Refusal) throw answer;
  return answer;
}

/** The commit answer `text` with the lease's secret added (for its holder only). */
function withToken(text, token) {
  if (token === null) return text;
  return `${text.slice(0, -1)},"leaseToken":${JSON.stringify(token)}}`;
}

function checkCommitId(commitId) {
  if (utf8Length(commitId) > MAX_ID_BYTES || commitId.includes("\u0000")) {
    throw invalid(`a commit id has at most ${MAX_ID_BYTES} bytes and no NUL`);
  }
}

/**
 * `POST B/threads/{id}/decide`: decisions as intents (docs/design.md, "Threat model"). The
 * small body is read first, so that `authorize` gets what is decided: `decisions: [{ callId,
 * tool, decision }]` (the tools as the stored thread names them). The core applies them to the
 * stored thread with the engine's rules, as the identity `authorize` returned.
 */
async function decide(ctx, request, id) {
  requireJson(request);
  const body = await readBody(request, Math.min(ctx.maxBodyBytes, MAX_DECIDE_BYTES));
  const intent = answerOf(core.decideIntent(body));
  checkCommitId(intent.commitId);
  // The tools of the calls decided, read without a lock or a held connection; checked again
  // under the lock (a tail that changed since is refused, or decides other calls).
  const tools = await callTools(ctx.pool, id);
  const decisions = intent.decisions.map((d) => ({ ...d, tool: tools.get(d.callId) ?? null }));
  const who = await identityOf(ctx, request, id, "decide", { decisions });
  const digest = await digestOf(body);
  const at = clock(ctx, request);
  const answer = await writing(ctx, async (c) => {
    const { record: stored, token, leaseWho } = await lockThread(c, id);
    const rec = recordOf(id, stored);
    const seen = await replayed(c, id, intent.commitId, who, digest);
    if (seen !== null) {
      if (seen.answer) return { value: seen.answer, write: false };
      const { tail } = await tailOf(c, id, replayedRecord(rec, seen.version));
      return { value: `{"record":${rec.record},"tail":${JSON.stringify(tail)}}`, write: false };
    }
    const { tail, after } = await tailOf(c, id, rec);
    const now = toolsOf(tail);
    if (decisions.some((d) => d.tool !== (now.get(d.callId) ?? null))) {
      throw new Refusal(409, "conflict", "the thread changed while the decision was authorized; " +
        "nothing was written, decide again");
    }
    const planned = core.planDecide(id, stored ?? undefined, tail ?? undefined, after, body, at,
      who, Math.floor(Math.random() * 2 ** 52));
    let plan;
    try {
      plan = answerOf(planned);
    } catch (e) {
      if (!(e instanceof Refusal) || e.status !== 409) throw e;
      await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, answer, who, digest)
        VALUES ($1, $2, $3, $4, $5)`, [id, intent.commitId, planned, who, digest]);
      return { value: e, write: true };
    }
    checkSizes(ctx, plan);
    await writePlan(c, id, plan, plan.leased ? token : null, leaseWho);
    await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, who, digest, version)
      VALUES ($1, $2, $3, $4, $5)`, [id, intent.commitId, who, digest, plan.version]);
    await announce(ctx, c, id, plan.version);
    return { value: plan.answer, write: true };
  });
  if (answer instanceof Refusal) throw answer;
  return answer;
}

/** `callId` → tool name of the stored tail's calls. */
async function callTools(pool, id) {
  const r = await pool.query(`SELECT m.json FROM gatehouse_threads t
    JOIN gatehouse_messages m ON m.thread = t.id
    WHERE t.id = $1 AND m.seq = (t.record::json->>'messageCount')::bigint`, [id]);
  return toolsOf(r.rows[0]?.json ?? null);
}

function toolsOf(tailText) {
  const out = new Map();
  if (!tailText) return out;
  try {
    for (const e of JSON.parse(tailText).tools ?? []) out.set(e.callId, e.name);
  } catch {
    // an unreadable tail names no tools; the core refuses the decisions
  }
  return out;
}

async function lease(ctx, request, id) {
  requireJson(request);
  const who = await identityOf(ctx, request, id, "write");
  const body = await readBody(request, ctx.maxBodyBytes);
  const asked = answerOf(core.leaseRequest(body));
  const at = clock(ctx, request);
  return writing(ctx, async (c) => {
    const r = await c.query(`SELECT record, lease_token, lease_who FROM gatehouse_threads
      WHERE id = $1 FOR UPDATE`, [id]);
    const token = r.rows[0]?.lease_token ?? null;
    // Only the holder of the lease's secret, signed in as who took it, renews or releases it.
    const holder = token !== null && r.rows[0].lease_who === who &&
      sameSecret(asked.leaseToken, token);
    const plan = answerOf(core.planLease(id, r.rows[0]?.record ?? undefined, body, at, holder));
    if (!plan.ok) return { value: '{"ok":false}', write: false };
    // A released lease takes its secret and holder with it.
    await c.query(`UPDATE gatehouse_threads SET record = $2, lease_token = $3, lease_who = $4,
      updated_at = now() WHERE id = $1`,
    [id, plan.record, plan.leased ? token : null, plan.leased ? who : null]);
    // A release frees the thread for another device: tell them (the version is unchanged).
    if (asked.op === "release") await announce(ctx, c, id, plan.version);
    return { value: '{"ok":true}', write: true };
  });
}

async function remove(ctx, request, id) {
  await identityOf(ctx, request, id, "delete");
  return writing(ctx, async (c) => {
    const r = await c.query("DELETE FROM gatehouse_threads WHERE id = $1 RETURNING record", [id]);
    for (const table of ["gatehouse_messages", "gatehouse_audit", "gatehouse_commits"]) {
      await c.query(`DELETE FROM ${table} WHERE thread = $1`, [id]);
    }
    const existed = r.rows.some((row) => row.record !== null);
    if (existed) await announce(ctx, c, id, null);
    return { value: "{}", write: true };
  });
}

/**
 * The user's threads: those it created (the owner index), those `sharedWith` names, and those
 * created before owners were kept. Ids first, from indexes: each is still asked of
 * `authorize` (`read`), and no record is read before it allows it.
 */
async function list(ctx, request) {
  const who = await identityOf(ctx, request, null, "list");
  let shared = [];
  if (ctx.sharedWith) {
    try {
      shared = await ctx.sharedWith(who, request);
    } catch (e) {
      throw authorizeFailed(e);
    }
    if (!Array.isArray(shared) || !shared.every((x) => typeof x === "string")) {
      throw new Refusal(500, "authorize_failed", "sharedWith must return a list of thread ids");
    }
  }
  const ids = await ctx.pool.query(`SELECT id FROM gatehouse_threads
      WHERE owner = $1 AND record IS NOT NULL
    UNION SELECT id FROM gatehouse_threads
      WHERE id = ANY($2::text[]) AND record IS NOT NULL
    UNION SELECT id FROM gatehouse_threads
      WHERE owner IS NULL AND record IS NOT NULL
    ORDER BY id`, [who, shared]);
  const allowed = await Promise.all(ids.rows.map((row) => mayRead(ctx, request, row.id)));
  const readable = ids.rows.filter((_, i) => allowed[i]).map((row) => row.id);
  if (readable.length === 0) return '{"threads":[]}';
  const r = await ctx.pool.query(`SELECT id, record FROM gatehouse_threads
    WHERE id = ANY($1::text[]) AND record IS NOT NULL ORDER BY id`, [readable]);
  const texts = [];
  for (const row of r.rows) {
    try {
      // A list shows threads, not the MCP servers' tool lists they were run with.
      texts.push(answerOf(core.listRecord(row.id, row.record)).record);
    } catch {
      // An unreadable record is left out of the list (as the local stores do).
    }
  }
  return `{"threads":[${texts.join(",")}]}`;
}

// ---------------------------------------------------------------------------------------------
// The change stream: SSE, or JSON long-polls, read from gatehouse_changes (docs/design.md,
// "Across devices"). NOTIFY only wakes the readers; without it they read every `pollMs`.

async function changes(ctx, request, q) {
  let poll = null;
  if (q.poll !== undefined) {
    if (q.poll !== "1") throw invalid('poll must be "1"');
    poll = {
      since: q.since === undefined ? null : await openCursor(ctx.cursorKey, q.since),
      wait: q.wait === undefined ? 0 : integer(q.wait, "wait", 60_000),
    };
  } else if (q.since !== undefined || q.wait !== undefined) {
    throw invalid("since and wait need poll=1");
  }
  // The connection is authorized (as `list`) before anything is read, and counted: an
  // identity has at most maxFeedsPerIdentity feeds open at once.
  const who = await identityOf(ctx, request, null, "list");
  const open = ctx.feeds.get(who) ?? 0;
  if (open >= ctx.maxFeedsPerIdentity) {
    throw new Refusal(429, "too_many_feeds",
      `at most ${ctx.maxFeedsPerIdentity} change feeds per user are open at once`);
  }
  ctx.feeds.set(who, open + 1);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    const n = (ctx.feeds.get(who) ?? 1) - 1;
    if (n > 0) ctx.feeds.set(who, n);
    else ctx.feeds.delete(who);
  };
  // Each thread is authorized at most once per feedAuthorizeMs for this feed.
  const seen = new Map();
  const mayReadThread = async (threadId) => {
    const hit = seen.get(threadId);
    const t = Date.now();
    if (hit && t - hit.at < ctx.feedAuthorizeMs) return hit.ok;
    const ok = await mayRead(ctx, request, threadId);
    seen.set(threadId, { ok, at: t });
    if (seen.size > 10_000) seen.delete(seen.keys().next().value);
    return ok;
  };
  if (poll) {
    try {
      const got = await pollChanges(ctx, request, poll.since, poll.wait, mayReadThread);
      return { ...got, cursor: await sealCursor(ctx.cursorKey, got.cursor) };
    } finally {
      close();
    }
  }
  try {
    return await ctx.feed.stream(request, mayReadThread, close);
  } catch (e) {
    close();
    throw e;
  }
}

/** Notices after `since` the user may read, one per thread (its latest). */
async function readChanges(pool, since, mayReadThread) {
  const counter = await pool.query("SELECT seq, pruned FROM gatehouse_change_counter WHERE id = 1");
  const { seq: top, pruned } = counter.rows[0];
  if (since === null) return { changes: [], cursor: Number(top) };
  const r = await pool.query(`SELECT seq, thread, version FROM gatehouse_changes
    WHERE seq > $1 ORDER BY seq LIMIT 1000`, [since]);
  const latest = new Map();
  for (const row of r.rows) latest.set(row.thread, row.version === null ? null : Number(row.version));
  const cursor = r.rows.length ? Number(r.rows[r.rows.length - 1].seq) : since;
  const out = [];
  for (const [threadId, version] of latest) {
    if (await mayReadThread(threadId)) out.push({ threadId, version });
  }
  const reset = since < Number(pruned) ? { reset: true } : {};
  return { changes: out, cursor, ...reset };
}

async function pollChanges(ctx, request, since, wait, mayReadThread) {
  const deadline = Date.now() + wait;
  let cursor = since;
  for (;;) {
    const got = await readChanges(ctx.pool, cursor, mayReadThread);
    if (got.changes.length || got.reset || cursor === null || Date.now() >= deadline ||
        request.signal?.aborted) {
      return got;
    }
    cursor = got.cursor;
    // With NOTIFY a waiting poll reads again only when woken (or at its deadline): an idle
    // one costs no queries. Without it, every pollMs.
    await ctx.feed.nextWake(deadline - Date.now(), request.signal, true);
  }
}

class ChangeFeed {
  constructor(pool, { notify, pollMs, pingMs }) {
    this.pool = pool;
    this.notify = notify;
    this.pollMs = pollMs;
    this.pingMs = pingMs;
    this.streams = new Set();
    this.waiters = new Set();
    this.listener = null;
    this.connecting = null;
    this.refused = null;
    this.cursor = null;
    this.timer = null;
    this.pinger = null;
    this.draining = null;
    this.releasing = null;
    this.closed = false;
  }

  /** This handler wrote: wake its own readers at once (NOTIFY wakes the other handlers'). */
  wrote() {
    queueMicrotask(() => this.wake());
  }

  wake() {
    for (const w of this.waiters) w();
    this.waiters.clear();
    if (this.streams.size) this.drain();
  }

  /**
   * Resolves on the next wake, after `ms`, or when `signal` aborts. `untilNotified`: a reader
   * that NOTIFY wakes waits the whole `ms` (an idle one makes no queries); without NOTIFY it
   * reads again every pollMs.
   */
  nextWake(ms, signal, untilNotified = false) {
    const connecting = this.ensureListening();
    return new Promise((resolve) => {
      const end = Date.now() + Math.max(ms, 0);
      let t;
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
        this.releaseIfIdle();
      };
      t = setTimeout(done, Math.max(untilNotified ? Math.min(ms, this.pollMs) : ms, 0));
      this.waiters.add(done);
      signal?.addEventListener("abort", done);
      if (untilNotified) {
        Promise.resolve(connecting).then(() => {
          if (!this.waiters.has(done) || !this.notify || !this.listener ||
              this.listener === "connecting") return;
          clearTimeout(t);
          t = setTimeout(done, Math.max(end - Date.now(), 0));
        });
      }
    });
  }

  /** Resolves once the LISTEN connection is up, or has failed (then the feed has reacted). */
  ensureListening() {
    if (!this.notify || this.listener || this.closed) return this.connecting;
    this.listener = "connecting";
    this.connecting = this.listen();
    return this.connecting;
  }

  async listen() {
    let client;
    try {
      client = await this.pool.connect();
      if (typeof client.on !== "function") throw new Error("the pool's clients cannot LISTEN");
      client.on("notification", (n) => {
        if (n.channel === CHANNEL) this.wake();
      });
      client.on("error", () => this.lost(client));
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) throw new Error("closed");
      this.listener = client;
      // Everyone left while it connected.
      this.releaseIfIdle();
    } catch (e) {
      if (client) client.release(true);
      this.listener = null;
      if (typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && !this.closed) {
        // The database answered, and refused LISTEN (CockroachDB: 0A000, "unimplemented"):
        // it has none. This feed polls from now on, as with notify: false, and each stream
        // says why in a comment, so that the app can set notify: false and skip the attempt.
        this.refused = `the database refused LISTEN (${e.code}: ${e.message}); polling every ` +
          `${this.pollMs} ms instead (createStoreHandler({ notify: false }) polls without trying)`;
        this.notify = false;
        clearInterval(this.timer);
        this.timer = null;
        for (const s of this.streams) s.send(`: ${this.refused.replace(/\n/g, " ")}\n\n`);
        if (this.streams.size) this.start();
      } else {
        // The connection failed: notices may be lost, so every stream ends (clients
        // reconnect and reload).
        this.endStreams();
      }
    }
  }

  /** The LISTEN connection broke: notices may be lost, so every stream ends (clients
   * reconnect and reload). */
  lost(client) {
    if (this.listener === client) {
      this.listener = null;
      client.release(true);
    }
    this.endStreams();
  }

  endStreams() {
    for (const s of this.streams) s.end();
  }

  async stream(request, mayReadThread, onEnd = () => {}) {
    const r = await this.pool.query("SELECT seq FROM gatehouse_change_counter WHERE id = 1");
    if (this.cursor === null) this.cursor = Number(r.rows[0].seq);
    const encoder = new TextEncoder();
    const feed = this;
    let entry;
    const body = new ReadableStream({
      start(controller) {
        entry = {
          mayReadThread,
          send(text) {
            try {
              controller.enqueue(encoder.encode(text));
            } catch {
              entry.end();
            }
          },
          end() {
            if (!feed.streams.delete(entry)) return;
            onEnd();
            try {
              controller.close();
            } catch {
              // already closed or cancelled
            }
            feed.releaseIfIdle();
          },
        };
        feed.streams.add(entry);
        entry.send("retry: 1000\n: connected\n\n");
        if (feed.refused) entry.send(`: ${feed.refused.replace(/\n/g, " ")}\n\n`);
        feed.start();
      },
      cancel() {
        entry.end();
      },
    });
    request.signal?.addEventListener("abort", () => entry.end());
    // After the stream is registered: a listener that finds nobody waiting lets go at once.
    await this.ensureListening();
    return new Response(body, {
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-store",
        "x-accel-buffering": "no" },
    });
  }

  start() {
    // Timers never keep a process alive by themselves (unref, where there is one).
    if (!this.pinger) {
      this.pinger = setInterval(() => {
        for (const s of this.streams) s.send(": ping\n\n");
      }, this.pingMs);
      this.pinger.unref?.();
    }
    // Without NOTIFY, read every pollMs; with it, every 5 s as well (a lost wake-up).
    if (!this.timer) {
      this.timer = setInterval(() => this.drain(), this.notify ? 5000 : this.pollMs);
      this.timer.unref?.();
    }
  }

  /** With no stream and no long poll left, the timers stop and the LISTEN connection goes
   * back to the pool (a pool's `end()` waits for it). The next reader starts afresh. */
  releaseIfIdle() {
    if (this.streams.size || this.waiters.size) return this.releasing;
    clearInterval(this.pinger);
    clearInterval(this.timer);
    this.pinger = this.timer = null;
    this.cursor = null;
    if (this.listener && this.listener !== "connecting") {
      const c = this.listener;
      this.listener = null;
      this.releasing = c.query(`UNLISTEN ${CHANNEL}`)
        .then(() => c.release(), () => c.release(true));
    }
    return this.releasing;
  }

  drain() {
    if (this.draining) {
      this.draining.again = true;
      return;
    }
    const run = { again: false };
    this.draining = run;
    (async () => {
      do {
        run.again = false;
        const r = await this.pool.query(`SELECT seq, thread, version FROM gatehouse_changes
          WHERE seq > $1 ORDER BY seq LIMIT 1000`, [this.cursor]);
        for (const row of r.rows) {
          this.cursor = Number(row.seq);
          const notice = JSON.stringify({ threadId: row.thread,
            version: row.version === null ? null : Number(row.version) });
          // No `id:` line: the position is the handler's, and would tell its write count.
          const text = `data: ${notice}\n\n`;
          await Promise.all([...this.streams].map(async (s) => {
            if (await s.mayReadThread(row.thread)) s.send(text);
          }));
        }
        if (r.rows.length === 1000) run.again = true;
      } while (run.again && this.streams.size);
    })().catch(() => this.endStreams()).finally(() => {
      this.draining = null;
    });
  }

  close() {
    this.closed = true;
    this.endStreams();
    for (const w of [...this.waiters]) w();
    return Promise.resolve(this.releaseIfIdle());
  }
}

// ---------------------------------------------------------------------------------------------

/** Whether a request target's path has a `.` or `..` segment, plain or percent-encoded. */
function hasDotSegment(target) {
  const path = target.split(/[?#]/, 1)[0];
  return path.split("/").some((seg) => /^(\.|%2e){1,2}$/i.test(seg));
}

/**
 * Mounts a fetch-style handler on Node's http server: `http.createServer(toNodeListener(h))`.
 * The request is aborted (its `signal`) when the connection closes.
 */
export function toNodeListener(handle) {
  return async (req, res) => {
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    // A body the handler did not read to its end (a 413): drained, so the client gets the
    // answer rather than a reset connection.
    res.on("finish", () => {
      if (!req.complete) {
        req.removeAllListeners("data");
        req.resume();
      }
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (k.startsWith(":") || v === undefined) continue;
      headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    }
    const init = { method: req.method, headers, signal: controller.signal };
    if (req.method !== "GET" && req.method !== "HEAD") {
      init.duplex = "half";
      init.body = new ReadableStream({
        start(c) {
          req.on("data", (chunk) => {
            try {
              c.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            } catch {
              // the handler stopped reading (too large): the rest is dropped
            }
            if (c.desiredSize !== null && c.desiredSize <= 0) req.pause();
          });
          req.on("end", () => {
            try {
              c.close();
            } catch {
              // cancelled
            }
          });
          req.on("error", (e) => c.error(e));
        },
        pull() {
          req.resume();
        },
        cancel() {
          req.resume();
        },
      });
    }
    // Routing uses the path alone: never the Host header, never an absolute-form target,
    // and a path with dot segments (also percent-encoded) is refused, not resolved.
    const target = req.url ?? "";
    if (!target.startsWith("/") || hasDotSegment(target)) {
      res.writeHead(400, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ error: { code: "invalid_request",
        message: "the request target must be a path without dot segments" } }));
      return;
    }
    let response;
    try {
      response = await handle(new Request(`http://localhost${target}`, init));
    } catch {
      res.writeHead(500).end();
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) {
      res.end();
      return;
    }
    const reader = response.body.getReader();
    res.on("close", () => reader.cancel().catch(() => {}));
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value)) {
          await new Promise((resolve) => {
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        }
      }
      res.end();
    } catch {
      res.destroy();
    }
  };
}
