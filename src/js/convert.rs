//! Values across the boundary go through JSON text: one `JSON.parse`/`JSON.stringify` call
//! instead of many small ones, key order kept, and functions in option objects simply dropped.
//!
//! Everything is serialized by `serde_json::to_string` and read by `serde_json::from_str`:
//! going through `serde_json::Value` (`json!` around a struct, `from_value`) or `Display`
//! would compile every serde impl again for another serializer or deserializer.

use crate::thread::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wasm_bindgen::JsValue;

/// A Rust value as a plain JS value (objects, arrays, strings...).
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    match serde_json::to_string(v) {
        Ok(s) => js_sys::JSON::parse(&s).unwrap_or(JsValue::NULL),
        Err(_) => JsValue::NULL,
    }
}

/// JSON text as a plain JS value.
pub fn parse_js(json: &str) -> JsValue {
    js_sys::JSON::parse(json).unwrap_or(JsValue::NULL)
}

/// A JS value as JSON. `undefined` becomes `null`; cycles and BigInts are errors.
pub fn from_js(v: &JsValue) -> Result<Value, String> {
    from_js_as(v)
}

/// A JS value read into `T` through its JSON text. Errors read as `serde_json::from_value`'s
/// would (no position: the text is ours, not the caller's).
pub fn from_js_as<T: DeserializeOwned>(v: &JsValue) -> Result<T, String> {
    let s = if v.is_undefined() {
        "null".to_owned()
    } else {
        js_sys::JSON::stringify(v)
            .map_err(|e| crate::driver::fetch::describe(&e))?
            .as_string()
            .unwrap_or_else(|| "null".to_owned())
    };
    from_json(&s).or_else(|e| {
        // A JS string may hold a lone surrogate, which JSON text escapes and serde_json
        // refuses: read such strings with U+FFFD in its place (what TextEncoder does).
        let s = gh_stringify_well_formed(v)
            .as_string()
            .ok_or_else(|| e.clone())?;
        from_json(&s).map_err(|_| e)
    })
}

#[wasm_bindgen::prelude::wasm_bindgen(inline_js = r#"
const wf = (s) => s.toWellFormed ? s.toWellFormed()
  : Array.from(s, (c) => c.length === 1 && c >= "\ud800" && c <= "\udfff" ? "\ufffd" : c).join("");
export function gh_stringify_well_formed(v) {
  try {
    return JSON.stringify(v, (k, x) => typeof x === "string" ? wf(x) : x);
  } catch (_) {
    return undefined;
  }
}
"#)]
extern "C" {
    fn gh_stringify_well_formed(v: &JsValue) -> JsValue;
}

/// `serde_json::from_str` with the error message of `from_value` (without "at line 1 column
/// N").
pub fn from_json<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| {
        let text = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        match text.strip_suffix(&position) {
            Some(message) if e.line() > 0 => message.to_owned(),
            _ => text,
        }
    })
}

/// A JSON object from keys and values that are already JSON text, in this order.
pub fn json_object(fields: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
        out.push_str(value);
    }
    out.push('}');
    out
}

/// A string as JSON text.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A message (or `null`) as JSON text.
pub fn message_json(m: Option<&Message>) -> String {
    m.map_or_else(|| "null".to_owned(), Message::to_json_string)
}
