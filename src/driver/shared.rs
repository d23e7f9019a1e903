//! The agent's session as its handle, runs, timers and listeners share it: [`Shared`], with
//! the operations whose borrow rules matter done here, each taking and releasing its own
//! borrow. No borrow is held across an `.await` or a call into app code (an event listener,
//! a subscribe listener, a tool, a custom model): `clippy::await_holding_refcell_ref` is
//! denied for the crate, and the rest of the driver borrows only to read or write a few
//! fields at a time.

use super::Session;
use super::admission::RunningGuard;
use super::error::AgentError;
use super::store::Store;
use super::tools::Tool;
use crate::engine::{Commit, EngineError};
use crate::store::{RemoteStore, Snapshot, ThreadRecord};
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// The session of one agent.
#[derive(Clone)]
pub struct Shared(Rc<RefCell<Session>>);

/// A handle on the session that does not keep it alive (timers, channels, change streams,
/// subscriptions): the agent's end is theirs too.
#[derive(Clone, Default)]
pub struct WeakShared(Weak<RefCell<Session>>);

impl std::fmt::Debug for WeakShared {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("WeakShared")
    }
}

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

    /// Where the thread is: its store and its id.
    pub(crate) fn at(&self) -> (Store, String) {
        let g = self.borrow();
        (g.store.clone(), g.thread_id.clone())
    }

    /// The thread's id.
    pub fn thread_id(&self) -> String {
        self.borrow().thread_id.clone()
    }

    /// The thread's store handler, if the thread is remote.
    pub(crate) fn remote(&self) -> Option<Rc<RemoteStore>> {
        match &self.borrow().store {
            Store::Remote(r) => Some(r.clone()),
            _ => None,
        }
    }

    /// The tool named `name`, if this agent has it.
    pub(super) fn tool(&self, name: &str) -> Option<Tool> {
        let g = self.borrow();
        g.tools.iter().find(|t| t.spec.name == name).cloned()
    }

    /// Whether a call of this agent is under way ([`Shared::begin_call`]).
    pub(super) fn is_running(&self) -> bool {
        self.borrow().running
    }

    /// Notes how many inputs wait in a remote thread's outbox on this device.
    pub(super) fn set_queued(&self, n: usize) {
        self.borrow_mut().queued = n;
    }

    /// Claims the one later try of the outbox (`outbox::later`): false when none is needed
    /// (nothing waits) or one is already scheduled. [`Shared::retry_started`] gives it back.
    pub(super) fn claim_retry(&self) -> bool {
        let mut g = self.borrow_mut();
        if g.queued == 0 || g.retry_queued {
            return false;
        }
        g.retry_queued = true;
        true
    }

    /// The later try of the outbox claimed by [`Shared::claim_retry`] starts.
    pub(super) fn retry_started(&self) {
        self.borrow_mut().retry_queued = false;
    }

    /// A run's write landed as `record`: the view is at its version, the cached history holds
    /// what it wrote, and the expiry timer is set for its deadlines. `leased`: the write kept
    /// the run's lease (the run clears it when it ends).
    pub(super) fn committed(&self, record: &ThreadRecord, commit: &Commit, leased: bool) {
        let mut g = self.borrow_mut();
        g.version = record.version;
        g.message_count = record.message_count;
        g.leased = leased;
        g.request_size = record.request_size.clone();
        super::expiry::rearm(&mut g);
        if let Some(h) = &mut g.history {
            if let Some(t) = &commit.replace_tail {
                h.replace_tail(t.clone());
            }
            for m in &commit.append {
                h.push(m.clone());
            }
        }
    }

    /// A run's write that held results was refused (another agent took the thread over) or
    /// could not reach a remote thread's handler: the results it held that the view's journal
    /// lacks are kept, to be offered as late results when the run ends ([`Shared::end_run`]).
    pub(super) fn keep_unwritten(&self, commit: &Commit) {
        let mut g = self.borrow_mut();
        let stored = g.engine.state().run.clone();
        let in_journal = commit.run.iter().flat_map(|r| r.results.iter());
        let journal = in_journal.map(|r| (r.call_id.clone(), r.result.clone()));
        let in_message = commit.append.iter().filter_map(|m| m.tool_results());
        let message = in_message
            .flatten()
            .filter_map(|e| Some((e.call_id.clone(), e.result.clone()?)));
        let unwritten: Vec<(String, String)> = journal
            .chain(message)
            .filter(|(id, _)| !stored.as_ref().is_some_and(|j| j.has_result(id)))
            .collect();
        for r in unwritten {
            if !g.refused.contains(&r) {
                g.refused.push(r);
            }
        }
    }

    /// A run ends: what it leaves to clean up. Whether its last write kept its lease, the
    /// version the view is at (for the release), and the results kept by
    /// [`Shared::keep_unwritten`].
    pub(super) fn end_run(&self) -> RunLeftovers {
        let mut g = self.borrow_mut();
        RunLeftovers {
            leased: std::mem::take(&mut g.leased),
            version: g.version,
            unwritten: std::mem::take(&mut g.refused),
        }
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

/// What a run leaves to clean up when it ends ([`Shared::end_run`]).
pub(super) struct RunLeftovers {
    pub(super) leased: bool,
    pub(super) version: u64,
    pub(super) unwritten: Vec<(String, String)>,
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
