//! Run ownership: at most one agent runs a thread at a time, and the others can tell "running
//! elsewhere" from "died mid-run" (docs/design.md, "Run ownership"). Pure: the driver and the
//! simulation (`tests/simulation.rs`) decide with these functions, and both stores enforce
//! [`Writer::may_write`] inside the write's transaction.
//!
//! A run holds the thread's Web Lock, where the browser has Web Locks, from before its first
//! write to after its last, and writes a [`Lease`] with its first write; the last write of the
//! run clears it. The lock is released by the browser when the page dies, so a lease whose
//! owner held the lock is judged by the lock; a lease written without one (no Web Locks: an
//! insecure context, Node) is judged by its expiry, which the owner renews while it runs.

use super::record::{StoreError, ThreadRecord, check_writable};
use serde::{Deserialize, Serialize};

/// How long a lease lasts without renewal. Only a lease written without a Web Lock depends on
/// it: such a thread whose owner died waits this long before another agent may take it over,
/// and a live owner must renew within it (three renewals fit; browsers delay the timers of a
/// background tab by a second, and by up to a minute only after five hidden minutes).
pub const LEASE_MS: f64 = 30_000.0;

/// How often the owner renews its lease while a step (a model call, a tool) is under way.
pub const RENEW_MS: f64 = 10_000.0;

/// The claim of the agent running the thread, stored in the thread record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The running agent's id (random per `Agent` object).
    pub owner: String,
    /// Epoch milliseconds after which the lease has lapsed unless renewed.
    pub until: f64,
    /// The owner holds the thread's Web Lock for the whole run.
    #[serde(default)]
    pub locked: bool,
}

/// What the thread's Web Lock says, asked after the record was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockProbe {
    /// No Web Locks here.
    Unsupported,
    /// Nobody holds it.
    Free,
    /// Somebody holds it.
    Held,
}

/// Who runs the thread, as far as a view can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// No run holds the thread.
    Free,
    /// This agent's own lease.
    Mine,
    /// Another agent is running it: do not write, re-gate, retry or report it interrupted.
    Live(String),
    /// The lease's owner is gone (its page died, or its lease lapsed): the thread may be taken
    /// over. The takeover write still carries the version it was planned from, so an owner
    /// that finished in between makes it a conflict, never a second run.
    Dead,
}

/// Judges a stored lease. `probe` must be asked after the record holding `lease` was read:
/// a live owner holds the lock from before its first write to after its last, so "lease
/// seen, then lock free" means the owner is gone or has written again since (and the version
/// check refuses whatever this view plans next).
pub fn judge(lease: Option<&Lease>, me: &str, now_ms: f64, probe: LockProbe) -> Owner {
    let Some(l) = lease else {
        return Owner::Free;
    };
    if l.owner == me {
        return Owner::Mine;
    }
    match (l.locked, probe) {
        (true, LockProbe::Free) => Owner::Dead,
        (true, LockProbe::Held) => Owner::Live(l.owner.clone()),
        (_, _) if l.until > now_ms => Owner::Live(l.owner.clone()),
        (_, _) => Owner::Dead,
    }
}

/// The outcome of asking for the thread's Web Lock without waiting, at the start of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockAttempt {
    /// This run holds it now.
    Held,
    /// Somebody else holds it: another run of this thread is under way.
    Taken,
    /// No Web Locks here.
    Unsupported,
}

/// Whether a run may start, decided from the record read after the lock attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Go on: this run owns the thread from its first write.
    Go,
    /// Another live agent runs the thread: refuse (`busy`), write nothing.
    Busy,
    /// The view is older than the stored thread: take the stored one, refuse (`conflict`),
    /// write nothing and send nothing.
    Stale,
}

/// The start of every run (docs/design.md, "Run ownership"): the lock first, then a fresh
/// read of the record, then this.
pub fn admit(
    record: &ThreadRecord,
    view_version: u64,
    me: &str,
    lock: LockAttempt,
    now_ms: f64,
) -> Admission {
    let probe = match lock {
        LockAttempt::Taken => return Admission::Busy,
        // We hold it, so whoever held it before is gone.
        LockAttempt::Held => LockProbe::Free,
        LockAttempt::Unsupported => LockProbe::Unsupported,
    };
    if let Owner::Live(_) = judge(record.lease.as_ref(), me, now_ms, probe) {
        return Admission::Busy;
    }
    if record.version != view_version {
        return Admission::Stale;
    }
    Admission::Go
}

/// On open: whether a call left "started" must be recovered (re-gated, or run again when its
/// tool is idempotent) by this view, or belongs to a live run elsewhere. `probe` is asked
/// after `record` was read. A record of schema 1 has no lease: its writer held the lock only
/// while the tool ran, so the lock alone decides.
pub fn must_recover(record: &ThreadRecord, me: &str, now_ms: f64, probe: LockProbe) -> bool {
    if record.run.as_ref().is_none_or(|r| r.started.is_none()) {
        return false;
    }
    match (&record.lease, probe) {
        (None, LockProbe::Held) => false,
        (None, _) => true,
        (Some(l), probe) => !matches!(judge(Some(l), me, now_ms, probe), Owner::Live(_)),
    }
}

/// Who writes a commit, and the lease the record carries after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Writer {
    pub owner: String,
    /// `Some` while the run goes on after this write; `None` on its last write.
    pub lease: Option<Lease>,
    /// The writer holds the thread's Web Lock.
    pub lock_held: bool,
}

impl Writer {
    /// A writer whose run continues after this write (`keep`) or ends with it.
    pub fn new(owner: &str, lock_held: bool, keep: bool, now_ms: f64) -> Writer {
        Writer {
            owner: owner.to_owned(),
            lease: keep.then(|| Lease {
                owner: owner.to_owned(),
                until: now_ms + LEASE_MS,
                locked: lock_held,
            }),
            lock_held,
        }
    }

    /// The rule both stores apply inside the write's transaction: a live lease of another
    /// agent refuses the write. A lease is not live once it lapsed, or when its owner held the
    /// Web Lock and this writer holds it now (the owner released it, so it is gone).
    pub fn may_write(&self, stored: Option<&Lease>, now_ms: f64) -> Result<(), StoreError> {
        match stored {
            None => Ok(()),
            Some(l) if l.owner == self.owner => Ok(()),
            Some(l) if l.locked && self.lock_held => Ok(()),
            Some(l) if l.until <= now_ms => Ok(()),
            Some(l) => Err(StoreError::Owned {
                owner: l.owner.clone(),
            }),
        }
    }
}

/// The record with `owner`'s lease extended to `until`, or `None` when the lease is no longer
/// `owner`'s (it ended, or was taken over). The version is not bumped: a renewal changes
/// nothing a view shows.
pub fn plan_renew(
    current: &ThreadRecord,
    owner: &str,
    until: f64,
) -> Result<Option<ThreadRecord>, StoreError> {
    check_writable(current)?;
    match &current.lease {
        Some(l) if l.owner == owner => {
            let mut r = current.clone();
            if let Some(l) = r.lease.as_mut() {
                l.until = until;
            }
            Ok(Some(r))
        }
        _ => Ok(None),
    }
}

/// The record without `owner`'s lease (a run that ended without its last write, e.g. after a
/// failed model call), or `None` when there is nothing of `owner`'s to clear.
pub fn plan_release(current: &ThreadRecord, owner: &str) -> Option<ThreadRecord> {
    if check_writable(current).is_err() {
        return None;
    }
    match &current.lease {
        Some(l) if l.owner == owner => {
            let mut r = current.clone();
            r.lease = None;
            Some(r)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(owner: &str, until: f64, locked: bool) -> Lease {
        Lease {
            owner: owner.into(),
            until,
            locked,
        }
    }

    #[test]
    fn a_locked_lease_is_judged_by_the_lock_not_the_clock() {
        let l = lease("a", 1_000.0, true);
        assert_eq!(judge(Some(&l), "b", 0.0, LockProbe::Free), Owner::Dead);
        assert_eq!(
            judge(Some(&l), "b", 5_000.0, LockProbe::Held),
            Owner::Live("a".into())
        );
        // A page without Web Locks can only go by the clock.
        assert_eq!(
            judge(Some(&l), "b", 0.0, LockProbe::Unsupported),
            Owner::Live("a".into())
        );
        assert_eq!(
            judge(Some(&l), "b", 1_000.0, LockProbe::Unsupported),
            Owner::Dead
        );
    }

    #[test]
    fn an_unlocked_lease_is_judged_by_its_expiry_whatever_the_lock_says() {
        let l = lease("a", 1_000.0, false);
        assert_eq!(
            judge(Some(&l), "b", 999.0, LockProbe::Free),
            Owner::Live("a".into())
        );
        assert_eq!(judge(Some(&l), "b", 1_000.0, LockProbe::Held), Owner::Dead);
        assert_eq!(judge(Some(&l), "a", 5_000.0, LockProbe::Free), Owner::Mine);
        assert_eq!(judge(None, "a", 0.0, LockProbe::Held), Owner::Free);
    }

    #[test]
    fn writes_under_a_live_lease_of_another_agent_are_refused() {
        let live = lease("a", 1_000.0, false);
        let b = Writer::new("b", false, true, 0.0);
        assert_eq!(
            b.may_write(Some(&live), 500.0),
            Err(StoreError::Owned { owner: "a".into() })
        );
        assert_eq!(b.may_write(Some(&live), 1_000.0), Ok(()));
        assert_eq!(
            Writer::new("a", false, false, 0.0).may_write(Some(&live), 0.0),
            Ok(())
        );
        // Holding the lock the owner held proves the owner gone.
        let locked = lease("a", 1_000.0, true);
        assert!(b.may_write(Some(&locked), 0.0).is_err());
        assert_eq!(
            Writer::new("b", true, true, 0.0).may_write(Some(&locked), 0.0),
            Ok(())
        );
        // ... but not a lease written without the lock.
        assert!(
            Writer::new("b", true, true, 0.0)
                .may_write(Some(&live), 0.0)
                .is_err()
        );
    }

    #[test]
    fn renewal_and_release_touch_only_the_owners_lease_and_never_the_version() {
        let mut r = ThreadRecord::new("t", 0.0);
        r.version = 7;
        r.lease = Some(lease("a", 100.0, false));
        let renewed = plan_renew(&r, "a", 900.0).unwrap().unwrap();
        assert_eq!(renewed.lease.as_ref().unwrap().until, 900.0);
        assert_eq!(renewed.version, 7);
        assert_eq!(plan_renew(&r, "b", 900.0), Ok(None));
        assert_eq!(plan_release(&r, "b"), None);
        let released = plan_release(&r, "a").unwrap();
        assert_eq!((released.lease, released.version), (None, 7));
        r.schema_version = 99;
        assert_eq!(plan_renew(&r, "a", 1.0), Err(StoreError::Newer(99)));
        assert_eq!(plan_release(&r, "a"), None);
    }
}
