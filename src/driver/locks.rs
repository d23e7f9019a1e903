//! Cross-tab exclusion with the Web Locks API: a tab holds the thread's lock while a tool
//! executes, so another tab that opens the thread meanwhile can tell "cut off by a closed
//! page" (re-gate it) from "still running over there" (leave it alone). Where the API is
//! missing (Node, old browsers) nothing is held and recovery re-gates, which is the safe side.

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
export function gh_lock_hold(name) {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  if (!locks) return Promise.resolve(null);
  return new Promise((granted, failed) => {
    locks.request(name, () => new Promise((release) => granted(release))).catch(failed);
  });
}
export function gh_lock_held(name) {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  if (!locks) return Promise.resolve(false);
  return locks.query().then((s) => s.held.some((l) => l.name === name), () => false);
}
"#)]
extern "C" {
    fn gh_lock_hold(name: &str) -> Promise;
    fn gh_lock_held(name: &str) -> Promise;
}

pub fn lock_name(database: &str, thread: &str) -> String {
    format!("gatehouse:{database}:{thread}")
}

/// A held lock; released when dropped.
pub struct Held(Option<Function>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            let _ = release.call0(&JsValue::NULL);
        }
    }
}

pub async fn hold(name: &str) -> Held {
    let release = JsFuture::from(gh_lock_hold(name))
        .await
        .ok()
        .and_then(|v| v.dyn_into::<Function>().ok());
    Held(release)
}

pub async fn held_elsewhere(name: &str) -> bool {
    JsFuture::from(gh_lock_held(name))
        .await
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}
