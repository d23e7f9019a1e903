//! A remote thread's outbox (docs/design.md, "Across devices"): a message or decisions made
//! while the thread's store handler cannot be reached wait on this device, in its IndexedDB
//! copy of the thread, and are sent in order when it can be reached again: when the change
//! stream reopens, and when the agent opens. Nothing runs until the handler has acknowledged
//! its write, as for any input.
//!
//! Never lost: an input leaves the outbox only once its run wrote it, or once the thread
//! shows it can never apply (decisions on calls decided elsewhere meanwhile). Never sent
//! twice: a message keeps the id it was queued with, and one already stored under that id (its
//! write landed, its answer was lost) is not sent again.

use super::{AgentError, Input, RunOptions, Shared, ended, now, on_its_own, run};
use crate::engine::{Decisions, Outcome};
use crate::store::page::Rows;
use crate::store::{Queued, RemoteStore, StoreError};
use crate::thread::MessageId;
use serde_json::Value;

/// How a run that may be queued ended.
pub enum Ran {
    Done(Option<Outcome>),
    /// The input waits in the outbox.
    Queued,
}

/// How many of the newest messages are looked through for a queued message's id.
const RECENT: u32 = 50;

/// Runs `input`. On a remote thread, a message or decisions whose first write could not
/// reach the handler are queued instead (and so is any behind an outbox that is not empty,
/// to keep their order).
pub async fn run_or_queue(s: &Shared, input: Input, opts: &RunOptions) -> Result<Ran, AgentError> {
    let Some(store) = s.remote() else {
        return run(s, input, opts).await.map(Ran::Done);
    };
    let (input, queued) = match input {
        Input::Message(text, _) => {
            let id = s.borrow_mut().engine.new_message_id(now() as u64);
            let queued = Queued::Message {
                id: id.to_string(),
                text: text.clone(),
            };
            (Input::Message(text, Some(id)), queued)
        }
        Input::Decisions(d) => {
            let tail = s.borrow().engine.tail().cloned();
            let queued = Queued::decisions_on(d.to_json(), opts.by.clone(), tail.as_ref());
            (Input::Decisions(d), queued)
        }
        other => return run(s, other, opts).await.map(Ran::Done),
    };
    let thread = s.thread_id();
    if !store.outbox(&thread).await.is_empty() {
        flush(s).await;
        if !store.outbox(&thread).await.is_empty() {
            enqueue(s, &store, queued).await?;
            return Ok(Ran::Queued);
        }
    }
    match run(s, input, opts).await {
        Err(AgentError::Store(StoreError::Unavailable(_))) if !landed(s, &queued) => {
            enqueue(s, &store, queued).await?;
            Ok(Ran::Queued)
        }
        other => other.map(Ran::Done),
    }
}

/// Results a run computed but could not write (the handler could not be reached, or another
/// device took the thread over): queued, and offered as late results by the next flush.
pub async fn results(s: &Shared, results: Vec<(String, String)>) {
    let Some(store) = s.remote() else { return };
    let thread = s.thread_id();
    let queued: Vec<Queued> = results
        .into_iter()
        .map(|(call_id, result)| Queued::Result { call_id, result })
        .collect();
    if let Ok(n) = store
        .edit_outbox(&thread, &|outbox| outbox.extend(queued.iter().cloned()))
        .await
    {
        s.set_queued(n);
        later(s);
    }
}

/// The view shows the input applied (its write landed although the run then failed).
fn landed(s: &Shared, queued: &Queued) -> bool {
    match queued {
        Queued::Message { id, .. } => s
            .borrow()
            .engine
            .tail()
            .is_some_and(|t| t.id.as_str() == id),
        // The decisions' write landed when their calls no longer wait in the view (the run
        // failed later: a result's write, say), or when their calls are gone altogether.
        Queued::Decisions { decisions, .. } => {
            let g = s.borrow();
            let pending: Vec<&str> = g
                .engine
                .tail()
                .and_then(|t| t.tool_calls())
                .map(|t| {
                    t.iter()
                        .filter(|e| e.is_pending())
                        .map(|e| e.call_id.as_str())
                        .collect()
                })
                .unwrap_or_default();
            let ids = decisions.as_object().into_iter().flat_map(|m| m.keys());
            !ids.into_iter().all(|id| pending.contains(&id.as_str()))
        }
        Queued::Result { .. } => false,
    }
}

async fn enqueue(s: &Shared, store: &RemoteStore, queued: Queued) -> Result<(), AgentError> {
    let thread = s.thread_id();
    let n = store
        .edit_outbox(&thread, &|outbox| outbox.push(queued.clone()))
        .await?;
    s.set_queued(n);
    super::live::changed_here(s);
    // Sent when the browser is back online, or in RETRY_MS: a change stream that stayed open
    // through the outage (Chromium's offline emulation keeps it) never reconnects to flush it.
    later(s);
    Ok(())
}

/// How often one flush tries an input that met a `conflict` (the thread moved on meanwhile,
/// or a message waits behind calls that need a decision) before leaving it for later.
const CONFLICT_TRIES: u32 = 3;

/// Sends what waits in the outbox, oldest first, each as its own run; stops at the first that
/// still cannot reach the handler, that another agent's run holds up (`busy`), or that keeps
/// meeting a `conflict`.
pub async fn flush(s: &Shared) {
    send(s).await;
    later(s);
}

async fn send(s: &Shared) {
    let Some(store) = s.remote() else { return };
    let thread = s.thread_id();
    let mut conflicts = 0;
    loop {
        if s.is_running() {
            return;
        }
        let outbox = store.outbox(&thread).await;
        s.set_queued(outbox.len());
        let Some(first) = outbox.first().cloned() else {
            return;
        };
        let answers = first.answers(s.borrow().engine.tail());
        let result = match first {
            Queued::Message { id, text } => match stored(&store, &thread, &id).await {
                Ok(true) => Ok(None),
                Ok(false) => {
                    let input = Input::Message(text, Some(MessageId::from_raw(id)));
                    let (opts, end) = on_its_own(s, "outbox");
                    let r = run(s, input, &opts).await;
                    ended(end, &r);
                    r
                }
                Err(e) => Err(e.into()),
            },
            Queued::Result { call_id, result } => {
                // A run cut off mid-call is re-gated first (what opening the thread does), so
                // the late result finds the call waiting for a decision.
                let (opts, end) = on_its_own(s, "outbox");
                let _ = run(s, Input::Recover, &opts).await;
                let outcome = Ok(Value::String(result));
                let r = run(s, Input::LateResult(call_id, outcome), &opts).await;
                ended(end, &r);
                r
            }
            // Made before the call was gated again (its run was cut off elsewhere): refused
            // for good, as decisions on calls decided elsewhere are.
            Queued::Decisions { .. } if !answers => Err(AgentError::Engine(
                crate::engine::EngineError::NotSuspended(
                    "these decisions were made before their calls were gated again".into(),
                ),
            )),
            Queued::Decisions { decisions, by, .. } => match Decisions::from_json(&decisions) {
                Ok(d) => {
                    let (opts, end) = on_its_own(s, "outbox");
                    let opts = RunOptions { by, ..opts };
                    let r = run(s, Input::Decisions(d), &opts).await;
                    ended(end, &r);
                    r
                }
                Err(e) => Err(e.into()),
            },
        };
        match result {
            // Not written: the next try looks again (a message may have landed meanwhile).
            Err(e) if e.is_conflict() => {
                conflicts += 1;
                if conflicts >= CONFLICT_TRIES {
                    return;
                }
                continue;
            }
            // Refused for good by the thread as it now stands: decisions on calls decided
            // elsewhere meanwhile, or that no longer wait.
            Err(e) if is_decision_refusal(&e, &outbox[0]) => {}
            // Not sent, or not known to be written (the handler down, another device's run,
            // a storage error): it stays, for the next flush.
            Err(_) => return,
            // Written (its write landed, even if the run then failed later).
            Ok(_) => {}
        }
        let sent = outbox[0].clone();
        let removed = store
            .edit_outbox(&thread, &|rest| {
                if let Some(i) = rest.iter().position(|q| *q == sent) {
                    rest.remove(i);
                }
            })
            .await;
        let Ok(n) = removed else { return };
        s.set_queued(n);
        super::live::changed_here(s);
    }
}

/// Notes how many inputs wait in the outbox (another agent on this device may have sent or
/// queued some): after every reload of a remote thread. If some do, they are tried again: the
/// thread changed, and what held them up (calls awaiting a decision, another device's run)
/// may be gone. A flush that cannot send writes nothing, so this does not feed itself.
pub async fn count(s: &Shared) {
    if let Some(store) = s.remote() {
        let thread = s.thread_id();
        let n = store.outbox(&thread).await.len();
        s.set_queued(n);
        if n > 0 && !s.is_running() {
            let s = s.clone();
            wasm_bindgen_futures::spawn_local(async move { flush(&s).await });
        }
    }
}

/// Decisions the thread refuses whatever is tried again: their calls were decided elsewhere or
/// no longer wait (a message is never dropped for an error: it waits until it is stored).
fn is_decision_refusal(e: &AgentError, queued: &Queued) -> bool {
    matches!(queued, Queued::Decisions { .. } | Queued::Result { .. })
        && matches!(
            e.code(),
            "not_suspended" | "unknown_call_id" | "invalid_decision" | "expired"
        )
}

/// How long a flush that left inputs waiting waits before it tries again.
const RETRY_MS: u64 = 3_000;

/// Tries the outbox again in [`RETRY_MS`] while it holds inputs and the agent lives: what
/// held them up (another device's run, calls awaiting a decision) ends without a change this
/// agent hears of, or with one it heard while it was itself running.
fn later(s: &Shared) {
    if !s.claim_retry() {
        return;
    }
    let weak = s.downgrade();
    wasm_bindgen_futures::spawn_local(async move {
        if let Ok(link) = super::fetch::AbortLink::new(None) {
            let _ = super::fetch::sleep_or_online(RETRY_MS, &link).await;
        }
        let Some(s) = weak.upgrade() else { return };
        s.retry_started();
        flush(&s).await;
    });
}

/// A message with `id` is among the thread's newest stored ones.
async fn stored(store: &RemoteStore, thread: &str, id: &str) -> Result<bool, StoreError> {
    let rows = store.rows(Rows::Messages, thread, None, RECENT).await?;
    Ok(rows
        .iter()
        .any(|r| r.message().is_ok_and(|m| m.id.as_str() == id)))
}
