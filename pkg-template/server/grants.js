// @ts-check
// Remembered grants at the store handler (docs/design.md, "Remembered grants"): made, listed
// and revoked here, kept in `gatehouse_grants`, and checked by the core whenever a commit
// cites one (threads.js reads just the rows it cites). A user grant is its maker's: it
// approves calls in that identity's runs only, and only its maker revokes it.

import * as core from "./core.js";
import { Refusal, answerOf } from "./errors.js";
import { MAX_DECIDE_BYTES, readBody, requireJson } from "./http.js";
import { clock, digestOf, identityOf } from "./threads.js";
import { transaction } from "./postgres.js";

/** Unrevoked grants an identity may have made at once. */
export const MAX_GRANTS = 500;

/** An `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): visible ASCII. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,128}$/;

/**
 * The answer to a keyed request whose grant exists (`row`): that grant, when `grant` (what
 * this request would make) is the same grant; refused when it was revoked since (a replay
 * never revives one) or when the key made another grant.
 */
function replayed(row, grant) {
  const was = JSON.parse(row.json);
  const now = JSON.parse(grant);
  const same = (g) => JSON.stringify([g.tool, g.scope, g.threadId ?? null, g.match ?? null,
    g.expiresAt === null ? null : g.expiresAt - g.createdAt]);
  if (same(was) !== same(now)) {
    throw new Refusal(409, "idempotency_key_reused",
      "this Idempotency-Key made another grant; send the new grant with a new key");
  }
  if (row.revoked_at !== null) {
    throw new Refusal(409, "grant_revoked",
      "the grant this request made has been revoked; a new grant needs a new Idempotency-Key");
  }
  return `{"grant":${row.json}}`;
}

/**
 * `POST B/grants`: `{ tool, scope: "thread" | "user" | "app", match?, expiresIn?, threadId? }`.
 * Checked before `authorize`, which gets `{ threadId, action: "grant", tool, scope }`: an app
 * decides who may make a grant for everyone (`scope: "app"`). With an `Idempotency-Key`
 * header, the same request again (a retry, a replay) answers the grant it made.
 */
export async function makeGrant(ctx, request) {
  requireJson(request);
  const key = request.headers.get("idempotency-key");
  if (key !== null && !IDEMPOTENCY_KEY.test(key)) {
    throw new Refusal(400, "invalid_grant",
      "invalid grant: the Idempotency-Key header is 1 to 128 visible ASCII characters");
  }
  const body = await readBody(request, Math.min(ctx.maxBodyBytes, MAX_DECIDE_BYTES));
  const intent = answerOf(core.grantIntent(body));
  const who = await identityOf(ctx, request, intent.threadId ?? null, "grant",
    { tool: intent.tool, scope: intent.scope });
  // A keyed request's grant has the id its maker and key name: a retry, or a captured request
  // replayed, finds the grant it made instead of making another (or reviving a revoked one).
  const id = key === null
    ? `grant_${crypto.randomUUID()}`
    : `grant_${(await digestOf(`${who}\n${key}`)).slice(0, 32)}`;
  const { grant, expiresAt } = answerOf(core.makeGrant(body, id, clock(ctx, request), who));
  return transaction(ctx.pool, async (c) => {
    // Per identity, so one user cannot fill the table (docs/design.md, "Threat model"), and
    // two requests with one key are one after the other.
    await c.query("SELECT pg_advisory_xact_lock(hashtext('gatehouse_grants:' || $1))", [who]);
    if (key !== null) {
      const made = await c.query("SELECT json, revoked_at FROM gatehouse_grants WHERE id = $1", [id]);
      if (made.rows[0]) return { value: replayed(made.rows[0], grant), write: false };
    }
    const n = await c.query(`SELECT count(*)::int AS n FROM gatehouse_grants
      WHERE created_by = $1 AND revoked_at IS NULL`, [who]);
    if (n.rows[0].n >= MAX_GRANTS) {
      throw new Refusal(429, "too_many_grants",
        `at most ${MAX_GRANTS} grants of one identity are in force; revoke some first`,
        { limit: MAX_GRANTS });
    }
    await c.query(`INSERT INTO gatehouse_grants (id, scope, tool, owner, thread, json, expires_at,
        created_by) VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7::float8 / 1000), $8)`,
    [id, intent.scope, intent.tool, intent.scope === "user" ? who : null, intent.threadId ?? null,
      grant, expiresAt, who]);
    return { value: `{"grant":${grant}}`, write: true };
  });
}

/**
 * `GET B/threads/{id}/grants`: the grants in force for this identity on the thread: its own
 * user grants, the app's, and the thread's. For whoever may read the thread.
 */
export async function listGrants(ctx, request, threadId) {
  const who = await identityOf(ctx, request, threadId, "read");
  const r = await ctx.pool.query(`SELECT json FROM gatehouse_grants WHERE revoked_at IS NULL
      AND (expires_at IS NULL OR expires_at > to_timestamp($3::float8 / 1000))
      AND ((scope = 'user' AND owner = $1) OR scope = 'app' OR (scope = 'thread' AND thread = $2))
    ORDER BY created_at, id LIMIT $4`, [who, threadId, clock(ctx, request), 3 * MAX_GRANTS]);
  return `{"grants":[${r.rows.map((row) => row.json).join(",")}]}`;
}

/**
 * `DELETE B/grants/{grantId}`: revokes a grant, for calls not yet started on every device (a
 * commit that starts a call it approved is refused from now on). A user grant only by its
 * maker; any other by whoever `authorize` lets `grant` for it. Unknown, or another user's: 404.
 */
export async function revokeGrant(ctx, request, grantId) {
  const row = await ctx.pool.query(`SELECT scope, tool, owner, thread FROM gatehouse_grants
    WHERE id = $1 AND revoked_at IS NULL`, [grantId]);
  const g = row.rows[0];
  const gone = () => new Refusal(404, "unknown_grant", "no such grant in force");
  if (!g) {
    // Asked all the same, so an unknown id and another's answer alike after `authorize`.
    await identityOf(ctx, request, null, "grant", { tool: null, scope: null });
    throw gone();
  }
  const who = await identityOf(ctx, request, g.thread, "grant", { tool: g.tool, scope: g.scope });
  if (g.scope === "user" && g.owner !== who) throw gone();
  const done = await ctx.pool.query(`UPDATE gatehouse_grants SET revoked_at = now(), revoked_by = $2
    WHERE id = $1 AND revoked_at IS NULL`, [grantId, who]);
  if (done.rowCount === 0) throw gone();
  return { revoked: grantId };
}

/**
 * The grants a commit cites, read in its transaction and locked against a revocation until it
 * ends: a JSON array of their texts for the core (`planCommit`), or undefined when none.
 * @param {any} c
 * @param {string[]} ids
 */
export async function citedGrants(c, ids) {
  if (!ids || ids.length === 0) return undefined;
  const r = await c.query(`SELECT json FROM gatehouse_grants WHERE id = ANY($1)
    AND revoked_at IS NULL FOR SHARE`, [ids]);
  return JSON.stringify(r.rows.map((row) => row.json));
}
