//! An in-memory thread store with the same behaviour as the IndexedDB one (versions,
//! conflicts, paging). Stores with the same database name share their data within one
//! JS realm (or one native thread), so two agents on one thread see each other.

use super::ownership::{Writer, plan_release, plan_renew};
use super::page::{Rows, window};
use super::record::{MessageRow, Snapshot, StoreError, Stored, ThreadRecord, plan_commit};
use crate::engine::Commit;
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Debug, Default)]
struct Thread {
    record: Option<ThreadRecord>,
    rows: Vec<MessageRow>,
    /// Audit records, `seq` 1 first.
    audit: Vec<MessageRow>,
}

/// Threads by id, in id order (`list` returns them so). Plain vectors rather than a
/// `BTreeMap` and a `HashMap`: a few databases and threads, and each map type costs several
/// KB of wasm.
type Db = Rc<RefCell<Vec<(String, Thread)>>>;

/// A database's remembered grants (docs/design.md, "Remembered grants"): id and JSON.
type Grants = Rc<RefCell<Vec<(String, String)>>>;

thread_local! {
    static DATABASES: RefCell<Vec<(String, Db, Grants)>> = const { RefCell::new(Vec::new()) };
}

fn find(db: &[(String, Thread)], thread_id: &str) -> Result<usize, usize> {
    db.binary_search_by(|(id, _)| id.as_str().cmp(thread_id))
}

#[derive(Debug, Clone)]
pub struct MemoryStore {
    db: Db,
    grants: Grants,
    name: String,
}

impl MemoryStore {
    /// The store named `database` in this realm, created on first use.
    pub fn open(database: &str) -> Self {
        let (db, grants) = DATABASES.with(|d| {
            let mut d = d.borrow_mut();
            match d.iter().find(|(name, ..)| name == database) {
                Some((_, db, grants)) => (db.clone(), grants.clone()),
                None => {
                    let (db, grants) = (Db::default(), Grants::default());
                    d.push((database.to_owned(), db.clone(), grants.clone()));
                    (db, grants)
                }
            }
        });
        MemoryStore {
            db,
            grants,
            name: database.to_owned(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Forgets a database (tests).
    pub fn drop_database(database: &str) {
        DATABASES.with(|d| d.borrow_mut().retain(|(name, ..)| name != database));
    }

    /// The thread's record alone (a thread never written is version 0).
    pub fn record(&self, thread_id: &str, now_ms: f64) -> ThreadRecord {
        let db = self.db.borrow();
        find(&db, thread_id)
            .ok()
            .and_then(|i| db[i].1.record.clone())
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms))
    }

    pub fn load(&self, thread_id: &str, now_ms: f64) -> Result<Snapshot, StoreError> {
        let db = self.db.borrow();
        let found = find(&db, thread_id).ok().map(|i| &db[i].1);
        let Some(t) = found.filter(|t| t.record.is_some()) else {
            return Ok(Snapshot {
                record: ThreadRecord::new(thread_id, now_ms),
                tail: None,
            });
        };
        let record = t
            .record
            .clone()
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms));
        let tail = match (record.message_count as usize).checked_sub(1) {
            Some(i) => Some(
                t.rows
                    .get(i)
                    .ok_or_else(|| StoreError::Corrupt(format!("message {} is missing", i + 1)))?
                    .message()?,
            ),
            None => None,
        };
        Ok(Snapshot { record, tail })
    }

    pub fn commit(
        &self,
        thread_id: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now_ms: f64,
    ) -> Result<ThreadRecord, StoreError> {
        let mut db = self.db.borrow_mut();
        let i = find(&db, thread_id).unwrap_or_else(|i| {
            db.insert(i, (thread_id.to_owned(), Thread::default()));
            i
        });
        let t = &mut db[i].1;
        let current = t
            .record
            .clone()
            .unwrap_or_else(|| ThreadRecord::new(thread_id, now_ms));
        let tail_id = (current.message_count as usize)
            .checked_sub(1)
            .and_then(|i| t.rows.get(i))
            .and_then(|r| r.message().ok())
            .map(|m| m.id.to_string());
        let stored = Stored {
            record: &current,
            tail_id: tail_id.as_deref(),
            row_after_tail: t.rows.len() as u64 > current.message_count,
        };
        let plan = plan_commit(stored, expected_version, commit, writer, now_ms)?;
        put_rows(&mut t.rows, plan.rows);
        put_rows(&mut t.audit, plan.audit);
        t.record = Some(plan.record.clone());
        Ok(plan.record)
    }

    /// Extends `owner`'s lease to `until`; false when the lease is no longer `owner`'s.
    pub fn renew(&self, thread_id: &str, owner: &str, until: f64) -> Result<bool, StoreError> {
        let mut db = self.db.borrow_mut();
        let Some(t) = find(&db, thread_id).ok().map(|i| &mut db[i].1) else {
            return Ok(false);
        };
        let Some(current) = &t.record else {
            return Ok(false);
        };
        let renewed = plan_renew(current, owner, until)?;
        let ok = renewed.is_some();
        if renewed.is_some() {
            t.record = renewed;
        }
        Ok(ok)
    }

    /// Clears `owner`'s lease, if the record still has it.
    pub fn release(&self, thread_id: &str, owner: &str) {
        let mut db = self.db.borrow_mut();
        if let Some(t) = find(&db, thread_id).ok().map(|i| &mut db[i].1) {
            if let Some(r) = t.record.as_ref().and_then(|r| plan_release(r, owner)) {
                t.record = Some(r);
            }
        }
    }

    /// Puts `record` (when given) and message `rows` (by `seq`) as they are, without the
    /// commit rule: data changed outside Gatehouse, for the store contract's checks
    /// (`tests/store_contract`), which damage an IndexedDB store with raw writes.
    #[doc(hidden)]
    pub fn put_raw(&self, thread_id: &str, record: Option<ThreadRecord>, rows: Vec<MessageRow>) {
        let mut db = self.db.borrow_mut();
        let i = find(&db, thread_id).unwrap_or_else(|i| {
            db.insert(i, (thread_id.to_owned(), Thread::default()));
            i
        });
        let t = &mut db[i].1;
        if record.is_some() {
            t.record = record;
        }
        put_rows(&mut t.rows, rows);
    }

    /// Up to `limit` messages before `before_seq` (exclusive; `None` = from the tail), oldest
    /// first.
    pub fn page(
        &self,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        self.rows(Rows::Messages, thread_id, before_seq, limit)
    }

    /// Up to `limit` audit records before `before_seq`, like [`MemoryStore::page`].
    pub fn audit_page(
        &self,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        self.rows(Rows::Audit, thread_id, before_seq, limit)
    }

    /// Up to `limit` rows of `kind` before `before_seq`, oldest first.
    pub fn rows(
        &self,
        kind: Rows,
        thread_id: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        let db = self.db.borrow();
        let Some(t) = find(&db, thread_id).ok().map(|i| &db[i].1) else {
            return Ok(Vec::new());
        };
        let Some(record) = &t.record else {
            return Ok(Vec::new());
        };
        let rows = match kind {
            Rows::Messages => &t.rows,
            Rows::Audit => &t.audit,
        };
        // The record counts the rows, as in IndexedDB: rows after the count are not the
        // thread's, and a row the count includes must be there.
        let w = window(kind.count(record), before_seq, limit);
        match rows.get(w.start as usize..w.end as usize) {
            Some(page) => Ok(page.to_vec()),
            None => Err(StoreError::Corrupt(format!(
                "{} row {} of thread {thread_id:?} is missing",
                kind.method(),
                rows.len().max(w.start as usize) + 1
            ))),
        }
    }

    pub fn list(&self) -> Vec<ThreadRecord> {
        self.db
            .borrow()
            .iter()
            .filter_map(|(_, t)| t.record.clone())
            .collect()
    }

    pub fn delete(&self, thread_id: &str) {
        let mut db = self.db.borrow_mut();
        if let Ok(i) = find(&db, thread_id) {
            db.remove(i);
        }
        self.grants
            .borrow_mut()
            .retain(|(_, g)| !super::grant_of_thread(g, thread_id));
    }

    /// Every grant of this database, oldest first, as JSON.
    pub fn grants(&self) -> Vec<String> {
        self.grants
            .borrow()
            .iter()
            .map(|(_, g)| g.clone())
            .collect()
    }

    pub fn put_grant(&self, id: &str, grant: &str) {
        self.grants
            .borrow_mut()
            .push((id.to_owned(), grant.to_owned()));
    }

    /// Deletes the grant `id`; false when there is none.
    pub fn revoke_grant(&self, id: &str) -> bool {
        let mut grants = self.grants.borrow_mut();
        let before = grants.len();
        grants.retain(|(g, _)| g != id);
        grants.len() < before
    }
}

/// Puts rows numbered from 1 in place: a row replaces the one with its `seq`, or follows the
/// last.
fn put_rows(stored: &mut Vec<MessageRow>, rows: Vec<MessageRow>) {
    for row in rows {
        let i = (row.seq - 1) as usize;
        if i < stored.len() {
            stored[i] = row;
        } else {
            stored.push(row);
        }
    }
}
