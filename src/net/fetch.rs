//! HTTP through `gloo-net`: a POST whose body is read as a `ReadableStream`, linked to the
//! caller's AbortSignal, plus an abortable sleep.
//!
//! gloo-net calls the global `fetch` (windows, workers and Node alike) and turns every
//! rejection into an error by asserting that it is an `Error`, panicking otherwise. A fetch
//! rejects with its signal's abort reason, which an app may set to anything (`abort("stop")`),
//! so gloo-net only ever sees our own [`AbortLink`] signal, aborted with an `Error` of ours.

use super::describe;
use gloo_net::http::{Method, RequestBuilder, Response};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, AbortSignal, ReadableStreamDefaultReader, ReadableStreamReadResult,
};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    pub(crate) fn set_timeout(cb: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    pub(crate) fn clear_timeout(id: &JsValue);
}

/// Why a fetch did not produce a response.
pub enum FetchError {
    Aborted,
    /// A network failure, offline, or a CORS refusal (browsers do not tell them apart).
    Network(String),
    /// fetch refuses to build the request: a malformed URL or header value. Sending it again
    /// cannot help.
    BadRequest(String),
}

/// Our own AbortController, aborted with an `Error` when the caller's signal fires, whatever
/// the caller's reason. Keeps the listener alive for as long as the request runs and removes
/// it afterwards.
pub struct AbortLink {
    controller: AbortController,
    user: Option<AbortSignal>,
    listener: Option<Closure<dyn FnMut()>>,
    /// Settles when the link aborts: body reads race it (below).
    on_abort: Promise,
}

impl AbortLink {
    pub fn new(user: Option<&AbortSignal>) -> Result<AbortLink, FetchError> {
        let controller = AbortController::new().map_err(|e| FetchError::Network(describe(&e)))?;
        let signal = controller.signal();
        let on_abort = Promise::new(&mut |resolve, _| {
            let _ = signal.add_event_listener_with_callback("abort", &resolve);
        });
        let mut link = AbortLink {
            controller,
            user: user.cloned(),
            listener: None,
            on_abort,
        };
        if let Some(sig) = user {
            if sig.aborted() {
                return Err(FetchError::Aborted);
            }
            let c = link.controller.clone();
            let cb = Closure::<dyn FnMut()>::new(move || {
                let reason = js_sys::Error::new("the operation was aborted");
                reason.set_name("AbortError");
                c.abort_with_reason(&reason);
            });
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

    /// `p`, unless the link aborts first: then `Err(Aborted)` at once. WebKit was seen to leave
    /// a streamed body's read pending after its fetch was aborted (about 3 runs in 20 under
    /// load), which left the call waiting for good.
    async fn unless_aborted(&self, p: Promise) -> Result<JsValue, JsValue> {
        let first = JsFuture::from(Promise::race(&js_sys::Array::of2(&p, &self.on_abort))).await;
        if self.aborted() {
            return Err(js_sys::Error::new("the operation was aborted").into());
        }
        first
    }

    fn error(&self, e: gloo_net::Error) -> FetchError {
        if self.aborted() {
            return FetchError::Aborted;
        }
        match e {
            gloo_net::Error::JsError(e) if e.name == "AbortError" => FetchError::Aborted,
            other => FetchError::Network(other.to_string()),
        }
    }
}

impl Drop for AbortLink {
    fn drop(&mut self) {
        if let (Some(sig), Some(cb)) = (&self.user, &self.listener) {
            let _ = sig.remove_event_listener_with_callback("abort", cb.as_ref().unchecked_ref());
        }
    }
}

/// POSTs `body`; resolves once the response headers are in (any status).
pub async fn post(
    url: &str,
    headers: &[(String, String)],
    body: &str,
    link: &AbortLink,
) -> Result<Response, FetchError> {
    send(Method::POST, url, headers, Some(body), link).await
}

/// Sends a `method` request with `body` (none for GET and DELETE); resolves once the
/// response headers are in (any status).
pub async fn send(
    method: Method,
    url: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    link: &AbortLink,
) -> Result<Response, FetchError> {
    // Built by hand: gloo-net's `header()` throws into JS on a value fetch refuses.
    let h = web_sys::Headers::new().map_err(|e| FetchError::BadRequest(describe(&e)))?;
    for (k, v) in headers {
        h.set(k, v)
            .map_err(|e| FetchError::BadRequest(format!("the header {k}: {}", describe(&e))))?;
    }
    let builder = RequestBuilder::new(url)
        .method(method)
        .headers(gloo_net::http::Headers::from_raw(h))
        .abort_signal(Some(&link.signal()));
    let request = match body {
        Some(b) => builder.body(b),
        None => builder.build(),
    }
    .map_err(|e| FetchError::BadRequest(e.to_string()))?;
    request.send().await.map_err(|e| link.error(e))
}

/// The whole body as text.
pub async fn text(resp: &Response, link: &AbortLink) -> Result<String, FetchError> {
    // Read as the streamed bodies are, so an abort ends it at once in every engine.
    let Some(mut reader) = BodyReader::new(resp) else {
        return Ok(String::new());
    };
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next(link).await? {
        bytes.extend_from_slice(&chunk);
    }
    // As `Response.text()` decodes: UTF-8, invalid bytes as U+FFFD, a leading BOM dropped.
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned())
}

/// Reads a body chunk by chunk; `None` at the end.
pub struct BodyReader {
    reader: ReadableStreamDefaultReader,
}

impl BodyReader {
    pub fn new(resp: &Response) -> Option<BodyReader> {
        Some(BodyReader {
            reader: resp.body()?.get_reader().unchecked_into(),
        })
    }

    pub async fn next(&mut self, link: &AbortLink) -> Result<Option<Vec<u8>>, FetchError> {
        // The rejection is the raw value (not through gloo-net): classify it ourselves.
        let r: ReadableStreamReadResult = match link.unless_aborted(self.reader.read()).await {
            Ok(r) => r.unchecked_into(),
            Err(e) if link.aborted() || error_name(&e).as_deref() == Some("AbortError") => {
                self.cancel();
                return Err(FetchError::Aborted);
            }
            Err(e) => return Err(FetchError::Network(describe(&e))),
        };
        if r.get_done().unwrap_or(true) {
            return Ok(None);
        }
        Ok(Some(Uint8Array::new(&r.get_value()).to_vec()))
    }

    /// Stops the download (after the terminal event, or on error).
    pub fn cancel(&self) {
        let done = JsFuture::from(self.reader.cancel());
        // Awaited only to swallow a rejection; nothing waits for it.
        wasm_bindgen_futures::spawn_local(async move {
            let _ = done.await;
        });
    }
}

/// Waits `ms`, or less if the signal fires (then `Err(Aborted)`).
pub async fn sleep(ms: u64, link: &AbortLink) -> Result<(), FetchError> {
    wait(ms, link, false).await
}

/// [`sleep`], which also ends when the browser says it is back online (the `online` event).
pub async fn sleep_or_online(ms: u64, link: &AbortLink) -> Result<(), FetchError> {
    wait(ms, link, true).await
}

async fn wait(ms: u64, link: &AbortLink, online: bool) -> Result<(), FetchError> {
    let signal = link.signal();
    let global = js_sys::global().dyn_into::<web_sys::EventTarget>().ok();
    let mut on_online = None;
    let p = Promise::new(&mut |resolve, _reject| {
        let r2 = resolve.clone();
        let id = set_timeout(&resolve, ms as f64);
        let on_abort = Closure::once_into_js(move || {
            clear_timeout(&id);
            let _ = r2.call0(&JsValue::NULL);
        });
        let _ = signal.add_event_listener_with_callback("abort", on_abort.unchecked_ref());
        if let (true, Some(global)) = (online, &global) {
            let _ = global.add_event_listener_with_callback("online", &resolve);
            on_online = Some(resolve);
        }
    });
    let _ = JsFuture::from(p).await;
    if let (Some(global), Some(f)) = (&global, &on_online) {
        let _ = global.remove_event_listener_with_callback("online", f);
    }
    if link.aborted() {
        Err(FetchError::Aborted)
    } else {
        Ok(())
    }
}

fn error_name(e: &JsValue) -> Option<String> {
    Reflect::get(e, &"name".into()).ok()?.as_string()
}
