// @ts-check
// Approval requests that reach the approver (docs/design.md, "Approval requests"): an outbox in
// Postgres. The commit that makes a call pending writes a row for it in its own transaction, so
// a crash between that commit and the app's hook loses nothing; any handler on the database
// delivers it. A delivery is claimed (one instance at a time, for `claimMs`), the hook is called,
// and the row is marked sent; a hook that throws is retried with backoff; a call decided (or a
// thread deleted) cancels what is still due for it. After a first delivery, reminders
// (`remind: [ms…]`) and an escalation (`escalateTo`, after `escalateAfterMs`) are due in turn.
//
// Once per call: the row's key is the call (its message and id), and only the instance holding
// the claim marks it sent. The one case the hook is called again for a call is a handler that
// died during the hook's own call (its outcome is unknown): after `claimMs` another instance
// calls it again, with the same `requestId` and the next `attempt`, so a hook that sends
// something outside (a mail, a chat message) can drop the repeat.

import * as core from "./core.js";
import { answerOf, invalidConfig } from "./errors.js";
import { hex } from "./cursor.js";
import { announce, transaction } from "./postgres.js";

/**
 * @typedef {{ threadId: string, callId: string, tool: string, description: string | null,
 *   inputs: unknown, message: string, requester: string | null, requestedAt: number }} RequestedCall
 * @typedef {{ hook: ((args: any) => unknown) | null, to: ((call: RequestedCall) => unknown) | null,
 *   remind: number[], escalateTo: ((call: RequestedCall) => unknown) | null,
 *   escalateAfterMs: number, expireFrom: "request" | "delivery", pollMs: number, claimMs: number, retryMs: number,
 *   maxRetryMs: number, batch: number }} RequestOptions
 */

const KEYS = ["to", "remind", "escalateTo", "escalateAfterMs", "expireFrom", "pollMs", "claimMs",
  "retryMs", "maxRetryMs"];

/**
 * The `onApprovalRequested` and `approvalRequests` options, checked.
 * @param {unknown} hook
 * @param {any} given
 * @param {boolean} push whether Web Push is configured (it delivers too, without a hook)
 * @returns {RequestOptions | null}
 */
export function requestOptionsOf(hook, given, push) {
  if (hook !== undefined && typeof hook !== "function") {
    throw invalidConfig("onApprovalRequested must be a function ({ threadId, call, … }) => Promise");
  }
  if (given !== undefined && (!given || typeof given !== "object" || Array.isArray(given))) {
    throw invalidConfig("approvalRequests must be { to, remind, escalateTo, escalateAfterMs, … }");
  }
  const o = given ?? {};
  for (const k of Object.keys(o)) {
    if (!KEYS.includes(k)) throw invalidConfig(`unknown option "approvalRequests.${k}"`);
  }
  if (hook === undefined && !push) {
    if (given !== undefined) {
      throw invalidConfig("approvalRequests needs onApprovalRequested or webPush to deliver them");
    }
    return null;
  }
  for (const k of ["to", "escalateTo"]) {
    if (o[k] !== undefined && typeof o[k] !== "function") {
      throw invalidConfig(`approvalRequests.${k} must be a function (call) => identities`);
    }
  }
  const remind = o.remind ?? [];
  if (!Array.isArray(remind) || remind.length > 16 ||
      !remind.every((ms) => Number.isInteger(ms) && ms > 0)) {
    throw invalidConfig("approvalRequests.remind must be a list of at most 16 positive delays in ms");
  }
  const out = { hook: /** @type {any} */ (hook) ?? null, to: o.to ?? null, remind,
    escalateTo: o.escalateTo ?? null, escalateAfterMs: o.escalateAfterMs ?? 3_600_000,
    expireFrom: o.expireFrom ?? "request",
    pollMs: o.pollMs ?? 5000, claimMs: o.claimMs ?? 60_000, retryMs: o.retryMs ?? 1000,
    maxRetryMs: o.maxRetryMs ?? 300_000, batch: 32 };
  for (const k of ["escalateAfterMs", "pollMs", "claimMs", "retryMs", "maxRetryMs"]) {
    const v = /** @type {any} */ (out)[k];
    if (!Number.isInteger(v) || v <= 0) throw invalidConfig(`approvalRequests.${k} must be a positive integer`);
  }
  if (o.expireFrom !== undefined && o.expireFrom !== "request" && o.expireFrom !== "delivery") {
    throw invalidConfig('approvalRequests.expireFrom must be "request" or "delivery"');
  }
  if (o.escalateAfterMs !== undefined && !o.escalateTo) {
    throw invalidConfig("approvalRequests.escalateAfterMs needs escalateTo");
  }
  return out;
}

/**
 * The calls a write left pending: each row written whose message has calls awaiting approval.
 * @param {{ seq: number, json: string }[]} rows
 */
export function pendingCallsOf(rows) {
  const out = [];
  for (const r of rows) {
    // Parsed only when it may hold one: every commit's rows pass here.
    if (!r.json.includes('"pending"')) continue;
    let m;
    try {
      m = JSON.parse(r.json);
    } catch {
      continue;
    }
    for (const e of m?.tools ?? []) {
      if (e?.approval === "pending" && typeof e.callId === "string") {
        out.push({ message: String(m.__id ?? ""), callId: e.callId, tool: String(e.name ?? ""),
          description: typeof e.description === "string" ? e.description : null,
          inputs: e.inputs ?? {} });
      }
    }
  }
  return out;
}

/**
 * The call `callId` if the tail of `thread` holds it awaiting approval (with its message's
 * `__id`), else null: read without a lock (the outbox's and a link page's check; a decision
 * checks again under the lock).
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} pool
 * @param {string} thread
 * @param {string} callId
 */
export async function pendingCall(pool, thread, callId) {
  const t = await pool.query(`SELECT m.json FROM gatehouse_threads t
    JOIN gatehouse_messages m ON m.thread = t.id AND m.seq = t.message_count
    WHERE t.id = $1`, [thread]);
  return pendingCallsOf(t.rows.map((x) => ({ seq: 0, json: x.json }))).find((x) => x.callId === callId) ?? null;
}

/**
 * Writes the requests of the calls a commit left pending, in its transaction `c`: one row per
 * call (a call already requested is not requested again).
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rowCount?: number | null }> }} c
 * @param {string} thread
 * @param {{ seq: number, json: string }[]} rows
 * @returns {Promise<number>} how many were written
 */
export async function recordRequests(c, thread, rows) {
  const calls = pendingCallsOf(rows);
  if (calls.length === 0) return 0;
  const r = await c.query(`INSERT INTO gatehouse_requests (id, thread, call_id, message, kind, n,
      due_at, call)
    SELECT x.id, $1, x.call_id, x.message, 'request', 0, clock_timestamp(), x.call
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(id, call_id, message, call)
    ON CONFLICT (thread, message, call_id, kind, n) DO NOTHING`,
  [thread, calls.map(() => `req_${hex(crypto.getRandomValues(new Uint8Array(12)))}`),
    calls.map((x) => x.callId), calls.map((x) => x.message),
    calls.map((x) => JSON.stringify({ tool: x.tool, description: x.description, inputs: x.inputs }))]);
  return r.rowCount ?? 0;
}

/**
 * Cancels what is still due for calls of `thread` that were decided, in the decision's
 * transaction `c`.
 * @param {{ query: (text: string, values?: unknown[]) => Promise<unknown> }} c
 * @param {string} thread
 * @param {string[]} callIds
 */
export async function cancelRequests(c, thread, callIds) {
  if (callIds.length === 0) return;
  await c.query(`UPDATE gatehouse_requests SET state = 'cancelled', claim = NULL
    WHERE thread = $1 AND call_id = ANY($2::text[]) AND state = 'due'`, [thread, callIds]);
}

/** A list of identities an app function returned, checked. @param {unknown} v @param {string} name */
function identities(v, name) {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string" && x !== "")) {
    throw new Error(`approvalRequests.${name} must return a list of identities (strings)`);
  }
  return [...new Set(v)];
}

/**
 * The deliverer of one handler: claims due requests (any instance's), calls the hook and the
 * channels, and marks them. Woken by this handler's own commits, and every `pollMs` for the
 * rest (another instance's rows after it died, reminders, retries).
 */
export class Outbox {
  /**
   * @param {any} ctx the handler's context (pool, links, push)
   * @param {RequestOptions} options
   */
  constructor(ctx, options) {
    this.ctx = ctx;
    this.o = options;
    /** @type {Promise<void> | null} */
    this.running = null;
    this.again = false;
    this.closed = false;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    // This instance's claims carry its own token: only the holder marks a row.
    this.instance = hex(crypto.getRandomValues(new Uint8Array(8)));
    this.delivered = 0;
    // The soonest a retry or a reminder this instance scheduled is due (epoch ms): the next
    // pass runs then, not a whole poll later.
    this.soonest = Infinity;
  }

  start() {
    if (this.closed || this.timer) return;
    this.arm(0);
  }

  /** @param {number} ms */
  arm(ms) {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, ms);
    // A handler's poll does not keep a process alive by itself.
    /** @type {any} */ (this.timer).unref?.();
  }

  /** Delivers what is due now; a kick during a pass runs one more pass. */
  kick() {
    if (this.closed) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          while (!this.closed && await this.pass() === this.o.batch) { /* more are due */ }
        } while (this.again && !this.closed);
      } catch {
        // The database is away: the next poll tries again.
      } finally {
        this.running = null;
        const soon = this.soonest - Date.now();
        this.soonest = Infinity;
        this.arm(Math.max(0, Math.min(this.o.pollMs, soon)));
      }
    })();
    return this.running;
  }

  close() {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Claims and delivers one batch; answers how many were claimed. */
  async pass() {
    const claim = `${this.instance}:${hex(crypto.getRandomValues(new Uint8Array(8)))}`;
    const r = await this.ctx.pool.query(`UPDATE gatehouse_requests r
      SET attempts = r.attempts + 1, claim = $1,
        claimed_until = clock_timestamp() + $2 * interval '1 millisecond'
      FROM (SELECT id FROM gatehouse_requests
        WHERE state = 'due' AND due_at <= clock_timestamp()
          AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
        ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED) d
      WHERE r.id = d.id
      RETURNING r.id, r.thread, r.call_id, r.message, r.kind, r.n, r.attempts, r.call,
        (extract(epoch FROM r.created_at) * 1000)::float8 AS created,
        (SELECT requester FROM gatehouse_threads WHERE id = r.thread) AS requester`,
    [claim, this.o.claimMs, this.o.batch]);
    await Promise.all(r.rows.map((row) => this.deliver(row, claim)));
    return r.rows.length;
  }

  /** @param {any} row @param {string} claim */
  async deliver(row, claim) {
    const pool = this.ctx.pool;
    const mark = (sql, values = []) => pool.query(`UPDATE gatehouse_requests SET ${sql}
      WHERE id = $1 AND claim = $2`, [row.id, claim, ...values]);
    // Still pending? A call decided, or a thread gone, or moved on, is not requested again.
    const still = await pendingCall(pool, row.thread, row.call_id);
    if (still?.message !== row.message) {
      await mark("state = 'cancelled', claim = NULL");
      return;
    }
    const stored = JSON.parse(row.call);
    /** @type {RequestedCall} */
    const call = { threadId: row.thread, callId: row.call_id, tool: stored.tool,
      description: stored.description ?? null, inputs: stored.inputs, message: row.message,
      requester: row.requester ?? null, requestedAt: Math.round(Number(row.created)) };
    const reason = row.kind;
    try {
      const approvers = identities(reason === "escalation"
        ? await this.o.escalateTo?.(call) : await this.o.to?.(call), reason === "escalation" ? "escalateTo" : "to");
      const links = this.ctx.links;
      const decideUrl = (/** @type {string} */ approver, /** @type {any} */ opts) => links.linkFor(call, approver, opts);
      const args = { requestId: row.id, attempt: Number(row.attempts), reason, threadId: row.thread,
        call, requester: call.requester, approvers, decideUrl };
      if (this.ctx.push) await this.ctx.push.notify(call, approvers, reason);
      if (this.o.hook) await this.o.hook(args);
    } catch (e) {
      const wait = Math.min(this.o.maxRetryMs, this.o.retryMs * 2 ** Math.min(20, Number(row.attempts) - 1));
      this.soonest = Math.min(this.soonest, Date.now() + wait);
      await mark(`state = 'due', claim = NULL, claimed_until = NULL,
        due_at = clock_timestamp() + $3 * interval '1 millisecond', error = $4`,
      [wait, String(e instanceof Error ? e.message : e).slice(0, 1000)]).catch(() => {});
      return;
    }
    this.delivered++;
    const deliveredAt = Date.now();
    // Marked sent, what follows a first delivery due in turn, and (with `expireFrom:
    // "delivery"`) the call's deadline moved, in one transaction, only while the claim is this
    // instance's: a delivery counts once.
    const follow = reason !== "request" ? [] : [
      ...this.o.remind.map((ms, i) => ({ kind: "reminder", n: i + 1, ms })),
      ...(this.o.escalateTo ? [{ kind: "escalation", n: 0, ms: this.o.escalateAfterMs }] : []),
    ];
    for (const f of follow) this.soonest = Math.min(this.soonest, Date.now() + f.ms);
    const extended = await transaction(pool, async (c) => {
      const sent = await c.query(`WITH sent AS (
          UPDATE gatehouse_requests SET state = 'sent', sent_at = clock_timestamp(), claim = NULL,
            error = NULL
          WHERE id = $1 AND claim = $2 RETURNING thread, call_id, message, call, created_at),
        follow AS (
          INSERT INTO gatehouse_requests (id, thread, call_id, message, kind, n, due_at, call, created_at)
          SELECT f.id, s.thread, s.call_id, s.message, f.kind, f.n,
            clock_timestamp() + f.ms * interval '1 millisecond', s.call, s.created_at
          FROM sent s, unnest($3::text[], $4::text[], $5::int[], $6::float8[]) AS f(id, kind, n, ms)
          ON CONFLICT (thread, message, call_id, kind, n) DO NOTHING)
        SELECT count(*)::int AS n FROM sent`,
      [row.id, claim, follow.map(() => `req_${hex(crypto.getRandomValues(new Uint8Array(12)))}`),
        follow.map((f) => f.kind), follow.map((f) => f.n), follow.map((f) => f.ms)]);
      const moved = sent.rows[0].n === 1 && reason === "request" && this.o.expireFrom === "delivery" &&
        await extendDeadline(this.ctx, c, row.thread, row.call_id, deliveredAt);
      return { value: moved, write: true };
    }).catch(() => false);
    // Only a moved deadline is news to this handler's readers.
    if (extended) this.ctx.feed.wrote();
  }
}

/**
 * Counts a pending call's expiry from its first delivery: its deadline moved by the time
 * between the request and now, under the thread's lock, one version on (the devices reload and
 * re-arm their expiry timers). The core plans it (`planExtend`: never shorter, not once
 * decided).
 * @param {any} ctx @param {any} c @param {string} thread @param {string} callId @param {number} at
 * @returns {Promise<boolean>} whether it moved
 */
async function extendDeadline(ctx, c, thread, callId, at) {
  const r = await c.query("SELECT record FROM gatehouse_threads WHERE id = $1 FOR UPDATE", [thread]);
  const record = r.rows[0]?.record;
  if (!record) return false;
  const plan = answerOf(core.planExtend(thread, record, callId, at));
  if (!plan.changed) return false;
  await c.query("UPDATE gatehouse_threads SET version = $2, record = $3 WHERE id = $1",
    [thread, plan.version, plan.record]);
  await announce(ctx, c, thread, plan.version);
  return true;
}

/** The outbox's table: a thread's requests go with it. @param {any} c @param {string} id */
export async function removeRequests(c, id) {
  await c.query("DELETE FROM gatehouse_requests WHERE thread = $1", [id]);
}

