//! The IndexedDB thread store (wasm only), on `indexed_db_futures`. It behaves exactly like
//! [`MemoryStore`] (versions, conflicts, tail rewrites, paging) because both plan their
//! writes with [`plan_commit`].
//!
//! Schema (database version [`DB_VERSION`], docs/design.md "Stored data"):
//! - `threads`, keyPath `id`: the [`ThreadRecord`] in its JSON shape (camelCase, `null` for
//!   `None`). Its `schemaVersion` is the record format; records of a later format are read
//!   for the fields this version knows.
//! - `messages`, keyPath `["thread", "seq"]`: `{ thread: string, seq: number, json: string }`,
//!   the message JSON kept as text (exact key order, one `JSON.parse` to read).
//! - `audit` (database version 2), keyPath `["thread", "seq"]`: the thread's audit records in
//!   the same row shape, numbered 1..=`auditCount`.
//! - `grants` (database version 3), keyPath `id`: the database's remembered grants
//!   (`grants.rs`).
//!
//! Every method is one transaction. `load` reads the record and the row at
//! `[thread, messageCount]` (two gets, whatever the thread's length); `commit` reads, plans
//! and writes in one `readwrite` transaction over all three stores, which IndexedDB runs one at a
//! time, so two tabs committing from the same version cannot both win; `page` reads one
//! bounded key range. Nothing else is awaited while a transaction is open (it would commit
//! itself when idle), and a write is kept only by an explicit commit: a transaction dropped
//! on an early return rolls back.
//!
//! A handle's connection closes when another connection asks for a version change (an upgrade
//! or `delete_database` elsewhere); the next call then opens a new one, once.
//!
//! [`MemoryStore`]: super::MemoryStore

mod connection;
mod grants;
mod values;

use super::ownership::{Writer, plan_release, plan_renew};
use super::page::{Rows, window};
use super::record::{MessageRow, Queued, Snapshot, StoreError, Stored, ThreadRecord, plan_commit};
use crate::engine::Commit;
use connection::Connection;
use indexed_db_futures::KeyRange;
use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use std::cell::RefCell;
use values::{RowWriter, from_js_value, idb, read_row, record_from_js, record_to_js, row_key};
use wasm_bindgen::JsValue;

/// The IndexedDB version of the schema above. A later version adds its upgrade step in
/// `connection::connect`.
pub const DB_VERSION: u32 = 3;
const THREADS: &str = "threads";
const MESSAGES: &str = "messages";
const AUDIT: &str = "audit";
const GRANTS: &str = "grants";
const BOTH: &[&str] = &[THREADS, MESSAGES];
const ALL: &[&str] = &[THREADS, MESSAGES, AUDIT];
const RECORDS: &[&str] = &[THREADS];

/// A connection to one Gatehouse database. Handles on the same database (in this page or in
/// other tabs) see each other's commits; a commit made from an older version is a conflict.
pub struct IndexedDbStore {
    /// Replaced by a new connection when another one's version change closed it.
    conn: RefCell<Connection>,
    name: String,
    /// The last record this handle read or wrote: thread id, version, message count.
    last: RefCell<Option<(String, u64, u64)>>,
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
    /// (some private modes), a newer database version written by a later release, a database
    /// that is not Gatehouse's, an open blocked for 10 s — is `Unavailable`.
    pub async fn open(database: &str) -> Result<Self, StoreError> {
        Ok(IndexedDbStore {
            conn: RefCell::new(connection::connect(database).await?),
            name: database.to_owned(),
            last: RefCell::new(None),
        })
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The thread's record and tail message; a thread never written is version 0 with no
    /// tail. Two gets, whatever the thread's length.
    pub async fn load(&self, thread_id: &str, now_ms: f64) -> Result<Snapshot, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, BOTH, TransactionMode::Readonly)?;
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
            Some(read_row(thread_id, &value)?.message()?)
        };
        self.seen(&record);
        Ok(Snapshot { record, tail })
    }

    /// The thread's record alone (one get); a thread never written is version 0.
    pub async fn record(&self, thread_id: &str, now_ms: f64) -> Result<ThreadRecord, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, RECORDS, TransactionMode::Readonly)?;
        let record = get_record(&tx, thread_id)
            .await?
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms));
        self.seen(&record);
        Ok(record)
    }

    /// Applies `commit`, made from `expected_version`, in one transaction: all of it with the
    /// record, or nothing. A stale version (or a tail rewrite that does not name the stored
    /// tail) is `Conflict` and writes nothing. A commit future dropped before it resolves may
    /// still land once it has reached the transaction's commit: load again to know.
    pub async fn commit(
        &self,
        thread_id: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now_ms: f64,
    ) -> Result<ThreadRecord, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, ALL, TransactionMode::Readwrite)?;
        // The rows the plan needs (the one after the tail must not exist; a rewritten tail's
        // id) are at the record's message count. The count this handle last saw at
        // `expected_version` is asked for together with the record, in one round trip; the
        // record read in this transaction says whether that guess was right, else they are
        // read again at the real count.
        let guess = self.count_at(thread_id, expected_version);
        let rows_at = |n: u64| -> Result<_, StoreError> {
            let after = if commit.append.is_empty() {
                None
            } else {
                Some(request(&tx, MESSAGES, row_key(thread_id, (n + 1) as f64))?)
            };
            let tail = match (&commit.replace_tail, n) {
                (Some(_), n) if n > 0 => {
                    Some(request(&tx, MESSAGES, row_key(thread_id, n as f64))?)
                }
                _ => None,
            };
            Ok((after, tail))
        };
        let record = request(&tx, THREADS, JsValue::from_str(thread_id))?;
        let early = guess.map(rows_at).transpose()?;
        let current = match record.await? {
            Some(v) => record_from_js(thread_id, &v)?,
            None => ThreadRecord::new(thread_id, now_ms),
        };
        let (after, tail) = match early {
            Some(rows) if guess == Some(current.message_count) => rows,
            _ => rows_at(current.message_count)?,
        };
        let row_after_tail = match after {
            Some(r) => r.await?.is_some(),
            None => false,
        };
        // Like the memory store: an unreadable tail has no id, so rewriting it is refused.
        let tail_id = match tail {
            Some(r) => r.await?.and_then(|v| {
                let m = read_row(thread_id, &v).ok()?.message().ok()?;
                Some(m.id.as_str().to_owned())
            }),
            None => None,
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
                let _ = tx.abort().await;
                return Err(e);
            }
        };
        // All requests are queued now, synchronously: the transaction must not go idle. A
        // request is sent when built; a failure that is not immediate arrives through the
        // transaction (and an early return drops it: rollback).
        {
            let messages = tx.object_store(MESSAGES).map_err(idb)?;
            let rows = RowWriter::new(thread_id);
            for row in &plan.rows {
                drop(messages.put(rows.value(row)?).primitive().map_err(idb)?);
            }
            if !plan.audit.is_empty() {
                let audit = tx.object_store(AUDIT).map_err(idb)?;
                for row in &plan.audit {
                    drop(audit.put(rows.value(row)?).primitive().map_err(idb)?);
                }
            }
            put(&tx, THREADS, record_to_js(&plan.record)?)?;
        }
        finish(tx).await?;
        self.seen(&plan.record);
        Ok(plan.record)
    }

    /// Notes the message count of `record`'s version, for [`IndexedDbStore::commit`]'s guess.
    fn seen(&self, record: &ThreadRecord) {
        *self.last.borrow_mut() = Some((record.id.clone(), record.version, record.message_count));
    }

    fn count_at(&self, thread_id: &str, version: u64) -> Option<u64> {
        match &*self.last.borrow() {
            Some((id, v, count)) if id == thread_id && *v == version => Some(*count),
            _ => None,
        }
    }

    /// Extends `owner`'s lease to `until` (no version bump); false when the lease is no longer
    /// `owner`'s.
    pub async fn renew(
        &self,
        thread_id: &str,
        owner: &str,
        until: f64,
    ) -> Result<bool, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, RECORDS, TransactionMode::Readwrite)?;
        let Some(current) = get_record(&tx, thread_id).await? else {
            return Ok(false);
        };
        let Some(renewed) = plan_renew(&current, owner, until)? else {
            return Ok(false);
        };
        put(&tx, THREADS, record_to_js(&renewed)?)?;
        finish(tx).await?;
        Ok(true)
    }

    /// Clears `owner`'s lease if the record still has it (no version bump).
    pub async fn release(&self, thread_id: &str, owner: &str) -> Result<(), StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, RECORDS, TransactionMode::Readwrite)?;
        let Some(current) = get_record(&tx, thread_id).await? else {
            return Ok(());
        };
        let Some(released) = plan_release(&current, owner) else {
            return Ok(());
        };
        put(&tx, THREADS, record_to_js(&released)?)?;
        finish(tx).await
    }

    /// Up to `limit` messages before `before_seq` (exclusive; `None` = from the tail), oldest
    /// first. Reads the record and one key range of at most `limit` rows.
    pub async fn page(
        &self,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        self.rows(Rows::Messages, thread_id, before_seq, limit)
            .await
    }

    /// Up to `limit` audit records before `before_seq` (exclusive; `None` = from the last),
    /// oldest first, like [`IndexedDbStore::page`].
    pub async fn audit_page(
        &self,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        self.rows(Rows::Audit, thread_id, before_seq, limit).await
    }

    /// Up to `limit` rows of `kind` before `before_seq`, oldest first: the record and one key
    /// range of at most `limit` rows.
    pub async fn rows(
        &self,
        kind: Rows,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        let store = match kind {
            Rows::Messages => MESSAGES,
            Rows::Audit => AUDIT,
        };
        let db = self.db().await?;
        let tx = begin(&db, &[THREADS, store], TransactionMode::Readonly)?;
        let Some(record) = get_record(&tx, thread_id).await? else {
            return Ok(Vec::new());
        };
        let std::ops::Range { start, end } = window(kind.count(&record), before_seq, limit);
        if end == start {
            return Ok(Vec::new());
        }
        // Explicit bounds: the crate's `..b` and `..=b` ranges are swapped.
        let range = KeyRange::Bound(
            row_key(thread_id, (start + 1) as f64),
            false,
            row_key(thread_id, end as f64),
            false,
        );
        let values = tx
            .object_store(store)
            .map_err(idb)?
            .get_all::<JsValue>()
            .with_query::<JsValue, _>(range)
            .primitive()
            .map_err(idb)?
            .await
            .map_err(idb)?;
        let mut rows = Vec::with_capacity((end - start) as usize);
        for (seq, value) in (start + 1..=end).zip(values) {
            let row = read_row(thread_id, &value.map_err(idb)?)?;
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
        let db = self.db().await?;
        let tx = begin(&db, RECORDS, TransactionMode::Readonly)?;
        let values = tx
            .object_store(THREADS)
            .map_err(idb)?
            .get_all::<JsValue>()
            .primitive()
            .map_err(idb)?
            .await
            .map_err(idb)?;
        Ok(values
            .filter_map(|v| {
                let v = v.ok()?;
                let id = js_sys::Reflect::get(&v, &JsValue::from_str("id"))
                    .ok()?
                    .as_string()?;
                record_from_js(&id, &v).ok()
            })
            .collect())
    }

    /// Keeps a copy of what another store holds (a remote thread's record and the rows read
    /// or written with it), as it is, in one transaction: no commit rule, no version of its
    /// own. A copy older than the one kept is not written. The kept record's outbox stays.
    pub async fn mirror(
        &self,
        record: &ThreadRecord,
        rows: &[MessageRow],
        audit: &[MessageRow],
    ) -> Result<(), StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, ALL, TransactionMode::Readwrite)?;
        let kept = get_record(&tx, &record.id).await?;
        if kept.as_ref().is_some_and(|k| k.version > record.version) {
            let _ = tx.abort().await;
            return Ok(());
        }
        let mut record = record.clone();
        record.outbox = kept.map(|k| k.outbox).unwrap_or_default();
        {
            let writer = RowWriter::new(&record.id);
            for (store, list) in [(MESSAGES, rows), (AUDIT, audit)] {
                if list.is_empty() {
                    continue;
                }
                let store = tx.object_store(store).map_err(idb)?;
                for row in list {
                    drop(store.put(writer.value(row)?).primitive().map_err(idb)?);
                }
            }
            put(&tx, THREADS, record_to_js(&record)?)?;
        }
        finish(tx).await
    }

    /// Changes the outbox of a kept copy (see [`IndexedDbStore::mirror`]) in one transaction,
    /// so that two tabs queueing at once both keep theirs; returns how many entries it holds
    /// then. A thread with no copy here yet (a new thread, never written) gets an empty one at
    /// version 0, which any record the handler sends replaces, outbox kept.
    pub async fn edit_outbox(
        &self,
        thread_id: &str,
        edit: &dyn Fn(&mut Vec<Queued>),
    ) -> Result<usize, StoreError> {
        let db = self.db().await?;
        let tx = begin(&db, RECORDS, TransactionMode::Readwrite)?;
        let mut record = match get_record(&tx, thread_id).await? {
            Some(r) => r,
            None => ThreadRecord::new(thread_id, js_sys::Date::now()),
        };
        edit(&mut record.outbox);
        let n = record.outbox.len();
        put(&tx, THREADS, record_to_js(&record)?)?;
        finish(tx).await?;
        Ok(n)
    }

    /// Deletes a thread: its record, all its messages and its audit trail, in one
    /// transaction.
    pub async fn delete(&self, thread_id: &str) -> Result<(), StoreError> {
        let db = self.db().await?;
        let tx = begin(
            &db,
            &[THREADS, MESSAGES, AUDIT, GRANTS],
            TransactionMode::Readwrite,
        )?;
        delete(&tx, THREADS, KeyRange::Only(JsValue::from_str(thread_id)))?;
        grants::drop_thread_grants(&tx, thread_id).await?;
        for store in [MESSAGES, AUDIT] {
            let rows = KeyRange::Bound(
                row_key(thread_id, f64::NEG_INFINITY),
                false,
                row_key(thread_id, f64::INFINITY),
                false,
            );
            delete(&tx, store, rows)?;
        }
        finish(tx).await
    }

    /// Deletes the database `name` (tests, "forget everything"). Open handles on it close
    /// themselves when asked; this waits until they have.
    pub async fn delete_database(name: &str) -> Result<(), StoreError> {
        connection::delete_database(name).await
    }

    /// The open connection. When another connection's version change (or the browser) closed
    /// it, a new one is opened first (the database may be gone or newer by then: that fails).
    async fn db(&self) -> Result<Database, StoreError> {
        if self.conn.borrow().is_closed() {
            let fresh = connection::connect(&self.name).await?;
            drop(self.conn.replace(fresh));
        }
        Ok(self.conn.borrow().db())
    }
}

fn begin<'a>(
    db: &'a Database,
    stores: &[&str],
    mode: TransactionMode,
) -> Result<Transaction<'a>, StoreError> {
    db.transaction(stores).with_mode(mode).build().map_err(idb)
}

/// Commits and waits until the transaction completes. The error is the transaction's own when
/// it has one (a quota failure at commit time aborts the transaction without a failing
/// request), else the failing request's.
async fn finish(tx: Transaction<'_>) -> Result<(), StoreError> {
    let raw: web_sys::IdbTransaction = tx.as_sys().clone().into();
    tx.commit().await.map_err(|e| match raw.error() {
        Some(own) => from_js_value(&own),
        None => idb(e),
    })
}

fn missing(thread_id: &str, seq: u64) -> StoreError {
    StoreError::Corrupt(format!("message {seq} of thread {thread_id:?} is missing"))
}

/// Queues a delete of the keys in `keys`.
fn delete(tx: &Transaction<'_>, store: &str, keys: KeyRange<JsValue>) -> Result<(), StoreError> {
    let store = tx.object_store(store).map_err(idb)?;
    drop(store.delete::<JsValue, _>(keys).primitive().map_err(idb)?);
    Ok(())
}

/// Queues a put.
fn put(tx: &Transaction<'_>, store: &str, value: JsValue) -> Result<(), StoreError> {
    let store = tx.object_store(store).map_err(idb)?;
    drop(store.put(value).primitive().map_err(idb)?);
    Ok(())
}

/// Sends a get now; its value is awaited later (requests of one transaction are answered in
/// the order they were made).
fn request(
    tx: &Transaction<'_>,
    store: &str,
    key: JsValue,
) -> Result<
    impl std::future::Future<Output = Result<Option<JsValue>, StoreError>> + use<>,
    StoreError,
> {
    let req = tx
        .object_store(store)
        .map_err(idb)?
        .get::<JsValue, JsValue, _>(KeyRange::Only(key))
        .primitive()
        .map_err(idb)?;
    Ok(async move { req.await.map_err(idb) })
}

async fn get(
    tx: &Transaction<'_>,
    store: &str,
    key: JsValue,
) -> Result<Option<JsValue>, StoreError> {
    tx.object_store(store)
        .map_err(idb)?
        .get::<JsValue, JsValue, _>(KeyRange::Only(key))
        .primitive()
        .map_err(idb)?
        .await
        .map_err(idb)
}

async fn get_record(
    tx: &Transaction<'_>,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    get(tx, THREADS, JsValue::from_str(thread_id))
        .await?
        .map(|v| record_from_js(thread_id, &v))
        .transpose()
}

async fn get_row(
    tx: &Transaction<'_>,
    thread_id: &str,
    seq: u64,
) -> Result<Option<JsValue>, StoreError> {
    get(tx, MESSAGES, row_key(thread_id, seq as f64)).await
}
