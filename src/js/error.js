// The class of every error Gatehouse throws. src/js/error.rs builds them from Rust errors and
// the package entry (pkg-template/gatehouse.js) for its lifecycle errors, and re-exports the
// class, so `e instanceof GatehouseError` works.
export class GatehouseError extends Error {
  constructor(code, message, retryable) {
    super(message);
    this.name = "GatehouseError";
    this.code = code;
    this.retryable = retryable;
  }
}
