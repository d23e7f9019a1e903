//! The async loop: runs the engine's steps against a store, a model and the app's JS tools.
//! State lives in `Rc<RefCell<Session>>`; no borrow is held across an `.await`.

mod abort;
pub mod error;
pub mod events;
pub mod expiry;
pub mod fetch;
pub mod history;
pub mod live;
pub mod locks;
pub mod model;
pub mod store;
pub mod tools;

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
use std::cell::{Cell, RefCell};
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
    /// The record's `requestSize`: the context window's calibration (`history`).
    request_size: Option<RequestSize>,
    running: bool,
    /// Runs started on this agent: a reload started outside a run gives way to a run that
    /// started while it read (see [`reload`]).
    runs: u64,
    /// The last write of the current run kept its lease (the run must clear it when it ends).
    leased: bool,
    /// Results this run computed whose write was refused because another agent took the
    /// thread over (a lapsed lease): offered as late results when the run ends.
    refused: Vec<(String, String)>,
    /// Listeners and the thread's channel (`live`).
    live: live::Live,
    /// Fires at the view's earliest approval deadline (`expiry`).
    expiry: expiry::Timer,
}

pub type Shared = Rc<RefCell<Session>>;

/// What starts a run.
pub enum Input {
    Message(String),
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
}

pub(crate) fn now() -> f64 {
    js_sys::Date::now()
}

/// Opens a thread: reads its record and tail only, then re-gates a call whose execution was
/// cut off by a closed page (docs/design.md, "The run journal") — unless a live run elsewhere owns it (docs/design.md,
/// "Run ownership"). Never fails with `conflict`: a thread that moves on meanwhile is read again.
pub async fn open(o: Setup) -> Result<Shared, AgentError> {
    let snap = o.store.load(&o.thread_id, now()).await?;
    let specs = o.tools.iter().map(|t| t.spec.clone()).collect();
    let machine = (js_sys::Math::random() * 1024.0) as u64;
    let engine = Engine::new(ToolSet::new(specs), o.config, snap.state(), machine);
    let lock = locks::lock_name(o.store.name(), &o.thread_id);
    let me = format!(
        "agent_{:012x}",
        (js_sys::Math::random() * 281_474_976_710_656.0) as u64
    );
    let session = Rc::new(RefCell::new(Session {
        lock,
        me,
        thread_id: o.thread_id,
        store: o.store,
        engine,
        version: snap.record.version,
        others: None,
        message_count: snap.record.message_count,
        model: o.model,
        instructions: o.instructions,
        tools: o.tools,
        history_limit: o.history_limit,
        history: None,
        request_size: snap.record.request_size.clone(),
        running: false,
        runs: 0,
        leased: false,
        refused: Vec::new(),
        live: live::Live::default(),
        expiry: expiry::Timer::default(),
    }));
    session.borrow_mut().expiry = expiry::Timer::new(Rc::downgrade(&session));
    let name = session.borrow().lock.clone();
    live::connect(&session, &name);
    let mut snap = snap;
    for _ in 0..3 {
        let runs = session.borrow().runs;
        let probe = observe(&session, &snap, runs).await;
        let me = session.borrow().me.clone();
        if !must_recover(&snap.record, &me, now(), probe) {
            break;
        }
        match run(&session, Input::Recover, &RunOptions::default()).await {
            // Read again and judge again: the thread moved on while we looked.
            Err(e) if e.is_conflict() => {
                let (store, thread) = {
                    let g = session.borrow();
                    (g.store.clone(), g.thread_id.clone())
                };
                snap = store.load(&thread, now()).await?;
            }
            // A live run elsewhere took it meanwhile: leave it to that run.
            Err(e) if e.is_busy() => break,
            Err(e) => return Err(e),
            Ok(_) => break,
        }
    }
    // Calls past their approval deadline expire now, before the app sees the thread; the
    // timer takes the later ones. A failure here (the model call after the last expiry)
    // leaves the thread as a failed run would: `retry` goes on.
    let _ = expiry::expire_due(&session, &RunOptions::default()).await;
    expiry::rearm(&mut session.borrow_mut());
    Ok(session)
}

/// Takes `snap` as the view (when it is newer) and notes another agent's lease in it, asking
/// the Web Lock whether that owner is alive. Returns what the lock said. Changes nothing if a
/// run started since `runs` (the count of runs when `snap` was asked for).
async fn observe(s: &Shared, snap: &Snapshot, runs: u64) -> LockProbe {
    let (lock, me) = {
        let g = s.borrow();
        (g.lock.clone(), g.me.clone())
    };
    let probe = match &snap.record.lease {
        Some(l) if l.owner == me => LockProbe::Unsupported,
        None if snap.record.run.as_ref().is_none_or(|r| r.started.is_none()) => {
            LockProbe::Unsupported
        }
        _ => locks::probe(&lock).await,
    };
    let mut g = s.borrow_mut();
    if g.runs != runs {
        return probe;
    }
    if snap.record.version != g.version {
        take(&mut g, snap);
    }
    g.others = snap
        .record
        .lease
        .clone()
        .filter(|l| l.owner != me)
        .map(|l| {
            let alive = matches!(judge(Some(&l), &me, now(), probe), Owner::Live(_));
            (l, alive)
        });
    probe
}

/// The view becomes `snap`.
fn take(g: &mut Session, snap: &Snapshot) {
    g.engine.reset(snap.state());
    g.version = snap.record.version;
    g.message_count = snap.record.message_count;
    g.history = None;
    g.request_size = snap.record.request_size.clone();
    expiry::rearm(g);
}

/// True while another agent (another tab, or another `Agent` in this page) runs the thread,
/// as far as this view knows.
pub fn running_elsewhere(s: &Session) -> bool {
    match &s.others {
        Some((l, alive)) if l.locked => *alive,
        Some((l, _)) => l.until > now(),
        None => false,
    }
}

/// The summaries of a database's threads, newest first (docs/design.md, "Run ownership": a
/// thread is "running" while a live agent holds it).
pub async fn summaries(store: &Store) -> Result<Vec<ThreadSummary>, AgentError> {
    let mut records = store.list().await?;
    summary::newest_first(&mut records);
    let mut out = Vec::with_capacity(records.len());
    for r in &records {
        let probe = if summary::needs_probe(r) {
            locks::probe(&locks::lock_name(store.name(), &r.id)).await
        } else {
            LockProbe::Unsupported
        };
        out.push(ThreadSummary::new(r, probe, now()));
    }
    Ok(out)
}

/// `agent.status()`: "running" while this agent or, as far as this view knows, another one
/// runs the thread; else the engine's status of the view.
pub fn status(s: &Session) -> AgentStatus {
    if running_here(s) || running_elsewhere(s) {
        return AgentStatus::Running;
    }
    s.engine.status().into()
}

/// Whether this agent is running a call now.
pub fn running_here(s: &Session) -> bool {
    s.running
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

/// Runs one input to its end, after expiring the calls past their approval deadline (any
/// call does: docs/design.md, "Approval expiry"). A decision is judged against the deadlines
/// itself, and refused with `expired` when it is late; the expiry is written then.
pub async fn run(
    s: &Shared,
    input: Input,
    opts: &RunOptions,
) -> Result<Option<Outcome>, AgentError> {
    match input {
        Input::Decisions(decisions) => {
            let result = run_input(s, Input::Decisions(decisions.clone()), opts).await;
            match result {
                Err(e) if e.code() == "expired" => {
                    let _ = expiry::expire_due(s, opts).await;
                    Err(e)
                }
                Err(e) if matches!(e.code(), "not_suspended" | "unknown_call_id") => {
                    Err(expiry::expired_error(s, &decisions).await.unwrap_or(e))
                }
                result => result,
            }
        }
        Input::Message(_) | Input::ToolResults(_) | Input::Retry | Input::SetPolicy(..) => {
            if expiry::due(&s.borrow()) && !s.borrow().running {
                // What it ends in is the thread's, seen by the call that follows.
                let _ = expiry::expire_due(s, opts).await;
            }
            run_input(s, input, opts).await
        }
        Input::Recover | Input::LateResult(..) | Input::Expire => run_input(s, input, opts).await,
    }
}

/// Runs one input to its end. `Ok(None)` when the input ends without a yield (policies).
///
/// Run ownership (docs/design.md): the run takes the thread's Web Lock without waiting (where
/// there are Web Locks), reads the record again, and goes on only if no other live agent owns
/// the thread and the view is current; its writes carry its lease, its last write clears it.
/// A refused run writes nothing and sends nothing.
pub(crate) async fn run_input(
    s: &Shared,
    input: Input,
    opts: &RunOptions,
) -> Result<Option<Outcome>, AgentError> {
    {
        let mut g = s.borrow_mut();
        if g.running {
            return Err(AgentError::Engine(EngineError::Busy(
                "another call is still running on this agent; await it first".into(),
            )));
        }
        g.running = true;
        g.runs += 1;
    }
    let _guard = RunningGuard(s.clone());
    let (store, thread, lock_name, me) = {
        let g = s.borrow();
        (
            g.store.clone(),
            g.thread_id.clone(),
            g.lock.clone(),
            g.me.clone(),
        )
    };
    let mut attempt = locks::try_hold(&lock_name, false).await;
    if let locks::Attempt::Taken = attempt {
        // A run holds it. If its lease is in the record, it is under way: refuse at once.
        // Else it is starting or has just let go (a lock is freed a moment after its release):
        // wait for it a little.
        let lease = store.record(&thread, now()).await?.lease;
        if lease.is_none_or(|l| l.owner == me) {
            attempt = locks::try_hold(&lock_name, true).await;
        }
    }
    let (held, attempt) = match attempt {
        locks::Attempt::Held(h) => (Some(h), LockAttempt::Held),
        locks::Attempt::Taken => (None, LockAttempt::Taken),
        locks::Attempt::Unsupported => (None, LockAttempt::Unsupported),
    };
    // Admission (docs/design.md, "Run ownership"): the record alone decides. With the lock
    // held, the run's first write decides it inside its own transaction, where the store
    // refuses a stale version or another agent's live lease exactly as `admit` does (one
    // transaction less per run); the record is read first only when the input is refused or
    // the run's first step is not a write. Without the lock it is read now.
    let deferred = held.is_some();
    if !deferred {
        admit_by_read(s, &store, &thread, &me, attempt).await?;
    }
    s.borrow_mut().others = None;
    if let Err(e) = apply(s, input, opts) {
        if deferred {
            // A stale view's refusal is `conflict`, not whatever its old state said.
            admit_by_read(s, &store, &thread, &me, attempt).await?;
        }
        return Err(e);
    }
    // The owner renews its lease while a step is under way (a lease written without a Web
    // Lock is all another tab can judge it by).
    let renewal = {
        let (store, thread, me) = (store.clone(), thread.clone(), me.clone());
        locks::Every::new(RENEW_MS, move || {
            let (store, thread, me) = (store.clone(), thread.clone(), me.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let _ = store.renew(&thread, &me, now() + LEASE_MS).await;
            });
        })
    };
    let hold = Hold {
        owner: Ownership {
            me,
            lock_held: held.is_some(),
            admission: Cell::new(if deferred {
                Admit::Pending(attempt)
            } else {
                Admit::Done
            }),
        },
        renewal,
        held,
        _guard,
    };
    match drive(s, opts, &hold.owner).await {
        Ok(Ended::Done(outcome)) => finish(s, hold, Ok(outcome)).await,
        Err(e) => finish(s, hold, Err(e)).await,
        Ok(Ended::Detached(call_id, pending)) => {
            // The caller gets `aborted` now. The run keeps owning the thread while the tool may
            // still settle, so that nobody decides the call meanwhile (docs/design.md, "Late
            // results"); after the grace it is re-gated and a later result is still kept.
            let (s, opts) = (s.clone(), opts.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let mut pending = pending;
                let settled = tools::settled_within(&mut pending, ABORT_GRACE_MS).await;
                let gave_up = settled.is_none();
                let t = now() as u64;
                let next = match settled {
                    Some(outcome) => s.borrow_mut().engine.tool_outcome(&call_id, outcome, t),
                    None => s.borrow_mut().engine.abandon_tool(&call_id, t),
                };
                // With the caller's (aborted) signal the run stops at its next step.
                let result = match next {
                    Ok(()) => drive(&s, &opts, &hold.owner).await.map(|_| None),
                    Err(e) => Err(e.into()),
                };
                let _ = finish(&s, hold, result).await;
                if gave_up {
                    let outcome = pending.await;
                    late_result(s, call_id, outcome).await;
                }
            });
            Err(AgentError::Aborted)
        }
    }
}

/// Applies a run's input to the view's engine.
fn apply(s: &Shared, input: Input, opts: &RunOptions) -> Result<(), AgentError> {
    let mut g = s.borrow_mut();
    let t = now() as u64;
    match input {
        Input::Message(text) => {
            history::check_message(&g, &text)?;
            g.engine.user_message(&text, t)?
        }
        Input::Decisions(v) => g.engine.submit_decisions(&v, t, opts.by.as_deref())?,
        Input::ToolResults(v) => g.engine.submit_tool_results(&v, t)?,
        Input::Retry => g.engine.retry(t)?,
        Input::SetPolicy(name, p) => g.engine.set_tool_policy(&name, p)?,
        Input::Recover => {
            g.engine.recover(t);
        }
        Input::LateResult(call_id, outcome) => {
            g.engine.late_result(&call_id, outcome, t)?;
        }
        Input::Expire => {
            g.engine.expire(t)?;
        }
    }
    Ok(())
}

/// Admits a run by reading the record (`store::admit`). A refused run takes the stored thread
/// (and the lock's word on its owner) and fails with `busy` or `conflict`, having written and
/// sent nothing.
async fn admit_by_read(
    s: &Shared,
    store: &Store,
    thread: &str,
    me: &str,
    attempt: LockAttempt,
) -> Result<(), AgentError> {
    let record = store.record(thread, now()).await?;
    let expected = s.borrow().version;
    let refusal = match admit(&record, expected, me, attempt, now()) {
        Admission::Go => return Ok(()),
        Admission::Busy => StoreError::Owned {
            owner: record.lease.map(|l| l.owner).unwrap_or_default(),
        },
        Admission::Stale => StoreError::Conflict {
            expected,
            found: record.version,
        },
    };
    reload(s).await?;
    Err(refusal.into())
}

/// How long a run that was aborted while a tool's `execute` had not settled keeps owning the
/// thread, waiting for it, before it re-gates the call.
const ABORT_GRACE_MS: f64 = 10_000.0;

/// What a run holds until it ends: its identity for writes, the lease renewal, the Web Lock,
/// and this agent's "running" flag.
struct Hold {
    owner: Ownership,
    renewal: locks::Every,
    held: Option<locks::Held>,
    _guard: RunningGuard,
}

/// Ends a run: a run that failed after a write may have left its lease behind, so it is
/// cleared (the stored thread is otherwise as the last successful write left it); then the
/// lock and the "running" flag are let go.
async fn finish(
    s: &Shared,
    hold: Hold,
    result: Result<Option<Outcome>, AgentError>,
) -> Result<Option<Outcome>, AgentError> {
    drop(hold.renewal);
    if hold.owner.admission.get() == Admit::Refused {
        // Refused at admission: nothing was written, sent or leased.
        return result;
    }
    let leased = std::mem::take(&mut s.borrow_mut().leased);
    if result.is_err() || leased {
        let (store, thread) = {
            let g = s.borrow();
            (g.store.clone(), g.thread_id.clone())
        };
        let _ = store.release(&thread, &hold.owner.me).await;
        if result.is_err() && s.borrow().engine.is_running() && reload(s).await.is_err() {
            // The stored state cannot even be read: stop, keeping the last known view, so
            // that the next call reports the storage error again instead of `busy`.
            s.borrow_mut().engine.stop();
        }
    }
    drop(hold.held);
    drop(hold._guard);
    let refused = std::mem::take(&mut s.borrow_mut().refused);
    for (call_id, result) in refused {
        let s = s.clone();
        wasm_bindgen_futures::spawn_local(late_result(s, call_id, Ok(Value::String(result))));
    }
    // The run is over ("running" no more, its lease gone): heard here and elsewhere.
    live::changed(s);
    result
}

/// Who the current run is, for its writes.
struct Ownership {
    me: String,
    lock_held: bool,
    admission: Cell<Admit>,
}

/// Where a run's admission stands.
#[derive(Clone, Copy, PartialEq)]
enum Admit {
    /// To be decided by the first write, or by a read before any other step.
    Pending(LockAttempt),
    Done,
    /// Refused: the run wrote and sent nothing, and has nothing to clean up.
    Refused,
}

impl Ownership {
    /// Admits the run by reading the record, unless it is already admitted: before any step
    /// that is not a write (a model call, a policy, a tool, an outcome).
    async fn admit_by_read(&self, s: &Shared) -> Result<(), AgentError> {
        let Admit::Pending(attempt) = self.admission.get() else {
            return Ok(());
        };
        let (store, thread) = {
            let g = s.borrow();
            (g.store.clone(), g.thread_id.clone())
        };
        let r = admit_by_read(s, &store, &thread, &self.me, attempt).await;
        self.admission.set(match r {
            Ok(()) => Admit::Done,
            Err(AgentError::Store(StoreError::Owned { .. } | StoreError::Conflict { .. })) => {
                Admit::Refused
            }
            Err(_) => Admit::Pending(attempt),
        });
        r
    }
}

/// How `drive` ended.
enum Ended {
    Done(Option<Outcome>),
    /// The caller aborted while this call's `execute` had not settled: the execution.
    Detached(String, tools::LocalFuture<Result<Value, String>>),
}

/// The late result of a call this agent gave up waiting for: kept if the call still waits
/// for a new decision (never refused for being late), else dropped with a warning.
async fn late_result(s: Shared, call_id: String, outcome: Result<Value, String>) {
    for _ in 0..3 {
        if s.borrow().running {
            break;
        }
        match run(
            &s,
            Input::LateResult(call_id.clone(), outcome.clone()),
            &RunOptions::default(),
        )
        .await
        {
            Err(e) if e.is_conflict() => continue,
            Err(_) => break,
            Ok(_) => return,
        }
    }
    web_sys::console::warn_1(
        &format!("gatehouse: the late result of call {call_id:?} could not be recorded").into(),
    );
}

/// A future behind a pointer: `drive`'s state machine then holds a box, not the callee's
/// whole state, and the callee's poll is compiled once, out of line.
fn boxed<'a, T>(
    f: impl std::future::Future<Output = T> + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>> {
    Box::pin(f)
}

async fn drive(s: &Shared, opts: &RunOptions, owner: &Ownership) -> Result<Ended, AgentError> {
    let ev = &opts.events;
    loop {
        let step = s.borrow_mut().engine.poll();
        if !matches!(step, Some(Step::Persist(_))) {
            boxed(owner.admit_by_read(s)).await?;
        }
        let Some(step) = step else {
            return Ok(Ended::Done(None));
        };
        match step {
            Step::Persist(commit) => {
                let keep = !s.borrow().engine.run_ends_after_write();
                let writer = Writer::new(&owner.me, owner.lock_held, keep, now());
                boxed(persist(s, commit, &writer, ev, &owner.admission)).await?
            }
            Step::CallModel => {
                if opts.signal.as_ref().is_some_and(AbortSignal::aborted) {
                    s.borrow_mut().engine.model_failed();
                    return Err(AgentError::Aborted);
                }
                let (handle, instructions, defs) = {
                    let g = s.borrow();
                    (g.model.clone(), g.instructions.clone(), tool_defs(&g))
                };
                let fixed = history::fixed_tokens(instructions.as_deref(), &defs);
                let history = match boxed(history::for_request(s, fixed)).await {
                    Ok(h) => h,
                    Err(e) => {
                        s.borrow_mut().engine.model_failed();
                        return Err(e);
                    }
                };
                let out = boxed(model::call(
                    &handle,
                    instructions.as_deref(),
                    &history.messages,
                    &defs,
                    opts.signal.as_ref(),
                    ev,
                ))
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
                        Some(t) => {
                            match boxed(tools::verdict(
                                &t,
                                &q.call_id,
                                &thread,
                                &q.inputs,
                                opts.signal.as_ref(),
                            ))
                            .await
                            {
                                Some(v) => v,
                                // Aborted while the policy had not answered: nothing of the
                                // model's answer is written; `retry` asks the model again.
                                None => {
                                    s.borrow_mut().engine.stop();
                                    return Err(AgentError::Aborted);
                                }
                            }
                        }
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
                    let _ = Box::pin(drive(s, &RunOptions::default(), owner)).await;
                    return Err(AgentError::Aborted);
                }
                let (tool, thread) = {
                    let g = s.borrow();
                    let tool = g.tools.iter().find(|t| t.spec.name == inv.tool).cloned();
                    (tool, g.thread_id.clone())
                };
                let outcome = match tool {
                    Some(t) => {
                        match boxed(tools::execute(
                            &t,
                            &inv.call_id,
                            &thread,
                            &inv.inputs,
                            opts.signal.as_ref(),
                        ))
                        .await
                        {
                            tools::Execution::Settled(outcome) => outcome,
                            // Aborted while `execute` had not settled: it may still take
                            // effect. `run` decides what happens to it.
                            tools::Execution::Abandoned(pending) => {
                                return Ok(Ended::Detached(inv.call_id, pending));
                            }
                        }
                    }
                    None => Err(format!("the tool \"{}\" is not available", inv.tool)),
                };
                if ev.enabled() {
                    ev.emit(&Event::ToolResult {
                        call_id: Cow::Borrowed(&inv.call_id),
                        name: Cow::Borrowed(&inv.tool),
                        ok: outcome.is_ok(),
                        result: match &outcome {
                            Ok(v) => Cow::Borrowed(v),
                            Err(m) => Cow::Owned(Value::String(m.clone())),
                        },
                    });
                }
                s.borrow_mut()
                    .engine
                    .tool_outcome(&inv.call_id, outcome, now() as u64)?;
            }
            Step::Yield(outcome) => {
                if ev.enabled() {
                    let g = s.borrow();
                    ev.emit(&Event::finished(outcome, g.engine.tail()));
                }
                return Ok(Ended::Done(Some(outcome)));
            }
        }
    }
}

/// Results longer than this are replaced by a short error result when the storage quota
/// refuses a write that holds them (the tool ran: it must not look interrupted).
const UNSTORABLE_RESULT_LEN: usize = 1024;

async fn persist(
    s: &Shared,
    commit: crate::engine::Commit,
    writer: &Writer,
    ev: &Emitter,
    admission: &Cell<Admit>,
) -> Result<(), AgentError> {
    let (store, thread, version) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone(), g.version)
    };
    let mut commit = commit;
    commit.request_size = s
        .borrow_mut()
        .history
        .as_mut()
        .and_then(|h| h.answered(&commit.append));
    let mut first = store.commit(&thread, version, &commit, writer, now()).await;
    if matches!(first, Err(StoreError::Quota(_))) && commit.shrink_results(UNSTORABLE_RESULT_LEN) {
        s.borrow_mut().engine.shrink_results(UNSTORABLE_RESULT_LEN);
        first = store.commit(&thread, version, &commit, writer, now()).await;
    }
    match first {
        Ok(record) => {
            admission.set(Admit::Done);
            let mut g = s.borrow_mut();
            g.version = record.version;
            g.message_count = record.message_count;
            g.leased = writer.lease.is_some();
            g.request_size = record.request_size.clone();
            expiry::rearm(&mut g);
            if let Some(h) = &mut g.history {
                if let Some(t) = &commit.replace_tail {
                    h.replace_tail(t.clone());
                }
                for m in &commit.append {
                    h.push(m.clone());
                }
            }
            drop(g);
            if let Some(t) = &commit.replace_tail {
                ev.emit(&Event::MessageUpdated {
                    message: Cow::Borrowed(t),
                });
            }
            for m in &commit.append {
                ev.emit(&Event::Message {
                    message: Cow::Borrowed(m),
                });
            }
            live::changed(s);
            Ok(())
        }
        Err(e) => {
            // The stored thread is the truth: take it, so the next call works on fresh state.
            let _ = reload(s).await;
            let refusal = matches!(e, StoreError::Conflict { .. } | StoreError::Owned { .. });
            if let Admit::Pending(_) = admission.get() {
                // The run's first write was its admission: refused, it wrote nothing.
                admission.set(if refusal { Admit::Refused } else { Admit::Done });
                return Err(e.into());
            }
            if refusal {
                // Only a takeover of a lapsed lease lets another agent write during a run; a
                // result computed meanwhile is still the call's result.
                let mut g = s.borrow_mut();
                let stored = g.engine.state().run.clone();
                let refused: Vec<(String, String)> = commit
                    .run
                    .iter()
                    .flat_map(|r| r.results.iter())
                    .filter(|r| !stored.as_ref().is_some_and(|j| j.has_result(&r.call_id)))
                    .map(|r| (r.call_id.clone(), r.result.clone()))
                    .collect();
                g.refused.extend(refused);
            }
            Err(e.into())
        }
    }
}

/// Re-reads the thread (record and tail), drops any cached history, and asks the Web Lock
/// whether another agent's run is alive.
pub async fn reload(s: &Shared) -> Result<(), AgentError> {
    let (store, thread, runs) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone(), g.runs)
    };
    let snap = store.load(&thread, now()).await?;
    // A run that started while this read (a live notice's or `refresh()`'s reload) owns the
    // view now: its input was applied to it, and its admission reads the record itself.
    if s.borrow().runs != runs {
        return Ok(());
    }
    take(&mut s.borrow_mut(), &snap);
    observe(s, &snap, runs).await;
    Ok(())
}

/// The definitions of the tools offered to the model now.
fn tool_defs(g: &Session) -> Vec<ToolDef> {
    g.engine
        .offered_tools()
        .map(|t| {
            ToolDef::new(t.name.clone(), t.description.as_deref(), t.schema.clone())
                .with_extra(&t.extra)
        })
        .collect()
}
