// @ts-check
// Remembered grants' own code, loaded only when a grant is made or listed, or when a thread's
// store holds one as its calls are gated: the main wasm keeps grants as JSON text and leaves
// their reader and matcher out (docs/design.md, "The grants' module"). Its wasm is
// grants-module/ in the repository (the crate's engine grants). gatehouse.js makes and lists
// grants with `make` and `inForce`, and registers `book` with each main wasm: the driver
// (src/driver/grants.rs) asks it before calls are gated.
import init, { Book, inForce as inForceOf, make as makeOf } from "./grants.js";
import { loadOnce } from "../load-wasm.js";

/** Loads the module once; a failed load is not kept, so the next use tries again. */
const load = loadOnce(init, new URL("./grants_bg.wasm", import.meta.url));

/**
 * The grant an agent's `request` (JSON) makes for its thread, as JSON. A malformed request
 * rejects with the reason, a string (gatehouse.js's `invalid_grant`).
 * @param {string} request @param {string} thread @param {string} id @param {number} now
 * @param {string | undefined} by
 */
export async function make(request, thread, id, now, by) {
  await load();
  return makeOf(request, thread, id, now, by);
}

/** The grants among `texts` (stored JSON) in force for `thread` at `now`, as JSON. */
export async function inForce(/** @type {string[]} */ texts, /** @type {string} */ thread, /** @type {number} */ now) {
  await load();
  return inForceOf(texts, thread, now);
}

/** What the engine asks of `thread`'s grants among `texts`: a `Book`, which reads them once
 *  and answers `approving` and `stillApproves` synchronously. */
export async function book(/** @type {string[]} */ texts, /** @type {string} */ thread) {
  await load();
  return new Book(texts, thread);
}
