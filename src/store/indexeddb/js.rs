//! The JS side of the IndexedDB store: the IndexedDB calls (a few lines of JS, each request
//! as a Promise), keys, the stored shapes of rows and records, and the mapping of DOM
//! exceptions to [`StoreError`].
//!
//! Awaiting these Promises keeps a transaction alive: a request's Promise settles in its
//! `success` event, the Rust task resumes in the microtasks that follow, and the transaction
//! is still active there (the same rule the `idb` JS library relies on). So, as before, no
//! other work may be awaited while a transaction is open.

use crate::store::record::{MessageRow, StoreError, ThreadRecord};
use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

// The schema of DB_VERSION 1 is created in `onupgradeneeded`; a later version adds its step
// under `e.oldVersion < N`. A connection closes itself when another one asks for a version
// change (an upgrade or a delete elsewhere), so it never blocks them.
#[wasm_bindgen(inline_js = r#"
const run = (make) => new Promise((ok, fail) => {
  const r = make();
  r.onsuccess = () => ok(r.result);
  r.onerror = () => fail(r.error);
});
const range = (lo, hi) => hi === undefined ? lo : IDBKeyRange.bound(lo, hi);
const factory = () => {
  const f = globalThis.indexedDB;
  if (f == null) throw "The `indexedDB` getter returned `null` or `undefined`";
  return f;
};
export function gh_idb_open(name, version, ms) {
  return new Promise((ok, fail) => {
    let settled = false;
    const r = factory().open(name, version);
    // An open waits for as long as another connection blocks a version change ahead of it:
    // give up after `ms` (a connection that arrives later is closed at once).
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      fail({ name: "TimeoutError", message: `opening the IndexedDB database "${name}" did not finish within ${ms} ms: another tab or connection is blocking a version change of it. Close or reload the other tabs of this site` });
    }, ms);
    r.onupgradeneeded = (e) => {
      if (e.oldVersion < 1) {
        r.result.createObjectStore("threads", { keyPath: "id" });
        r.result.createObjectStore("messages", { keyPath: ["thread", "seq"] });
      }
    };
    r.onsuccess = () => {
      clearTimeout(timer);
      const db = r.result;
      if (settled) { db.close(); return; }
      settled = true;
      db.onversionchange = () => db.close();
      ok(db);
    };
    r.onerror = () => {
      clearTimeout(timer);
      if (!settled) { settled = true; fail(r.error); }
    };
  });
}
export function gh_idb_has_store(db, name) { return db.objectStoreNames.contains(name); }
export function gh_idb_close(db) { db.onversionchange = null; db.close(); }
export function gh_idb_delete_db(name) { return run(() => factory().deleteDatabase(name)); }
export function gh_idb_tx(db, stores, mode) { return db.transaction(stores, mode); }
export function gh_idb_get(tx, store, key) { return run(() => tx.objectStore(store).get(key)); }
export function gh_idb_get_all(tx, store, lo, hi) {
  return run(() => tx.objectStore(store).getAll(lo === undefined ? undefined : range(lo, hi)));
}
export function gh_idb_put(tx, store, value) { tx.objectStore(store).put(value); }
export function gh_idb_delete(tx, store, lo, hi) { tx.objectStore(store).delete(range(lo, hi)); }
export function gh_idb_finish(tx, commit) {
  return new Promise((ok, fail) => {
    tx.oncomplete = () => (commit ? ok() : fail(null));
    tx.onabort = () => (commit ? fail(null) : ok());
    tx.onerror = (e) => {
      const err = e.target && e.target.error;
      if (!err || err.name !== "AbortError") fail(err || null);
    };
    if (commit) tx.commit(); else tx.abort();
  });
}
export function gh_idb_drop(tx) { try { tx.abort(); } catch (_) {} }
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn gh_idb_open(name: &str, version: u32, ms: u32) -> Result<Promise, JsValue>;
    fn gh_idb_has_store(db: &JsValue, name: &str) -> bool;
    fn gh_idb_close(db: &JsValue);
    fn gh_idb_delete_db(name: &str) -> Promise;
    #[wasm_bindgen(catch)]
    fn gh_idb_tx(db: &JsValue, stores: &JsValue, mode: &str) -> Result<JsValue, JsValue>;
    fn gh_idb_get(tx: &JsValue, store: &str, key: &JsValue) -> Promise;
    fn gh_idb_get_all(tx: &JsValue, store: &str, lo: &JsValue, hi: &JsValue) -> Promise;
    #[wasm_bindgen(catch)]
    fn gh_idb_put(tx: &JsValue, store: &str, value: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn gh_idb_delete(tx: &JsValue, store: &str, lo: &JsValue, hi: &JsValue) -> Result<(), JsValue>;
    fn gh_idb_finish(tx: &JsValue, commit: bool) -> Promise;
    fn gh_idb_drop(tx: &JsValue);
}

/// How long an open may wait behind another connection's version change.
const OPEN_TIMEOUT_MS: u32 = 10_000;

/// Opens (creating or upgrading) a database: the `IDBDatabase`. Failures are the DOM's.
pub(super) async fn open(name: &str, version: u32) -> Result<JsValue, StoreError> {
    let request = gh_idb_open(name, version, OPEN_TIMEOUT_MS).map_err(|e| open_error(&e))?;
    JsFuture::from(request).await.map_err(|e| open_error(&e))
}

pub(super) fn has_store(db: &JsValue, name: &str) -> bool {
    gh_idb_has_store(db, name)
}

/// Closes a connection and stops it from answering version changes.
pub(super) fn close(db: &JsValue) {
    gh_idb_close(db);
}

pub(super) async fn delete_database(name: &str) -> Result<(), StoreError> {
    JsFuture::from(gh_idb_delete_db(name))
        .await
        .map(drop)
        .map_err(|e| open_error(&e))
}

/// A transaction over `stores`. Like the one of indexed_db_futures before it, it rolls back
/// when dropped without [`Tx::commit`].
pub(super) struct Tx {
    tx: JsValue,
    done: bool,
}

impl Tx {
    pub(super) fn begin(db: &JsValue, stores: &[&str], readwrite: bool) -> Result<Tx, StoreError> {
        let names: Array = stores.iter().map(|s| JsValue::from_str(s)).collect();
        let mode = if readwrite { "readwrite" } else { "readonly" };
        let tx = gh_idb_tx(db, &names, mode).map_err(|e| from_js_value(&e))?;
        Ok(Tx { tx, done: false })
    }

    /// The stored value under `key`, `None` when there is none.
    pub(super) async fn get(
        &self,
        store: &str,
        key: &JsValue,
    ) -> Result<Option<JsValue>, StoreError> {
        let v = JsFuture::from(gh_idb_get(&self.tx, store, key))
            .await
            .map_err(|e| from_js_value(&e))?;
        Ok(if v.is_undefined() { None } else { Some(v) })
    }

    /// The values with keys in `lo..=hi`, in key order; `None`: all of them.
    pub(super) async fn get_all(
        &self,
        store: &str,
        bounds: Option<(JsValue, JsValue)>,
    ) -> Result<Array, StoreError> {
        let (lo, hi) = bounds.unwrap_or((JsValue::UNDEFINED, JsValue::UNDEFINED));
        JsFuture::from(gh_idb_get_all(&self.tx, store, &lo, &hi))
            .await
            .map(JsCast::unchecked_into::<Array>)
            .map_err(|e| from_js_value(&e))
    }

    /// Queues a put; a failure that is not immediate arrives through the transaction.
    pub(super) fn put(&self, store: &str, value: &JsValue) -> Result<(), StoreError> {
        gh_idb_put(&self.tx, store, value).map_err(|e| from_js_value(&e))
    }

    /// Queues a delete of `key` (`hi: None`) or of the keys in `key..=hi`.
    pub(super) fn delete(
        &self,
        store: &str,
        key: &JsValue,
        hi: Option<&JsValue>,
    ) -> Result<(), StoreError> {
        gh_idb_delete(&self.tx, store, key, hi.unwrap_or(&JsValue::UNDEFINED))
            .map_err(|e| from_js_value(&e))
    }

    /// Commits and waits until the transaction completes. The error is the transaction's own
    /// when it has one (a quota failure at commit time aborts the transaction without a
    /// failing request), else the failing request's.
    pub(super) async fn commit(mut self) -> Result<(), StoreError> {
        self.done = true;
        match JsFuture::from(gh_idb_finish(&self.tx, true)).await {
            Ok(_) => Ok(()),
            Err(e) => Err(match Reflect::get(&self.tx, &JsValue::from_str("error")) {
                Ok(err) if !err.is_null() && !err.is_undefined() => from_js_value(&err),
                _ if e.is_null() => StoreError::Other(
                    "Expected the Transaction to be committed, but it was aborted.".into(),
                ),
                _ => from_js_value(&e),
            }),
        }
    }

    /// Rolls back and waits for it.
    pub(super) async fn abort(mut self) {
        self.done = true;
        let _ = JsFuture::from(gh_idb_finish(&self.tx, false)).await;
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if !self.done {
            gh_idb_drop(&self.tx);
        }
    }
}

/// Seqs are stored as JS numbers: exact up to 2^53.
const MAX_SEQ: f64 = 9_007_199_254_740_991.0;

/// `[thread, seq]`, the key of a message row. The seq is a number: a `u64` would cross as a
/// BigInt, which is not a valid IndexedDB key.
pub(super) fn row_key(thread: &str, seq: f64) -> JsValue {
    Array::of2(&JsValue::from_str(thread), &JsValue::from_f64(seq)).into()
}

/// Builds the stored value of message rows: `{ thread, seq, json }`, the message JSON kept as
/// a string (exact key order, one `JSON.parse` to read).
pub(super) struct RowWriter {
    thread: JsValue,
    k_thread: JsValue,
    k_seq: JsValue,
    k_json: JsValue,
}

impl RowWriter {
    pub(super) fn new(thread: &str) -> Self {
        RowWriter {
            thread: JsValue::from_str(thread),
            k_thread: JsValue::from_str("thread"),
            k_seq: JsValue::from_str("seq"),
            k_json: JsValue::from_str("json"),
        }
    }

    pub(super) fn value(&self, row: &MessageRow) -> Result<JsValue, StoreError> {
        let o = Object::new();
        let set = |k: &JsValue, v: &JsValue| {
            Reflect::set(&o, k, v)
                .map_err(|e| from_js_value(&e))
                .and_then(|ok| {
                    if ok {
                        Ok(())
                    } else {
                        Err(StoreError::Other("could not build a message row".into()))
                    }
                })
        };
        set(&self.k_thread, &self.thread)?;
        set(&self.k_seq, &JsValue::from_f64(row.seq as f64))?;
        set(&self.k_json, &JsValue::from_str(&row.json))?;
        Ok(o.into())
    }
}

/// Reads a stored message row back; anything but `{ seq: integer ≥ 1, json: string }` is
/// corrupt.
pub(super) fn read_row(thread: &str, value: &JsValue) -> Result<MessageRow, StoreError> {
    let seq = Reflect::get(value, &JsValue::from_str("seq"))
        .ok()
        .and_then(|s| s.as_f64())
        .filter(|s| s.fract() == 0.0 && (1.0..=MAX_SEQ).contains(s));
    let json = Reflect::get(value, &JsValue::from_str("json"))
        .ok()
        .and_then(|j| j.as_string());
    match (seq, json) {
        (Some(seq), Some(json)) => Ok(MessageRow {
            seq: seq as u64,
            json,
        }),
        _ => Err(StoreError::Corrupt(format!(
            "a message row of thread {thread:?} is not {{ seq, json }}"
        ))),
    }
}

/// The stored thread record: the JSON shape of [`ThreadRecord`] (camelCase, `null` for
/// `None`, plain objects for maps), made by `JSON.parse` of its serde_json text (serde_json is
/// linked anyway; a second serializer would only add size).
pub(super) fn record_to_js(record: &ThreadRecord) -> Result<JsValue, StoreError> {
    let text = serde_json::to_string(record)
        .map_err(|e| StoreError::Other(format!("thread {:?} cannot be stored: {e}", record.id)))?;
    js_sys::JSON::parse(&text).map_err(|e| from_js_value(&e))
}

/// Reads a stored thread record (through `JSON.stringify`, the inverse of `record_to_js`).
/// Records of a later schema version are read too: unknown fields are ignored, the fields
/// this version knows are taken as they are.
pub(super) fn record_from_js(thread: &str, value: JsValue) -> Result<ThreadRecord, StoreError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        StoreError::Corrupt(format!("thread record {thread:?} is unreadable: {e}"))
    };
    let text = js_sys::JSON::stringify(&value)
        .map_err(|e| unreadable(&from_js_value(&e)))?
        .as_string()
        .unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| unreadable(&e))
}

/// A DOM exception (or any thrown JS value) by its `name`: `QuotaExceededError` is `Quota`,
/// the ones that mean the database is gone or closing are `Unavailable`, the rest `Other`;
/// each keeps the DOM message.
pub(super) fn from_js_value(value: &JsValue) -> StoreError {
    let prop = |k: &str| {
        Reflect::get(value, &JsValue::from_str(k))
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    let (name, message) = (prop("name"), prop("message"));
    let text = match (name.is_empty(), message.is_empty()) {
        (true, true) => value.as_string().unwrap_or_else(|| format!("{value:?}")),
        (false, true) => name.clone(),
        (true, false) => message,
        (false, false) => format!("{name}: {message}"),
    };
    match name.as_str() {
        "QuotaExceededError" => StoreError::Quota(text),
        "UnknownError" | "InvalidStateError" | "VersionError" => StoreError::Unavailable(text),
        _ => StoreError::Other(text),
    }
}

/// Opening (or deleting) a database failed: always `Unavailable`, with the DOM message.
fn open_error(e: &JsValue) -> StoreError {
    match from_js_value(e) {
        StoreError::Quota(m)
        | StoreError::Unavailable(m)
        | StoreError::Corrupt(m)
        | StoreError::Other(m) => StoreError::Unavailable(m),
        conflict => StoreError::Unavailable(conflict.to_string()),
    }
}
