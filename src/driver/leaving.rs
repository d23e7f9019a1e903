//! Whether the page is being left: after a `pagehide` until a `pageshow` (back from the
//! back-forward cache), or within `BEFORE_UNLOAD_MS` of a `beforeunload` (Firefox cuts the
//! page's requests off as a reload starts, before `pagehide`; an app may cancel the
//! navigation there, so that one only counts for a moment). Windows only; a worker is never
//! "left" this way. A tool that fails meanwhile is `Execution::CutOff` (tools.rs): re-gated.

use std::cell::Cell;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::EventTarget;

const BEFORE_UNLOAD_MS: f64 = 2_000.0;

thread_local! {
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static HIDDEN: Cell<bool> = const { Cell::new(false) };
    static BEFORE_UNLOAD: Cell<f64> = const { Cell::new(f64::NEG_INFINITY) };
}

/// Listens once per page (the listeners live as long as the page).
pub fn watch() {
    if WATCHED.replace(true) {
        return;
    }
    let global = js_sys::global();
    if js_sys::Reflect::has(&global, &"onpagehide".into()) != Ok(true) {
        return;
    }
    let Some(target) = global.dyn_ref::<EventTarget>() else {
        return;
    };
    let on = |event: &str, f: Closure<dyn Fn()>| {
        let _ = target.add_event_listener_with_callback(event, f.as_ref().unchecked_ref());
        f.forget();
    };
    on("pagehide", Closure::new(|| HIDDEN.set(true)));
    on("pageshow", Closure::new(|| HIDDEN.set(false)));
    on(
        "beforeunload",
        Closure::new(|| BEFORE_UNLOAD.set(js_sys::Date::now())),
    );
}

pub fn now() -> bool {
    HIDDEN.get() || js_sys::Date::now() - BEFORE_UNLOAD.get() < BEFORE_UNLOAD_MS
}
