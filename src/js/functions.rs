//! The app's JS functions as the Rust API's closures: a tool's `execute` and
//! `approvalPolicy`, the custom provider's `model.call`, `onEvent` and the listeners of
//! `subscribe` / `subscribeThreads`. Each may be sync or return a Promise; a listener that
//! throws is reported on the console and stops nothing.

use crate::convert::{describe, from_js, js_object, js_ref, json_value, parse_json, to_js};
use crate::driver::error::{AgentError, ModelFileError};
use crate::driver::events::EventListener;
use crate::driver::model::{CustomModel, ModelRequest};
use crate::driver::tools::{Execute, LocalFuture, Policy, ToolContext};
use crate::engine::{ModelOutput, ModelToolCall, PolicyVerdict};
use crate::event::Event;
use crate::js::options::Strict;
use crate::providers::ProviderError;
use crate::thread::Usage;
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::AbortSignal;

/// What a JS call returned, its Promise awaited.
async fn settle(ret: Result<JsValue, JsValue>) -> Result<JsValue, JsValue> {
    match ret?.dyn_into::<Promise>() {
        Ok(p) => JsFuture::from(p).await,
        Err(v) => Ok(v),
    }
}

/// The second argument of `execute` and `approvalPolicy`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsContext<'a> {
    call_id: &'a str,
    thread_id: &'a str,
    #[serde(serialize_with = "js_ref", skip_serializing_if = "Option::is_none")]
    signal: Option<&'a AbortSignal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<&'a serde_json::Value>,
}

fn context(ctx: &ToolContext) -> JsValue {
    to_js(&JsContext {
        call_id: &ctx.call_id,
        thread_id: &ctx.thread_id,
        signal: ctx.signal.as_ref(),
        approval: ctx.approval.as_ref(),
    })
}

/// A tool's `execute(inputs, ctx)`: its return value is the result (a string as it is,
/// anything else as JSON); a throw is the error the model sees.
pub fn execute(f: Function) -> Execute {
    Rc::new(
        move |inputs: Value, ctx: ToolContext| -> LocalFuture<Result<Value, String>> {
            let ret = f.call2(&JsValue::NULL, &to_js(&inputs), &context(&ctx));
            Box::pin(async move {
                let out = settle(ret).await.map_err(|e| describe(&e))?;
                if let Some(s) = out.as_string() {
                    return Ok(Value::String(s));
                }
                json_value(&out)
                    .map_err(|e| format!("the tool returned a value that is not JSON: {e}"))
            })
        },
    )
}

/// A tool's `approvalPolicy(inputs, ctx)`: `true` or a string asks, `false` does not;
/// anything else, or a throw, gates the call.
pub fn policy(f: Function) -> Policy {
    Rc::new(
        move |inputs: Value, ctx: ToolContext| -> LocalFuture<PolicyVerdict> {
            let ret = f.call2(&JsValue::NULL, &to_js(&inputs), &context(&ctx));
            Box::pin(async move {
                match settle(ret).await {
                    Ok(v) => match (v.as_bool(), v.as_string()) {
                        (Some(true), _) => PolicyVerdict::Require(None),
                        (Some(false), _) => PolicyVerdict::Allow,
                        (_, Some(s)) => PolicyVerdict::Require(Some(s)),
                        _ => PolicyVerdict::Failed(format!(
                            "it returned {}",
                            v.js_typeof()
                                .as_string()
                                .unwrap_or_else(|| "an unknown value".into())
                        )),
                    },
                    Err(e) => PolicyVerdict::Failed(describe(&e)),
                }
            })
        },
    )
}

/// `onEvent`: each event as a plain object.
pub fn on_event(f: Function) -> EventListener {
    Rc::new(move |e: &Event| {
        if let Err(err) = f.call1(&JsValue::NULL, &to_js(e)) {
            web_sys::console::warn_2(&"gatehouse: onEvent handler threw".into(), &err);
        }
    })
}

/// A `subscribe` / `subscribeThreads` listener (`what` names it on the console).
pub fn listener<T: Serialize + ?Sized>(f: Function, what: &'static str) -> impl Fn(&T) + 'static {
    move |change: &T| {
        if let Err(e) = f.call1(&JsValue::NULL, &to_js(change)) {
            web_sys::console::error_2(&format!("gatehouse: a {what} listener threw").into(), &e);
        }
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
    /// Each call read strictly: a misspelled `arguments` (`inputs`, `args`) would otherwise
    /// make a call with no inputs, which a human might approve.
    #[serde(default)]
    tool_calls: Vec<Strict<CustomCall>>,
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
/// parsed by JS: a whole history is faster that way (see `crate::convert`), and
/// serde-wasm-bindgen refuses integers beyond 2^53 that a schema may hold while `JSON.parse`
/// rounds them.
#[derive(Serialize)]
struct CustomRequest<'a> {
    #[serde(serialize_with = "serde_wasm_bindgen::preserve::serialize")]
    messages: JsValue,
    #[serde(serialize_with = "serde_wasm_bindgen::preserve::serialize")]
    tools: JsValue,
    instructions: Option<&'a str>,
    #[serde(serialize_with = "js_ref", skip_serializing_if = "Option::is_none")]
    signal: Option<&'a AbortSignal>,
    #[serde(rename = "onText", serialize_with = "js_ref")]
    on_text: Option<&'a JsValue>,
    #[serde(rename = "onProgress", serialize_with = "js_ref")]
    on_progress: Option<&'a JsValue>,
    #[serde(rename = "onRuntime", serialize_with = "js_ref")]
    on_runtime: Option<&'a JsValue>,
    #[serde(rename = "onToolCallStart", serialize_with = "js_ref")]
    on_tool_call_start: Option<&'a JsValue>,
    #[serde(rename = "onToolCallDelta", serialize_with = "js_ref")]
    on_tool_call_delta: Option<&'a JsValue>,
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

/// The `custom` provider's `model.call(request)`.
pub fn custom_model(f: Function) -> CustomModel {
    Rc::new(
        move |req: ModelRequest<'_>| -> LocalFuture<Result<ModelOutput, AgentError>> {
            let tools: Vec<CustomTool> = req
                .tools
                .iter()
                .map(|t| CustomTool {
                    name: &t.name,
                    description: t.description.as_deref(),
                    parameters: &t.parameters,
                })
                .collect();
            // The model streams through the run's listener; both live until its answer settles.
            let ev = req.events.clone();
            let on_text = Closure::<dyn Fn(String)>::new(move |delta: String| {
                ev.emit(&Event::TextDelta {
                    delta: Cow::Owned(delta),
                })
            });
            let ev = req.events.clone();
            let on_progress = Closure::<dyn Fn(String, f64, Option<f64>)>::new(
                move |phase: String, loaded: f64, total: Option<f64>| {
                    ev.emit(&Event::ModelProgress {
                        phase: Cow::Owned(phase),
                        loaded: loaded as u64,
                        total: total.map(|t| t as u64),
                    })
                },
            );
            let ev = req.events.clone();
            let on_runtime = Closure::<dyn Fn(String, f64, Option<String>, Option<String>)>::new(
                move |device: String, threads: f64, single: Option<String>, cpu: Option<String>| {
                    ev.emit(&Event::ModelRuntime {
                        device: Cow::Owned(device),
                        threads: threads as u32,
                        single_thread_reason: single.map(Cow::Owned),
                        cpu_reason: cpu.map(Cow::Owned),
                    })
                },
            );
            let ev = req.events.clone();
            let on_start = Closure::<dyn Fn(f64, String, String)>::new(
                move |index: f64, id: String, name: String| {
                    ev.emit(&Event::ToolCallStarted {
                        index: index as usize,
                        call_id: Cow::Owned(id),
                        name: Cow::Owned(name),
                    })
                },
            );
            let ev = req.events.clone();
            let on_delta = Closure::<dyn Fn(f64, String)>::new(move |index: f64, delta: String| {
                ev.emit(&Event::ToolCallDelta {
                    index: index as usize,
                    delta: Cow::Owned(delta),
                })
            });
            let request = to_js(&CustomRequest {
                messages: json_js(req.messages),
                tools: json_js(&tools),
                instructions: req.instructions,
                signal: req.signal,
                on_text: Some(on_text.as_ref()),
                on_progress: Some(on_progress.as_ref()),
                on_runtime: Some(on_runtime.as_ref()),
                on_tool_call_start: Some(on_start.as_ref()),
                on_tool_call_delta: Some(on_delta.as_ref()),
            });
            let ret = f.call1(&JsValue::NULL, &request);
            Box::pin(async move {
                let ret = settle(ret).await;
                drop((on_text, on_progress, on_runtime, on_start, on_delta));
                let ret = ret.map_err(|e| custom_error(&e))?;
                let a: CustomAnswer = from_js(ret).map_err(|e| bad_custom(&e))?;
                Ok(ModelOutput {
                    text: a.text.unwrap_or_default(),
                    tool_calls: a
                        .tool_calls
                        .into_iter()
                        .enumerate()
                        .map(|(i, Strict(c))| {
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
            })
        },
    )
}

fn custom_error(e: &JsValue) -> AgentError {
    let name = js_sys::Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string());
    if name.as_deref() == Some("AbortError") {
        return AgentError::Aborted;
    }
    let code = js_sys::Reflect::get(e, &"code".into())
        .ok()
        .and_then(|c| c.as_string());
    if let Some(kind) = code.as_deref().and_then(ModelFileError::from_code) {
        let message = js_sys::Reflect::get(e, &"message".into())
            .ok()
            .and_then(|m| m.as_string());
        return AgentError::ModelFile(kind, message.unwrap_or_else(|| describe(e)));
    }
    AgentError::Provider(ProviderError::Stream {
        error_type: Some("custom_provider_error".into()),
        message: describe(e),
    })
}

fn bad_custom(detail: &str) -> AgentError {
    AgentError::Provider(ProviderError::Malformed {
        detail: format!("the custom provider returned an unexpected value: {detail}"),
    })
}
