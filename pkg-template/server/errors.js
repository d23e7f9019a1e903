// @ts-check
// The store handler's errors: GatehouseError (what the app sees thrown) and Refusal (an answer
// with a status and a stable code), and the refusals every module gives.

import { GatehouseError } from "./gatehouse-error.js";

// The package's one error class: src/js/error.js, which gatehouse-error.js links to here and
// the build copies beside these modules.
export { GatehouseError };

export class Refusal {
  constructor(status, code, message, extra = {}) {
    this.status = status;
    this.body = { error: { code, message, ...extra } };
  }
}

/** The app's `authorize` threw: not the database's fault, and not worth retrying. */
export function authorizeFailed(e) {
  const status = e && (e.status === 401 || e.status === 403) ? 403 : 500;
  return new Refusal(status, "authorize_failed",
    "authorize failed; nothing was read or written (the app's error stays on the server)");
}

export function invalidConfig(message) {
  return new GatehouseError("invalid_config", `createStoreHandler: ${message}`);
}

/** A core answer: a refusal (`{status, error}`) becomes a thrown Refusal. */
export function answerOf(text) {
  const v = JSON.parse(text);
  if (v && typeof v.status === "number" && v.error) {
    const r = new Refusal(v.status, v.error.code, v.error.message);
    r.body = { error: v.error };
    throw r;
  }
  return v;
}

export function storageError(e) {
  const code = e && typeof e.code === "string" ? ` (${e.code})` : "";
  return {
    error: {
      code: "storage",
      message: `the database failed${code}; a commit may or may not have been applied: retry it ` +
        "with the same commit id",
    },
  };
}

export function notFound() {
  return new Refusal(404, "not_found", "no such route");
}

export function invalid(message) {
  return new Refusal(400, "invalid_request", message);
}

export function tooLarge(max) {
  return new Refusal(413, "too_large", `the body is larger than ${max} bytes`);
}
