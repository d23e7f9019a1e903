//! One model call: over HTTP (gloo-net) with SSE streaming and retries, in-process for `demo`, or
//! through the app's function for `custom`.

use super::abort;
use super::error::AgentError;
use super::events::Emitter;
use super::fetch::{self, AbortLink, BodyReader, FetchError};
use super::tools::LocalFuture;
use crate::engine::ModelOutput;
use crate::event::{Event, EventError};
use crate::providers::{
    ModelConfig, ProviderError, ProviderKind, ResponseStream, RetryPolicy, StreamDelta, ToolDef,
    build_request, parse_response,
};
use crate::thread::Message;
use std::borrow::Cow;
use std::rc::Rc;
use web_sys::AbortSignal;

#[derive(Clone)]
pub struct ModelHandle {
    pub cfg: ModelConfig,
    /// The model of the `custom` provider.
    pub custom: Option<CustomModel>,
    pub retry: RetryPolicy,
}

pub async fn call(
    m: &ModelHandle,
    instructions: Option<&str>,
    history: &[Message],
    tools: &[ToolDef],
    signal: Option<&AbortSignal>,
    ev: &Emitter,
) -> Result<ModelOutput, AgentError> {
    if signal.is_some_and(AbortSignal::aborted) {
        return Err(AgentError::Aborted);
    }
    match m.cfg.provider {
        // The npm package's demo: its own module, called as a custom model is (gatehouse.js).
        ProviderKind::Demo | ProviderKind::Custom if m.custom.is_some() => {
            custom(m, instructions, history, tools, signal, ev).await
        }
        #[cfg(feature = "demo")]
        ProviderKind::Demo => {
            let out = crate::providers::demo::respond_with(history, tools, JS_UNICODE);
            for d in crate::providers::demo::stream_deltas(&out) {
                emit_delta(ev, &d);
            }
            Ok(out)
        }
        #[cfg(not(feature = "demo"))]
        ProviderKind::Demo => Err(AgentError::InvalidConfig(
            "this build has no in-process demo model (cargo feature `demo`)".into(),
        )),
        ProviderKind::Custom => custom(m, instructions, history, tools, signal, ev).await,
        ProviderKind::OpenAi | ProviderKind::Anthropic => {
            let req = build_request(&m.cfg, instructions, history, tools)?;
            let link = AbortLink::new(signal).map_err(fetch_error)?;
            let mut attempt = 0;
            loop {
                let err = match once(&m.cfg, &req, &link, ev).await {
                    Ok(out) => return Ok(out),
                    Err(e) => e,
                };
                if matches!(err, AgentError::Aborted) {
                    return Err(err);
                }
                attempt += 1;
                let retry_after = match &err {
                    AgentError::Provider(p) => p.retry_after().map(str::to_owned),
                    _ => None,
                };
                let delay = err.retryable().then(|| {
                    m.retry.delay_ms(
                        attempt,
                        retry_after.as_deref(),
                        js_sys::Date::now() as u64,
                        js_sys::Math::random(),
                    )
                });
                let Some(Some(ms)) = delay else {
                    return Err(err);
                };
                if ev.enabled() {
                    ev.emit(&Event::Retry {
                        attempt,
                        delay_ms: ms,
                        error: EventError::from(&err),
                    });
                }
                fetch::sleep(ms, &link).await.map_err(fetch_error)?;
            }
        }
    }
}

async fn once(
    cfg: &ModelConfig,
    req: &crate::providers::HttpRequest,
    link: &AbortLink,
    ev: &Emitter,
) -> Result<ModelOutput, AgentError> {
    let resp = fetch::post(&req.url, &req.headers, &req.body, link)
        .await
        .map_err(fetch_error)?;
    let status = resp.status();
    if !(200..300).contains(&status) {
        let retry_after = resp.headers().get("retry-after");
        // The status says what went wrong; a body that fails to arrive only loses detail.
        let body = match fetch::text(&resp, link).await {
            Err(FetchError::Aborted) => return Err(AgentError::Aborted),
            b => b.unwrap_or_default(),
        };
        return Err(ProviderError::http(status, &body, retry_after.as_deref()).into());
    }
    let content_type = resp.headers().get("content-type").unwrap_or_default();
    if !cfg.stream || !content_type.contains("text/event-stream") {
        // Some compatible servers answer JSON even when asked to stream.
        let body = fetch::text(&resp, link).await.map_err(fetch_error)?;
        let out = parse_response(cfg.provider, status, &body)?;
        if !out.text.is_empty() && ev.enabled() {
            ev.emit(&Event::TextDelta {
                delta: Cow::Borrowed(&out.text),
            });
        }
        return Ok(out);
    }
    let mut stream = ResponseStream::new(cfg.provider)?;
    let mut reader = BodyReader::new(&resp).ok_or_else(|| {
        AgentError::Provider(ProviderError::Truncated {
            detail: "the response has no body".into(),
        })
    })?;
    loop {
        match reader.next(link).await {
            Ok(Some(bytes)) => {
                // Each delta goes out as its event is parsed, not after the whole chunk.
                for d in stream.feed(&bytes) {
                    let d = d.inspect_err(|_| reader.cancel())?;
                    emit_delta(ev, &d);
                }
                if stream.is_finished() {
                    reader.cancel();
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(fetch_error(e)),
        }
    }
    let (last, out) = stream.finish()?;
    for d in &last {
        emit_delta(ev, d);
    }
    Ok(out)
}

fn emit_delta(ev: &Emitter, d: &StreamDelta) {
    if !ev.enabled() {
        return;
    }
    ev.emit(&match d {
        StreamDelta::Text(t) => Event::TextDelta {
            delta: Cow::Borrowed(t),
        },
        StreamDelta::ToolCallStarted { index, id, name } => Event::ToolCallStarted {
            index: *index,
            call_id: Cow::Borrowed(id),
            name: Cow::Borrowed(name),
        },
        StreamDelta::ToolCallArguments { index, delta } => Event::ToolCallDelta {
            index: *index,
            delta: Cow::Borrowed(delta),
        },
    });
}

/// The demo's Unicode operations, by the browser's own code (see `demo::Unicode`).
#[cfg(feature = "demo")]
const JS_UNICODE: crate::providers::demo::Unicode = crate::providers::demo::Unicode {
    lowercase: js_lowercase,
    is_alphanumeric: |c| {
        c.is_ascii_alphanumeric() || !c.is_ascii() && js_test(c, "^[\\p{Alphabetic}\\p{N}]$")
    },
    is_uppercase: |c| c.is_ascii_uppercase() || !c.is_ascii() && js_test(c, "^\\p{Uppercase}$"),
};

/// JS's `toLowerCase` (the Unicode default case conversion, like `str::to_lowercase`).
#[cfg(feature = "demo")]
fn js_lowercase(s: &str) -> String {
    js_sys::JsString::from(s).to_lower_case().into()
}

/// Whether the Unicode regexp `pattern` matches `c` (for the non-ASCII chars of demo texts).
#[cfg(feature = "demo")]
fn js_test(c: char, pattern: &str) -> bool {
    js_sys::RegExp::new(pattern, "u").test(c.encode_utf8(&mut [0; 4]))
}

fn fetch_error(e: FetchError) -> AgentError {
    match e {
        FetchError::Aborted => AgentError::Aborted,
        FetchError::Network(m) => AgentError::Network(m),
        FetchError::BadRequest(m) => AgentError::InvalidConfig(m),
    }
}

/// What a custom model is asked: the thread's history as it is sent, and the offered tools.
pub struct ModelRequest<'a> {
    pub instructions: Option<&'a str>,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDef],
    /// The run's signal: a model that honours it stops early.
    pub signal: Option<&'a AbortSignal>,
    /// The run's listener: a streaming model sends its text deltas and progress through it.
    pub events: &'a Emitter,
}

/// A model the app runs itself (the `custom` provider): called once per model turn.
pub type CustomModel = Rc<dyn Fn(ModelRequest<'_>) -> LocalFuture<Result<ModelOutput, AgentError>>>;

/// Calls the app's model. An aborted run does not wait for a model that ignores the abort.
async fn custom(
    m: &ModelHandle,
    instructions: Option<&str>,
    messages: &[Message],
    tools: &[ToolDef],
    signal: Option<&AbortSignal>,
    events: &Emitter,
) -> Result<ModelOutput, AgentError> {
    let f = m.custom.as_ref().ok_or_else(|| {
        AgentError::InvalidConfig("the custom provider needs a `model.call` function".into())
    })?;
    let mut answer = f(ModelRequest {
        instructions,
        messages,
        tools,
        signal,
        events,
    });
    let out = match signal {
        None => answer.await,
        Some(signal) => abort::before_abort(&mut answer, signal)
            .await
            .ok_or(AgentError::Aborted)?,
    };
    if signal.is_some_and(AbortSignal::aborted) {
        return Err(AgentError::Aborted);
    }
    out
}
