// @ts-check
// gatehouse-agent/server: the store handler an app mounts in its backend, so that a thread's
// authority is the app's Postgres (docs/design.md, "Across devices"). A fetch-style handler,
// Request → Response. The protocol is src/store/wire.rs; the decisions (the commit rule, the
// lease rule, the page arithmetic) are the crate's own, built as wasm (server/core); this file
// does the I/O: the SQL, the transactions, the change stream.
//
// The pool is the app's: anything with node-postgres's `query()` and `connect()` (a client
// with `query()` and `release()`; `on("notification")` for LISTEN). Parameterized queries only.
//
// This module is the entry: the options and the routes. The rest, by job, in server/: errors,
// http (answers, CORS, bodies, Node's http server), postgres (tables, transactions, the change
// feed's reads), cursor, threads (the thread routes), list (the thread list), feed (the change
// stream), receipts (signed approvals, and their checks for backends), approvers (approver
// rules), requests (the approval requests' outbox), links (decision links), push (Web Push),
// primary (a pool that follows an HA Postgres's primary), grants (remembered grants), wasm (the core); core.js and core_bg.wasm are the core itself.
import { GatehouseError, Refusal, invalid, invalidConfig, notFound, storageError } from "./server/errors.js";
import { ChangeFeed, changes } from "./server/feed.js";
import { MAX_PAGE, corsHeaders, integer, json, readQuery, refuseOrigin, threadIdOf } from "./server/http.js";
import { CHANGE_RETENTION_MS, pruneChanges, runMigrations } from "./server/postgres.js";
import { rulesOf } from "./server/approvers.js";
import { checkSigningKey, signingKeyOf } from "./server/receipts.js";
import { commit, decide, lease, load, receipt, remove, rows } from "./server/threads.js";
import { list, openListCursor } from "./server/list.js";
import { Outbox, requestOptionsOf } from "./server/requests.js";
import { Links, linkGet, linkPost } from "./server/links.js";
import { Push, pushKey, pushOptionsOf, subscribe, unsubscribe } from "./server/push.js";
import { listGrants, makeGrant, revokeGrant } from "./server/grants.js";
import { loadCore } from "./server/wasm.js";

export { GatehouseError } from "./server/errors.js";
export { STORE_SCHEMA_VERSION } from "./server/postgres.js";
export { toNodeListener } from "./server/http.js";
export { consumeApproval, verifyApproval } from "./server/receipts.js";
export { primaryPool } from "./server/primary.js";

const OPTIONS = new Set([
  "pool", "basePath", "authorize", "maxBodyBytes", "now", "cors", "notify", "pollMs", "pingMs",
  "wasm", "maxRecordBytes", "maxMessageBytes", "maxFeedsPerIdentity", "feedAuthorizeMs",
  "sharedWith", "signingKey", "receiptTtlMs", "approvers", "onApprovalRequested",
  "approvalRequests", "publicUrl", "linkTtlMs", "webPush",
]);

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
    feedAuthorizeMs = 5000, sharedWith, signingKey, receiptTtlMs = 24 * 60 * 60 * 1000, approvers,
    onApprovalRequested, approvalRequests, publicUrl, linkTtlMs = 7 * 24 * 60 * 60 * 1000, webPush,
  } = options;
  if (!pool || typeof pool.query !== "function" || typeof pool.connect !== "function") {
    throw invalidConfig("pool must have query() and connect() (e.g. a pg.Pool)");
  }
  if (typeof authorize !== "function") throw invalidConfig("authorize must be a function");
  if (typeof now !== "function") throw invalidConfig("now must be a function");
  if (sharedWith !== undefined && typeof sharedWith !== "function") {
    throw invalidConfig("sharedWith must be a function (identity, request) => thread ids");
  }
  if (signingKey !== undefined) checkSigningKey(signingKey);
  const rules = rulesOf(approvers);
  const pushOptions = pushOptionsOf(webPush);
  const requestOptions = requestOptionsOf(onApprovalRequested, approvalRequests, pushOptions !== null);
  if (publicUrl !== undefined && !(typeof publicUrl === "string" && /^https?:\/\/[^/]/.test(publicUrl))) {
    throw invalidConfig('publicUrl must be the absolute URL the handler is mounted at ("https://app.example/api/gatehouse")');
  }
  if (typeof basePath !== "string" || !basePath.startsWith("/")) {
    throw invalidConfig('basePath must be a path starting with "/"');
  }
  for (const [name, v] of [["maxBodyBytes", maxBodyBytes], ["pollMs", pollMs], ["pingMs", pingMs],
    ["maxRecordBytes", maxRecordBytes], ["maxMessageBytes", maxMessageBytes],
    ["maxFeedsPerIdentity", maxFeedsPerIdentity], ["feedAuthorizeMs", feedAuthorizeMs],
    ["receiptTtlMs", receiptTtlMs], ["linkTtlMs", linkTtlMs]]) {
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
      const key = signingKey === undefined ? null : signingKeyOf(signingKey);
      migrated = Promise.all([loadCore(wasm), runMigrations(pool), key]).then(([, keys, k]) => {
        ctx.cursorKey = keys.cursor;
        ctx.linkKey = keys.links;
        ctx.signingKey = k;
        ctx.outbox?.start();
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
    sharedWith: sharedWith ?? null, signingKey: null, receiptTtlMs, approvers: rules,
    linkKey: null, ready: migrate, outbox: null, push: null, links: null };
  const mounted = publicUrl === undefined ? null : publicUrl.replace(/\/+$/, "");
  ctx.links = new Links(ctx, { publicUrl: mounted, linkTtlMs });
  if (pushOptions) ctx.push = new Push(ctx, pushOptions, mounted);
  if (requestOptions) ctx.outbox = new Outbox(ctx, requestOptions);

  async function handle(request) {
    const headers = corsHeaders(cors, request);
    if (request.method === "OPTIONS" && cors) {
      return new Response(null, {
        status: 204,
        headers: {
          ...headers,
          "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
          "access-control-allow-headers": ["content-type", "authorization", "idempotency-key",
            ...(cors.headers ?? [])].join(", "),
          "access-control-max-age": "600",
        },
      });
    }
    try {
      const route = routeOf(base, request);
      // A decision link's token is its credential (no cookie, no header): its form posts from
      // the handler's own page.
      if (!route.link) refuseOrigin(cors, request);
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
  handle.close = () => {
    ctx.outbox?.close();
    return feed.close();
  };
  /** A signed single-use link for `approver` to decide a pending call (`{ threadId, callId }`). */
  handle.decisionLink = (call, approver, opts) => ctx.links.linkFor(call, approver, opts);
  /** Delivers the approval requests due now (the handler also does it by itself). */
  handle.deliverRequests = () => ctx.outbox ? migrate().then(() => ctx.outbox.kick()) : Promise.resolve();
  handle.pruneChanges = async (olderThanMs = CHANGE_RETENTION_MS) => {
    await migrate();
    return pruneChanges(pool, olderThanMs);
  };
  return handle;
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
    const q = query(["before", "limit"]);
    const limit = q.limit === undefined ? MAX_PAGE : integer(q.limit, "limit", MAX_PAGE);
    if (limit < 1) throw invalid("limit must be at least 1");
    const before = q.before === undefined ? null : openListCursor(q.before);
    return { run: (ctx, req) => list(ctx, req, limit, before) };
  }
  if (rest.startsWith("/links/")) {
    const token = rest.slice("/links/".length);
    if (m === "GET") return { link: true, run: (ctx, req) => linkGet(ctx, req, token) };
    if (m === "POST") return { link: true, run: (ctx, req) => linkPost(ctx, req, token) };
    throw notFound();
  }
  if (rest === "/push/key" || rest === "/push/subscriptions") {
    query([]);
    return { run: (ctx, req) => {
      if (!ctx.push) throw notFound();
      if (rest === "/push/key" && m === "GET") return pushKey(ctx);
      if (rest === "/push/subscriptions" && m === "POST") return subscribe(ctx, req);
      if (rest === "/push/subscriptions" && m === "DELETE") return unsubscribe(ctx, req);
      throw notFound();
    } };
  }
  if (rest === "/grants" && m === "POST") {
    query([]);
    return { run: (ctx, req) => makeGrant(ctx, req) };
  }
  if (rest.startsWith("/grants/") && m === "DELETE") {
    query([]);
    const grantId = rest.slice("/grants/".length);
    if (grantId === "" || grantId.includes("/") || grantId.length > 200) throw notFound();
    return { run: (ctx, req) => revokeGrant(ctx, req, grantId) };
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
  if (sub?.startsWith("receipts/") && m === "GET") {
    query([]);
    let callId;
    try {
      callId = decodeURIComponent(sub.slice("receipts/".length));
    } catch {
      throw invalid("the call id is not a valid URI component");
    }
    return { run: (ctx, req) => receipt(ctx, req, id, callId) };
  }
  if (sub === "grants" && m === "GET") {
    query([]);
    return { run: (ctx, req) => listGrants(ctx, req, id) };
  }
  if (sub === "lease" && m === "POST") {
    query([]);
    return { run: (ctx, req) => lease(ctx, req, id) };
  }
  throw notFound();
}
