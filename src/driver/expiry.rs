//! Approval expiry in a page (docs/design.md, "Approval expiry"): a timer fires at the view's
//! earliest approval deadline and runs the engine's expiry as a run like any other (the
//! thread's Web Lock and lease, the version check), so two tabs never both expire a call, nor
//! one expire it while another approves it.

use super::error::AgentError;
use super::fetch::{clear_timeout, set_timeout};
use super::{Input, RunOptions, Session, Shared, WeakShared, now, run_input};
use crate::engine::{Decisions, EngineError};
use crate::store::page::Rows;
use crate::thread::ApprovalState;
use wasm_bindgen::prelude::*;

/// The longest delay `setTimeout` takes (about 24.8 days); a later deadline re-arms on firing.
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

/// How long to wait before trying again when the expiry could not run (another run held the
/// thread, or a write failed).
const RETRY_MS: f64 = 1_000.0;

/// The page's expiry timer of one agent: armed at the earliest deadline of its view, replaced
/// whenever the view changes, cancelled when the agent goes.
#[derive(Default)]
pub struct Timer {
    session: WeakShared,
    /// The time it is armed for, and the `setTimeout` behind it.
    armed: Option<(f64, Armed)>,
}

struct Armed {
    /// The `setTimeout` id.
    id: JsValue,
    _f: Closure<dyn FnMut()>,
}

impl Drop for Armed {
    fn drop(&mut self) {
        clear_timeout(&self.id);
    }
}

impl Timer {
    pub fn new(session: WeakShared) -> Timer {
        Timer {
            session,
            armed: None,
        }
    }

    /// Fires at `at` (ms since the epoch), replacing any earlier arming; `None` disarms.
    pub fn arm(&mut self, at: Option<f64>) {
        if self.armed.as_ref().map(|(t, _)| *t) == at {
            return;
        }
        self.armed = None;
        let Some(at) = at else { return };
        let session = self.session.clone();
        let f = Closure::<dyn FnMut()>::new(move || {
            if let Some(s) = session.upgrade() {
                wasm_bindgen_futures::spawn_local(fire(s));
            }
        });
        let delay = (at - now()).clamp(0.0, MAX_DELAY_MS);
        let id = set_timeout(f.as_ref().unchecked_ref(), delay);
        self.armed = Some((at, Armed { id, _f: f }));
    }
}

/// Arms the view's timer at its earliest pending deadline.
pub fn rearm(g: &mut Session) {
    let at = g.engine.next_deadline().map(|at| at as f64);
    g.expiry.arm(at);
}

/// True when a call of the view is past its deadline.
pub fn due(g: &Session) -> bool {
    g.engine
        .next_deadline()
        .is_some_and(|at| at as f64 <= now())
}

async fn fire(s: Shared) {
    s.borrow_mut().expiry.armed = None;
    if !due(&s.borrow()) {
        // Armed for the longest delay `setTimeout` takes: not there yet.
        rearm(&mut s.borrow_mut());
        return;
    }
    let (opts, end) = super::on_its_own(&s, "expiry");
    let expired = expire_due(&s, &opts).await;
    super::ended(end, &expired);
    if expired.is_err() || due(&s.borrow()) {
        let mut g = s.borrow_mut();
        if g.expiry.armed.is_none() {
            g.expiry.arm(Some(now() + RETRY_MS));
        }
    }
}

/// Expires the view's due calls as a run (reading the thread again first, like every run).
/// A view that turns out stale is read again and judged again.
pub async fn expire_due(s: &Shared, opts: &RunOptions) -> Result<(), AgentError> {
    for _ in 0..3 {
        if !due(&s.borrow()) {
            return Ok(());
        }
        match run_input(s, Input::Expire, opts).await {
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Messages read back to find a call a decision names that has already expired.
const LOOK_BACK: u32 = 8;

/// When a decision payload is refused because its calls no longer wait (the expiry decided the
/// last of them and the thread moved on), tells whether one of them expired: the caller gets
/// `expired`, not a generic refusal.
pub async fn expired_error(s: &Shared, decisions: &Decisions) -> Option<AgentError> {
    let (store, thread) = s.at();
    let rows = store
        .rows(Rows::Messages, &thread, None, LOOK_BACK)
        .await
        .ok()?;
    let call_id = rows
        .iter()
        .rev()
        .filter_map(|r| r.message().ok())
        .find_map(|m| {
            m.tool_calls()?
                .iter()
                .find(|e| {
                    decisions.call_ids().any(|id| id == e.call_id)
                        && e.approval_state() == Some(ApprovalState::Expired)
                })
                .map(|e| e.call_id.clone())
        })?;
    Some(AgentError::Engine(EngineError::expired(&call_id)))
}
