//! The hostile device (docs/design.md, "Threat model", attackers 2 and 5): a signed-in user
//! `authorize` lets `write` the thread but not `decide`, whose modified client sends, between
//! the honest devices' requests and over the same lossy network:
//!
//! - forged commits (`support/forge.rs`: approvals in the tail or the journal, started marks
//!   set or cleared, inputs rewritten, results dropped, calls un-gated, audit records signed or
//!   renumbered, journals ended early, answers turned into calls), as itself or naming the
//!   live lease's owner or another device's agent, with no secret, a guessed one or one it
//!   stole from an answer it saw on the wire;
//! - lease operations (renew, release) on other agents' leases, with the same secrets;
//! - replays of requests it captured on the wire (commits, decisions, lease operations), as
//!   they were or with its own body under their commit id;
//! - decisions, which it may not make.
//!
//! It reads the thread now and then, and forges from what it read. The oracle (`oracle.rs`,
//! invariants 11 to 13) judges what the honest devices do with whatever of it the handler
//! accepted.

use super::driver::Cont;
use super::network::{Req, Resp};
use super::world::DevSim;
use crate::forge::{Dice, forge};
use gatehouse_agent::store::authority::DecideRequest;
use gatehouse_agent::store::wire::{CommitRequest, LeaseOp, LeaseRequest};
use gatehouse_agent::store::{Snapshot, StoreError};
use serde_json::{Map, Value, json};

/// Captured requests and stolen secrets kept for later use.
const KEPT: usize = 8;

impl Dice for super::super::rng::Rng {
    fn next(&mut self) -> u64 {
        self.next_u64()
    }
}

/// What the attacker saw on the wire.
#[derive(Default)]
pub(crate) struct Loot {
    pub requests: Vec<Req>,
    pub secrets: Vec<String>,
}

impl Loot {
    fn keep<T>(list: &mut Vec<T>, x: T) {
        if list.len() == KEPT {
            list.remove(0);
        }
        list.push(x);
    }

    /// A request an honest device sent (a commit, a decision, a lease operation).
    pub fn saw_request(&mut self, req: &Req) {
        if matches!(req, Req::Commit(..) | Req::Decide(_) | Req::Lease(..)) {
            Loot::keep(&mut self.requests, req.clone());
        }
    }

    /// An answer the handler sent an honest device: the lease's secret, if it holds one.
    pub fn saw_answer(&mut self, resp: &Resp) {
        if let Resp::Committed(_, Some(secret)) = resp {
            Loot::keep(&mut self.secrets, secret.clone());
        }
    }
}

impl DevSim {
    /// The hostile user's next move (instead of a person's).
    pub(crate) fn hostile_act(&mut self, d: usize, t: usize) {
        let snap = self.devices[d].copy.clone();
        let req = match (self.rng.below(10), snap) {
            (0..=1, _) | (_, None) => Req::Load,
            (2..=5, Some(s)) => self.forged_commit(d, t, &s),
            (6, Some(s)) => self.stolen_lease(d, t, &s),
            (7..=8, Some(s)) => match self.replay(d, t, &s) {
                Some(r) => r,
                None => self.forged_commit(d, t, &s),
            },
            (_, Some(s)) => self.decision(d, t, &s),
        };
        if !matches!(req, Req::Load) {
            self.stats.hostile_requests += 1;
        }
        self.note(Some((d, t)), format!("HOSTILE sends {}", req.label()));
        self.request(d, t, req, Cont::Hostile);
    }

    /// The answer to one of its requests: a thread read is kept to forge from.
    pub(crate) fn hostile_answer(&mut self, d: usize, t: usize, answer: Result<Resp, StoreError>) {
        match answer {
            Ok(Resp::Loaded(s)) | Ok(Resp::Decided(s)) => self.keep_copy(d, &s),
            // It reads the thread again before it forges more.
            Ok(Resp::Committed(..)) => self.devices[d].copy = None,
            _ => {}
        }
        if self.winding_down {
            return;
        }
        let ms = self.rng.range(20, 3_000);
        self.then(d, t, super::driver::Act::Human, ms);
    }

    /// No secret, a guessed one, or one stolen from the wire.
    fn secret(&mut self) -> Option<String> {
        match self.rng.below(3) {
            0 => None,
            1 => Some(format!("secret-{:016x}", self.rng.next_u64())),
            _ => {
                let n = self.loot.secrets.len();
                (n > 0).then(|| self.loot.secrets[self.rng.index(n)].clone())
            }
        }
    }

    /// Whose name a forged request goes under: its own agent's, the live lease's owner's, or
    /// another device's agent's.
    fn owner_for(&mut self, d: usize, t: usize, s: &Snapshot) -> String {
        let others: Vec<String> = self
            .devices
            .iter()
            .flat_map(|dev| &dev.tabs)
            .filter_map(|tab| tab.agent.as_ref().map(|a| a.me.clone()))
            .collect();
        match (self.rng.below(3), &s.record.lease) {
            (0, Some(l)) => l.owner.clone(),
            (1, _) if !others.is_empty() => others[self.rng.index(others.len())].clone(),
            _ => self.agent(d, t).me.clone(),
        }
    }

    fn forged_commit(&mut self, d: usize, t: usize, s: &Snapshot) -> Req {
        let wall = self.wall(d);
        let mut calls = self.next_call;
        let commit = forge(&mut self.rng, s, &mut calls, wall);
        self.next_call = calls;
        let owner = self.owner_for(d, t, s);
        let expected_version = match self.rng.below(10) {
            0 => s.record.version + 1,
            1 => s.record.version.saturating_sub(1),
            _ => s.record.version,
        };
        // Its own commit id, or one an honest device used (with another body).
        let commit_id = match self.loot.requests.iter().rev().find_map(|r| match r {
            Req::Commit(c, _) => Some(c.commit_id.clone()),
            _ => None,
        }) {
            Some(id) if self.rng.chance(150) => id,
            _ => self.commit_id(d, t),
        };
        let request = CommitRequest {
            commit_id,
            expected_version,
            owner,
            keep: self.rng.chance(500),
            commit,
            lease_token: self.secret(),
        };
        let wall = wall as f64;
        Req::Commit(Box::new(request), wall)
    }

    fn stolen_lease(&mut self, d: usize, t: usize, s: &Snapshot) -> Req {
        let op = match self.rng.chance(500) {
            true => LeaseOp::Renew,
            false => LeaseOp::Release,
        };
        let request = LeaseRequest {
            owner: self.owner_for(d, t, s),
            op,
            version: (op == LeaseOp::Release).then_some(s.record.version),
            lease_token: self.secret(),
        };
        Req::Lease(request, self.wall(d) as f64)
    }

    /// A captured request sent again as it was (its commit id is its maker's).
    fn replay(&mut self, _d: usize, _t: usize, _s: &Snapshot) -> Option<Req> {
        let n = self.loot.requests.len();
        (n > 0).then(|| self.loot.requests[self.rng.index(n)].clone())
    }

    /// Decisions on the pending calls: it may not decide.
    fn decision(&mut self, d: usize, t: usize, s: &Snapshot) -> Req {
        let mut decisions = Map::new();
        for e in s.tail.iter().flat_map(|m| m.tool_calls()).flatten() {
            let v: Value = match self.rng.below(3) {
                0 => json!(["edit", { "path": "/" }]),
                _ => json!("approve"),
            };
            decisions.insert(e.call_id.clone(), v);
        }
        let request = DecideRequest {
            commit_id: self.commit_id(d, t),
            decisions: Value::Object(decisions),
            resume_token: None,
        };
        Req::Decide(Box::new(request))
    }
}
