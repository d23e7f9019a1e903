// @ts-check
// The thread list of the store handler (docs/design.md, "A million threads"): the user's
// threads, newest first, by page, from indexes; each still asked of `authorize`.

import * as core from "./core.js";
import { base64url, fromBase64url } from "./cursor.js";
import { Refusal, answerOf, authorizeFailed, invalid } from "./errors.js";
import { identityOf, mayRead } from "./threads.js";

/** The position after a listed thread: its `updated_at` as Postgres writes it, and its id. */
const listCursor = (row) => base64url(new TextEncoder().encode(JSON.stringify([row.at, row.id])));

/** A list cursor, opened; `invalid_request` for anything that is not one. @param {string} text */
export function openListCursor(text) {
  try {
    const v = JSON.parse(new TextDecoder().decode(fromBase64url(text)));
    // A timestamptz as Postgres writes it (ISO date style), and an id.
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string" &&
        /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2}){0,2}$/.test(v[0])) return v;
  } catch {
    // refused below
  }
  throw invalid("before is not a cursor of this list (pass the `next` of the previous page)");
}

/**
 * The user's threads, newest first, by page (`limit`, `before`: the previous page's `next`):
 * those it created (the owner index, in `updated_at` order), those `sharedWith` names, and
 * those created before owners were kept, merged in that order. Each source is read from its
 * index up to the page's end, so a page costs the same whatever the table holds. Ids first:
 * each is still asked of `authorize` (`read`), and no record is read before it allows it.
 * `next` is null on the last page.
 */
export async function list(ctx, request, limit, before) {
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
  const [at, after] = before ?? [null, null];
  // Each source from its index, up to one more than the page (whether a next page exists).
  const page = `record IS NOT NULL
      AND ($3::timestamptz IS NULL OR (updated_at, id) < ($3::timestamptz, $4::text))
      ORDER BY updated_at DESC, id DESC LIMIT $5`;
  const source = (where) => `(SELECT id, updated_at, updated_at::text AS at FROM gatehouse_threads
      WHERE ${where} AND ${page})`;
  const ids = await ctx.pool.query(`SELECT id, at FROM (${source("owner = $1")}
      UNION ${source("id = ANY($2::text[])")} UNION ${source("owner IS NULL")}) t
    ORDER BY updated_at DESC, id DESC LIMIT $5`, [who, shared, at, after, limit + 1]);
  const more = ids.rows.length > limit;
  const rows = ids.rows.slice(0, limit);
  const next = more ? listCursor(rows[rows.length - 1]) : null;
  const allowed = await Promise.all(rows.map((row) => mayRead(ctx, request, row.id)));
  const readable = rows.filter((_, i) => allowed[i]).map((row) => row.id);
  if (readable.length === 0) return `{"threads":[],"next":${JSON.stringify(next)}}`;
  const r = await ctx.pool.query(`SELECT id, record FROM gatehouse_threads
    WHERE id = ANY($1::text[]) AND record IS NOT NULL`, [readable]);
  const byId = new Map(r.rows.map((row) => [row.id, row.record]));
  const texts = [];
  for (const id of readable) {
    const record = byId.get(id);
    if (record === undefined) continue;
    try {
      // A list shows threads, not the MCP servers' tool lists they were run with.
      texts.push(answerOf(core.listRecord(id, record)).record);
    } catch {
      // An unreadable record is left out of the list (as the local stores do).
    }
  }
  return `{"threads":[${texts.join(",")}],"next":${JSON.stringify(next)}}`;
}
