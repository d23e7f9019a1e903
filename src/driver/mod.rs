//! The async loop: runs the engine's steps against a store, a model and the app's JS tools.
//! State lives in `Rc<RefCell<Session>>`; no borrow is held across an `.await`.

pub mod error;
pub mod events;
pub mod fetch;
pub mod locks;
pub mod model;
pub mod store;
pub mod tools;

use crate::engine::{
    Engine, EngineConfig, Outcome, PolicyVerdict, Step, ThreadState, ToolPolicy, ToolSet,
};
use crate::providers::ToolDef;
use crate::thread::Message;
use error::AgentError;
use events::Emitter;
use model::ModelHandle;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;
use store::Store;
use tools::JsTool;
use web_sys::AbortSignal;

pub struct Session {
    pub thread_id: String,
    pub store: Store,
    /// The Web Locks name of this thread (database + thread id).
    lock: String,
    pub engine: Engine,
    /// The stored version this view was read at (optimistic concurrency).
    pub version: u64,
    pub message_count: u64,
    pub model: ModelHandle,
    pub instructions: Option<String>,
    pub tools: Vec<JsTool>,
    /// At most this many of the latest messages are sent to the model (`None`: all).
    history_limit: Option<u32>,
    /// The thread (or its latest `history_limit` messages), loaded the first time the model
    /// is called and then kept up to date by `persist`.
    history: Option<Vec<Message>>,
    running: bool,
}

pub type Shared = Rc<RefCell<Session>>;

/// What starts a run.
pub enum Input {
    Message(String),
    Decisions(Value),
    ToolResults(Value),
    Retry,
    SetPolicy(String, ToolPolicy),
}

#[derive(Clone, Default)]
pub struct RunOptions {
    pub signal: Option<AbortSignal>,
    pub events: Emitter,
}

pub struct OpenOptions {
    pub thread_id: String,
    pub store: Store,
    pub model: ModelHandle,
    pub instructions: Option<String>,
    pub tools: Vec<JsTool>,
    pub config: EngineConfig,
    pub history_limit: Option<u32>,
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// Opens a thread: reads its record and tail only, then re-gates a call whose execution
/// was cut off by a closed page (SPEC §4).
pub async fn open(o: OpenOptions) -> Result<Shared, AgentError> {
    let snap = o.store.load(&o.thread_id, now()).await?;
    let specs = o.tools.iter().map(|t| t.spec.clone()).collect();
    let machine = (js_sys::Math::random() * 1024.0) as u64;
    let engine = Engine::new(ToolSet::new(specs), o.config, snap.state(), machine);
    let lock = locks::lock_name(o.store.name(), &o.thread_id);
    let running_elsewhere = snap
        .record
        .run
        .as_ref()
        .is_some_and(|r| r.started.is_some())
        && locks::held_elsewhere(&lock).await;
    let session = Rc::new(RefCell::new(Session {
        lock,
        thread_id: o.thread_id,
        store: o.store,
        engine,
        version: snap.record.version,
        message_count: snap.record.message_count,
        model: o.model,
        instructions: o.instructions,
        tools: o.tools,
        history_limit: o.history_limit,
        history: None,
        running: false,
    }));
    // A call still executing in another tab is not re-gated from here.
    let recovered = !running_elsewhere && session.borrow_mut().engine.recover(now() as u64);
    if recovered {
        drive(&session, &RunOptions::default()).await?;
    }
    Ok(session)
}

/// Clears `running` however the run ends.
struct RunningGuard(Shared);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.try_borrow_mut() {
            s.running = false;
        }
    }
}

/// Runs one input to its end. `Ok(None)` when the input ends without a yield (policies).
pub async fn run(
    s: &Shared,
    input: Input,
    opts: &RunOptions,
) -> Result<Option<Outcome>, AgentError> {
    {
        let mut g = s.borrow_mut();
        if g.running {
            return Err(AgentError::Engine(crate::engine::EngineError::Busy(
                "another call is still running on this agent; await it first".into(),
            )));
        }
        g.running = true;
    }
    let _guard = RunningGuard(s.clone());
    {
        let mut g = s.borrow_mut();
        let t = now() as u64;
        match input {
            Input::Message(text) => g.engine.user_message(&text, t)?,
            Input::Decisions(v) => g.engine.submit_decisions(&v, t)?,
            Input::ToolResults(v) => g.engine.submit_tool_results(&v, t)?,
            Input::Retry => g.engine.retry(t)?,
            Input::SetPolicy(name, p) => g.engine.set_tool_policy(&name, p)?,
        }
    }
    let result = drive(s, opts).await;
    if result.is_err() && s.borrow().engine.is_running() {
        // Never leave the engine mid-run after an error: take the stored state again.
        let _ = reload(s).await;
    }
    result
}

async fn drive(s: &Shared, opts: &RunOptions) -> Result<Option<Outcome>, AgentError> {
    let ev = &opts.events;
    loop {
        let step = s.borrow_mut().engine.poll();
        let Some(step) = step else { return Ok(None) };
        match step {
            Step::Persist(commit) => persist(s, commit, ev).await?,
            Step::CallModel => {
                if opts.signal.as_ref().is_some_and(AbortSignal::aborted) {
                    s.borrow_mut().engine.model_failed();
                    return Err(AgentError::Aborted);
                }
                let history = match history(s).await {
                    Ok(h) => h,
                    Err(e) => {
                        s.borrow_mut().engine.model_failed();
                        return Err(e);
                    }
                };
                let (handle, instructions, defs) = {
                    let g = s.borrow();
                    let defs: Vec<ToolDef> = g
                        .engine
                        .offered_tools()
                        .map(|t| {
                            ToolDef::new(t.name.clone(), t.description.as_deref(), t.schema.clone())
                                .with_extra(&t.extra)
                        })
                        .collect();
                    (g.model.clone(), g.instructions.clone(), defs)
                };
                let out = model::call(
                    &handle,
                    instructions.as_deref(),
                    &history,
                    &defs,
                    opts.signal.as_ref(),
                    ev,
                )
                .await;
                s.borrow_mut().history = Some(history);
                match out {
                    Ok(out) => s.borrow_mut().engine.model_output(out, now() as u64)?,
                    Err(e) => {
                        s.borrow_mut().engine.model_failed();
                        return Err(e);
                    }
                }
            }
            Step::EvaluatePolicies(queries) => {
                let mut verdicts = Vec::with_capacity(queries.len());
                for q in queries {
                    let (tool, thread) = {
                        let g = s.borrow();
                        (
                            g.tools.iter().find(|t| t.spec.name == q.tool).cloned(),
                            g.thread_id.clone(),
                        )
                    };
                    let v = match tool {
                        Some(t) => tools::verdict(&t, &q.call_id, &thread, &q.inputs).await,
                        None => PolicyVerdict::Failed("the tool is gone".into()),
                    };
                    verdicts.push((q.call_id, v));
                }
                s.borrow_mut()
                    .engine
                    .policy_verdicts(verdicts, now() as u64)?;
            }
            Step::RunTool(inv) => {
                if opts.signal.as_ref().is_some_and(AbortSignal::aborted) {
                    s.borrow_mut().engine.cancel_tool(&inv.call_id)?;
                    let _ = Box::pin(drive(s, &RunOptions::default())).await;
                    return Err(AgentError::Aborted);
                }
                let (tool, thread, lock) = {
                    let g = s.borrow();
                    let tool = g.tools.iter().find(|t| t.spec.name == inv.tool).cloned();
                    (tool, g.thread_id.clone(), g.lock.clone())
                };
                let held = locks::hold(&lock).await;
                let outcome = match tool {
                    Some(t) => {
                        tools::execute(&t, &inv.call_id, &thread, &inv.inputs, opts.signal.as_ref())
                            .await
                    }
                    None => Err(format!("the tool \"{}\" is not available", inv.tool)),
                };
                drop(held);
                if ev.enabled() {
                    ev.emit(json!({ "type": "tool_result", "callId": inv.call_id, "name": inv.tool,
                        "ok": outcome.is_ok(),
                        "result": match &outcome { Ok(v) => v.clone(), Err(m) => Value::String(m.clone()) } }));
                }
                s.borrow_mut()
                    .engine
                    .tool_outcome(&inv.call_id, outcome, now() as u64)?;
            }
            Step::Yield(outcome) => {
                if ev.enabled() {
                    let g = s.borrow();
                    ev.with_message(outcome_status(outcome), g.engine.tail());
                }
                return Ok(Some(outcome));
            }
        }
    }
}

pub fn outcome_status(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed { .. } => "completed",
        Outcome::AwaitingApproval => "awaiting_approval",
        Outcome::AwaitingToolResults => "awaiting_tool_results",
    }
}

async fn persist(
    s: &Shared,
    commit: crate::engine::Commit,
    ev: &Emitter,
) -> Result<(), AgentError> {
    let (store, thread, version) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone(), g.version)
    };
    match store.commit(&thread, version, &commit, now()).await {
        Ok(record) => {
            let mut g = s.borrow_mut();
            g.version = record.version;
            g.message_count = record.message_count;
            if let Some(h) = &mut g.history {
                if let Some(t) = &commit.replace_tail {
                    if let Some(last) = h.last_mut() {
                        *last = t.clone();
                    }
                }
                h.extend(commit.append.iter().cloned());
            }
            drop(g);
            if let Some(t) = &commit.replace_tail {
                ev.message("message_updated", t);
            }
            for m in &commit.append {
                ev.message("message", m);
            }
            Ok(())
        }
        Err(e) => {
            // The stored thread is the truth: take it, so the next call works on fresh state.
            let _ = reload(s).await;
            Err(e.into())
        }
    }
}

/// Re-reads the thread (record and tail) and drops any cached history.
pub async fn reload(s: &Shared) -> Result<(), AgentError> {
    let (store, thread) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone())
    };
    let snap = store.load(&thread, now()).await?;
    let mut g = s.borrow_mut();
    g.engine.reset(snap.state());
    g.version = snap.record.version;
    g.message_count = snap.record.message_count;
    g.history = None;
    Ok(())
}

/// Rows read per transaction when loading history (fewer round trips on long threads).
const PAGE: u32 = 5000;

/// The history for a model call, read once and then kept up to date by `persist`. It is
/// taken out for the call and put back after it (no copy per turn).
async fn history(s: &Shared) -> Result<Vec<Message>, AgentError> {
    let limit = s.borrow().history_limit;
    let cached = s.borrow_mut().history.take();
    let mut h = match cached {
        Some(h) => h,
        None => load_history(s, limit).await?,
    };
    if let Some(limit) = limit {
        trim_history(&mut h, limit as usize);
    }
    Ok(h)
}

async fn load_history(s: &Shared, limit: Option<u32>) -> Result<Vec<Message>, AgentError> {
    let (store, thread) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone())
    };
    let want = limit.map_or(usize::MAX, |l| l as usize);
    let mut pages = Vec::new();
    let mut have = 0;
    let mut before = None;
    while have < want {
        let rows = store.page(&thread, before, PAGE).await?;
        let Some(first) = rows.first() else { break };
        before = Some(first.seq);
        have += rows.len();
        let done = first.seq <= 1;
        pages.push(rows);
        if done {
            break;
        }
    }
    let mut h = Vec::with_capacity(have);
    for rows in pages.into_iter().rev() {
        for r in rows {
            h.push(r.message()?);
        }
    }
    Ok(h)
}

fn trim_history(h: &mut Vec<Message>, limit: usize) {
    let start = crate::thread::window_start(h, limit);
    h.drain(..start);
}

/// The engine's state (for tests and `Agent` getters).
pub fn state(s: &Shared) -> ThreadState {
    s.borrow().engine.state().clone()
}
