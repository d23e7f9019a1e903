//! One model call: over HTTP (gloo-net) with SSE streaming and retries, in-process for `demo`, or
//! through the app's function for `custom`.

use super::error::AgentError;
use super::events::Emitter;
use super::fetch::{self, AbortLink, BodyReader, FetchError};
use super::tools;
use crate::engine::{ModelOutput, ModelToolCall};
use crate::event::{Event, EventError};
use crate::js::convert::{from_js, js_object, js_ref, json_value, parse_json, to_js};
use crate::providers::{
    ModelConfig, ProviderError, ProviderKind, ResponseStream, RetryPolicy, StreamDelta, ToolDef,
    build_request, demo, parse_response,
};
use crate::thread::{Message, Usage};
use js_sys::Function;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

#[derive(Clone)]
pub struct ModelHandle {
    pub cfg: ModelConfig,
    /// `model.call` for the `custom` provider.
    pub custom: Option<Function>,
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
        ProviderKind::Demo => {
            let out = demo::respond_with(history, tools, JS_UNICODE);
            for d in demo::stream_deltas(&out) {
                emit_delta(ev, &d);
            }
            Ok(out)
        }
        ProviderKind::Custom => custom(m, instructions, history, tools, signal).await,
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
                        error: EventError {
                            code: err.code().into(),
                            message: err.to_string(),
                            status: match &err {
                                AgentError::Provider(ProviderError::Http { status, .. }) => {
                                    Some(*status)
                                }
                                _ => None,
                            },
                        },
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
const JS_UNICODE: demo::Unicode = demo::Unicode {
    lowercase: js_lowercase,
    is_alphanumeric: |c| {
        c.is_ascii_alphanumeric() || !c.is_ascii() && js_test(c, "^[\\p{Alphabetic}\\p{N}]$")
    },
    is_uppercase: |c| c.is_ascii_uppercase() || !c.is_ascii() && js_test(c, "^\\p{Uppercase}$"),
};

/// JS's `toLowerCase` (the Unicode default case conversion, like `str::to_lowercase`).
fn js_lowercase(s: &str) -> String {
    js_sys::JsString::from(s).to_lower_case().into()
}

/// Whether the Unicode regexp `pattern` matches `c` (for the non-ASCII chars of demo texts).
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

/// What a `custom` provider function returns.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "an answer object { text, toolCalls, usage, stopReason }"
)]
struct CustomAnswer {
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CustomCall>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "a tool call { id, name, arguments }")]
struct CustomCall {
    id: Option<String>,
    name: String,
    /// An object or its JSON text: JSON, read with `JSON.stringify`'s rules.
    #[serde(default, deserialize_with = "js_object")]
    arguments: Option<JsValue>,
}

/// What a `custom` provider function is called with. `messages` and `tools` are JSON text
/// parsed by JS: a whole history is faster that way (see `js::convert`), and serde-wasm-bindgen
/// refuses integers beyond 2^53 that a schema may hold while `JSON.parse` rounds them.
#[derive(Serialize)]
struct CustomRequest<'a> {
    #[serde(serialize_with = "serde_wasm_bindgen::preserve::serialize")]
    messages: JsValue,
    #[serde(serialize_with = "serde_wasm_bindgen::preserve::serialize")]
    tools: JsValue,
    instructions: Option<&'a str>,
    #[serde(serialize_with = "js_ref", skip_serializing_if = "Option::is_none")]
    signal: Option<&'a AbortSignal>,
}

#[derive(Serialize)]
struct CustomTool<'a> {
    name: &'a str,
    description: Option<&'a str>,
    parameters: &'a Value,
}

/// `v` as JSON text parsed by JS.
fn json_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    serde_json::to_string(v)
        .ok()
        .and_then(|text| parse_json(&text))
        .unwrap_or(JsValue::NULL)
}

async fn custom(
    m: &ModelHandle,
    instructions: Option<&str>,
    history: &[Message],
    tools: &[ToolDef],
    signal: Option<&AbortSignal>,
) -> Result<ModelOutput, AgentError> {
    let f = m.custom.as_ref().ok_or_else(|| {
        AgentError::InvalidConfig("the custom provider needs a `model.call` function".into())
    })?;
    let tools: Vec<CustomTool> = tools
        .iter()
        .map(|t| CustomTool {
            name: &t.name,
            description: t.description.as_deref(),
            parameters: &t.parameters,
        })
        .collect();
    let request = to_js(&CustomRequest {
        messages: json_js(history),
        tools: json_js(&tools),
        instructions,
        signal,
    });
    // A function that ignores `request.signal` must not hold an aborted run: its Promise is
    // left to settle on its own.
    let ret = match tools::call_maybe_async(f, &request, &JsValue::UNDEFINED, signal).await {
        tools::Answer::Now(r) => r.map_err(|e| custom_error(&e))?,
        tools::Answer::Abandoned(_) => return Err(AgentError::Aborted),
    };
    if signal.is_some_and(AbortSignal::aborted) {
        return Err(AgentError::Aborted);
    }
    let a: CustomAnswer = from_js(ret).map_err(|e| bad_custom(&e))?;
    Ok(ModelOutput {
        text: a.text.unwrap_or_default(),
        tool_calls: a
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let args = match c.arguments.map(|a| json_value(&a)).transpose() {
                    Ok(Some(Value::String(s))) => s,
                    Ok(None | Some(Value::Null)) => String::new(),
                    Ok(Some(other)) => crate::thread::json_text(&other),
                    Err(e) => return Err(bad_custom(&format!("`arguments`: {e}"))),
                };
                let id = c.id.unwrap_or_else(|| format!("call_{i}"));
                Ok(ModelToolCall::new(id, c.name, args))
            })
            .collect::<Result<_, _>>()?,
        usage: a.usage,
        stop_reason: a.stop_reason,
    })
}

fn custom_error(e: &JsValue) -> AgentError {
    let name = js_sys::Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string());
    if name.as_deref() == Some("AbortError") {
        return AgentError::Aborted;
    }
    AgentError::Provider(ProviderError::Stream {
        error_type: Some("custom_provider_error".into()),
        message: fetch::describe(e),
    })
}

fn bad_custom(detail: &str) -> AgentError {
    AgentError::Provider(ProviderError::Malformed {
        detail: format!("the custom provider returned an unexpected value: {detail}"),
    })
}
