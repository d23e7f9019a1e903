//! Delivers [`Event`]s to the caller's `onEvent` as plain objects. A throwing handler is
//! reported on the console and never stops the run.

use crate::event::Event;
use crate::js::convert::to_js;
use js_sys::Function;
use wasm_bindgen::JsValue;

#[derive(Clone, Default)]
pub struct Emitter {
    handler: Option<Function>,
}

impl Emitter {
    pub fn new(handler: Option<Function>) -> Self {
        Emitter { handler }
    }

    /// Whether anyone listens (events are not even built otherwise).
    pub fn enabled(&self) -> bool {
        self.handler.is_some()
    }

    pub fn emit(&self, event: &Event) {
        let Some(h) = &self.handler else { return };
        if let Err(e) = h.call1(&JsValue::NULL, &to_js(event)) {
            web_sys::console::warn_2(&"gatehouse: onEvent handler threw".into(), &e);
        }
    }
}
