//! Streaming events delivered to the caller's `onEvent`. Each event is a plain object with a
//! `type`; a UI can render a streamed answer from them alone. A throwing handler is reported
//! on the console and never stops the run.

use crate::js::convert::{json_object, json_string, message_json, parse_js};
use crate::thread::Message;
use js_sys::Function;
use serde_json::{Value, json};
use wasm_bindgen::JsValue;

#[derive(Clone, Default)]
pub struct Emitter {
    handler: Option<Function>,
}

impl Emitter {
    pub fn new(handler: Option<Function>) -> Self {
        Emitter { handler }
    }

    pub fn enabled(&self) -> bool {
        self.handler.is_some()
    }

    pub fn emit(&self, event: Value) {
        if self.enabled() {
            self.emit_json(&serde_json::to_string(&event).unwrap_or_default());
        }
    }

    /// An event given as JSON text.
    pub fn emit_json(&self, event: &str) {
        let Some(h) = &self.handler else { return };
        let v = parse_js(event);
        if let Err(e) = h.call1(&JsValue::NULL, &v) {
            web_sys::console::warn_2(&"gatehouse: onEvent handler threw".into(), &e);
        }
    }

    pub fn text_delta(&self, delta: &str) {
        if self.enabled() {
            self.emit(json!({ "type": "text_delta", "delta": delta }));
        }
    }

    pub fn message(&self, kind: &str, m: &Message) {
        self.with_message(kind, Some(m));
    }

    /// `{ type: kind, message }`, the message possibly `null`.
    pub fn with_message(&self, kind: &str, m: Option<&Message>) {
        if self.enabled() {
            self.emit_json(&json_object(&[
                ("type", &json_string(kind)),
                ("message", &message_json(m)),
            ]));
        }
    }
}
