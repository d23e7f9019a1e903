//! The one place Rust errors become JS errors: a `GatehouseError` (an `Error` subclass
//! exported by the package, `name === "GatehouseError"`) with a stable `code`, `retryable`,
//! and details where they exist (`status`, `body`, `callId`).

use crate::driver::error::AgentError;
use crate::providers::ProviderError;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(module = "/src/js/error.js")]
extern "C" {
    #[wasm_bindgen(extends = js_sys::Error)]
    type GatehouseError;

    #[wasm_bindgen(constructor)]
    fn new(code: &str, message: &str, retryable: bool) -> GatehouseError;
}

pub fn to_js_error(e: &AgentError) -> JsValue {
    let err = GatehouseError::new(e.code(), &e.to_string(), e.retryable());
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&err, &k.into(), &v);
    };
    if let Some(id) = e.call_id() {
        set("callId", id.into());
    }
    if let AgentError::Provider(ProviderError::Http {
        status,
        body_excerpt,
        retry_after,
        ..
    }) = e
    {
        set("status", (*status).into());
        set("body", body_excerpt.as_str().into());
        if let Some(r) = retry_after {
            set("retryAfter", r.as_str().into());
        }
    }
    err.into()
}

pub fn invalid_config(message: impl Into<String>) -> JsValue {
    to_js_error(&AgentError::InvalidConfig(message.into()))
}
