//! The IndexedDB thread store (wasm only). It behaves exactly like [`MemoryStore`]
//! (versions, conflicts, tail rewrites, paging) because both plan their writes with
//! [`plan_commit`].
//!
//! Schema (database version [`DB_VERSION`]):
//! - `threads`, keyPath `id`: the [`ThreadRecord`] in its JSON shape (camelCase, `null` for
//!   `None`). Its `schemaVersion` is the record format; records of a later format are read
//!   for the fields this version knows.
//! - `messages`, keyPath `["thread", "seq"]`: `{ thread: string, seq: number, json: string }`,
//!   the message JSON kept as text (exact key order, one `JSON.parse` to read).
//!
//! Every method is one transaction. `load` reads the record and the row at
//! `[thread, messageCount]` (two gets, whatever the thread's length); `commit` reads, plans
//! and writes in one `readwrite` transaction over both stores, which IndexedDB runs one at a
//! time, so two tabs committing from the same version cannot both win; `page` reads one
//! bounded key range. No other work is awaited while a transaction is open.
//!
//! Each handle closes its connection when dropped and when another connection asks for a
//! version change (an upgrade or `delete_database` elsewhere); calls on a closed handle fail
//! with `Unavailable`, and opening again recovers.
//!
//! [`MemoryStore`]: super::MemoryStore

mod js;

use super::ownership::{Writer, plan_release, plan_renew};
use super::record::{MessageRow, Snapshot, StoreError, Stored, ThreadRecord, plan_commit};
use crate::engine::Commit;
use js::Tx;
use std::cell::RefCell;
use wasm_bindgen::JsValue;

/// The IndexedDB version of the schema above. Later versions add their upgrade step to
/// `open` (in `js.rs`, `oldVersion < N`).
pub const DB_VERSION: u32 = 1;
const THREADS: &str = "threads";
const MESSAGES: &str = "messages";

/// A connection to one Gatehouse database. Handles on the same database (in this page or in
/// other tabs) see each other's commits; a commit made from an older version is a conflict.
pub struct IndexedDbStore {
    /// The `IDBDatabase`; replaced by a new connection when another one's version change (a
    /// delete, an upgrade) closed it.
    db: RefCell<JsValue>,
    name: String,
}

impl std::fmt::Debug for IndexedDbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedDbStore")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl IndexedDbStore {
    /// Opens (creating or upgrading) the database `database`. Any failure — no IndexedDB
    /// (some private modes), a newer database version written by a later release, a refused
    /// open — is `Unavailable`.
    pub async fn open(database: &str) -> Result<Self, StoreError> {
        Ok(IndexedDbStore {
            db: RefCell::new(connect(database).await?),
            name: database.to_owned(),
        })
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The thread's record and tail message; a thread never written is version 0 with no
    /// tail. Two gets, whatever the thread's length.
    pub async fn load(&self, thread_id: &str, now_ms: f64) -> Result<Snapshot, StoreError> {
        let tx = self.begin(false).await?;
        let Some(record) = get_record(&tx, thread_id).await? else {
            return Ok(Snapshot {
                record: ThreadRecord::new(thread_id, now_ms),
                tail: None,
            });
        };
        let tail = if record.message_count == 0 {
            None
        } else {
            let value = get_row(&tx, thread_id, record.message_count)
                .await?
                .ok_or_else(|| missing(thread_id, record.message_count))?;
            Some(js::read_row(thread_id, &value)?.message()?)
        };
        Ok(Snapshot { record, tail })
    }

    /// Applies `commit`, made from `expected_version`, in one transaction: all of it with the
    /// record, or nothing. A stale version (or a tail rewrite that does not name the stored
    /// tail) is `Conflict` and writes nothing. A commit future dropped before it resolves may
    /// still land once it has reached `tx.commit()`: load again to know.
    pub async fn commit(
        &self,
        thread_id: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now_ms: f64,
    ) -> Result<ThreadRecord, StoreError> {
        let tx = self.begin(true).await?;
        let current = get_record(&tx, thread_id)
            .await?
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms));
        let row_after_tail = !commit.append.is_empty()
            && get_row(&tx, thread_id, current.message_count + 1)
                .await?
                .is_some();
        // Like the memory store: an unreadable tail has no id, so rewriting it is refused.
        let tail_id = match (&commit.replace_tail, current.message_count) {
            (Some(_), n) if n > 0 => get_row(&tx, thread_id, n).await?.and_then(|v| {
                let m = js::read_row(thread_id, &v).ok()?.message().ok()?;
                Some(m.id.as_str().to_owned())
            }),
            _ => None,
        };
        let stored = Stored {
            record: &current,
            tail_id: tail_id.as_deref(),
            row_after_tail,
        };
        let plan = match plan_commit(stored, expected_version, commit, writer, now_ms) {
            Ok(plan) => plan,
            Err(e) => {
                // Nothing was written; wait for the rollback so the caller's next read is
                // not queued behind it.
                tx.abort().await;
                return Err(e);
            }
        };
        // All requests are queued now, synchronously: the transaction must not go idle. A
        // failure of a queued request arrives through the transaction (and an early return
        // drops it: abort).
        let writer = js::RowWriter::new(thread_id);
        for row in &plan.rows {
            tx.put(MESSAGES, &writer.value(row)?)?;
        }
        tx.put(THREADS, &js::record_to_js(&plan.record)?)?;
        tx.commit().await?;
        Ok(plan.record)
    }

    /// Extends `owner`'s lease to `until` (no version bump); false when the lease is no longer
    /// `owner`'s.
    pub async fn renew(
        &self,
        thread_id: &str,
        owner: &str,
        until: f64,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_records(true).await?;
        let Some(current) = get_record(&tx, thread_id).await? else {
            return Ok(false);
        };
        match plan_renew(&current, owner, until)? {
            Some(r) => {
                tx.put(THREADS, &js::record_to_js(&r)?)?;
                tx.commit().await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Clears `owner`'s lease if the record still has it (no version bump).
    pub async fn release(&self, thread_id: &str, owner: &str) -> Result<(), StoreError> {
        let tx = self.begin_records(true).await?;
        let Some(current) = get_record(&tx, thread_id).await? else {
            return Ok(());
        };
        match plan_release(&current, owner) {
            Some(r) => {
                tx.put(THREADS, &js::record_to_js(&r)?)?;
                tx.commit().await
            }
            None => Ok(()),
        }
    }

    /// Up to `limit` messages before `before_seq` (exclusive; `None` = from the tail), oldest
    /// first. Reads the record and one key range of at most `limit` rows.
    pub async fn page(
        &self,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        let tx = self.begin(false).await?;
        let Some(record) = get_record(&tx, thread_id).await? else {
            return Ok(Vec::new());
        };
        let count = record.message_count;
        let end = before_seq.map_or(count, |s| s.saturating_sub(1).min(count));
        let start = end.saturating_sub(u64::from(limit)); // rows start+1 ..= end
        if end == start {
            return Ok(Vec::new());
        }
        let bounds = (
            js::row_key(thread_id, (start + 1) as f64),
            js::row_key(thread_id, end as f64),
        );
        let values = tx.get_all(MESSAGES, Some(bounds)).await?;
        let mut rows = Vec::with_capacity((end - start) as usize);
        for (seq, value) in (start + 1..=end).zip(values.iter()) {
            let row = js::read_row(thread_id, &value)?;
            if row.seq != seq {
                return Err(missing(thread_id, seq));
            }
            rows.push(row);
        }
        if rows.len() as u64 != end - start {
            return Err(missing(thread_id, start + 1 + rows.len() as u64));
        }
        Ok(rows)
    }

    /// Every readable thread record, by id. A record that cannot be read (damaged, or not a
    /// Gatehouse record) is left out rather than failing the whole list.
    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        let tx = self.begin_records(false).await?;
        let values = tx.get_all(THREADS, None).await?;
        Ok(values
            .iter()
            .filter_map(|v| {
                let id = js_sys::Reflect::get(&v, &JsValue::from_str("id"))
                    .ok()
                    .and_then(|id| id.as_string())?;
                js::record_from_js(&id, v).ok()
            })
            .collect())
    }

    /// Deletes a thread: its record and all its messages, in one transaction.
    pub async fn delete(&self, thread_id: &str) -> Result<(), StoreError> {
        let tx = self.begin(true).await?;
        tx.delete(THREADS, &JsValue::from_str(thread_id), None)?;
        tx.delete(
            MESSAGES,
            &js::row_key(thread_id, f64::NEG_INFINITY),
            Some(&js::row_key(thread_id, f64::INFINITY)),
        )?;
        tx.commit().await
    }

    /// Deletes the database `name` (tests, "forget everything"). Open handles on it close
    /// themselves when asked; this waits until they have.
    pub async fn delete_database(name: &str) -> Result<(), StoreError> {
        js::delete_database(name).await
    }

    /// A transaction over both stores.
    async fn begin(&self, readwrite: bool) -> Result<Tx, StoreError> {
        self.begin_on(&[THREADS, MESSAGES], readwrite).await
    }

    /// A transaction over the thread records only.
    async fn begin_records(&self, readwrite: bool) -> Result<Tx, StoreError> {
        self.begin_on(&[THREADS], readwrite).await
    }

    /// A transaction; when the connection was closed by another one's version change, one
    /// new connection is opened first (the database may be gone or newer: then that fails).
    async fn begin_on(&self, stores: &[&str], readwrite: bool) -> Result<Tx, StoreError> {
        let first = Tx::begin(&self.db.borrow(), stores, readwrite);
        match first {
            Err(StoreError::Unavailable(_)) => {
                let fresh = connect(&self.name).await?;
                js::close(&self.db.replace(fresh));
                Tx::begin(&self.db.borrow(), stores, readwrite)
            }
            other => other,
        }
    }
}

impl Drop for IndexedDbStore {
    fn drop(&mut self) {
        js::close(&self.db.borrow());
    }
}

/// A connection to a Gatehouse database (one with both object stores).
async fn connect(database: &str) -> Result<JsValue, StoreError> {
    let db = js::open(database, DB_VERSION).await?;
    if let Some(missing) = [THREADS, MESSAGES]
        .into_iter()
        .find(|s| !js::has_store(&db, s))
    {
        js::close(&db);
        return Err(StoreError::Unavailable(format!(
            "database {database:?} (version {DB_VERSION}) is not a Gatehouse database: \
             it has no {missing:?} object store"
        )));
    }
    Ok(db)
}

fn missing(thread_id: &str, seq: u64) -> StoreError {
    StoreError::Corrupt(format!("message {seq} of thread {thread_id:?} is missing"))
}

async fn get_record(tx: &Tx, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
    tx.get(THREADS, &JsValue::from_str(thread_id))
        .await?
        .map(|v| js::record_from_js(thread_id, v))
        .transpose()
}

async fn get_row(tx: &Tx, thread_id: &str, seq: u64) -> Result<Option<JsValue>, StoreError> {
    tx.get(MESSAGES, &js::row_key(thread_id, seq as f64)).await
}
