// The class of every error Gatehouse throws, in the browser and on the server: src/js/error.rs
// builds them from Rust errors, the package entry (pkg-template/gatehouse.js) for its
// lifecycle errors and re-exports the class, so `e instanceof GatehouseError` works; the store
// handler's modules import this same file (pkg-template/server/gatehouse-error.js links here).
export class GatehouseError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {boolean} [retryable]
   */
  constructor(code, message, retryable = false) {
    super(message);
    this.name = "GatehouseError";
    this.code = code;
    this.retryable = retryable;
  }
}

/**
 * A GatehouseError, also one from another copy of the package (another bundle, another
 * realm): told by its name and its code, since `instanceof` sees only this copy's class.
 * @param {unknown} e
 * @returns {e is GatehouseError}
 */
export function isGatehouseError(e) {
  return e instanceof GatehouseError || (typeof e === "object" && e !== null &&
    /** @type {{ name?: unknown }} */ (e).name === "GatehouseError" &&
    typeof /** @type {{ code?: unknown }} */ (e).code === "string");
}
