// @ts-check
// Web Push, a channel of the approval requests (docs/design.md, "Approval requests"): VAPID
// through the `web-push` package (an optional peer dependency, imported only when `webPush` is
// configured). A user's browsers subscribe (`subscribeToApprovals` in gatehouse-agent/sw); each
// subscription belongs to the identity `authorize` returned, and only it may delete it. A
// request is pushed to the subscriptions of its approvers; the service worker's notification
// shows the call, with Approve and Reject actions that decide through the handler's decide
// route, as the signed-in user (the same `authorize`).

import { Refusal, invalid, invalidConfig } from "./errors.js";
import { readBody, requireJson } from "./http.js";
import { identityOf } from "./threads.js";

/** Push subscriptions one identity may hold (its browsers and devices). */
export const MAX_SUBSCRIPTIONS = 16;

/**
 * @typedef {{ subject: string, publicKey: string, privateKey: string, ttlSeconds: number,
 *   openUrl: ((call: any) => string) | null, allowLoopback: boolean }} PushOptions
 */

/**
 * The `webPush` option, checked.
 * @param {any} o
 * @returns {PushOptions | null}
 */
export function pushOptionsOf(o) {
  if (o === undefined) return null;
  if (!o || typeof o !== "object") throw invalidConfig("webPush must be { subject, publicKey, privateKey }");
  for (const k of Object.keys(o)) {
    if (!["subject", "publicKey", "privateKey", "ttlSeconds", "openUrl", "allowLoopback"].includes(k)) {
      throw invalidConfig(`unknown option "webPush.${k}"`);
    }
  }
  if (typeof o.subject !== "string" || !/^(mailto:|https:)/.test(o.subject)) {
    throw invalidConfig('webPush.subject must be a "mailto:" or "https:" URL (VAPID)');
  }
  for (const k of ["publicKey", "privateKey"]) {
    if (typeof o[k] !== "string" || !/^[A-Za-z0-9_-]+={0,2}$/.test(o[k])) {
      throw invalidConfig(`webPush.${k} must be a VAPID key, base64url (web-push generate-vapid-keys)`);
    }
  }
  const ttl = o.ttlSeconds ?? 24 * 3600;
  if (!Number.isInteger(ttl) || ttl < 0) throw invalidConfig("webPush.ttlSeconds must be an integer ≥ 0");
  if (o.openUrl !== undefined && typeof o.openUrl !== "function") {
    throw invalidConfig("webPush.openUrl must be a function (call) => URL");
  }
  if (o.allowLoopback !== undefined && typeof o.allowLoopback !== "boolean") {
    throw invalidConfig("webPush.allowLoopback must be a boolean");
  }
  return { subject: o.subject, publicKey: o.publicKey, privateKey: o.privateKey, ttlSeconds: ttl,
    openUrl: o.openUrl ?? null, allowLoopback: o.allowLoopback ?? false };
}

/** A short line of a call's inputs, for a notification. @param {unknown} inputs */
export function summaryOf(inputs) {
  const parts = [];
  if (inputs && typeof inputs === "object" && !Array.isArray(inputs)) {
    for (const [k, v] of Object.entries(inputs)) parts.push(`${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  } else {
    parts.push(JSON.stringify(inputs));
  }
  const text = parts.join(", ");
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

export class Push {
  /**
   * @param {any} ctx the handler's context (`pool`)
   * @param {PushOptions} options
   * @param {string | null} publicUrl where the handler is mounted, for the worker's decisions
   */
  constructor(ctx, options, publicUrl) {
    this.ctx = ctx;
    this.o = options;
    this.publicUrl = publicUrl;
    /** @type {any} */
    this.lib = null;
    this.sent = 0;
  }

  async load() {
    if (this.lib) return;
    try {
      const m = await import("web-push");
      this.lib = m.default ?? m;
    } catch {
      throw invalidConfig('webPush needs the "web-push" package: npm install web-push');
    }
  }

  /**
   * Pushes the request of `call` to the subscriptions of `approvers`. A subscription the push
   * service says is gone (404, 410) is deleted. Throws (so the request is retried) only when
   * every push failed otherwise; a partial delivery counts as delivered.
   * @param {any} call
   * @param {string[]} approvers
   * @param {string} reason
   */
  async notify(call, approvers, reason) {
    if (approvers.length === 0) return;
    await this.load();
    const subs = await this.ctx.pool.query(`SELECT endpoint, subscription FROM gatehouse_push
      WHERE identity = ANY($1::text[])`, [approvers]);
    if (subs.rows.length === 0) return;
    const payload = JSON.stringify({
      type: "gatehouse.approval", v: 1, reason, threadId: call.threadId, callId: call.callId,
      tool: call.tool, description: call.description, summary: summaryOf(call.inputs),
      decideUrl: this.publicUrl ? `${this.publicUrl}/threads/${encodeURIComponent(call.threadId)}/decide` : null,
      openUrl: this.o.openUrl ? this.o.openUrl(call) : null,
    });
    let failed = 0;
    /** @type {unknown} */
    let last = null;
    await Promise.all(subs.rows.map(async (row) => {
      try {
        await this.lib.sendNotification(JSON.parse(row.subscription), payload, {
          vapidDetails: { subject: this.o.subject, publicKey: this.o.publicKey, privateKey: this.o.privateKey },
          TTL: this.o.ttlSeconds, urgency: "high", topic: undefined,
        });
        this.sent++;
      } catch (e) {
        const status = /** @type {any} */ (e)?.statusCode;
        if (status === 404 || status === 410) {
          await this.ctx.pool.query("DELETE FROM gatehouse_push WHERE endpoint = $1", [row.endpoint]);
          return;
        }
        failed++;
        last = e;
      }
    }));
    if (failed === subs.rows.length) throw last ?? new Error("every push failed");
  }
}

/** `GET B/push/key`: the VAPID public key the browser subscribes with. */
export function pushKey(ctx) {
  return { publicKey: ctx.push.o.publicKey };
}

/**
 * A subscription's JSON (`PushSubscription.toJSON()`), checked. Its endpoint is where the
 * handler will send requests: an https URL, and not this machine (a user must not make the
 * handler post to its own loopback services) unless `allowLoopback` (local development).
 * @param {string} text
 * @param {boolean} allowLoopback
 */
function subscriptionOf(text, allowLoopback) {
  let s;
  try {
    s = JSON.parse(text);
  } catch {
    throw invalid("the body is not JSON");
  }
  let url = null;
  try {
    url = new URL(s?.endpoint);
  } catch {
    // checked below
  }
  // (An index key: Postgres refuses a btree entry over ~2.7 KB.)
  if (String(s.endpoint).length > 1024) throw invalid("a push subscription's endpoint has at most 1024 characters");
  const loopback = url !== null && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (!url || (loopback ? !allowLoopback : url.protocol !== "https:")) {
    throw invalid("a push subscription's endpoint is an https URL of a push service");
  }
  if (typeof s.keys?.p256dh !== "string" || typeof s.keys?.auth !== "string") {
    throw invalid("a push subscription has keys.p256dh and keys.auth");
  }
  return { endpoint: String(s.endpoint), keys: { p256dh: s.keys.p256dh, auth: s.keys.auth } };
}

/**
 * `POST B/push/subscriptions`: the signed-in identity's subscription (`authorize` is asked
 * `subscribe`). An endpoint another identity holds is refused: its owner deletes it first.
 */
export async function subscribe(ctx, request) {
  requireJson(request);
  const who = await identityOf(ctx, request, null, "subscribe");
  const sub = subscriptionOf(await readBody(request, 4096), ctx.push.o.allowLoopback);
  // Bounded per identity: each subscription is a push the handler sends for every request.
  const held = await ctx.pool.query(`SELECT count(*)::int AS n,
      bool_or(endpoint = $2) AS again FROM gatehouse_push WHERE identity = $1`, [who, sub.endpoint]);
  if (!held.rows[0].again && held.rows[0].n >= MAX_SUBSCRIPTIONS) {
    throw new Refusal(429, "too_many_subscriptions",
      `at most ${MAX_SUBSCRIPTIONS} push subscriptions per user; unsubscribe one first`);
  }
  const r = await ctx.pool.query(`INSERT INTO gatehouse_push (endpoint, identity, subscription)
    VALUES ($1, $2, $3)
    ON CONFLICT (endpoint) DO UPDATE SET subscription = EXCLUDED.subscription
      WHERE gatehouse_push.identity = EXCLUDED.identity
    RETURNING identity`, [sub.endpoint, who, JSON.stringify(sub)]);
  if (r.rows.length === 0) {
    throw new Refusal(409, "subscription_taken", "this push endpoint is subscribed by another user; it must unsubscribe first");
  }
  return { ok: true };
}

/** `DELETE B/push/subscriptions` with `{ endpoint }`: only its owner deletes it. */
export async function unsubscribe(ctx, request) {
  requireJson(request);
  const who = await identityOf(ctx, request, null, "subscribe");
  let endpoint;
  try {
    endpoint = JSON.parse(await readBody(request, 4096)).endpoint;
  } catch {
    throw invalid("the body is not JSON");
  }
  if (typeof endpoint !== "string") throw invalid("endpoint must be a string");
  const r = await ctx.pool.query("DELETE FROM gatehouse_push WHERE endpoint = $1 AND identity = $2",
    [endpoint, who]);
  // Another identity's endpoint answers as one that does not exist: nothing is learnt.
  if (r.rowCount === 0) throw new Refusal(404, "not_found", "no such subscription of yours");
  return { ok: true };
}
