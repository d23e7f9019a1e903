// @ts-check
// Signed approval receipts (docs/design.md, "Receipts"): for every call approved or edited on
// a thread, the handler signs what was decided — the thread, the call, the tool, the SHA-256 of
// the canonical JSON (RFC 8785) of the inputs that will run, the decision, who made it and
// when — with the app's Ed25519 key, and keeps it with the call. A backend that performs the
// action checks it with `verifyApproval` and spends it once with `consumeApproval`.
//
// Ed25519 through Web Crypto (`crypto.subtle`, in Node since 18.4 and in every edge runtime the
// handler runs on): no native module and no library of our own to keep. Canonical JSON through
// `canonicalize` (Apache-2.0), by an author of RFC 8785, vendored with its licence.

// Vendored into pkg/server/vendor/ by the build (scripts/build-server-core.sh): the handler's
// modules import nothing by a bare name, so Deno can import them over HTTP.
import canonicalize from "./vendor/canonicalize.js";
import { base64url, fromBase64url, hex } from "./cursor.js";
import { GatehouseError } from "./gatehouse-error.js";

/** The receipt format this release writes and reads. */
const VERSION = 1;
const ALG = "Ed25519";
const encoder = new TextEncoder();

/** @param {string} code @param {string} message */
const refused = (code, message) => new GatehouseError(code, message);

/**
 * The private key the handler signs with: a `CryptoKey` (Ed25519, private, usable for
 * `sign`), or its JWK (`{ kty: "OKP", crv: "Ed25519", d, x }`), e.g. parsed from a secret.
 * @param {unknown} key
 * @returns {Promise<CryptoKey>}
 */
export async function signingKeyOf(key) {
  checkSigningKey(key);
  if (isCryptoKey(key)) return key;
  const jwk = /** @type {JsonWebKey} */ (key);
  try {
    return await crypto.subtle.importKey("jwk", jwk, { name: ALG }, false, ["sign"]);
  } catch (e) {
    throw refused("invalid_config", `signingKey is not a usable Ed25519 key: ${message(e)}`);
  }
}

/**
 * Throws `invalid_config` unless `key` has the shape of an Ed25519 private key (a `CryptoKey`
 * usable to sign, or a JWK with `d`): `createStoreHandler` calls it, so that a wrong key fails
 * at once rather than at the first request.
 * @param {unknown} key
 */
export function checkSigningKey(key) {
  if (isCryptoKey(key)) {
    if (key.algorithm.name !== ALG || key.type !== "private" || !key.usages.includes("sign")) {
      throw refused("invalid_config", "signingKey must be an Ed25519 private key usable to sign");
    }
    return;
  }
  const jwk = /** @type {JsonWebKey} */ (key);
  if (!jwk || typeof jwk !== "object" || jwk.kty !== "OKP" || jwk.crv !== ALG ||
      typeof jwk.d !== "string") {
    throw refused("invalid_config",
      'signingKey must be an Ed25519 CryptoKey or its private JWK ({ kty: "OKP", crv: "Ed25519", d, x })');
  }
}

/**
 * @param {unknown} key
 * @returns {Promise<CryptoKey>}
 */
async function publicKeyOf(key) {
  if (isCryptoKey(key)) {
    if (key.algorithm.name !== ALG || key.type !== "public") {
      throw refused("invalid_config", "publicKey must be an Ed25519 public key");
    }
    return key;
  }
  const jwk = /** @type {JsonWebKey} */ (key);
  if (!jwk || typeof jwk !== "object" || jwk.kty !== "OKP" || jwk.crv !== ALG ||
      typeof jwk.x !== "string") {
    throw refused("invalid_config",
      'publicKey must be an Ed25519 CryptoKey or its public JWK ({ kty: "OKP", crv: "Ed25519", x })');
  }
  const { kty, crv, x } = jwk;
  try {
    return await crypto.subtle.importKey("jwk", { kty, crv, x }, { name: ALG }, false, ["verify"]);
  } catch (e) {
    throw refused("invalid_config", `publicKey is not a usable Ed25519 key: ${message(e)}`);
  }
}

/** @param {unknown} v @returns {v is CryptoKey} */
function isCryptoKey(v) {
  return typeof CryptoKey !== "undefined" && v instanceof CryptoKey;
}

/** @param {unknown} e */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

/**
 * The hex SHA-256 of the canonical JSON (RFC 8785) of `inputs`.
 * @param {unknown} inputs
 */
export async function inputsDigest(inputs) {
  const text = canonicalize(inputs);
  if (typeof text !== "string") throw refused("receipt_inputs", "the inputs are not JSON");
  const hash = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return hex(new Uint8Array(hash));
}

/**
 * @typedef {{ v: number, id: string, thread: string, callId: string, tool: string,
 *   inputsSha256: string, decision: "approve" | "edit", decidedBy: string | null,
 *   approvals: { by: string | null, at: number }[], at: number, expiresAt: number | null,
 *   alg: "Ed25519", sig: string }} ApprovalReceipt
 */

/**
 * Signs the receipt of one decided call.
 * @param {CryptoKey} key
 * @param {{ thread: string, callId: string, tool: string, inputs: unknown,
 *   decision: "approve" | "edit", decidedBy: string | null, at: number,
 *   expiresAt: number | null, approvals?: { by: string | null, at: number }[] }} call
 * @returns {Promise<ApprovalReceipt>}
 */
export async function signReceipt(key, call) {
  const body = {
    v: VERSION,
    id: `rcpt_${hex(crypto.getRandomValues(new Uint8Array(16)))}`,
    thread: call.thread,
    callId: call.callId,
    tool: call.tool,
    inputsSha256: await inputsDigest(call.inputs),
    decision: call.decision,
    decidedBy: call.decidedBy,
    approvals: call.approvals ?? [{ by: call.decidedBy, at: call.at }],
    at: call.at,
    expiresAt: call.expiresAt,
    alg: /** @type {"Ed25519"} */ (ALG),
  };
  const sig = await crypto.subtle.sign(ALG, key, encoder.encode(/** @type {string} */ (canonicalize(body))));
  return { ...body, sig: base64url(new Uint8Array(sig)) };
}

/**
 * Checks that `receipt` was signed by the holder of `publicKey`'s private key, for exactly
 * `inputs`, and has not expired; with `expect`, also that it is for that tool and thread.
 * Returns the receipt; throws a `GatehouseError` whose code says what failed:
 * `receipt_malformed`, `receipt_signature`, `receipt_inputs`, `receipt_tool`,
 * `receipt_thread` or `receipt_expired`. It does not spend the receipt: `consumeApproval` does.
 * @param {unknown} receipt
 * @param {unknown} inputs
 * @param {CryptoKey | JsonWebKey} publicKey
 * @param {{ tool?: string, thread?: string, now?: number }} [expect]
 * @returns {Promise<ApprovalReceipt>}
 */
export async function verifyApproval(receipt, inputs, publicKey, expect = {}) {
  const key = await publicKeyOf(publicKey);
  const r = /** @type {ApprovalReceipt} */ (receipt);
  if (!r || typeof r !== "object" || r.v !== VERSION || r.alg !== ALG ||
      typeof r.sig !== "string" || typeof r.id !== "string" || typeof r.tool !== "string" ||
      typeof r.inputsSha256 !== "string") {
    throw refused("receipt_malformed", "not an approval receipt of this version");
  }
  const { sig, ...body } = r;
  let ok = false;
  try {
    ok = await crypto.subtle.verify(ALG, key, fromBase64url(sig),
      encoder.encode(/** @type {string} */ (canonicalize(body))));
  } catch {
    ok = false;
  }
  if (!ok) throw refused("receipt_signature", "the receipt's signature does not verify with this key");
  if (await inputsDigest(inputs) !== r.inputsSha256) {
    throw refused("receipt_inputs", "the receipt approves other inputs than these");
  }
  if (expect.tool !== undefined && expect.tool !== r.tool) {
    throw refused("receipt_tool", `the receipt approves a call of "${r.tool}", not "${expect.tool}"`);
  }
  if (expect.thread !== undefined && expect.thread !== r.thread) {
    throw refused("receipt_thread", "the receipt is for a call of another thread");
  }
  if (r.expiresAt !== null && (expect.now ?? Date.now()) >= r.expiresAt) {
    throw refused("receipt_expired", "the receipt has expired");
  }
  return r;
}

/**
 * Spends the receipt `receiptId` once, in one statement: the first call marks it used, every
 * later one (or one racing it) is refused with `receipt_used`; an id the handler never
 * issued is `receipt_unknown`. Call it after `verifyApproval`, in the transaction of the action
 * when the action is in this database.
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} pool
 * @param {string} receiptId
 */
export async function consumeApproval(pool, receiptId) {
  if (typeof receiptId !== "string" || receiptId === "") {
    throw refused("receipt_malformed", "a receipt id is a non-empty string");
  }
  const r = await pool.query(`WITH spent AS (
      UPDATE gatehouse_receipts SET used_at = now() WHERE id = $1 AND used_at IS NULL
      RETURNING id)
    SELECT (SELECT count(*) FROM spent) AS spent,
      EXISTS (SELECT 1 FROM gatehouse_receipts WHERE id = $1) AS known`, [receiptId]);
  const row = r.rows[0];
  if (Number(row.spent) === 1) return;
  if (!row.known) throw refused("receipt_unknown", "no receipt with this id was issued");
  throw refused("receipt_used", "this receipt was already used");
}

/**
 * Signs and stores the receipts of the calls `decisions` approved or edited, in the decide's
 * transaction `c`: a receipt exists exactly when its decision was written. `tailText` is the
 * thread's tail as the decision's answer holds it (the inputs that will run).
 * @param {{ signingKey: CryptoKey | null, receiptTtlMs: number }} ctx
 * @param {{ query: (text: string, values?: unknown[]) => Promise<unknown> }} c
 * @param {string} thread
 * @param {{ callId: string, decision: string }[]} decisions
 * @param {string} answer the decision's answer (`{"record","tail"}` text)
 * @param {string | null} who
 * @param {number} at
 * @param {Map<string, { by: string | null, at: number }[]>} approvals the approvals counted
 *   toward each call's quorum (approver rules); a call without is this decision alone
 */
export async function issueReceipts(ctx, c, thread, decisions, answer, who, at, approvals) {
  if (!ctx.signingKey) return;
  const tailText = JSON.parse(answer).tail;
  if (!tailText) return;
  const tools = JSON.parse(tailText).tools ?? [];
  for (const d of decisions) {
    if (d.decision !== "approve" && d.decision !== "edit") continue;
    const entry = tools.find((/** @type {{ callId: string }} */ e) => e.callId === d.callId);
    if (!entry) continue;
    const receipt = await signReceipt(ctx.signingKey, {
      thread, callId: d.callId, tool: entry.name, inputs: entry.inputs ?? {},
      decision: d.decision, decidedBy: who, at, expiresAt: at + ctx.receiptTtlMs,
      approvals: approvals.get(d.callId) ?? [{ by: who, at }],
    });
    await c.query(`INSERT INTO gatehouse_receipts (id, thread, call_id, message, receipt)
      VALUES ($1, $2, $3, $4, $5)`, [receipt.id, thread, d.callId, messageOf(tailText), JSON.stringify(receipt)]);
  }
}

/**
 * The `__id` of a message's JSON text: what ties a receipt, or an approval counted, to its call
 * (a provider may use a call id again in a later message).
 * @param {string} text
 */
export function messageOf(text) {
  try {
    return String(JSON.parse(text).__id ?? "");
  } catch {
    return "";
  }
}
