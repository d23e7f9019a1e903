//! The store handler (`pkg-template/server.js` over `server/core`): the authoritative thread,
//! applied with the handler's rules and the crate's own functions. One request is one
//! transaction under the thread's row lock, so the handler applies requests one at a time in
//! the order they arrive.

use super::super::world::THREAD;
use super::network::{Req, Resp};
use gatehouse_agent::store::wire::{
    CommitRequest, LeaseOp, LeaseRequest, action_of, plan_lease_request, remote_writer,
    stamp_identity,
};
use gatehouse_agent::store::{LEASE_MS, MemoryStore, StoreError, ThreadRecord};
use std::collections::BTreeMap;

/// What the handler did, for the oracle (nothing of it reaches a device but the answer).
pub enum Applied {
    Nothing,
    /// A commit was planned and written.
    Commit {
        request: Box<CommitRequest>,
        record: Box<ThreadRecord>,
    },
    /// A commit answered from the commit table (a retry of one applied).
    Deduped,
    /// A lease op that found the lease still the owner's.
    Lease(LeaseOp, String),
}

pub struct Server {
    pub store: MemoryStore,
    pub db: String,
    /// `gatehouse_commits`: every applied commit's answer, and every refusal (`conflict`,
    /// `busy`), by commit id. Kept across restarts
    /// (it is written in the commit's own transaction).
    pub commits: BTreeMap<String, Result<ThreadRecord, StoreError>>,
    /// The handler is down (restarting) until then: what arrives meanwhile is refused at the
    /// TCP level, i.e. lost.
    pub down_until: u64,
}

/// Who a device's requests are from (`authorize`'s answer), and whether it may `write` or only
/// `decide` (an approver).
pub struct Identity<'a> {
    pub name: &'a str,
    pub may_write: bool,
}

impl Server {
    pub fn new(db: String) -> Server {
        MemoryStore::drop_database(&db);
        Server {
            store: MemoryStore::open(&db),
            db,
            commits: BTreeMap::new(),
            down_until: 0,
        }
    }

    /// Applies one request at the handler's clock `now` (`device_now` is the sender's; only
    /// the broken `LeaseJudgedLocally` protocol reads it).
    pub fn handle(
        &mut self,
        req: Req,
        who: &Identity,
        now: f64,
        local_leases: bool,
    ) -> (Resp, Applied) {
        match req {
            Req::Load => match self.store.load(THREAD, now) {
                Ok(s) => (Resp::Loaded(Box::new(s)), Applied::Nothing),
                Err(e) => (Resp::Refused(e), Applied::Nothing),
            },
            Req::Rows { before, limit } => match self.store.page(THREAD, before, limit) {
                Ok(rows) => (Resp::Rows(rows), Applied::Nothing),
                Err(e) => (Resp::Refused(e), Applied::Nothing),
            },
            Req::Commit(request, device_now) => {
                let at = if local_leases { device_now } else { now };
                self.commit(*request, who, at)
            }
            Req::Lease(request, device_now) => {
                let at = if local_leases { device_now } else { now };
                self.lease(request, at)
            }
        }
    }

    /// `commit` in server.js: authorize `action_of`, the commit-id table, `decideNeedsWrite`,
    /// then `planCommit` (`stamp_identity`, `remote_writer`, `plan_commit`) and the writes.
    fn commit(&mut self, mut request: CommitRequest, who: &Identity, now: f64) -> (Resp, Applied) {
        let unauthorized =
            |what: &str| StoreError::Unauthorized(format!("{} may not {what}", who.name));
        // The simulation still models decisions sent as commits that append nothing (the
        // protocol before docs/design.md "Threat model"): the real handler takes them as
        // intents on `/decide` and checks every commit with `store::authority::check_write`.
        let action = if request.commit.append.is_empty() {
            "decide"
        } else {
            action_of(&request.commit)
        };
        if action == "write" && !who.may_write {
            return (Resp::Refused(unauthorized("write")), Applied::Nothing);
        }
        // A retry of a commit already applied (its answer was lost): the same answer.
        // A refused one (`conflict`, `busy`): the same refusal, so that a delayed copy is not
        // planned afresh once the thread has moved on.
        match self.commits.get(&request.commit_id) {
            Some(Ok(answer)) => {
                return (Resp::Committed(Box::new(answer.clone())), Applied::Deduped);
            }
            Some(Err(refused)) => return (Resp::Refused(refused.clone()), Applied::Nothing),
            None => {}
        }
        let stored = self.store.record(THREAD, now);
        if request.commit.policies != stored.policies && !who.may_write {
            return (
                Resp::Refused(unauthorized("change tool policies")),
                Applied::Nothing,
            );
        }
        stamp_identity(&stored, &mut request.commit, who.name);
        let writer = remote_writer(&request.owner, request.keep, now);
        match self.store.commit(
            THREAD,
            request.expected_version,
            &request.commit,
            &writer,
            now,
        ) {
            Ok(record) => {
                self.commits
                    .insert(request.commit_id.clone(), Ok(record.clone()));
                let answer = Resp::Committed(Box::new(record.clone()));
                let applied = Applied::Commit {
                    request: Box::new(request),
                    record: Box::new(record),
                };
                (answer, applied)
            }
            Err(e @ (StoreError::Conflict { .. } | StoreError::Owned { .. })) => {
                self.commits
                    .insert(request.commit_id.clone(), Err(e.clone()));
                (Resp::Refused(e), Applied::Nothing)
            }
            Err(e) => (Resp::Refused(e), Applied::Nothing),
        }
    }

    /// `lease` in server.js: `planLease` (`wire::plan_lease_request`: renew to the handler's
    /// clock plus `LEASE_MS`, or release at the version it names), compare-and-set on the owner.
    fn lease(&mut self, request: LeaseRequest, now: f64) -> (Resp, Applied) {
        let ok = match request.op {
            LeaseOp::Renew => match self.store.renew(THREAD, &request.owner, now + LEASE_MS) {
                Ok(ok) => ok,
                Err(e) => return (Resp::Refused(e), Applied::Nothing),
            },
            LeaseOp::Release => {
                let current = self.store.record(THREAD, now);
                match plan_lease_request(&current, &request, now) {
                    Ok(Some(_)) => {
                        self.store.release(THREAD, &request.owner);
                        true
                    }
                    _ => false,
                }
            }
        };
        let applied = match ok {
            true => Applied::Lease(request.op, request.owner),
            false => Applied::Nothing,
        };
        (Resp::Leased(ok), applied)
    }
}
