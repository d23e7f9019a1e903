//! Thread storage: the record/message model and its commit rule (pure), the memory store, and
//! on wasm the IndexedDB store.

#[cfg(target_arch = "wasm32")]
pub mod indexeddb;
pub mod memory;
mod record;

#[cfg(target_arch = "wasm32")]
pub use indexeddb::IndexedDbStore;
pub use memory::MemoryStore;
pub use record::{
    CommitPlan, MessageRow, SCHEMA_VERSION, Snapshot, StoreError, ThreadRecord, plan_commit,
};
