//! The async loop: runs the engine's steps against a store, a model and the app's tools.
//! State lives in a `Session` behind [`Shared`] (`shared`, with the operations whose borrow
//! rules matter); no borrow is held across an `.await` or a call into app code. Its parts:
//! the session and its view (`session`), run admission and ownership (`admission`), the step
//! loop with its writes (`step`); the I/O each needs sits in its own module beside them.

pub mod changes;
pub mod error;
pub mod events;
pub mod expiry;
pub mod history;
mod leaving;
pub mod live;
pub mod locks;
pub mod mcp;
pub mod model;
pub mod outbox;
pub mod store;
pub mod tools;

pub(crate) use crate::net::{abort, fetch};

mod admission;
mod decide;
pub mod grants;
mod session;
mod shared;
mod step;

pub(crate) use admission::run_input;
use session::tool_defs;
pub use session::{open, reload, running_here, status, summaries};
use shared::Reload;
pub use shared::{Shared, WeakShared};

use crate::engine::{
    Decisions, Engine, EngineConfig, EngineError, Outcome, PolicyVerdict, Step, ToolPolicy,
    ToolResults, ToolSet,
};
use crate::event::Event;
use crate::providers::ToolDef;
use crate::store::summary::{self, AgentStatus, ThreadSummary};
use crate::store::{
    Admission, LEASE_MS, Lease, LockAttempt, LockProbe, Owner, RENEW_MS, Snapshot, StoreError,
    Writer, admit, judge, must_recover,
};
use crate::thread::context::RequestSize;
use error::AgentError;
use events::Emitter;
use model::ModelHandle;
use serde_json::Value;
use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use store::Store;
use tools::Tool;
use web_sys::AbortSignal;

pub struct Session {
    pub thread_id: String,
    pub store: Store,
    /// The Web Locks name of this thread (database + thread id).
    lock: String,
    /// This agent's id in run leases (random per `Agent`).
    me: String,
    pub engine: Engine,
    /// The stored version this view was read at (optimistic concurrency).
    pub version: u64,
    /// The lease of another agent in the record this view was read from, and whether the Web
    /// Lock said its owner was alive then (`status()` reports "running" while it is).
    others: Option<(Lease, bool)>,
    pub message_count: u64,
    pub model: ModelHandle,
    pub instructions: Option<String>,
    pub tools: Vec<Tool>,
    /// At most this many of the latest messages are sent to the model (`None`: all).
    history_limit: Option<u32>,
    /// The newest messages that fit the model's window (or its latest `history_limit`),
    /// is called and then kept up to date by `persist`.
    history: Option<history::History>,
    /// The background read of `history` after open ([`history::warm`]) while it is under way:
    /// a run waits for it rather than reading the same rows again.
    warming: Option<js_sys::Promise>,
    /// The record's `requestSize`: the context window's calibration (`history`).
    request_size: Option<RequestSize>,
    running: bool,
    /// Calls of this agent and reads of the thread for its view, counted together (`shared`):
    /// each began in an epoch of its own.
    epochs: u64,
    /// The epoch that last set the view: a read it took, or a call that began (which owns the
    /// view from then on). A read of an earlier epoch gives way ([`Reload::stands`]).
    view_epoch: u64,
    /// The last write of the current run kept its lease (the run must clear it when it ends).
    leased: bool,
    /// Results this run computed whose write was refused because another agent took the
    /// thread over (a lapsed lease): offered as late results when the run ends.
    refused: Vec<(String, String)>,
    /// How many inputs wait in a remote thread's outbox on this device (`outbox`).
    queued: usize,
    /// A later try of the outbox is scheduled (`outbox::later`).
    retry_queued: bool,
    /// Listeners and the thread's channel (`live`).
    live: live::Live,
    /// Fires at the view's earliest approval deadline (`expiry`).
    expiry: expiry::Timer,
    /// The MCP servers and their tools (the last of `tools`), if any (`mcp`).
    mcp: Option<Rc<mcp::McpTools>>,
    /// Where its MCP servers' questions go (docs/design.md, "MCP elicitation"): the package
    /// entry's `hook(callId, server, signal, question, withdrawn)` (`setElicitationHook`).
    #[cfg_attr(feature = "mcp", allow(dead_code))]
    pub(crate) elicitation_hook: Option<js_sys::Function>,
    /// Who hears the runs this agent starts by itself ([`on_its_own`]).
    pub background: Option<events::BackgroundHook>,
}

/// What starts a run.
pub enum Input {
    /// A user message, stored under the id given (a message from a remote thread's outbox),
    /// else a new one.
    Message(String, Option<crate::thread::MessageId>),
    Decisions(Decisions),
    ToolResults(ToolResults),
    Retry,
    SetPolicy(String, ToolPolicy),
    /// Re-gate a call a dead run left "started" (on open).
    Recover,
    /// The result of a call this agent gave up waiting for (see `Engine::late_result`).
    LateResult(String, Result<Value, String>),
    /// Expire the calls past their approval deadline (see `Engine::expire`).
    Expire,
}

#[derive(Clone, Default)]
pub struct RunOptions {
    pub signal: Option<AbortSignal>,
    pub events: Emitter,
    /// Who makes the decisions of this run, for the audit trail.
    pub by: Option<String>,
}

/// What a session is opened with (the Rust API's `OpenOptions`, checked and resolved).
pub struct Setup {
    pub thread_id: String,
    pub store: Store,
    pub model: ModelHandle,
    pub instructions: Option<String>,
    pub tools: Vec<Tool>,
    pub config: EngineConfig,
    pub history_limit: Option<u32>,
    pub mcp: Vec<crate::mcp::McpServerConfig>,
}

/// The options of a run the agent starts by itself (`why`: "expiry", "outbox", "live"): its
/// events go to the background hook, if there is one, which hears `start(why)` now; the
/// caller passes the run's result to [`ended`] after. Not a wrapper taking the run as a
/// closure: that would compile a copy of `run`'s future per call site.
pub(crate) fn on_its_own(s: &Shared, why: &str) -> (RunOptions, Option<events::RunEnd>) {
    let hook = s.borrow().background.clone();
    let Some(h) = hook else {
        return (RunOptions::default(), None);
    };
    (h.start)(why);
    let events = Emitter::new(Some(h.events.clone()));
    let opts = RunOptions {
        events,
        ..RunOptions::default()
    };
    (opts, Some(h.end))
}

/// The end of a run [`on_its_own`] began.
pub(crate) fn ended<T>(end: Option<events::RunEnd>, r: &Result<T, AgentError>) {
    if let Some(end) = end {
        end(r.as_ref().err());
    }
}

pub(crate) fn now() -> f64 {
    js_sys::Date::now()
}

/// Runs one input to its end, after expiring the calls past their approval deadline (any
/// call does: docs/design.md, "Approval expiry"). A decision is judged against the deadlines
/// itself, and refused with `expired` when it is late; the expiry is written then.
pub async fn run(
    s: &Shared,
    input: Input,
    opts: &RunOptions,
) -> Result<Option<Outcome>, AgentError> {
    let mcp = s.borrow().mcp.clone();
    if let Some(m) = mcp.filter(|_| opts.events.enabled()) {
        for e in m.owed() {
            opts.events.emit(&e);
        }
    }
    match input {
        Input::Decisions(decisions) => {
            let result = match s.remote() {
                Some(r) => decide::decide(s, &r, &decisions, opts).await,
                None => run_input(s, Input::Decisions(decisions.clone()), opts).await,
            };
            match result {
                Err(e @ AgentError::Engine(EngineError::Expired { .. })) => {
                    let _ = expiry::expire_due(s, opts).await;
                    Err(e)
                }
                Err(
                    e @ AgentError::Engine(
                        EngineError::NotSuspended(_) | EngineError::UnknownCallId { .. },
                    ),
                ) => Err(expiry::expired_error(s, &decisions).await.unwrap_or(e)),
                result => result,
            }
        }
        Input::Message(..) | Input::ToolResults(_) | Input::Retry | Input::SetPolicy(..) => {
            if expiry::due(&s.borrow()) && !s.is_running() {
                // What it ends in is the thread's, seen by the call that follows.
                let _ = expiry::expire_due(s, opts).await;
            }
            run_input(s, input, opts).await
        }
        Input::Recover | Input::LateResult(..) | Input::Expire => run_input(s, input, opts).await,
    }
}
