// @ts-check
// Approver rules (docs/design.md, "Approver rules"): per tool, who may decide its calls
// (`may(identity, call)`), how many distinct approvers it takes (`quorum`), and whether the
// requester — the identity that wrote the user message that led to the call — may approve it
// (`selfApproval`, false by default where a quorum is set). A decision from someone who may
// not decide is refused (403) and changes nothing. Below the quorum an approval is kept in
// `gatehouse_approvals` and the thread is not written; the approval that reaches it applies
// the decision with the engine, as one approver's would. The count is of one set of inputs:
// an approval is of the inputs the call shows, an edit of the inputs it sets, and one of
// other inputs restarts the count (so an edit does); one allowed rejection rejects.

import { Refusal, invalidConfig } from "./errors.js";
import { inputsDigest, messageOf } from "./receipts.js";

/**
 * @typedef {{ threadId: string, callId: string, tool: string, inputs: unknown,
 *   decision: string, requester: string | null }} ApproverCall
 * @typedef {{ may: ((identity: string, call: ApproverCall) => boolean | Promise<boolean>) | null,
 *   quorum: number, selfApproval: boolean }} Rule
 */

/**
 * The `approvers` option, checked: tool name → rule. A function alone is `{ may }`.
 * @param {unknown} option
 * @returns {Map<string, Rule>}
 */
export function rulesOf(option) {
  const rules = new Map();
  if (option === undefined) return rules;
  if (!option || typeof option !== "object" || Array.isArray(option)) {
    throw invalidConfig("approvers must be { [tool]: (identity, call) => boolean } or { [tool]: { may, quorum, selfApproval } }");
  }
  for (const [tool, given] of Object.entries(option)) {
    const r = typeof given === "function" ? { may: given } : given;
    if (!r || typeof r !== "object") throw invalidConfig(`approvers.${tool} must be a function or { may, quorum, selfApproval }`);
    for (const k of Object.keys(r)) {
      if (!["may", "quorum", "selfApproval"].includes(k)) throw invalidConfig(`unknown option "approvers.${tool}.${k}"`);
    }
    if (r.may !== undefined && typeof r.may !== "function") throw invalidConfig(`approvers.${tool}.may must be a function`);
    const quorum = r.quorum ?? 1;
    if (!Number.isInteger(quorum) || quorum < 1 || quorum > 16) {
      throw invalidConfig(`approvers.${tool}.quorum must be an integer from 1 to 16`);
    }
    if (r.selfApproval !== undefined && typeof r.selfApproval !== "boolean") {
      throw invalidConfig(`approvers.${tool}.selfApproval must be a boolean`);
    }
    rules.set(tool, { may: r.may ?? null, quorum, selfApproval: r.selfApproval ?? quorum === 1 });
  }
  return rules;
}

/**
 * Whether two reads of a tail name the same calls with the same inputs.
 * @param {Map<string, { name: string, inputs: unknown }>} a
 * @param {Map<string, { name: string, inputs: unknown }>} b
 */
export function sameCalls(a, b) {
  if (a.size !== b.size) return false;
  for (const [id, x] of a) {
    const y = b.get(id);
    if (!y || y.name !== x.name || JSON.stringify(y.inputs) !== JSON.stringify(x.inputs)) return false;
  }
  return true;
}

/**
 * `callId` → `{ name, inputs }` of the calls of a tail message's JSON text.
 * @param {string | null} tailText
 * @returns {Map<string, { name: string, inputs: unknown }>}
 */
export function callsOf(tailText) {
  const out = new Map();
  if (!tailText) return out;
  try {
    for (const e of JSON.parse(tailText).tools ?? []) out.set(e.callId, { name: e.name, inputs: e.inputs ?? {} });
  } catch {
    // an unreadable tail names no calls; the core refuses the decisions
  }
  return out;
}

/** @param {unknown} d */
const kindOf = (d) => (typeof d === "string" ? d : Array.isArray(d) ? String(d[0]) : "");

/**
 * Judges a decide request by the rules, before the thread is locked (`may` is the app's code,
 * and no lock is held while it runs): throws a 403 Refusal (`not_an_approver`,
 * `self_approval`) when `who` may not make one of the decisions, so that nothing is written.
 * `calls` and `requester` are read without the lock; the caller checks under it that the calls
 * are still these ([`callsOf`], compared by `sameCalls`).
 * @param {{ approvers: Map<string, Rule> }} ctx
 * @param {string} id
 * @param {{ callId: string, decision: string }[]} decisions
 * @param {Map<string, { name: string, inputs: unknown }>} calls
 * @param {string | null} requester
 * @param {string | null} who
 */
export async function judge(ctx, id, decisions, calls, requester, who) {
  for (const { callId, decision } of decisions) {
    const call = calls.get(callId);
    const rule = call && ctx.approvers.get(call.name);
    if (!call || !rule) continue;
    let allowed = true;
    try {
      allowed = !rule.may || await rule.may(/** @type {string} */ (who), { threadId: id, callId,
        tool: call.name, inputs: call.inputs, decision, requester });
    } catch {
      throw new Refusal(500, "approver_rule_failed",
        "the approver rule failed; nothing was written (the app's error stays on the server)");
    }
    if (!allowed) {
      throw new Refusal(403, "not_an_approver", `not allowed to decide calls of "${call.name}"`, { callId });
    }
    if (!rule.selfApproval && decision !== "reject" && who !== null && who === requester) {
      throw new Refusal(403, "self_approval",
        `the requester may not approve their own call of "${call.name}"`, { callId });
    }
  }
}

/**
 * Counts a judged decide request under the thread's lock (`c`). Returns the request to give
 * the engine (the decisions that reach their quorum, as approvals or edits of the inputs
 * counted; the others left out), the approvals of each ruled call so far, and whether anything
 * is left for the engine.
 * @param {{ approvers: Map<string, Rule> }} ctx
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} c
 * @param {string} id
 * @param {string} body the decide request's JSON text
 * @param {string | null} tailText
 * @param {string | null} who
 * @param {number} at
 * @returns {Promise<{ body: string, approvals: Map<string, { by: string | null, at: number }[]>,
 *   engine: boolean, held: string[] }>}
 */
export async function count(ctx, c, id, body, tailText, who, at) {
  const approvals = new Map();
  const calls = callsOf(tailText);
  const request = JSON.parse(body);
  const decisions = request.decisions && typeof request.decisions === "object" ? request.decisions : {};
  const ruled = Object.keys(decisions).filter((callId) => ctx.approvers.has(calls.get(callId)?.name ?? ""));
  if (ruled.length === 0) return { body, approvals, engine: true, held: [] };
  // Approvals count for the calls of this message only: a call id a provider uses again in a
  // later message starts with none.
  const message = messageOf(/** @type {string} */ (tailText));
  const held = [];
  for (const callId of ruled) {
    const call = /** @type {{ name: string, inputs: unknown }} */ (calls.get(callId));
    const rule = /** @type {Rule} */ (ctx.approvers.get(call.name));
    const d = decisions[callId];
    const decision = kindOf(d);
    if (decision === "reject") {
      await c.query("DELETE FROM gatehouse_approvals WHERE thread = $1 AND call_id = $2", [id, callId]);
      continue;
    }
    if (rule.quorum === 1) {
      approvals.set(callId, [{ by: who, at }]);
      continue;
    }
    // The inputs this approval is for: an edit's own, an approval's those the call shows
    // (what the approver saw: an edit below the quorum is not applied to the thread). The
    // count is of one set of inputs; an approval of other inputs restarts it.
    const inputs = decision === "edit" ? d[1] : call.inputs;
    const rows = (await c.query(`SELECT approver AS by, at, inputs FROM gatehouse_approvals
      WHERE thread = $1 AND call_id = $2 AND message = $3 ORDER BY at, approver`,
    [id, callId, message])).rows;
    let counted = rows;
    if (rows[0] && (await inputsDigest(JSON.parse(rows[0].inputs))) !== (await inputsDigest(inputs))) {
      await c.query("DELETE FROM gatehouse_approvals WHERE thread = $1 AND call_id = $2", [id, callId]);
      counted = [];
    }
    if (!counted.some((r) => r.by === who)) {
      await c.query(`INSERT INTO gatehouse_approvals (thread, call_id, message, approver, at, inputs)
        VALUES ($1, $2, $3, $4, $5, $6)`, [id, callId, message, who, at, JSON.stringify(inputs)]);
      counted = [...counted, { by: who, at }];
    }
    approvals.set(callId, counted.map((r) => ({ by: r.by, at: Number(r.at) })));
    if (counted.length < rule.quorum) {
      held.push(callId);
      delete decisions[callId];
      continue;
    }
    // The quorum is reached: the engine applies the inputs counted, as one decision.
    const proposed = await inputsDigest(call.inputs);
    decisions[callId] = (await inputsDigest(inputs)) === proposed ? "approve" : ["edit", inputs];
    await c.query("DELETE FROM gatehouse_approvals WHERE thread = $1 AND call_id = $2", [id, callId]);
  }
  return { body: JSON.stringify(request), approvals, engine: Object.keys(decisions).length > 0, held };
}

/**
 * The approvals each of the tail's gated calls of a ruled tool has so far, how many it needs,
 * and why `who` may not decide it (`"not_an_approver"`, `"self_approval"`, or null):
 * `[{ callId, approvals: [{ by, at }], needed, blocked }]`, or null when no call of the tail
 * is ruled. For the answers of a read and of a decision (the UI shows "1 of 2").
 * @param {{ approvers: Map<string, Rule> }} ctx
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} c
 * @param {string} id
 * @param {string | null} tailText
 * @param {string | null} who
 */
export async function progressOf(ctx, c, id, tailText, who) {
  if (ctx.approvers.size === 0 || !tailText) return null;
  let tools;
  try {
    tools = JSON.parse(tailText).tools ?? [];
  } catch {
    return null;
  }
  const ruled = tools.filter((/** @type {any} */ e) => e.approval === "pending" && ctx.approvers.has(e.name));
  if (ruled.length === 0) return null;
  const q = await c.query(`SELECT t.requester, a.call_id, a.approver AS by, a.at
    FROM gatehouse_threads t LEFT JOIN gatehouse_approvals a ON a.thread = t.id AND a.message = $2
    WHERE t.id = $1 ORDER BY a.at, a.approver`, [id, messageOf(tailText)]);
  const requester = q.rows[0]?.requester ?? null;
  /** @type {{ callId: string, approvals: { by: string | null, at: number }[], needed: number, blocked: string | null }[]} */
  const out = [];
  for (const e of ruled) {
    const rule = /** @type {Rule} */ (ctx.approvers.get(e.name));
    let blocked = null;
    try {
      if (rule.may && !(await rule.may(/** @type {string} */ (who), { threadId: id, callId: e.callId,
        tool: e.name, inputs: e.inputs ?? {}, decision: "approve", requester }))) blocked = "not_an_approver";
    } catch {
      blocked = "not_an_approver";
    }
    if (!blocked && !rule.selfApproval && who !== null && who === requester) blocked = "self_approval";
    out.push({
      callId: e.callId,
      approvals: q.rows.filter((r) => r.call_id === e.callId).map((r) => ({ by: r.by, at: Number(r.at) })),
      needed: rule.quorum,
      blocked,
    });
  }
  return out;
}

/**
 * Who becomes the thread's requester with a commit's rows: `who` when they append a user
 * message (the author of the message the calls that follow answer), else null (unchanged).
 * @param {{ seq: number, json: string }[]} rows
 * @param {string | null} who
 */
export function requesterOf(rows, who) {
  const user = rows.some((r) => {
    // Parsed only when it may be one: a row can be large.
    if (!r.json.includes('"user"')) return false;
    try {
      return JSON.parse(r.json).role === "user";
    } catch {
      return false;
    }
  });
  return user ? who : null;
}
