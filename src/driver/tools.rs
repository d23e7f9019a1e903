//! Calling the app's JS tools: `execute(inputs, ctx)` and `approvalPolicy(inputs, ctx)`, sync
//! or async.

use super::error::AgentError;
use super::fetch::describe;
use crate::engine::{PolicyVerdict, ToolSpec};
use crate::js::convert::{from_js, to_js};
use js_sys::{Function, Promise, Reflect};
use serde_json::{Map, Value, json};
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

impl JsTool {
    /// Reads one entry of `tools`. Data fields go through JSON; functions are taken as they are.
    pub fn parse(v: &JsValue) -> Result<JsTool, AgentError> {
        let bad = |m: String| AgentError::InvalidConfig(m);
        let data = from_js(v).map_err(|e| bad(format!("a tool is not serializable: {e}")))?;
        let obj = data
            .as_object()
            .ok_or_else(|| bad("each tool must be an object".into()))?;
        let name = match obj.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => return Err(bad("each tool needs a non-empty string `name`".into())),
        };
        crate::engine::check_tool_name(&name).map_err(bad)?;
        let mut spec = ToolSpec::new(name.clone());
        let opt_str = |k: &str| -> Result<Option<String>, AgentError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(format!("tool \"{name}\": `{k}` must be a string"))),
            }
        };
        let opt_bool = |k: &str| -> Result<Option<bool>, AgentError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Bool(b)) => Ok(Some(*b)),
                Some(_) => Err(bad(format!("tool \"{name}\": `{k}` must be true or false"))),
            }
        };
        spec.description = opt_str("description")?;
        spec.label = opt_str("label")?;
        spec.schema = match obj.get("parameters") {
            None | Some(Value::Null) => json!({ "type": "object", "properties": {} }),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(bad(format!(
                    "tool \"{name}\": `parameters` must be a JSON Schema object"
                )));
            }
        };
        spec.extra = match obj.get("providerOptions") {
            Some(v @ Value::Object(o)) if !o.is_empty() => v.clone(),
            _ => Value::Array(Vec::new()),
        };
        spec.require_approval = opt_bool("requireApproval")?;
        spec.enabled = opt_bool("enabled")?.unwrap_or(true);
        spec.auto_approve = opt_bool("autoApprove")?.unwrap_or(false);
        spec.idempotent = opt_bool("idempotent")?.unwrap_or(false);
        let func = |k: &str| -> Result<Option<Function>, AgentError> {
            let f = Reflect::get(v, &k.into()).unwrap_or(JsValue::UNDEFINED);
            if f.is_undefined() || f.is_null() {
                return Ok(None);
            }
            f.dyn_into::<Function>()
                .map(Some)
                .map_err(|_| bad(format!("tool \"{name}\": `{k}` must be a function")))
        };
        let execute = func("execute")?;
        let policy = func("approvalPolicy")?;
        spec.external = execute.is_none();
        spec.has_policy = policy.is_some();
        Ok(JsTool {
            spec,
            execute,
            policy,
        })
    }
}

fn ctx(call_id: &str, thread_id: &str, signal: Option<&web_sys::AbortSignal>) -> JsValue {
    let c = to_js(&json!({ "callId": call_id, "threadId": thread_id }));
    if let Some(s) = signal {
        let _ = Reflect::set(&c, &"signal".into(), s);
    }
    c
}

/// The value of a JS call that may return a Promise.
enum Answer {
    Now(Result<JsValue, JsValue>),
    /// A Promise that had not settled when `signal` aborted.
    Abandoned(Promise),
}

async fn call_maybe_async(
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
    from_js(&out).map_err(|e| format!("the tool returned a value that is not JSON: {e}"))
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
    match call_maybe_async(f, &to_js(inputs), &ctx(call_id, thread_id, signal), signal).await {
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
    let (inputs, ctx) = (to_js(inputs), ctx(call_id, thread_id, None));
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
