//! Values across the boundary go through JSON text: one `JSON.parse`/`JSON.stringify` call
//! instead of many small ones, key order kept, and functions in option objects simply dropped.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

/// A Rust value as a plain JS value (objects, arrays, strings...).
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    match serde_json::to_string(v) {
        Ok(s) => js_sys::JSON::parse(&s).unwrap_or(JsValue::NULL),
        Err(_) => JsValue::NULL,
    }
}

/// A JS value as JSON. `undefined` becomes `null`; cycles and BigInts are errors.
pub fn from_js(v: &JsValue) -> Result<Value, String> {
    if v.is_undefined() {
        return Ok(Value::Null);
    }
    let s = js_sys::JSON::stringify(v)
        .map_err(|e| crate::driver::fetch::describe(&e))?
        .as_string()
        .unwrap_or_else(|| "null".to_owned());
    serde_json::from_str(&s).map_err(|e| e.to_string())
}
