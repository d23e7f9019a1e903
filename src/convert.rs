//! Values across the boundary, one way each:
//!
//! - Rust → JS: [`to_js`], serde-wasm-bindgen's `json_compatible` serializer (maps as plain
//!   objects, `None` as `null`), for every result, event and argument.
//! - JS → Rust: [`from_js`] into a `#[derive(Deserialize)]` params struct. Functions and
//!   AbortSignals in it are taken as they are ([`js_object`]).
//! - Values the API documents as JSON (decisions, tool results, a tool's output, a JSON
//!   Schema): [`json_value`], with `JSON.stringify`'s rules (`toJSON`, functions and
//!   `undefined` dropped, cycles and BigInts refused instead of recursing forever).
//! - Arrays of messages (a page of `messages()`, a custom model's history): JSON text and one
//!   `JSON.parse` ([`parse_json`]), measured faster (src/store/page.rs).

use serde::de::{DeserializeOwned, Deserializer, Error as _, Unexpected};
use serde::{Serialize, Serializer};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

/// A Rust value as a plain JS value.
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    const JS: serde_wasm_bindgen::Serializer = serde_wasm_bindgen::Serializer::json_compatible();
    v.serialize(&JS)
        .or_else(|_| {
            // Only an integer beyond 2^53 is refused (a model may write a long id as a number):
            // give it as `JSON.parse` would, rounded to a number.
            let wide = JS.serialize_large_number_types_as_bigints(true);
            v.serialize(&wide).map(|v| gh_numbers_from_bigints(&v))
        })
        .unwrap_or(JsValue::NULL)
}

/// A JS value read into `T`. The error is serde's message.
pub fn from_js<T: DeserializeOwned>(v: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(v).map_err(error_message)
}

fn error_message(e: serde_wasm_bindgen::Error) -> String {
    match JsValue::from(e).dyn_into::<js_sys::Error>() {
        Ok(e) => e.message().into(),
        // A getter of the caller's object threw.
        Err(v) => describe(&v),
    }
}

/// JSON text as a JS value; `None` if it is not JSON.
pub fn parse_json(text: &str) -> Option<JsValue> {
    js_sys::JSON::parse(text).ok()
}

/// What a params struct takes as a JS object rather than as data.
pub trait JsKind: JsCast {
    /// What it must be, for the error message.
    const KIND: &'static str;
}

impl JsKind for js_sys::Function {
    const KIND: &'static str = "a function";
}

impl JsKind for web_sys::AbortSignal {
    const KIND: &'static str = "an AbortSignal";
}

impl JsKind for JsValue {
    const KIND: &'static str = "a value";
}

/// `deserialize_with` for a JS object in a params struct (a function, an AbortSignal, a value
/// read later with [`json_value`]): taken as it is. Left out, `undefined` and `null` are `None`.
pub fn js_object<'de, D: Deserializer<'de>, T: JsKind>(d: D) -> Result<Option<T>, D::Error> {
    let v: JsValue = serde_wasm_bindgen::preserve::deserialize(d)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.dyn_into::<T>().map(Some).map_err(|v| {
        let found = v.js_typeof().as_string().unwrap_or_default();
        D::Error::invalid_type(Unexpected::Other(&found), &T::KIND)
    })
}

/// `serialize_with` for a JS object in a result (the AbortSignal of a tool's `ctx`).
pub fn js_ref<S: Serializer, T: JsCast>(v: &Option<&T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => serde_wasm_bindgen::preserve::serialize(*v, s),
        None => s.serialize_none(),
    }
}

/// A value the API documents as JSON, read as `JSON.stringify` writes it. `undefined` is
/// `null`.
pub fn json_value(v: &JsValue) -> Result<Value, String> {
    let text = if v.is_undefined() {
        "null".to_owned()
    } else {
        js_sys::JSON::stringify(v)
            .map_err(|e| describe(&e))?
            .as_string()
            .unwrap_or_else(|| "null".to_owned())
    };
    from_json(&text).or_else(|e| {
        // A JS string may hold a lone surrogate, which JSON text escapes and serde_json
        // refuses: read such strings with U+FFFD in its place (what TextEncoder does).
        let text = gh_stringify_well_formed(v)
            .as_string()
            .ok_or_else(|| e.clone())?;
        from_json(&text).map_err(|_| e)
    })
}

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
const wf = (s) => s.toWellFormed ? s.toWellFormed()
  : Array.from(s, (c) => c.length === 1 && c >= "\ud800" && c <= "\udfff" ? "\ufffd" : c).join("");
export function gh_numbers_from_bigints(v) {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v) || (v && Object.getPrototypeOf(v) === Object.prototype)) {
    for (const k of Object.keys(v)) v[k] = gh_numbers_from_bigints(v[k]);
  }
  return v;
}
export function gh_stringify_well_formed(v) {
  try {
    return JSON.stringify(v, (k, x) => typeof x === "string" ? wf(x) : x);
  } catch (_) {
    return undefined;
  }
}
"#)]
extern "C" {
    fn gh_numbers_from_bigints(v: &JsValue) -> JsValue;
    fn gh_stringify_well_formed(v: &JsValue) -> JsValue;
}

/// `serde_json::from_str` with the error message of `from_value` (without "at line 1 column
/// N": the text is ours, not the caller's).
fn from_json<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| {
        let text = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        match text.strip_suffix(&position) {
            Some(message) if e.line() > 0 => message.to_owned(),
            _ => text,
        }
    })
}

pub use crate::net::describe;
