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

use super::{AgentError, Input, RunOptions, Shared, now, run};
use crate::engine::{Decisions, Outcome};
use crate::store::page::Rows;
use crate::store::{Queued, RemoteStore, StoreError};
use crate::thread::MessageId;
use std::rc::Rc;

/// How a run that may be queued ended.
pub enum Ran {
    Done(Option<Outcome>),
    /// The input waits in the outbox.
    Queued,
}

/// How many of the newest messages are looked through for a queued message's id.
const RECENT: u32 = 50;

fn remote(s: &Shared) -> Option<Rc<RemoteStore>> {
    match &s.borrow().store {
        super::store::Store::Remote(r) => Some(r.clone()),
        _ => None,
    }
}

/// Runs `input`. On a remote thread, a message or decisions whose first write could not
/// reach the handler are queued instead (and so is any behind an outbox that is not empty,
/// to keep their order).
pub async fn run_or_queue(s: &Shared, input: Input, opts: &RunOptions) -> Result<Ran, AgentError> {
    let Some(store) = remote(s) else {
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
            let queued = Queued::Decisions {
                decisions: d.to_json(),
                by: opts.by.clone(),
            };
            (Input::Decisions(d), queued)
        }
        other => return run(s, other, opts).await.map(Ran::Done),
    };
    let thread = s.borrow().thread_id.clone();
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

/// The view shows the input applied (its write landed although the run then failed).
fn landed(s: &Shared, queued: &Queued) -> bool {
    match queued {
        Queued::Message { id, .. } => s
            .borrow()
            .engine
            .tail()
            .is_some_and(|t| t.id.as_str() == id),
        Queued::Decisions { .. } => false,
    }
}

async fn enqueue(s: &Shared, store: &RemoteStore, queued: Queued) -> Result<(), AgentError> {
    let thread = s.borrow().thread_id.clone();
    let mut outbox = store.outbox(&thread).await;
    outbox.push(queued);
    let n = outbox.len();
    store.set_outbox(&thread, outbox).await?;
    s.borrow_mut().queued = n;
    super::live::changed_here(s);
    Ok(())
}

/// How often one flush tries an input that met a `conflict` (the thread moved on meanwhile,
/// or a message waits behind calls that need a decision) before leaving it for later.
const CONFLICT_TRIES: u32 = 3;

/// Sends what waits in the outbox, oldest first, each as its own run; stops at the first that
/// still cannot reach the handler, that another agent's run holds up (`busy`), or that keeps
/// meeting a `conflict`.
pub async fn flush(s: &Shared) {
    let Some(store) = remote(s) else { return };
    let thread = s.borrow().thread_id.clone();
    let mut conflicts = 0;
    loop {
        if s.borrow().running {
            return;
        }
        let outbox = store.outbox(&thread).await;
        s.borrow_mut().queued = outbox.len();
        let Some(first) = outbox.first().cloned() else {
            return;
        };
        let result = match first {
            Queued::Message { id, text } => match stored(&store, &thread, &id).await {
                Ok(true) => Ok(None),
                Ok(false) => {
                    let input = Input::Message(text, Some(MessageId::from_raw(id)));
                    run(s, input, &RunOptions::default()).await
                }
                Err(e) => Err(e.into()),
            },
            Queued::Decisions { decisions, by } => match Decisions::from_json(&decisions) {
                Ok(d) => {
                    let opts = RunOptions {
                        by,
                        ..RunOptions::default()
                    };
                    run(s, Input::Decisions(d), &opts).await
                }
                Err(e) => Err(e.into()),
            },
        };
        match result {
            Err(AgentError::Store(StoreError::Unavailable(_))) => return,
            Err(e) if e.is_busy() => return,
            // Not written: the next try looks again (a message may have landed meanwhile).
            Err(e) if e.is_conflict() => {
                conflicts += 1;
                if conflicts >= CONFLICT_TRIES {
                    return;
                }
                continue;
            }
            // Written, or refused for good by the thread as it now stands (decisions on calls
            // decided elsewhere, a call that no longer waits): it leaves the outbox.
            _ => {
                let mut rest = store.outbox(&thread).await;
                if rest.first() == outbox.first() {
                    rest.remove(0);
                }
                let n = rest.len();
                if store.set_outbox(&thread, rest).await.is_err() {
                    return;
                }
                s.borrow_mut().queued = n;
                super::live::changed_here(s);
            }
        }
    }
}

/// Notes how many inputs wait in the outbox (another agent on this device may have sent or
/// queued some): after every reload of a remote thread.
pub async fn count(s: &Shared) {
    if let Some(store) = remote(s) {
        let thread = s.borrow().thread_id.clone();
        let n = store.outbox(&thread).await.len();
        s.borrow_mut().queued = n;
    }
}

/// A message with `id` is among the thread's newest stored ones.
async fn stored(store: &RemoteStore, thread: &str, id: &str) -> Result<bool, StoreError> {
    let rows = store.rows(Rows::Messages, thread, None, RECENT).await?;
    Ok(rows
        .iter()
        .any(|r| r.message().is_ok_and(|m| m.id.as_str() == id)))
}
