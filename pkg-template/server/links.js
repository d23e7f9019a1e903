// @ts-check
// Signed single-use decision links, for email and chat (docs/design.md, "Approval requests").
// A link names one pending call, one approver and the digest of the inputs it shows, and
// expires; it is signed with HMAC-SHA256 under a key every handler on the database shares
// (`gatehouse_keys`, made at migration). A GET shows the call and an Approve/Reject form and
// decides nothing (link previewers and mail scanners fetch links); only a POST decides, as the
// approver the link names, under the approver rules, and marks the link used in the
// decision's own transaction. A forged, expired, used or outdated link says which, and
// decides nothing.

import { GatehouseError } from "./gatehouse-error.js";
import * as core from "./core.js";
import { Refusal, answerOf, invalid } from "./errors.js";
import { base64url, fromBase64url, hex } from "./cursor.js";
import { inputsDigest } from "./receipts.js";
import { pendingCall, pendingCallsOf } from "./requests.js";
import { readBody } from "./http.js";
import { callsBefore, decideAs } from "./threads.js";

const VERSION = 1;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * @typedef {{ v: number, id: string, t: string, c: string, m: string, a: string, d: string,
 *   exp: number }} LinkClaims
 */

/**
 * Why a link decides nothing, as a page says it: status, title, advice.
 * @type {Record<string, [number, string, string]>}
 */
const REFUSED = {
  link_invalid: [400, "This link is not valid", "It was not made by this server, or it was changed."],
  link_expired: [410, "This link has expired", "Ask for a new one, or decide in the app."],
  link_used: [409, "This link was already used", "The decision it carried was recorded once."],
  link_decided: [409, "This call was already decided", "Someone decided it, or it expired, before this link was used."],
  link_changed: [409, "This call changed since the link was sent", "Its inputs were edited, or the thread moved on: the link decides nothing. Look at the call again in the app."],
};

/** @param {string} code */
function refused(code) {
  const [status, title] = REFUSED[code];
  return new Refusal(status, code, title);
}

export class Links {
  /**
   * @param {any} ctx the handler's context (`pool`, `linkKey` once migrated)
   * @param {{ publicUrl: string | null, linkTtlMs: number }} options
   */
  constructor(ctx, options) {
    this.ctx = ctx;
    this.publicUrl = options.publicUrl;
    this.ttlMs = options.linkTtlMs;
  }

  /**
   * A signed link for `approver` to decide the pending call `call` (`{ threadId, callId }`),
   * bound to the inputs the call shows now.
   * @param {{ threadId: string, callId: string }} call
   * @param {string} approver
   * @param {{ expiresIn?: number }} [options]
   */
  async linkFor(call, approver, options = {}) {
    if (!this.publicUrl) {
      throw new GatehouseError("invalid_config", "decision links need the publicUrl option (the URL the handler is mounted at)");
    }
    if (!call || typeof call.threadId !== "string" || typeof call.callId !== "string") {
      throw new GatehouseError("invalid_request", "decisionLink: call must be { threadId, callId }");
    }
    if (typeof approver !== "string" || approver === "") {
      throw new GatehouseError("invalid_request", "decisionLink: approver must be an identity (a non-empty string)");
    }
    const ttl = options?.expiresIn ?? this.ttlMs;
    if (!Number.isInteger(ttl) || ttl <= 0) {
      throw new GatehouseError("invalid_request", "decisionLink: expiresIn must be a positive integer (ms)");
    }
    await this.ctx.ready();
    const pending = await pendingCall(this.ctx.pool, call.threadId, call.callId);
    if (!pending) throw new GatehouseError("not_pending", "decisionLink: this call is not awaiting approval");
    /** @type {LinkClaims} */
    const claims = { v: VERSION, id: `lnk_${hex(crypto.getRandomValues(new Uint8Array(12)))}`,
      t: call.threadId, c: call.callId, m: pending.message, a: approver,
      d: await inputsDigest(pending.inputs), exp: Date.now() + ttl };
    const body = base64url(encoder.encode(JSON.stringify(claims)));
    const sig = await crypto.subtle.sign("HMAC", this.ctx.linkKey, encoder.encode(body));
    return `${this.publicUrl}/links/${body}.${base64url(new Uint8Array(sig))}`;
  }

  /**
   * The claims of a link token, checked: signature, shape, expiry (throws a Refusal that says
   * which failed).
   * @param {string} token
   * @returns {Promise<LinkClaims>}
   */
  async open(token) {
    const [body, sig, extra] = token.split(".");
    if (!body || !sig || extra !== undefined || token.length > 4096) throw refused("link_invalid");
    let ok = false;
    try {
      ok = await crypto.subtle.verify("HMAC", this.ctx.linkKey, fromBase64url(sig), encoder.encode(body));
    } catch {
      ok = false;
    }
    if (!ok) throw refused("link_invalid");
    /** @type {LinkClaims} */
    const claims = JSON.parse(decoder.decode(fromBase64url(body)));
    if (claims.v !== VERSION) throw refused("link_invalid");
    if (Date.now() >= claims.exp) throw refused("link_expired");
    return claims;
  }

  /**
   * Whether the link can still decide: not used, its call still pending in the same message,
   * with the inputs it was made for. Throws the Refusal that says why not.
   * @param {LinkClaims} claims
   * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} c
   * @param {string | null} [tailText] the tail, when read under the thread's lock
   */
  async check(claims, c, tailText) {
    const used = await c.query("SELECT 1 FROM gatehouse_links WHERE id = $1", [claims.id]);
    if (used.rows.length) throw refused("link_used");
    const call = tailText === undefined ? await pendingCall(this.ctx.pool, claims.t, claims.c)
      : pendingCallsOf(tailText ? [{ seq: 0, json: tailText }] : []).find((x) => x.callId === claims.c) ?? null;
    // Not pending: decided, rejected or expired, by someone else or in another way.
    if (!call) throw refused("link_decided");
    if (call.message !== claims.m || await inputsDigest(call.inputs) !== claims.d) throw refused("link_changed");
    return call;
  }
}

/** The form's decision (`approve` or `reject`), from a urlencoded body. @param {Request} request */
export async function formDecision(request) {
  const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw invalid("a decision link is answered by its form");
  const form = new URLSearchParams(await readBody(request, 4096));
  const decision = form.get("decision");
  if (decision !== "approve" && decision !== "reject") throw invalid('decision must be "approve" or "reject"');
  return decision;
}

// The pages: no script, nothing loaded from elsewhere, not cached, not indexed, and no
// Referer carrying the token to another site.
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  // (Not "no-referrer": with it a browser sends `Origin: null` with the form, and the POST
  // could not tell its own page from another site's.)
  "referrer-policy": "same-origin",
  "x-robots-tag": "noindex",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
};

/** @param {unknown} v */
const esc = (v) => String(v).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** @param {number} status @param {string} title @param {string} body */
export function page(status, title, body) {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
pre{background:#f4f4f4;padding:.75rem;border-radius:6px;overflow:auto;white-space:pre-wrap}
button{font:inherit;padding:.5rem 1.25rem;margin-right:.5rem;border-radius:6px;border:1px solid #888;cursor:pointer}
button[value=approve]{background:#0b6b2e;color:#fff;border-color:#0b6b2e}</style></head>
<body><h1>${esc(title)}</h1>${body}</body></html>`;
  return new Response(html, { status, headers: PAGE_HEADERS });
}

/** The page of a refused link. @param {Refusal} r */
export function refusedPage(r) {
  const code = r.body.error.code;
  const known = REFUSED[code];
  if (!known) return page(r.status, "Nothing was decided", `<p>${esc(r.body.error.message)}</p><p><small>${esc(r.body.error.code)}</small></p>`);
  return page(known[0], known[1], `<p>${esc(known[2])}</p><p>Nothing was decided.</p><p><small>${esc(code)}</small></p>`);
}

/**
 * The page of a link that can decide: the call and the form (which posts back to this URL).
 * @param {LinkClaims} claims
 * @param {{ tool: string, description: string | null, inputs: unknown }} call
 */
export function callPage(claims, call) {
  return page(200, `Approve ${call.tool}?`, `
<p>A call of <strong>${esc(call.tool)}</strong> is waiting for your decision${call.description ? `: ${esc(call.description)}` : ""}.</p>
<pre>${esc(JSON.stringify(call.inputs, null, 2))}</pre>
<p>You decide as <strong>${esc(claims.a)}</strong>. This link works once, until ${esc(new Date(claims.exp).toISOString())}.</p>
<form method="post"><button name="decision" value="approve">Approve</button><button name="decision" value="reject">Reject</button></form>`);
}

/** `GET B/links/{token}`: the call and its form, or why the link decides nothing. */
export async function linkGet(ctx, request, token) {
  try {
    const claims = await ctx.links.open(token);
    const call = await ctx.links.check(claims, ctx.pool);
    return callPage(claims, call);
  } catch (e) {
    if (e instanceof Refusal) return refusedPage(e);
    throw e;
  }
}

/**
 * `POST B/links/{token}`: decides, as the approver the link names (the approver rules apply),
 * and spends the link in the decision's transaction.
 */
export async function linkPost(ctx, request, token) {
  try {
    // A browser's form posts from the link's own page. Another site's page that learned a
    // link cannot make a visitor's browser decide with it (a client with no Origin header, a
    // mail client or a script holding the link, is not a browser's cross-site request).
    const origin = request.headers.get("origin");
    const own = ctx.links.publicUrl ? new URL(ctx.links.publicUrl).origin : null;
    if (origin !== null && origin !== own) {
      throw new Refusal(403, "origin_refused", `a decision link is answered from its own page, not from ${origin}`);
    }
    const decision = await formDecision(request);
    const claims = await ctx.links.open(token);
    await ctx.links.check(claims, ctx.pool);
    const body = JSON.stringify({ commitId: `link:${claims.id}`, decisions: { [claims.c]: decision } });
    const intent = answerOf(core.decideIntent(body));
    const before = await callsBefore(ctx.pool, claims.t);
    const at = ctx.now(request);
    const answer = await decideAs(ctx, claims.t, body, intent, claims.a, at, before, async (c, tail) => {
      await ctx.links.check(claims, c, tail);
      await c.query(`INSERT INTO gatehouse_links (id, thread, call_id, approver, decision)
        VALUES ($1, $2, $3, $4, $5)`, [claims.id, claims.t, claims.c, claims.a, decision]);
    });
    const progress = JSON.parse(answer).approvals?.find((/** @type {any} */ p) => p.callId === claims.c);
    if (decision === "approve" && progress && progress.approvals.length < progress.needed) {
      return page(200, "Your approval was counted",
        `<p>${esc(progress.approvals.length)} of ${esc(progress.needed)} approvals so far. The call runs once enough approvers agree.</p>`);
    }
    return page(200, decision === "approve" ? "Approved" : "Rejected",
      `<p>Your decision was recorded, as <strong>${esc(claims.a)}</strong>. You can close this page.</p>`);
  } catch (e) {
    if (e instanceof Refusal) return refusedPage(e);
    throw e;
  }
}
