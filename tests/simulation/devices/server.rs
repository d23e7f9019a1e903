//! The store handler (`pkg-template/server.js` over `server/core`): the authoritative thread,
//! applied with the handler's rules and the crate's own functions (docs/design.md, "Threat
//! model"). One request is one transaction under the thread's row lock, so the handler applies
//! requests one at a time in the order they arrive. What it mirrors of server.js:
//!
//! - `commit`: `write` authorized; the commit log (a commit id answers only its maker, for the
//!   same body; an applied one with the record while the thread is still at the version it
//!   left, `conflict` after); the lease's holder (its secret and identity); `planCommit`
//!   (`stamp_identity`, `remote_writer`, `plan_commit`, then `authority::check_write`); a new
//!   secret for a writer that takes the lease.
//! - `decide`: `decide` authorized; `authority::plan_decide` with the identity; the lease and
//!   its secret untouched.
//! - `lease`: `write` authorized; only the holder of the secret, as the identity it was given
//!   to, renews or releases.

use super::super::world::THREAD;
use super::network::{Req, Resp};
use gatehouse_agent::store::authority::{
    DecideRequest, Refused, check_write, decide_writer, plan_decide,
};
use gatehouse_agent::store::wire::{
    CommitRequest, LeaseOp, LeaseRequest, WireError, plan_lease_request, remote_writer,
    stamp_identity,
};
use gatehouse_agent::store::{
    LEASE_MS, MemoryStore, Snapshot, StoreError, Stored, ThreadRecord, plan_commit,
};
use std::collections::BTreeMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// What the handler did, for the oracle (nothing of it reaches a device but the answer).
pub enum Applied {
    Nothing,
    /// A commit was planned and written (a decision too: `request` is then the commit the
    /// handler's engine made, under `decide_writer`'s owner).
    Commit {
        request: Box<CommitRequest>,
        record: Box<ThreadRecord>,
        /// Who `authorize` said sent it.
        who: String,
        /// A decision (`/decide`): the calls it decided.
        decided: Option<Vec<String>>,
    },
    /// A commit answered from the commit log (a retry of one applied).
    Deduped,
    /// A lease op that found the lease still the owner's.
    Lease(LeaseOp, String),
    /// A write `check_write` refused (`illegal_write`): nothing written.
    Illegal(String),
}

/// A row of `gatehouse_commits`: who sent the commit id, a digest of its body, and what came
/// of it: the version an applied one left, or the refusal (`conflict`, `busy`).
struct Logged {
    who: String,
    digest: u64,
    outcome: Result<u64, StoreError>,
}

pub struct Server {
    pub store: MemoryStore,
    pub db: String,
    /// `gatehouse_commits`, kept across restarts (written in the commit's own transaction).
    commits: BTreeMap<String, Logged>,
    /// `gatehouse_threads.lease_token` and `lease_who`: never in a record.
    lease_token: Option<String>,
    lease_who: Option<String>,
    secrets: u64,
    salt: u64,
    /// The handler is down (restarting) until then: what arrives meanwhile is refused at the
    /// TCP level, i.e. lost.
    pub down_until: u64,
    /// `Broken::NoWriteCheck`: writes are not checked as legal next states.
    pub check_writes: bool,
}

/// Who a device's requests are from (`authorize`'s answer), and what it may do: `write`
/// (drive the agent) and `decide` (approve). An approver only decides; a hostile device only
/// writes.
pub struct Identity<'a> {
    pub name: &'a str,
    pub may_write: bool,
    pub may_decide: bool,
}

fn digest<T: serde::Serialize>(request: &T) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(request)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

fn unauthorized(who: &Identity, what: &str) -> Resp {
    Resp::Refused(StoreError::Unauthorized(format!(
        "{} may not {what}",
        who.name
    )))
}

/// A refusal of the handler's rules as the browser reads it (`WireError::into_store_error`).
fn refusal(r: Refused) -> StoreError {
    match r {
        Refused::Store(e) => e,
        other => WireError::new(other.code(), other.to_string()).into_store_error(),
    }
}

impl Server {
    pub fn new(db: String, salt: u64) -> Server {
        MemoryStore::drop_database(&db);
        Server {
            store: MemoryStore::open(&db),
            db,
            commits: BTreeMap::new(),
            lease_token: None,
            lease_who: None,
            secrets: 0,
            salt,
            down_until: 0,
            check_writes: true,
        }
    }

    /// `crypto.randomUUID()`: nobody guesses it.
    fn new_secret(&mut self) -> String {
        self.secrets += 1;
        let mut h = DefaultHasher::new();
        (self.salt, self.secrets).hash(&mut h);
        format!("secret-{:016x}", h.finish())
    }

    /// Whether the request holds the lease: its secret, sent by the identity it was given to.
    fn holder(&self, who: &Identity, token: &Option<String>) -> bool {
        self.lease_token.is_some()
            && *token == self.lease_token
            && self.lease_who.as_deref() == Some(who.name)
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
                self.lease(request, who, at)
            }
            Req::Decide(request) => self.decide(*request, who, now),
        }
    }

    /// `replayed` in server.js: a commit id seen before. `None` for a new one.
    fn replayed(
        &self,
        commit_id: &str,
        who: &Identity,
        digest: u64,
        now: f64,
    ) -> Option<Result<ThreadRecord, StoreError>> {
        let logged = self.commits.get(commit_id)?;
        if logged.who != who.name || logged.digest != digest {
            let refused = WireError::new(
                "commit_id_reused",
                "this commit id was used for another request".to_owned(),
            );
            return Some(Err(refused.into_store_error()));
        }
        Some(match &logged.outcome {
            Err(e) => Err(e.clone()),
            Ok(version) => {
                let record = self.store.record(THREAD, now);
                match record.version == *version {
                    true => Ok(record),
                    false => Err(StoreError::Conflict {
                        expected: *version,
                        found: record.version,
                    }),
                }
            }
        })
    }

    fn log(
        &mut self,
        commit_id: &str,
        who: &Identity,
        digest: u64,
        outcome: Result<u64, StoreError>,
    ) {
        let logged = Logged {
            who: who.name.to_owned(),
            digest,
            outcome,
        };
        self.commits.insert(commit_id.to_owned(), logged);
    }

    fn commit(&mut self, mut request: CommitRequest, who: &Identity, now: f64) -> (Resp, Applied) {
        if !who.may_write {
            return (unauthorized(who, "write"), Applied::Nothing);
        }
        let digest = digest(&request);
        match self.replayed(&request.commit_id, who, digest, now) {
            Some(Ok(record)) => {
                // The answer the maker lost: the lease's secret again, if it is still its own.
                let mine = self.lease_who.as_deref() == Some(who.name)
                    && record
                        .lease
                        .as_ref()
                        .is_some_and(|l| l.owner == request.owner);
                let token = self.lease_token.clone().filter(|_| mine);
                return (Resp::Committed(Box::new(record), token), Applied::Deduped);
            }
            Some(Err(e)) => return (Resp::Refused(e), Applied::Nothing),
            None => {}
        }
        let snap = match self.store.load(THREAD, now) {
            Ok(s) => s,
            Err(e) => return (Resp::Refused(e), Applied::Nothing),
        };
        let current = &snap.record;
        let holder = self.holder(who, &request.lease_token);
        let tail_id = snap.tail.as_ref().map(|m| m.id.to_string());
        let stored = Stored {
            record: current,
            tail_id: tail_id.as_deref(),
            row_after_tail: false,
        };
        // `planCommit`: a request naming the live lease's owner without its secret is another
        // writer; then the store's rule; then whether the write is legal.
        let impostor = current
            .lease
            .as_ref()
            .filter(|l| l.owner == request.owner && !holder && l.until > now)
            .map(|l| StoreError::Owned {
                owner: l.owner.clone(),
            });
        stamp_identity(current, &mut request.commit, who.name);
        let writer = remote_writer(&request.owner, request.keep, now);
        let planned = match impostor {
            Some(e) => Err(e),
            None => plan_commit(
                stored,
                request.expected_version,
                &request.commit,
                &writer,
                now,
            )
            .map(|_| ()),
        };
        if let Err(e) = planned {
            if matches!(e, StoreError::Conflict { .. } | StoreError::Owned { .. }) {
                self.log(&request.commit_id, who, digest, Err(e.clone()));
            }
            return (Resp::Refused(e), Applied::Nothing);
        }
        if self.check_writes {
            let checked = check_write(
                current,
                snap.tail.as_ref(),
                &request.commit,
                request.keep,
                now,
            );
            if let Err(r) = checked {
                let text = r.to_string();
                return (Resp::Refused(refusal(r)), Applied::Illegal(text));
            }
        }
        let record = match self.store.commit(
            THREAD,
            request.expected_version,
            &request.commit,
            &writer,
            now,
        ) {
            Ok(r) => r,
            Err(e) => return (Resp::Refused(e), Applied::Nothing),
        };
        // The secret: kept by its holder, new for a writer that takes the lease, none once
        // it is let go.
        let next = match (record.lease.is_some(), holder) {
            (true, true) => self.lease_token.clone(),
            (true, false) => Some(self.new_secret()),
            (false, _) => None,
        };
        self.lease_who = next.as_ref().map(|_| who.name.to_owned());
        self.lease_token = next.clone();
        self.log(&request.commit_id, who, digest, Ok(record.version));
        let answer = Resp::Committed(Box::new(record.clone()), next);
        let applied = Applied::Commit {
            request: Box::new(request),
            record: Box::new(record),
            who: who.name.to_owned(),
            decided: None,
        };
        (answer, applied)
    }

    /// `decide` in server.js: the decisions applied to the stored thread by the handler's
    /// engine, as `who`.
    fn decide(&mut self, request: DecideRequest, who: &Identity, now: f64) -> (Resp, Applied) {
        if !who.may_decide {
            return (unauthorized(who, "decide"), Applied::Nothing);
        }
        let digest = digest(&request);
        match self.replayed(&request.commit_id, who, digest, now) {
            Some(Ok(_)) => {
                let snap = self.store.load(THREAD, now).expect("the thread reads");
                return (Resp::Decided(Box::new(snap)), Applied::Deduped);
            }
            Some(Err(e)) => return (Resp::Refused(e), Applied::Nothing),
            None => {}
        }
        let snap = match self.store.load(THREAD, now) {
            Ok(s) => s,
            Err(e) => return (Resp::Refused(e), Applied::Nothing),
        };
        let tail_id = snap.tail.as_ref().map(|m| m.id.to_string());
        let stored = Stored {
            record: &snap.record,
            tail_id: tail_id.as_deref(),
            row_after_tail: false,
        };
        let machine = digest & 0x3ff;
        let planned =
            match plan_decide(stored, snap.tail.as_ref(), &request, who.name, now, machine) {
                Ok(p) => p,
                Err(r) => {
                    let e = refusal(r);
                    if matches!(e, StoreError::Conflict { .. } | StoreError::Owned { .. }) {
                        self.log(&request.commit_id, who, digest, Err(e.clone()));
                    }
                    return (Resp::Refused(e), Applied::Nothing);
                }
            };
        let writer = decide_writer(who.name);
        let record =
            match self
                .store
                .commit(THREAD, snap.record.version, &planned.commit, &writer, now)
            {
                Ok(r) => r,
                Err(e) => return (Resp::Refused(e), Applied::Nothing),
            };
        if record.lease.is_none() {
            self.lease_token = None;
            self.lease_who = None;
        }
        self.log(&request.commit_id, who, digest, Ok(record.version));
        let answer = Resp::Decided(Box::new(Snapshot {
            record: record.clone(),
            tail: planned.tail,
        }));
        let calls = request
            .intent()
            .map(|v| v.into_iter().map(|(id, _)| id).collect())
            .unwrap_or_default();
        let made = CommitRequest {
            commit_id: request.commit_id,
            expected_version: snap.record.version,
            owner: writer.owner,
            keep: false,
            commit: planned.commit,
            lease_token: None,
        };
        let applied = Applied::Commit {
            request: Box::new(made),
            record: Box::new(record),
            who: who.name.to_owned(),
            decided: Some(calls),
        };
        (answer, applied)
    }

    /// `lease` in server.js: only the holder of the lease's secret, as the identity it was
    /// given to, renews (to the handler's clock plus `LEASE_MS`) or releases (at the version
    /// it names) it.
    fn lease(&mut self, request: LeaseRequest, who: &Identity, now: f64) -> (Resp, Applied) {
        if !who.may_write {
            return (unauthorized(who, "write"), Applied::Nothing);
        }
        if !self.holder(who, &request.lease_token) {
            return (Resp::Leased(false), Applied::Nothing);
        }
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
                        self.lease_token = None;
                        self.lease_who = None;
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
