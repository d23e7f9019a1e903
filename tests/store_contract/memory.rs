//! The memory store under the contract (natively in `tests/store_memory.rs`, in browsers in
//! `tests/browser_store.rs`). Its calls never wait.

use super::{ContractStore, Inexpressible, Outside};
use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::page::Rows;
use gatehouse_agent::store::{MemoryStore, MessageRow, Snapshot, StoreError, ThreadRecord, Writer};

impl ContractStore for MemoryStore {
    async fn open(name: &str) -> Self {
        MemoryStore::open(name)
    }

    async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        MemoryStore::load(self, thread, now)
    }

    async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError> {
        Ok(MemoryStore::record(self, thread, now))
    }

    async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now: f64,
    ) -> Result<ThreadRecord, StoreError> {
        MemoryStore::commit(self, thread, expected_version, commit, writer, now)
    }

    async fn renew(&self, thread: &str, owner: &str, until: f64) -> Result<bool, StoreError> {
        MemoryStore::renew(self, thread, owner, until)
    }

    async fn release(&self, thread: &str, owner: &str) -> Result<(), StoreError> {
        MemoryStore::release(self, thread, owner);
        Ok(())
    }

    async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        MemoryStore::rows(self, kind, thread, before_seq, limit)
    }

    async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        Ok(MemoryStore::list(self))
    }

    async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        MemoryStore::delete(self, thread);
        Ok(())
    }

    /// Through `MemoryStore::put_raw`, which writes around the commit rule.
    async fn change_outside(&self, thread: &str, change: Outside) -> Result<(), Inexpressible> {
        let mut record = MemoryStore::record(self, thread, 0.0);
        match change {
            Outside::SchemaVersion(v) => record.schema_version = v,
            Outside::MessageCount(n) => record.message_count = n,
            Outside::UnreadableRow(seq) => {
                let row = MessageRow {
                    seq,
                    json: "{not json".into(),
                };
                self.put_raw(thread, None, vec![row]);
                return Ok(());
            }
            // The memory store keeps records as `ThreadRecord` values, not bytes or JS
            // objects: there is nothing that could fail to read as one.
            Outside::UnreadableRecord => {
                return Err(Inexpressible(
                    "the memory store holds typed records: none can be unreadable",
                ));
            }
        }
        self.put_raw(thread, Some(record), Vec::new());
        Ok(())
    }
}
