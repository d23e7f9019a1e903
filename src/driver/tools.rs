//! Calling the app's JS tools: `execute(inputs, ctx)` and `approvalPolicy(inputs, ctx)`, sync
//! or async.

use super::error::AgentError;
use super::fetch::describe;
use crate::engine::{PolicyVerdict, ToolSpec};
use crate::js::convert::{js_ref, json_value, to_js};
use js_sys::{Function, Promise};
use serde::Serialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

// Resolves to true once `p` settles, or to false when `signal` aborts first. A function that
// honours `ctx.signal` settles in the microtasks after the abort: it gets until the next task.
#[wasm_bindgen(inline_js = r#"
export function gh_settled_within(p, ms) {
  return new Promise((res) => {
    const timer = setTimeout(() => res(false), ms);
    const settled = () => { clearTimeout(timer); res(true); };
    p.then(settled, settled);
  });
}
export function gh_settled_before_abort(p, signal) {
  return new Promise((res) => {
    const settled = () => res(true);
    p.then(settled, settled);
    const onAbort = () => setTimeout(() => res(false), 0);
    if (signal.aborted) onAbort(); else signal.addEventListener("abort", onAbort, { once: true });
  });
}
"#)]
extern "C" {
    fn gh_settled_before_abort(p: &Promise, signal: &web_sys::AbortSignal) -> Promise;
    fn gh_settled_within(p: &Promise, ms: f64) -> Promise;
}

#[derive(Clone)]
pub struct JsTool {
    pub spec: ToolSpec,
    pub execute: Option<Function>,
    pub policy: Option<Function>,
}

/// The second argument of `execute` and `approvalPolicy`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolContext<'a> {
    call_id: &'a str,
    thread_id: &'a str,
    #[serde(serialize_with = "js_ref", skip_serializing_if = "Option::is_none")]
    signal: Option<&'a web_sys::AbortSignal>,
}

/// The value of a JS call that may return a Promise.
pub(super) enum Answer {
    Now(Result<JsValue, JsValue>),
    /// A Promise that had not settled when `signal` aborted.
    Abandoned(Promise),
}

/// Calls `f(a, b)`; a returned Promise is awaited until it settles or `signal` aborts,
/// whichever comes first (a function that ignores the signal is not waited for).
pub(super) async fn call_maybe_async(
    f: &Function,
    a: &JsValue,
    b: &JsValue,
    signal: Option<&web_sys::AbortSignal>,
) -> Answer {
    let ret = match f.call2(&JsValue::NULL, a, b) {
        Ok(v) => v,
        Err(e) => return Answer::Now(Err(e)),
    };
    let p = match ret.dyn_into::<Promise>() {
        Ok(p) => p,
        Err(v) => return Answer::Now(Ok(v)),
    };
    if let Some(signal) = signal {
        let settled = JsFuture::from(gh_settled_before_abort(&p, signal)).await;
        if settled.ok().and_then(|v| v.as_bool()) == Some(false) {
            return Answer::Abandoned(p);
        }
    }
    Answer::Now(JsFuture::from(p).await)
}

/// How a tool's `execute` ended.
pub enum Execution {
    Settled(Result<Value, String>),
    /// The run's signal aborted before it settled: its Promise.
    Abandoned(Promise),
}

/// A tool's return value as its outcome. `Err` carries the message the model will see in a
/// `tool_error` result.
fn outcome(r: Result<JsValue, JsValue>) -> Result<Value, String> {
    let out = r.map_err(|e| describe(&e))?;
    if let Some(s) = out.as_string() {
        return Ok(Value::String(s));
    }
    json_value(&out).map_err(|e| format!("the tool returned a value that is not JSON: {e}"))
}

/// The outcome of an abandoned `execute` once it settles.
pub async fn settled(p: Promise) -> Result<Value, String> {
    outcome(JsFuture::from(p).await)
}

/// The outcome of an abandoned `execute` if it settles within `ms`.
pub async fn settled_within(p: &Promise, ms: f64) -> Option<Result<Value, String>> {
    let done = JsFuture::from(gh_settled_within(p, ms)).await;
    if done.ok().and_then(|v| v.as_bool()) == Some(true) {
        Some(settled(p.clone()).await)
    } else {
        None
    }
}

/// Runs a tool.
pub async fn execute(
    tool: &JsTool,
    call_id: &str,
    thread_id: &str,
    inputs: &Map<String, Value>,
    signal: Option<&web_sys::AbortSignal>,
) -> Execution {
    let Some(f) = &tool.execute else {
        return Execution::Settled(Err(format!(
            "the tool \"{}\" has no execute function",
            tool.spec.name
        )));
    };
    let ctx = to_js(&ToolContext {
        call_id,
        thread_id,
        signal,
    });
    match call_maybe_async(f, &to_js(inputs), &ctx, signal).await {
        Answer::Now(r) => Execution::Settled(outcome(r)),
        Answer::Abandoned(p) => Execution::Abandoned(p),
    }
}

/// Asks a tool's approval policy. Anything but `true`, `false` or a string gates the call.
/// `None` when `signal` aborted before the policy answered.
pub async fn verdict(
    tool: &JsTool,
    call_id: &str,
    thread_id: &str,
    inputs: &Map<String, Value>,
    signal: Option<&web_sys::AbortSignal>,
) -> Option<PolicyVerdict> {
    let Some(f) = &tool.policy else {
        return Some(PolicyVerdict::Allow);
    };
    let ctx = to_js(&ToolContext {
        call_id,
        thread_id,
        signal: None,
    });
    let inputs = to_js(inputs);
    Some(match call_maybe_async(f, &inputs, &ctx, signal).await {
        Answer::Abandoned(_) => return None,
        Answer::Now(Ok(v)) => match (v.as_bool(), v.as_string()) {
            (Some(true), _) => PolicyVerdict::Require(None),
            (Some(false), _) => PolicyVerdict::Allow,
            (_, Some(s)) => PolicyVerdict::Require(Some(s)),
            _ => PolicyVerdict::Failed(format!("it returned {}", type_of(&v))),
        },
        Answer::Now(Err(e)) => PolicyVerdict::Failed(describe(&e)),
    })
}

fn type_of(v: &JsValue) -> String {
    v.js_typeof()
        .as_string()
        .unwrap_or_else(|| "an unknown value".into())
}

pub fn unknown_tool(name: &str) -> AgentError {
    AgentError::InvalidConfig(format!("no tool named \"{name}\""))
}
