//! `fetch` with a streamed body, linked to the caller's AbortSignal, plus an abortable sleep.
//! Uses the global `fetch`/`setTimeout` directly so it works in windows, workers and Node, and
//! so an `abort("any reason")` by the app can never reach code that panics on non-Error
//! rejection values.

use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, Headers, RequestInit, Response};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(url: &str, init: &RequestInit) -> Promise;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(cb: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Why a fetch did not produce a response.
pub enum FetchError {
    Aborted,
    /// A network failure, offline, or a CORS refusal (browsers do not tell them apart).
    Network(String),
}

/// Our own AbortController, fired when the caller's signal fires. Keeps the listener alive
/// for as long as the request runs and removes it afterwards.
pub struct AbortLink {
    controller: AbortController,
    user: Option<AbortSignal>,
    listener: Option<Closure<dyn FnMut()>>,
}

impl AbortLink {
    pub fn new(user: Option<&AbortSignal>) -> Result<AbortLink, FetchError> {
        let controller = AbortController::new().map_err(|e| FetchError::Network(describe(&e)))?;
        let mut link = AbortLink {
            controller,
            user: user.cloned(),
            listener: None,
        };
        if let Some(sig) = user {
            if sig.aborted() {
                return Err(FetchError::Aborted);
            }
            let c = link.controller.clone();
            let cb = Closure::<dyn FnMut()>::new(move || c.abort());
            let _ = sig.add_event_listener_with_callback("abort", cb.as_ref().unchecked_ref());
            link.listener = Some(cb);
        }
        Ok(link)
    }

    pub fn signal(&self) -> AbortSignal {
        self.controller.signal()
    }

    pub fn aborted(&self) -> bool {
        self.controller.signal().aborted()
    }
}

impl Drop for AbortLink {
    fn drop(&mut self) {
        if let (Some(sig), Some(cb)) = (&self.user, &self.listener) {
            let _ = sig.remove_event_listener_with_callback("abort", cb.as_ref().unchecked_ref());
        }
    }
}

pub async fn post(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    link: &AbortLink,
) -> Result<Response, FetchError> {
    let h = Headers::new().map_err(|e| FetchError::Network(describe(&e)))?;
    for (k, v) in headers {
        h.set(k, v).map_err(|e| FetchError::Network(describe(&e)))?;
    }
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_headers(&h);
    init.set_body(&JsValue::from_str(body));
    init.set_signal(Some(&link.signal()));
    match JsFuture::from(global_fetch(url, &init)).await {
        Ok(v) => v
            .dyn_into::<Response>()
            .map_err(|_| FetchError::Network("fetch did not return a Response".into())),
        Err(e) => Err(classify(&e, link)),
    }
}

/// Reads a body chunk by chunk; `None` at the end.
pub struct BodyReader {
    reader: JsValue,
}

impl BodyReader {
    pub fn new(resp: &Response) -> Option<BodyReader> {
        let body = resp.body()?;
        let reader = body.get_reader();
        Some(BodyReader {
            reader: reader.into(),
        })
    }

    pub async fn next(&mut self, link: &AbortLink) -> Result<Option<Vec<u8>>, FetchError> {
        let read: Function = Reflect::get(&self.reader, &"read".into())
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(|| FetchError::Network("the body cannot be read".into()))?;
        let p: Promise = read
            .call0(&self.reader)
            .map_err(|e| classify(&e, link))?
            .unchecked_into();
        let r = JsFuture::from(p).await.map_err(|e| classify(&e, link))?;
        if Reflect::get(&r, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            return Ok(None);
        }
        let value = Reflect::get(&r, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        Ok(Some(Uint8Array::new(&value).to_vec()))
    }

    /// Stops the download (after the terminal event, or on error).
    pub fn cancel(&self) {
        if let Some(f) = Reflect::get(&self.reader, &"cancel".into())
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
        {
            if let Ok(p) = f.call0(&self.reader) {
                // Swallow the rejection of the cancel promise.
                if let Ok(p) = p.dyn_into::<Promise>() {
                    let noop = Closure::<dyn FnMut(JsValue)>::new(|_| {});
                    let _ = p.catch(&noop);
                    noop.forget();
                }
            }
        }
    }
}

pub async fn text(resp: &Response) -> String {
    match resp.text() {
        Ok(p) => JsFuture::from(p)
            .await
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Waits `ms`, or less if the signal fires (then `Err(Aborted)`).
pub async fn sleep(ms: u64, link: &AbortLink) -> Result<(), FetchError> {
    let signal = link.signal();
    let p = Promise::new(&mut |resolve, _reject| {
        let r2 = resolve.clone();
        let id = set_timeout(&resolve, ms as f64);
        let on_abort = Closure::once_into_js(move || {
            clear_timeout(&id);
            let _ = r2.call0(&JsValue::NULL);
        });
        let _ = signal.add_event_listener_with_callback("abort", on_abort.unchecked_ref());
    });
    let _ = JsFuture::from(p).await;
    if link.aborted() {
        Err(FetchError::Aborted)
    } else {
        Ok(())
    }
}

fn classify(e: &JsValue, link: &AbortLink) -> FetchError {
    let name = Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default();
    if link.aborted() || name == "AbortError" {
        FetchError::Aborted
    } else {
        FetchError::Network(describe(e))
    }
}

/// A readable description of any thrown JS value.
pub fn describe(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    let get = |k: &str| Reflect::get(e, &k.into()).ok().and_then(|v| v.as_string());
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
