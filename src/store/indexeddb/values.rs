//! What the IndexedDB store keeps, as JS values: keys, message rows and thread records
//! (docs/design.md, "Stored data"), and the mapping of DOM exceptions to [`StoreError`].

use crate::store::record::{MessageRow, StoreError, ThreadRecord};
use indexed_db_futures::error::{Error, OpenDbError};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsValue;

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
        let set = |k: &JsValue, v: &JsValue| match Reflect::set(&o, k, v) {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Other("could not build a message row".into())),
            Err(e) => Err(from_js_value(&e)),
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
/// `None`, plain objects for maps), made by `JSON.parse` of its serde_json text.
pub(super) fn record_to_js(record: &ThreadRecord) -> Result<JsValue, StoreError> {
    let text = serde_json::to_string(record)
        .map_err(|e| StoreError::Other(format!("thread {:?} cannot be stored: {e}", record.id)))?;
    js_sys::JSON::parse(&text).map_err(|e| from_js_value(&e))
}

/// Reads a stored thread record through `JSON.stringify`, the inverse of [`record_to_js`]: a
/// number reads back as serde_json wrote it (an integer above 2^53 stays an integer, which
/// the decision journal's input comparison relies on). Records of a later schema version are
/// read too: unknown fields are ignored, the fields this version knows are taken as they are.
pub(super) fn record_from_js(thread: &str, value: &JsValue) -> Result<ThreadRecord, StoreError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        StoreError::Corrupt(format!("thread record {thread:?} is unreadable: {e}"))
    };
    let text = js_sys::JSON::stringify(value)
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

/// An `indexed_db_futures` error: a DOM exception by its name (above); anything else (a
/// transaction that aborted without an error, say) is `Other`.
pub(super) fn idb(e: Error) -> StoreError {
    match e {
        Error::DomException(d) => from_js_value(d.as_ref()),
        Error::Unknown(j) => from_js_value(j.as_ref()),
        Error::Serialisation(s) => StoreError::Other(s.to_string()),
        Error::MissingData(m) => StoreError::Other(m.to_string()),
    }
}

/// Opening (or deleting) a database failed: always `Unavailable`, with the DOM message.
pub(super) fn open_error(e: OpenDbError) -> StoreError {
    match e {
        OpenDbError::Base(e) => match idb(e) {
            StoreError::Quota(m) | StoreError::Unavailable(m) | StoreError::Other(m) => {
                StoreError::Unavailable(m)
            }
            other => StoreError::Unavailable(other.to_string()),
        },
        // The crate reports any exception of `indexedDB.open()` (a SecurityError where storage
        // is blocked, say) as a zero version; this store always asks for version 1.
        OpenDbError::VersionZero => {
            StoreError::Unavailable("the browser refused to open an IndexedDB database".into())
        }
        other => StoreError::Unavailable(other.to_string()),
    }
}
