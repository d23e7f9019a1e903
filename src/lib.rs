//! Gatehouse: a client-side agent SDK whose risky tool calls wait for a human decision.
//!
//! The crate has a pure core (`thread`, `engine`, `schema`, `providers`, and the store model)
//! that builds and is tested natively, and a thin wasm layer (`store::indexeddb`, `driver`,
//! `js`) for browsers. Data flows one way: JS → glue → driver → engine, and back as steps.
//! The wasm layer is the `browser` feature (default): the store handler's core (server/core)
//! builds the pure core for wasm without it, so wasm-only code is
//! `#[cfg(all(target_arch = "wasm32", feature = "browser"))]`.

// No borrow of shared state is held across an `.await` (docs/design.md, "The JS boundary"):
// a pending method keeps nothing borrowed that a callback, or another call, may need.
#![deny(clippy::await_holding_refcell_ref)]
// Without the `remote` feature the remote store is a type with no values
// (src/store/remote_absent.rs): what follows a call that returns one is unreachable, and what
// it would have used is unused. Only in that build; the default build lints all of it.
#![cfg_attr(
    all(feature = "browser", not(feature = "remote")),
    allow(unreachable_code, unused_variables)
)]

// The core's modules, public for the store handler's core (server/core) and the integration
// tests, hidden from the documentation: `cargo doc` shows the Rust API re-exported below and
// nothing else (docs/design.md, "The Rust API", says why this and not a crate of its own).
#[doc(hidden)]
pub mod engine;
#[doc(hidden)]
pub mod event;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod providers;
#[doc(hidden)]
pub mod schema;
#[doc(hidden)]
pub mod store;
#[doc(hidden)]
pub mod thread;

#[cfg(all(target_arch = "wasm32", feature = "browser"))]
mod agent;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
mod convert;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
mod driver;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
mod js;
#[cfg(all(target_arch = "wasm32", feature = "net"))]
#[cfg_attr(not(feature = "browser"), allow(dead_code))] // the MCP client's module uses a part
mod net;

// The Rust API (wasm only: it runs in the browser, like the JS one).
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use agent::{
    Agent, AgentState, EffectivePolicy, Input, McpServer, Model, NeedsApproval, OpenOptions, Page,
    Status, StopReason, Storage, Subscription, ToolError,
};
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use driver::RunOptions;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use driver::error::AgentError;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use driver::live::{ThreadChange, ThreadListChange, ThreadsSubscription};
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use driver::model::ModelRequest;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use driver::tools::{Tool, ToolContext};
pub use engine::{
    AllowedDecisions, AuditRecord, Decision, Decisions, ModelOutput, ModelToolCall, PolicyChange,
    Setting, ToolResults,
};
pub use store::summary::{AgentStatus, ThreadSummary};
pub use thread::{Message, ToolEntry, Usage};

// The global allocator is std's (dlmalloc). talc (7 KB smaller) was dropped after the IndexedDB
// store tests in WebKitGTK failed with it and never with std's: docs/design.md, "The allocator".
