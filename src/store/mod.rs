//! Thread storage: the record/message model and its commit rule (pure), the memory store, and
//! on wasm the IndexedDB store.

pub mod memory;
mod record;

pub use memory::MemoryStore;
pub use record::{
    CommitPlan, MessageRow, SCHEMA_VERSION, Snapshot, StoreError, ThreadRecord, plan_commit,
};
