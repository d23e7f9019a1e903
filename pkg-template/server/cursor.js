// @ts-check
// Cursors of the change feed: the position in `gatehouse_changes`, sealed (AES-GCM, a fresh
// nonce each time) so that a client learns nothing from it. A plain number would tell every
// signed-in user how many writes the handler saw, and when: a sealed one differs at every
// poll, whether anything was written or not, and one that was tampered with does not open.

import { invalid } from "./errors.js";

export const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** The AES-GCM key of the database's `cursor` key (hex). */
export function cursorKey(text) {
  const bytes = Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
  return crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** @param {Uint8Array} bytes */
export const base64url = (bytes) => btoa(String.fromCharCode(...bytes))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** The bytes of base64url `text`; throws on text that is not base64. @param {string} text */
export const fromBase64url = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** A cursor for position `seq`. */
export async function sealCursor(key, seq) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  // "x": a position in transaction ids (schema 6). A cursor of the numbering before it opens
  // as -1: before everything, so its reader is told to reset.
  const plain = new TextEncoder().encode(`x${seq}`);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain));
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv);
  out.set(sealed, 12);
  return base64url(out);
}

/** The position a cursor holds; `invalid_request` for anything this database did not seal. */
export async function openCursor(key, text) {
  const refuse = () => invalid("since is not a cursor this handler gave (pass the `cursor` " +
    "of the previous answer, or leave since out to start from now)");
  if (typeof text !== "string" || text.length > 64 || !/^[A-Za-z0-9_-]+$/.test(text)) {
    throw refuse();
  }
  let bytes;
  try {
    bytes = fromBase64url(text);
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
  const opened = new TextDecoder().decode(plain);
  const ours = opened.startsWith("x");
  const seq = Number(ours ? opened.slice(1) : opened);
  if (!Number.isSafeInteger(seq) || seq < 0) throw refuse();
  return ours ? seq : -1;
}

/** The decision links' HMAC key (server/links.js) from its stored hex text. @param {string} text */
export function linkKey(text) {
  const bytes = Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
  return crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}
