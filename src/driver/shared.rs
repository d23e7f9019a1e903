//! The agent's session as its handle, runs, timers and listeners share it: [`Shared`], with
//! the operations whose borrow rules matter done here, each taking and releasing its own
//! borrow. No borrow is held across an `.await` or a call into app code (an event listener,
//! a subscribe listener, a tool, a custom model): `clippy::await_holding_refcell_ref` is
//! denied for the crate, and the rest of the driver borrows only to read or write a few
//! fields at a time.

use super::Session;
use super::admission::RunningGuard;
use super::error::AgentError;
use crate::engine::EngineError;
use crate::store::Snapshot;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// The session of one agent.
#[derive(Clone)]
pub struct Shared(Rc<RefCell<Session>>);

/// A handle on the session that does not keep it alive (timers, channels, change streams,
/// subscriptions): the agent's end is theirs too.
#[derive(Clone, Default)]
pub struct WeakShared(Weak<RefCell<Session>>);

/// A read of the thread for the view, under way ([`Shared::begin_reload`]): its epoch.
pub(super) struct Reload(u64);

impl std::ops::Deref for Shared {
    type Target = RefCell<Session>;
    fn deref(&self) -> &RefCell<Session> {
        &self.0
    }
}

impl Shared {
    pub(super) fn new(session: Session) -> Shared {
        Shared(Rc::new(RefCell::new(session)))
    }

    pub fn downgrade(&self) -> WeakShared {
        WeakShared(Rc::downgrade(&self.0))
    }

    /// A call of this agent that may change the thread begins (a run, or decisions sent to a
    /// remote thread): `busy` while another is under way. It sets `running`, and owns the view
    /// from now on (a new epoch: a read that began before gives way, since the call applied
    /// its input to the view it had and its admission reads the record itself). The guard
    /// clears `running` however the call ends (and acts on a notice that came meanwhile).
    pub(super) fn begin_call(&self) -> Result<RunningGuard, AgentError> {
        let mut g = self.borrow_mut();
        if g.running {
            return Err(AgentError::Engine(EngineError::Busy(
                "another call is still running on this agent; await it first".into(),
            )));
        }
        g.running = true;
        g.epochs += 1;
        g.view_epoch = g.epochs;
        drop(g);
        Ok(RunningGuard(self.clone()))
    }

    /// A read of the thread for the view begins (a reload, or the read `open` made): its
    /// ticket, which [`Reload::stands`] checks when the read comes back.
    pub(super) fn begin_reload(&self) -> Reload {
        let mut g = self.borrow_mut();
        g.epochs += 1;
        Reload(g.epochs)
    }

    /// Takes what the read `r` got as the view, if it [stands](Reload::stands). True if taken.
    pub(super) fn take_reload(&self, r: &Reload, snap: &Snapshot) -> bool {
        let mut g = self.borrow_mut();
        if !r.stands(&g) {
            return false;
        }
        r.taken(&mut g);
        super::session::take(&mut g, snap);
        true
    }
}

impl Reload {
    /// Whether the view may still take what this read got: nothing of a later epoch set the
    /// view since it began: no call began (see [`Shared::begin_call`]), and no read that began
    /// after it was taken (over HTTP an older read's answer can come back after a newer one's:
    /// taking it would undo the newer view). Versions are not compared: a deleted and
    /// recreated thread starts again at 1.
    pub(super) fn stands(&self, g: &Session) -> bool {
        g.view_epoch <= self.0
    }

    /// Notes that the view took this read.
    pub(super) fn taken(&self, g: &mut Session) {
        g.view_epoch = self.0;
    }
}

impl WeakShared {
    pub fn upgrade(&self) -> Option<Shared> {
        self.0.upgrade().map(Shared)
    }
}
