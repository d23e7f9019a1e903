//! One model call: over HTTP (gloo-net) with SSE streaming and retries, in-process for `demo`, or
//! through the app's function for `custom`.

use super::error::AgentError;
use super::events::Emitter;
use super::fetch::{self, AbortLink, BodyReader, FetchError};
use crate::engine::{ModelOutput, ModelToolCall};
use crate::js::convert::{from_js_as, json_object, json_string, parse_js};
use crate::providers::{
    ModelConfig, ProviderError, ProviderKind, ResponseStream, RetryPolicy, StreamDelta, ToolDef,
    build_request, demo, parse_response,
};
use crate::thread::{Message, Usage};
use js_sys::{Function, Promise};
use serde_json::{Value, json};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
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
            let out = demo::respond_with(history, tools, js_lowercase);
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
                ev.emit(json!({ "type": "retry", "attempt": attempt, "delayMs": ms,
                    "error": { "code": err.code(), "message": err.to_string() } }));
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
        if !out.text.is_empty() {
            ev.text_delta(&out.text);
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
                let deltas = stream.push(&bytes).inspect_err(|_| reader.cancel())?;
                for d in &deltas {
                    emit_delta(ev, d);
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
    match d {
        StreamDelta::Text(t) => ev.text_delta(t),
        StreamDelta::ToolCallStarted { index, id, name } => ev.emit(json!({
            "type": "tool_call_started", "index": index, "callId": id, "name": name })),
        StreamDelta::ToolCallArguments { index, delta } => ev.emit(json!({
            "type": "tool_call_delta", "index": index, "delta": delta })),
    }
}

/// JS's `toLowerCase` (the Unicode default case conversion, like `str::to_lowercase`,
/// without linking Rust's case tables).
fn js_lowercase(s: &str) -> String {
    js_sys::JsString::from(s).to_lower_case().into()
}

fn fetch_error(e: FetchError) -> AgentError {
    match e {
        FetchError::Aborted => AgentError::Aborted,
        FetchError::Network(m) => AgentError::Network(m),
        FetchError::BadRequest(m) => AgentError::InvalidConfig(m),
    }
}

/// What a `custom` provider function returns.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CustomAnswer {
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CustomCall>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct CustomCall {
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Value,
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
    let tool_list: Vec<Value> = tools
        .iter()
        .map(
            |t| json!({ "name": t.name, "description": t.description, "parameters": t.parameters }),
        )
        .collect();
    let request = parse_js(&json_object(&[
        (
            "messages",
            &serde_json::to_string(history).unwrap_or_default(),
        ),
        (
            "tools",
            &serde_json::to_string(&tool_list).unwrap_or_default(),
        ),
        (
            "instructions",
            &instructions.map_or_else(|| "null".to_owned(), json_string),
        ),
    ]));
    if let Some(sig) = signal {
        let _ = js_sys::Reflect::set(&request, &"signal".into(), sig);
    }
    let ret = f
        .call1(&JsValue::NULL, &request)
        .map_err(|e| custom_error(&e))?;
    let ret = match ret.dyn_into::<Promise>() {
        Ok(p) => JsFuture::from(p).await.map_err(|e| custom_error(&e))?,
        Err(v) => v,
    };
    if signal.is_some_and(AbortSignal::aborted) {
        return Err(AgentError::Aborted);
    }
    let a: CustomAnswer = from_js_as(&ret).map_err(|e| bad_custom(&e))?;
    Ok(ModelOutput {
        text: a.text.unwrap_or_default(),
        tool_calls: a
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let args = match c.arguments {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => crate::thread::json_text(&other),
                };
                ModelToolCall::new(c.id.unwrap_or_else(|| format!("call_{i}")), c.name, args)
            })
            .collect(),
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
