//! The IndexedDB store under the contract (`tests/browser_store.rs`), and the raw access to
//! its database that changes stored values behind its back (also used by the IndexedDB-only
//! tests there).

use super::{ContractStore, Inexpressible, Outside};
use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::page::Rows;
use gatehouse_agent::store::{
    IndexedDbStore, MessageRow, Snapshot, StoreError, ThreadRecord, Writer,
};
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use wasm_bindgen::JsValue;

impl ContractStore for IndexedDbStore {
    async fn open(name: &str) -> Self {
        IndexedDbStore::open(name).await.expect("open")
    }

    async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        IndexedDbStore::load(self, thread, now).await
    }

    async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError> {
        IndexedDbStore::record(self, thread, now).await
    }

    async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now: f64,
    ) -> Result<ThreadRecord, StoreError> {
        IndexedDbStore::commit(self, thread, expected_version, commit, writer, now).await
    }

    async fn renew(&self, thread: &str, owner: &str, until: f64) -> Result<bool, StoreError> {
        IndexedDbStore::renew(self, thread, owner, until).await
    }

    async fn release(&self, thread: &str, owner: &str) -> Result<(), StoreError> {
        IndexedDbStore::release(self, thread, owner).await
    }

    async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        IndexedDbStore::rows(self, kind, thread, before_seq, limit).await
    }

    async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        IndexedDbStore::list(self).await
    }

    async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        IndexedDbStore::delete(self, thread).await
    }

    /// Raw reads and puts of the stored JS values, on a connection of its own.
    async fn change_outside(&self, thread: &str, change: Outside) -> Result<(), Inexpressible> {
        let db = raw(self.name()).await;
        let key = JsValue::from_str(thread);
        match change {
            Outside::SchemaVersion(v) => set_field(&db, thread, "schemaVersion", v.into()).await,
            Outside::MessageCount(n) => set_field(&db, thread, "messageCount", n as f64).await,
            Outside::UnreadableRow(seq) => {
                let row = js_sys::Object::new();
                let set = |k: &str, v: JsValue| js_sys::Reflect::set(&row, &k.into(), &v);
                set("thread", key.clone()).expect("set");
                set("seq", JsValue::from_f64(seq as f64)).expect("set");
                set("json", JsValue::from_str("{not json")).expect("set");
                raw_put(&db, "messages", row.into()).await;
            }
            Outside::UnreadableRecord => {
                let record = json(r#"{"version":"three"}"#);
                js_sys::Reflect::set(&record, &"id".into(), &key).expect("set");
                raw_put(&db, "threads", record).await;
            }
        }
        db.close();
        Ok(())
    }
}

/// Sets one field of the stored record of `thread`.
async fn set_field(db: &Database, thread: &str, field: &str, value: f64) {
    let record = raw_get(db, "threads", JsValue::from_str(thread))
        .await
        .expect("a stored record");
    js_sys::Reflect::set(&record, &field.into(), &JsValue::from_f64(value)).expect("set");
    raw_put(db, "threads", record).await;
}

/// A raw connection (no version: whatever the store created) for poking at stored values.
/// Close it when done: an open connection blocks deleting the database.
pub async fn raw(name: &str) -> Database {
    Database::open(name).await.expect("raw open")
}

pub async fn raw_get(db: &Database, store: &str, key: JsValue) -> Option<JsValue> {
    let tx = db.transaction(store).build().expect("tx");
    let s = tx.object_store(store).expect("store");
    s.get::<JsValue, JsValue, _>(indexed_db_futures::KeyRange::Only(key))
        .primitive()
        .expect("get")
        .await
        .expect("get result")
}

pub async fn raw_put(db: &Database, store: &str, value: JsValue) {
    let tx = db
        .transaction(store)
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("tx");
    {
        let s = tx.object_store(store).expect("store");
        drop(s.put(value).primitive().expect("put"));
    }
    tx.commit().await.expect("commit");
}

/// `[thread, seq]`, the key of a message or audit row.
pub fn row_key(thread: &str, seq: f64) -> JsValue {
    js_sys::Array::of2(&JsValue::from_str(thread), &JsValue::from_f64(seq)).into()
}

pub fn json(text: &str) -> JsValue {
    js_sys::JSON::parse(text).expect("json")
}
