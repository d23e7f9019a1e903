//! The thread's Web Lock (docs/design.md, "Run ownership"): a run holds it from before its
//! first write to after its last, so another tab can tell "running over there" from "died
//! mid-run" without trusting timing (the browser releases a dead page's locks). Where the API
//! is missing (insecure contexts, Node, old browsers) nothing is held and the lease in the
//! thread record decides, by its expiry.

use crate::store::LockProbe;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
const api = () => globalThis.navigator && globalThis.navigator.locks;
export function gh_lock_try(name, waitMs) {
  const locks = api();
  if (!locks) return Promise.resolve(null);
  return new Promise((granted, failed) => {
    const hold = (lock) => lock ? new Promise((release) => granted(release)) : granted(false);
    if (waitMs <= 0) { locks.request(name, { ifAvailable: true }, hold).catch(failed); return; }
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), waitMs);
    locks.request(name, { signal: stop.signal }, (lock) => { clearTimeout(timer); return hold(lock); })
      .catch((e) => (e && e.name === "AbortError" ? granted(false) : failed(e)));
  });
}
export function gh_lock_probe(name) {
  const locks = api();
  if (!locks) return Promise.resolve(null);
  return locks.query().then((s) => s.held.some((l) => l.name === name), () => null);
}
export function gh_every(ms, f) {
  const id = setInterval(f, ms);
  return () => clearInterval(id);
}
"#)]
extern "C" {
    fn gh_lock_try(name: &str, wait_ms: f64) -> Promise;
    fn gh_lock_probe(name: &str) -> Promise;
    fn gh_every(ms: f64, f: &Closure<dyn FnMut()>) -> Function;
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

/// The outcome of asking for the lock without waiting.
pub enum Attempt {
    Held(Held),
    /// Somebody else holds it.
    Taken,
    /// No Web Locks here.
    Unsupported,
}

/// How long a run waits for the lock. A lock is released a moment after its holder lets it
/// go (the browser's lock manager answers asynchronously), so a run that starts right after
/// another one ended waits that moment; a run of another tab that goes on longer is `busy`.
const LOCK_WAIT_MS: f64 = 2_000.0;

/// Takes the lock if nobody holds it (`wait: false`), or waiting at most [`LOCK_WAIT_MS`].
pub async fn try_hold(name: &str, wait: bool) -> Attempt {
    let ms = if wait { LOCK_WAIT_MS } else { 0.0 };
    match JsFuture::from(gh_lock_try(name, ms)).await {
        Ok(v) if v.is_null() => Attempt::Unsupported,
        Ok(v) => match v.dyn_into::<Function>() {
            Ok(release) => Attempt::Held(Held(Some(release))),
            Err(_) => Attempt::Taken,
        },
        // The request itself failed (e.g. a detached document): nobody can be told apart.
        Err(_) => Attempt::Unsupported,
    }
}

/// Whether somebody holds the lock, without taking it.
pub async fn probe(name: &str) -> LockProbe {
    match JsFuture::from(gh_lock_probe(name))
        .await
        .map(|v| v.as_bool())
    {
        Ok(Some(true)) => LockProbe::Held,
        Ok(Some(false)) => LockProbe::Free,
        _ => LockProbe::Unsupported,
    }
}

/// Calls `f` every `ms` milliseconds until dropped.
pub struct Every {
    stop: Function,
    _f: Closure<dyn FnMut()>,
}

impl Every {
    pub fn new(ms: f64, f: impl FnMut() + 'static) -> Every {
        let f = Closure::<dyn FnMut()>::new(f);
        Every {
            stop: gh_every(ms, &f),
            _f: f,
        }
    }
}

impl Drop for Every {
    fn drop(&mut self) {
        let _ = self.stop.call0(&JsValue::NULL);
    }
}
