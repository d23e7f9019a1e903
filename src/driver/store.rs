//! The store an agent writes to: IndexedDB in browsers, memory elsewhere (or on request).

use super::error::AgentError;
use crate::engine::Commit;
use crate::store::indexeddb::IndexedDbStore;
use crate::store::page::Rows;
use crate::store::{
    MemoryStore, MessageRow, RemoteStore, Snapshot, StoreError, ThreadRecord, Writer,
};
use serde::Deserialize;
use std::rc::Rc;

/// The stores `storage.kind` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageKind {
    IndexedDb,
    Memory,
    /// The app's Postgres behind its store handler (docs/design.md, "Across devices").
    Remote,
}

/// Where a remote store's handler is: its URL and the headers every request carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteAt {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Without the `remote` feature there is no remote store, and no `RemoteAt` either.
    #[cfg(not(feature = "remote"))]
    pub never: crate::store::remote::Absent,
}

impl RemoteAt {
    /// The store of this handler, named for this page's locks and notices after the
    /// database and the URL.
    #[cfg(feature = "remote")]
    pub fn open(&self, database: &str) -> RemoteStore {
        let name = format!("{database}@{}", self.url);
        RemoteStore::open(&self.url, self.headers.clone(), name)
    }

    #[cfg(not(feature = "remote"))]
    pub fn open(&self, _: &str) -> RemoteStore {
        RemoteStore::open(self.never)
    }
}

#[derive(Clone)]
pub enum Store {
    Memory(MemoryStore),
    IndexedDb(Rc<IndexedDbStore>),
    Remote(Rc<RemoteStore>),
}

impl Store {
    pub async fn open(
        kind: StorageKind,
        database: &str,
        remote: Option<&RemoteAt>,
    ) -> Result<Store, AgentError> {
        Ok(match (kind, remote) {
            (StorageKind::Memory, _) => Store::Memory(MemoryStore::open(database)),
            (StorageKind::IndexedDb, _) => {
                Store::IndexedDb(Rc::new(IndexedDbStore::open(database).await?))
            }
            (StorageKind::Remote, Some(at)) => {
                let copy = format!("{database}:remote");
                Store::Remote(Rc::new(at.open(database).with_copy(&copy).await))
            }
            (StorageKind::Remote, None) => {
                return Err(AgentError::InvalidConfig(
                    "`storage: { kind: \"remote\" }` needs the handler's `url`".into(),
                ));
            }
        })
    }

    /// The database name (for cross-tab locks).
    pub fn name(&self) -> &str {
        match self {
            Store::Memory(s) => s.name(),
            Store::IndexedDb(s) => s.name(),
            Store::Remote(s) => s.name(),
        }
    }

    pub async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        match self {
            Store::Memory(s) => s.load(thread, now),
            Store::IndexedDb(s) => s.load(thread, now).await,
            Store::Remote(s) => s.load(thread, now).await,
        }
    }

    /// The thread's record alone, without its tail (what a run's admission needs).
    pub async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError> {
        match self {
            Store::Memory(s) => Ok(s.record(thread, now)),
            Store::IndexedDb(s) => s.record(thread, now).await,
            Store::Remote(s) => s.record(thread, now).await,
        }
    }

    pub async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now: f64,
    ) -> Result<ThreadRecord, StoreError> {
        match self {
            Store::Memory(s) => s.commit(thread, expected_version, commit, writer, now),
            Store::IndexedDb(s) => {
                s.commit(thread, expected_version, commit, writer, now)
                    .await
            }
            Store::Remote(s) => s.commit(thread, expected_version, commit, writer).await,
        }
    }

    /// Extends `owner`'s lease; false when it is no longer `owner`'s.
    pub async fn renew(&self, thread: &str, owner: &str, until: f64) -> Result<bool, StoreError> {
        match self {
            Store::Memory(s) => s.renew(thread, owner, until),
            Store::IndexedDb(s) => s.renew(thread, owner, until).await,
            Store::Remote(s) => s.renew(thread, owner).await,
        }
    }

    /// Clears `owner`'s lease if the record still has it. A remote release also names the
    /// `version` its run last saw: a delayed one does not clear the agent's next run's lease
    /// (the local stores get no delayed requests).
    pub async fn release(&self, thread: &str, owner: &str, version: u64) -> Result<(), StoreError> {
        match self {
            Store::Memory(s) => {
                s.release(thread, owner);
                Ok(())
            }
            Store::IndexedDb(s) => s.release(thread, owner).await,
            Store::Remote(s) => s.release(thread, owner, Some(version)).await,
        }
    }

    /// Up to `limit` rows of `kind` (messages or audit records) before `before_seq`, oldest
    /// first.
    pub async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        match self {
            Store::Memory(s) => s.rows(kind, thread, before_seq, limit),
            Store::IndexedDb(s) => s.rows(kind, thread, before_seq, limit).await,
            Store::Remote(s) => s.rows(kind, thread, before_seq, limit).await,
        }
    }

    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        match self {
            Store::Memory(s) => Ok(s.list()),
            Store::IndexedDb(s) => s.list().await,
            Store::Remote(s) => s.list().await,
        }
    }

    pub async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        match self {
            Store::Memory(s) => {
                s.delete(thread);
                Ok(())
            }
            Store::IndexedDb(s) => s.delete(thread).await,
            Store::Remote(s) => s.delete(thread).await,
        }
    }

    /// The stored grants that may apply to `thread`, as JSON (docs/design.md, "Remembered
    /// grants"): a local database's every grant; a remote thread's as its handler lists them
    /// for this identity. Which are in force is the grants' code's to say.
    pub async fn grant_texts(&self, thread: &str) -> Result<Vec<String>, StoreError> {
        match self {
            Store::Memory(s) => Ok(s.grants()),
            Store::IndexedDb(s) => s.grants().await,
            Store::Remote(s) => s.grants(thread).await,
        }
    }

    /// Keeps the grant `id`, `grant` its JSON (made here: a local store), or asks the handler
    /// to make it from `request` (a remote store: its id, time and maker are the handler's;
    /// `id` is the request's `Idempotency-Key`, so a retry finds the grant the first try
    /// made). The grant kept, as JSON.
    pub async fn put_grant(
        &self,
        id: &str,
        grant: &str,
        request: &str,
    ) -> Result<String, StoreError> {
        match self {
            Store::Memory(s) => s.put_grant(id, grant),
            Store::IndexedDb(s) => s.put_grant(id, grant).await?,
            Store::Remote(s) => return s.put_grant(request, id).await,
        }
        Ok(grant.to_owned())
    }

    /// Revokes the grant `id`; false when none is in force.
    pub async fn revoke_grant(&self, id: &str) -> Result<bool, StoreError> {
        match self {
            Store::Memory(s) => Ok(s.revoke_grant(id)),
            Store::IndexedDb(s) => s.revoke_grant(id).await,
            Store::Remote(s) => s.revoke_grant(id).await,
        }
    }
}
