//! Run admission and ownership (docs/design.md, "Run ownership"): a run takes the Web Lock,
//! is admitted by the record (or by its first write), renews its lease, and lets everything go
//! however it ends.

use super::step::{Ended, drive};
use super::*;

/// Clears `running` however the run ends.
pub(super) struct RunningGuard(pub(super) Shared);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let missed = match self.0.try_borrow_mut() {
            Ok(mut s) => {
                s.running = false;
                let at = s.version as f64;
                s.live.missed.take().filter(|v| *v > at)
            }
            Err(_) => None,
        };
        // A notice that came while the call ran, of a version this view is not at (another
        // device's write, not this call's own): the thread is read again now, and a run
        // another device handed on goes on here (`changes::go_on`).
        if let Some(v) = missed {
            super::live::notice(&self.0, v.is_finite().then_some(v));
        }
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
    let _guard = s.begin_call()?;
    history::wait_warm(s).await;
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
    // A call a remembered grant approved runs only if the grant is still in force.
    if grants::pending_granted(s) {
        grants::refresh(s).await;
    }
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
pub(super) fn apply(s: &Shared, input: Input, opts: &RunOptions) -> Result<(), AgentError> {
    let mut g = s.borrow_mut();
    let t = now() as u64;
    match input {
        Input::Message(text, id) => {
            history::check_message(&g, &text)?;
            match id {
                Some(id) => g.engine.user_message_as(&text, id, t)?,
                None => g.engine.user_message(&text, t)?,
            }
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
pub(super) async fn admit_by_read(
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
pub(super) const ABORT_GRACE_MS: f64 = 10_000.0;

/// What a run holds until it ends: its identity for writes, the lease renewal, the Web Lock,
/// and this agent's "running" flag.
pub(super) struct Hold {
    owner: Ownership,
    renewal: locks::Every,
    held: Option<locks::Held>,
    _guard: RunningGuard,
}

/// Ends a run: a run that failed after a write may have left its lease behind, so it is
/// cleared (the stored thread is otherwise as the last successful write left it); then the
/// lock and the "running" flag are let go.
pub(super) async fn finish(
    s: &Shared,
    hold: Hold,
    result: Result<Option<Outcome>, AgentError>,
) -> Result<Option<Outcome>, AgentError> {
    drop(hold.renewal);
    if hold.owner.admission.get() == Admit::Refused {
        // Refused at admission: nothing was written, sent or leased.
        return result;
    }
    let left = s.end_run();
    if result.is_err() || left.leased {
        let (store, thread) = s.at();
        let _ = store.release(&thread, &hold.owner.me, left.version).await;
        if result.is_err() && s.borrow().engine.is_running() && reload(s).await.is_err() {
            // The stored state cannot even be read: stop, keeping the last known view, so
            // that the next call reports the storage error again instead of `busy`.
            s.borrow_mut().engine.stop();
        }
    }
    drop(hold.held);
    drop(hold._guard);
    if !left.unwritten.is_empty() && s.remote().is_some() {
        // Offered through the outbox: the handler may not be reachable now.
        outbox::results(s, left.unwritten).await;
    } else {
        for (call_id, result) in left.unwritten {
            let s = s.clone();
            wasm_bindgen_futures::spawn_local(late_result(s, call_id, Ok(Value::String(result))));
        }
    }
    // The run is over ("running" no more, its lease gone): heard here and elsewhere.
    live::changed(s);
    result
}

/// Who the current run is, for its writes.
pub(super) struct Ownership {
    pub(super) me: String,
    pub(super) lock_held: bool,
    pub(super) admission: Cell<Admit>,
}

/// Where a run's admission stands.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Admit {
    /// To be decided by the first write, or by a read before any other step.
    Pending(LockAttempt),
    Done,
    /// Refused: the run wrote and sent nothing, and has nothing to clean up.
    Refused,
}

impl Ownership {
    /// Admits the run by reading the record, unless it is already admitted: before any step
    /// that is not a write (a model call, a policy, a tool, an outcome).
    pub(super) async fn admit_by_read(&self, s: &Shared) -> Result<(), AgentError> {
        let Admit::Pending(attempt) = self.admission.get() else {
            return Ok(());
        };
        let (store, thread) = s.at();
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

/// The late result of a call this agent gave up waiting for: kept if the call still waits
/// for a new decision (never refused for being late), else dropped with a warning.
pub(super) async fn late_result(s: Shared, call_id: String, outcome: Result<Value, String>) {
    for _ in 0..3 {
        if s.is_running() {
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
