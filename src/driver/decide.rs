//! Decisions on a remote thread (docs/design.md, "Threat model"): sent as an intent to the
//! store handler, which applies them to the stored thread with the engine's rules, as the
//! signed-in user. This device then takes the thread as the handler wrote it, and goes on
//! with the run when it can do the next step (it has the tools, or the model), as any device
//! that finds the thread `awaiting_device` does.

use super::session::take;
use super::*;
use crate::engine::ThreadStatus;
use crate::store::RemoteStore;
use crate::store::wire::engine_refusal;

/// Sends `decisions` to the handler and goes on. Refused here first, as on a local thread
/// (the engine's checks: `invalid_decision`, `unknown_call_id`, `expired`, `not_suspended`),
/// so that a malformed payload sends nothing.
pub(super) async fn decide(
    s: &Shared,
    store: &RemoteStore,
    decisions: &Decisions,
    opts: &RunOptions,
) -> Result<Option<Outcome>, AgentError> {
    let guard = s.begin_call()?;
    let (thread, token, count) = {
        let mut g = s.borrow_mut();
        let before = g.engine.state().clone();
        let checked = g
            .engine
            .submit_decisions(decisions, now() as u64, opts.by.as_deref());
        g.engine.reset(before);
        checked?;
        let token = g
            .engine
            .tail()
            .and_then(|t| t.resume_token())
            .map(str::to_owned);
        (g.thread_id.clone(), token, g.message_count)
    };
    let snap = store
        .decide(&thread, &decisions.to_json(), token)
        .await
        .map_err(|e| match engine_refusal(&e) {
            Some(refused) => AgentError::Engine(refused),
            None => AgentError::Store(e),
        })?;
    let status = {
        let mut g = s.borrow_mut();
        take(&mut g, &snap);
        g.engine.status()
    };
    drop(guard);
    if let Some(tail) = &snap.tail {
        let message = Cow::Borrowed(tail);
        opts.events.emit(&match snap.record.message_count > count {
            true => Event::Message { message },
            false => Event::MessageUpdated { message },
        });
    }
    live::changed(s);
    let outcome = match status {
        // This device has what the next step needs: the run goes on here.
        ThreadStatus::Interrupted => return run_input(s, Input::Retry, opts).await,
        ThreadStatus::AwaitingApproval => Outcome::AwaitingApproval,
        ThreadStatus::AwaitingToolResults => Outcome::AwaitingToolResults,
        ThreadStatus::Idle => Outcome::Completed {
            max_steps_reached: false,
        },
        ThreadStatus::AwaitingDevice => Outcome::AwaitingDevice,
    };
    opts.events
        .emit(&Event::finished(outcome, snap.tail.as_ref()));
    Ok(Some(outcome))
}
