//! Gatehouse: a client-side agent SDK whose risky tool calls wait for a human decision.
//!
//! The crate has a pure core (`thread`, `engine`, `schema`, `providers`) that builds and is
//! tested natively, and a thin wasm layer (`js`, `store::indexeddb`, `driver`) for browsers.

pub mod engine;
pub mod providers;
pub mod schema;
pub mod store;
pub mod thread;
