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

use super::record::{MessageRow, Snapshot, StoreError, ThreadRecord, plan_commit};
use crate::engine::Commit;
use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use indexed_db_futures::{KeyPath, KeyRange};
use wasm_bindgen::JsValue;
use wasm_bindgen::closure::Closure;

/// The IndexedDB version of the schema above. Later versions add their upgrade step to
/// `open` (`old_version < N`).
pub const DB_VERSION: u32 = 1;
const THREADS: &str = "threads";
const MESSAGES: &str = "messages";

/// A connection to one Gatehouse database. Handles on the same database (in this page or in
/// other tabs) see each other's commits; a commit made from an older version is a conflict.
pub struct IndexedDbStore {
    db: Database,
    name: String,
    /// `onversionchange`: closes this connection so another one can upgrade or delete.
    _on_version_change: Closure<dyn FnMut()>,
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
        let db = Database::open(database)
            .with_version(DB_VERSION)
            .with_on_upgrade_needed(|event, db| {
                if event.old_version() < 1.0 {
                    db.create_object_store(THREADS)
                        .with_key_path(KeyPath::One("id"))
                        .build()?;
                    db.create_object_store(MESSAGES)
                        .with_key_path(KeyPath::from(["thread", "seq"]))
                        .build()?;
                }
                Ok(())
            })
            .build()
            .map_err(js::open_error)?
            .await
            .map_err(js::open_error)?;
        let names: Vec<String> = db.object_store_names().collect();
        if let Some(missing) = [THREADS, MESSAGES]
            .into_iter()
            .find(|s| !names.iter().any(|n| n == s))
        {
            db.close();
            return Err(StoreError::Unavailable(format!(
                "database {database:?} (version {DB_VERSION}) is not a Gatehouse database: \
                 it has no {missing:?} object store"
            )));
        }
        let conn = db.clone();
        let on_version_change = Closure::<dyn FnMut()>::new(move || conn.clone().close());
        let _ = js_sys::Reflect::set(
            db.as_sys().as_ref(),
            &JsValue::from_str("onversionchange"),
            on_version_change.as_ref(),
        );
        Ok(IndexedDbStore {
            db,
            name: database.to_owned(),
            _on_version_change: on_version_change,
        })
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The thread's record and tail message; a thread never written is version 0 with no
    /// tail. Two gets, whatever the thread's length.
    pub async fn load(&self, thread_id: &str, now_ms: f64) -> Result<Snapshot, StoreError> {
        let tx = self.begin(TransactionMode::Readonly)?;
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
        now_ms: f64,
    ) -> Result<ThreadRecord, StoreError> {
        let tx = self.begin(TransactionMode::Readwrite)?;
        let raw_tx: JsValue = tx.as_sys().clone().into();
        let current = get_record(&tx, thread_id)
            .await?
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms));
        // Like the memory store: an unreadable tail has no id, so rewriting it is refused.
        let tail_id = match (&commit.replace_tail, current.message_count) {
            (Some(_), n) if n > 0 => get_row(&tx, thread_id, n).await?.and_then(|v| {
                let m = js::read_row(thread_id, &v).ok()?.message().ok()?;
                Some(m.id.as_str().to_owned())
            }),
            _ => None,
        };
        let plan = match plan_commit(
            &current,
            tail_id.as_deref(),
            expected_version,
            commit,
            now_ms,
        ) {
            Ok(plan) => plan,
            Err(e) => {
                // Nothing was written; wait for the rollback so the caller's next read is
                // not queued behind it.
                let _ = tx.abort().await;
                return Err(e);
            }
        };
        // All requests are queued now, synchronously: the transaction must not go idle. A
        // request is sent when built; dropping its future only drops the Rust side, and its
        // failure arrives through the transaction (an early return drops it: abort).
        {
            let messages = tx.object_store(MESSAGES).map_err(js::idb)?;
            let writer = js::RowWriter::new(thread_id);
            for row in &plan.rows {
                drop(
                    messages
                        .put(writer.value(row)?)
                        .primitive()
                        .map_err(js::idb)?,
                );
            }
            let threads = tx.object_store(THREADS).map_err(js::idb)?;
            drop(
                threads
                    .put(js::record_to_js(&plan.record)?)
                    .primitive()
                    .map_err(js::idb)?,
            );
        }
        match tx.commit().await {
            Ok(()) => Ok(plan.record),
            Err(e) => Err(js::tx_error(&raw_tx, e)),
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
        let tx = self.begin(TransactionMode::Readonly)?;
        let Some(record) = get_record(&tx, thread_id).await? else {
            return Ok(Vec::new());
        };
        let count = record.message_count;
        let end = before_seq.map_or(count, |s| s.saturating_sub(1).min(count));
        let start = end.saturating_sub(u64::from(limit)); // rows start+1 ..= end
        if end == start {
            return Ok(Vec::new());
        }
        // Explicit bounds: `..b` / `..=b` are swapped in indexed_db_futures 0.6.4.
        let range = KeyRange::Bound(
            js::row_key(thread_id, (start + 1) as f64),
            false,
            js::row_key(thread_id, end as f64),
            false,
        );
        let store = tx.object_store(MESSAGES).map_err(js::idb)?;
        let values = store
            .get_all::<JsValue>()
            .with_query::<JsValue, _>(range)
            .primitive()
            .map_err(js::idb)?
            .await
            .map_err(js::idb)?;
        let mut rows = Vec::with_capacity((end - start) as usize);
        for (seq, value) in (start + 1..=end).zip(values) {
            let row = js::read_row(thread_id, &value.map_err(js::idb)?)?;
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

    /// Every stored thread record, by id.
    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        let tx = self
            .db
            .transaction(THREADS)
            .with_mode(TransactionMode::Readonly)
            .build()
            .map_err(js::idb)?;
        let store = tx.object_store(THREADS).map_err(js::idb)?;
        let values = store
            .get_all::<JsValue>()
            .primitive()
            .map_err(js::idb)?
            .await
            .map_err(js::idb)?;
        values
            .map(|v| {
                let v = v.map_err(js::idb)?;
                let id = js_sys::Reflect::get(&v, &JsValue::from_str("id"))
                    .ok()
                    .and_then(|id| id.as_string())
                    .unwrap_or_default();
                js::record_from_js(&id, v)
            })
            .collect()
    }

    /// Deletes a thread: its record and all its messages, in one transaction.
    pub async fn delete(&self, thread_id: &str) -> Result<(), StoreError> {
        let tx = self.begin(TransactionMode::Readwrite)?;
        let raw_tx: JsValue = tx.as_sys().clone().into();
        {
            let threads = tx.object_store(THREADS).map_err(js::idb)?;
            drop(
                threads
                    .delete::<JsValue, _>(KeyRange::Only(JsValue::from_str(thread_id)))
                    .primitive()
                    .map_err(js::idb)?,
            );
            let messages = tx.object_store(MESSAGES).map_err(js::idb)?;
            let all = KeyRange::Bound(
                js::row_key(thread_id, f64::NEG_INFINITY),
                false,
                js::row_key(thread_id, f64::INFINITY),
                false,
            );
            drop(
                messages
                    .delete::<JsValue, _>(all)
                    .primitive()
                    .map_err(js::idb)?,
            );
        }
        tx.commit().await.map_err(|e| js::tx_error(&raw_tx, e))
    }

    /// Deletes the database `name` (tests, "forget everything"). Open handles on it close
    /// themselves when asked; this waits until they have.
    pub async fn delete_database(name: &str) -> Result<(), StoreError> {
        Database::delete_by_name(name)
            .map_err(js::open_error)?
            .await
            .map_err(|e| js::open_error(e.into()))
    }

    fn begin(&self, mode: TransactionMode) -> Result<Transaction<'_>, StoreError> {
        self.db
            .transaction([THREADS, MESSAGES])
            .with_mode(mode)
            .build()
            .map_err(js::idb)
    }
}

impl Drop for IndexedDbStore {
    fn drop(&mut self) {
        let _ = js_sys::Reflect::set(
            self.db.as_sys().as_ref(),
            &JsValue::from_str("onversionchange"),
            &JsValue::NULL,
        );
        self.db.clone().close();
    }
}

fn missing(thread_id: &str, seq: u64) -> StoreError {
    StoreError::Corrupt(format!("message {seq} of thread {thread_id:?} is missing"))
}

async fn get_record(
    tx: &Transaction<'_>,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    let store = tx.object_store(THREADS).map_err(js::idb)?;
    let value: Option<JsValue> = store
        .get::<JsValue, JsValue, _>(KeyRange::Only(JsValue::from_str(thread_id)))
        .primitive()
        .map_err(js::idb)?
        .await
        .map_err(js::idb)?;
    value.map(|v| js::record_from_js(thread_id, v)).transpose()
}

async fn get_row(
    tx: &Transaction<'_>,
    thread_id: &str,
    seq: u64,
) -> Result<Option<JsValue>, StoreError> {
    let store = tx.object_store(MESSAGES).map_err(js::idb)?;
    store
        .get::<JsValue, JsValue, _>(KeyRange::Only(js::row_key(thread_id, seq as f64)))
        .primitive()
        .map_err(js::idb)?
        .await
        .map_err(js::idb)
}
