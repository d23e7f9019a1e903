//! The network underneath the driver and the MCP client (feature `net`): `fetch` over
//! gloo-net with the caller's AbortSignal linked in, and waiting without going past an abort
//! or a deadline (`abort`). No wasm-bindgen exports: the MCP client's own module
//! (mcp-client/) builds on it without the Agent class.

pub mod abort;
pub mod fetch;

use wasm_bindgen::JsValue;

/// A readable description of any thrown JS value.
pub fn describe(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    let get = |k: &str| {
        js_sys::Reflect::get(e, &k.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    match (get("name"), get("message")) {
        (Some(n), Some(m)) if !m.is_empty() => format!("{n}: {m}"),
        (_, Some(m)) => m,
        (Some(n), None) => n,
        _ => js_sys::JSON::stringify(e)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_else(|| "unknown error".into()),
    }
}
