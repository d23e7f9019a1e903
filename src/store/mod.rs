//! Thread storage: the record/message model and its commit rule (pure), the memory store, the
//! remote store's protocol (pure), and on wasm the IndexedDB store and the remote store.

pub mod authority;
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub mod indexeddb;
pub mod memory;
pub mod ownership;
pub mod page;
mod record;
#[cfg(all(target_arch = "wasm32", feature = "remote"))]
pub mod remote;
/// Without the `remote` feature, a remote store that cannot exist: the driver's remote paths
/// compile unchanged and the optimizer drops them.
#[cfg(all(target_arch = "wasm32", feature = "browser", not(feature = "remote")))]
#[path = "remote_absent.rs"]
pub mod remote;
pub mod summary;
pub mod wire;

#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use indexeddb::IndexedDbStore;
pub use memory::MemoryStore;
pub use ownership::{
    Admission, LEASE_MS, Lease, LockAttempt, LockProbe, Owner, RENEW_MS, Writer, admit, judge,
    must_recover,
};
pub use record::{
    CommitPlan, MessageRow, Queued, SCHEMA_VERSION, Snapshot, StoreError, Stored, ThreadRecord,
    check_writable, plan_commit,
};
#[cfg(all(target_arch = "wasm32", feature = "browser"))]
pub use remote::RemoteStore;

/// Whether the stored grant `grant` (its JSON) is a thread grant of `thread`: deleting the
/// thread deletes it. A grant's own reader is elsewhere (src/driver/grants.rs); this reads
/// one key.
pub fn grant_of_thread(grant: &str, thread: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(grant)
        .is_ok_and(|g| g["scope"] == "thread" && g["threadId"] == thread)
}
