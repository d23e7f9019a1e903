//! The one place Rust errors become JS errors: a real `Error` with `name === "GatehouseError"`,
//! a stable `code`, `retryable`, and details where they exist (`status`, `body`, `callId`).

use crate::driver::error::AgentError;
use crate::providers::ProviderError;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

pub fn to_js_error(e: &AgentError) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name("GatehouseError");
    let set = |k: &str, v: JsValue| {
        let _ = Reflect::set(&err, &k.into(), &v);
    };
    set("code", e.code().into());
    set("retryable", e.retryable().into());
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
