//! The app's tools as the driver runs them: an executor and an approval policy, each an async
//! function (Rust closures from the Rust API, JS functions wrapped by the JS binding). A run
//! that is aborted does not wait for a tool or a policy that ignores the abort.

use super::abort;
use super::events::Emitter;
use super::leaving;
use super::shared::{Shared, WeakShared};
use crate::engine::{PolicyVerdict, ToolSpec};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use web_sys::AbortSignal;

/// A boxed future of this thread (wasm is single-threaded: nothing here is `Send`).
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// What a tool's executor and approval policy are told about the call.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The provider's id of this call (the key of its decision).
    pub call_id: String,
    pub thread_id: String,
    /// Aborted when the run is (an executor should stop; the policy is never given one).
    pub signal: Option<AbortSignal>,
    /// For a call a human approved, what was decided (docs/design.md, "Receipts"):
    /// `{ signed, callId, tool, decision, decidedBy, at, receipt }`, where `receipt` is the
    /// store handler's signed receipt (a remote thread whose handler has a `signingKey`) to
    /// forward to the backend that performs the action, else `null` with `signed: false`.
    /// `None` for a call that was not gated, and for the policy.
    pub approval: Option<Value>,
    /// The run's listener (an MCP tool reports `mcp_error` events through it).
    pub(crate) events: Emitter,
    /// Set by an executor whose error leaves open whether the call took effect (an MCP
    /// server's answer broke off after it took the request): the call is re-gated.
    pub(crate) cut_off: Rc<Cell<bool>>,
    /// The agent that runs the call (an MCP tool asks the user its server's questions
    /// through its elicitation hook).
    #[cfg_attr(feature = "mcp", allow(dead_code))]
    pub(crate) session: WeakShared,
}

/// Runs a call: its inputs, its context; `Err` is the message the model sees as a
/// `tool_error` result.
pub type Execute = Rc<dyn Fn(Value, ToolContext) -> LocalFuture<Result<Value, String>>>;

/// Decides whether a call needs a human: `Require(reason)`, `Allow`, or `Failed` (which gates
/// it: a policy that cannot answer fails closed).
pub type Policy = Rc<dyn Fn(Value, ToolContext) -> LocalFuture<PolicyVerdict>>;

/// A tool: its definition and what runs it. Built with the Rust API's builder
/// (`Tool::new`, `Tool::external`) or by the JS binding from a tool object.
#[derive(Clone)]
pub struct Tool {
    pub(crate) spec: ToolSpec,
    /// `None`: an external tool, answered with `submit_tool_results`.
    pub(crate) execute: Option<Execute>,
    pub(crate) policy: Option<Policy>,
    /// The tool's own `approvalTimeout`: `None` takes the agent's default, `Some(None)` never
    /// expires (resolved into `spec.approval_timeout` when the agent opens).
    pub(crate) approval_timeout: Option<Option<u64>>,
}

impl Tool {
    /// A tool from its definition and functions, as the bindings build it: `spec.external`
    /// and `spec.has_policy` follow the functions given.
    pub(crate) fn from_parts(
        mut spec: ToolSpec,
        execute: Option<Execute>,
        policy: Option<Policy>,
    ) -> Tool {
        spec.external = execute.is_none();
        spec.has_policy = policy.is_some();
        Tool {
            spec,
            execute,
            policy,
            approval_timeout: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// How a tool's execution ended.
pub enum Execution {
    Settled(Result<Value, String>),
    /// It failed in a way that leaves open whether it took effect: its executor said so
    /// (`ToolContext::cut_off`), or the page was being left when it failed (a reload or a
    /// closed tab cuts off its requests, and Firefox still runs the page's code that hears
    /// of it). Re-gated, as a call cut off by a page that died is (docs/design.md, "The run
    /// journal").
    CutOff,
    /// The run's signal aborted before it settled: the execution, still going.
    Abandoned(LocalFuture<Result<Value, String>>),
}

/// Runs a tool. The execution is awaited until it settles or `signal` aborts, whichever comes
/// first (an executor that honours the signal settles in the microtasks after the abort: it
/// gets until the next task).
pub async fn execute(
    tool: &Tool,
    call_id: &str,
    session: &Shared,
    inputs: &Map<String, Value>,
    signal: Option<&AbortSignal>,
    events: &Emitter,
    approval: Option<Value>,
) -> Execution {
    let Some(f) = &tool.execute else {
        return Execution::Settled(Err(format!(
            "the tool \"{}\" has no execute function",
            tool.spec.name
        )));
    };
    let cut_off = Rc::new(Cell::new(false));
    let ctx = ToolContext {
        call_id: call_id.to_owned(),
        thread_id: session.thread_id(),
        signal: signal.cloned(),
        approval,
        events: events.clone(),
        cut_off: cut_off.clone(),
        session: session.downgrade(),
    };
    leaving::watch();
    let mut running = f(Value::Object(inputs.clone()), ctx);
    let outcome = match signal {
        None => running.await,
        Some(signal) => match abort::before_abort(&mut running, signal).await {
            Some(outcome) => outcome,
            None => return Execution::Abandoned(running),
        },
    };
    match outcome {
        Err(_) if cut_off.get() || leaving::now() => Execution::CutOff,
        outcome => Execution::Settled(outcome),
    }
}

/// The outcome of an abandoned execution if it settles within `ms`.
pub async fn settled_within(
    running: &mut LocalFuture<Result<Value, String>>,
    ms: f64,
) -> Option<Result<Value, String>> {
    abort::within(running, ms).await
}

/// Asks a tool's approval policy. `None` when `signal` aborted before it answered.
pub async fn verdict(
    tool: &Tool,
    call_id: &str,
    thread_id: &str,
    inputs: &Map<String, Value>,
    signal: Option<&AbortSignal>,
) -> Option<PolicyVerdict> {
    let Some(f) = &tool.policy else {
        return Some(PolicyVerdict::Allow);
    };
    let ctx = ToolContext {
        call_id: call_id.to_owned(),
        thread_id: thread_id.to_owned(),
        signal: None,
        approval: None,
        events: Emitter::default(),
        cut_off: Rc::default(),
        session: WeakShared::default(),
    };
    let mut asking = f(Value::Object(inputs.clone()), ctx);
    match signal {
        None => Some(asking.await),
        Some(signal) => abort::before_abort(&mut asking, signal).await,
    }
}
