//! A hostile writer against the handler's rules (`store::authority`, docs/design.md "Threat
//! model"): random well-formed commits made by mutating the stored thread (approvals forged
//! in the tail or the journal, started marks set or cleared, inputs rewritten, results
//! dropped, calls un-gated, audit records renumbered or signed, journals ended early, answers
//! turned into calls), with and without the lease, between the decisions of people allowed to
//! decide (`/decide`) and an honest device that runs the tools. The oracle, after every step:
//!
//! - every execution of a (gated) call is paid for by one approval a person made at `/decide`
//!   for exactly the inputs it ran with: nothing runs that nobody approved, nothing runs twice
//!   on one approval;
//! - `decidedBy` of every decided audit record is the identity that last decided that call;
//!   the hostile writer's name never appears.
//!
//! `cargo test --test hostile` runs 100,000 steps; `HOSTILE_STEPS=1000000 cargo test --release
//! --test hostile` (make simulate-hostile) a million.

mod support;

use gatehouse_agent::engine::{
    AuditRecord, Commit, Engine, EngineConfig, Step, ThreadStatus, ToolSet,
};
use gatehouse_agent::store::authority::{
    DecideRequest, Refused, check_write, decide_writer, plan_decide,
};
use gatehouse_agent::store::wire::{remote_writer, stamp_identity};
use gatehouse_agent::store::{MemoryStore, Snapshot, Stored as StoredRef};
use gatehouse_agent::thread::{ApprovalState, ToolEntry};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use support::forge::{Dice, forge};
use support::*;

struct Rng(u64);

impl support::forge::Dice for Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One thread at the handler, its people and its honest device.
struct World {
    store: MemoryStore,
    now: u64,
    rng: Rng,
    /// Approvals made at `/decide` not yet used by an execution: (call, inputs).
    ledger: Vec<(String, Map<String, Value>)>,
    /// Who last decided each audit record (by seq) at `/decide`.
    last_decider: HashMap<u64, String>,
    executions: u64,
    calls: u64,
    accepted_hostile: u64,
    refused_hostile: u64,
}

const THREAD: &str = "t";

impl World {
    fn snap(&self) -> Snapshot {
        self.store.load(THREAD, self.now as f64).unwrap()
    }

    fn write(&mut self, commit: &Commit, keep: bool, owner: &str) -> Result<(), Refused> {
        let s = self.snap();
        let now = self.now as f64;
        check_write(&s.record, s.tail.as_ref(), commit, keep, now)?;
        let mut c = commit.clone();
        stamp_identity(&s.record, &mut c, "whoever");
        let writer = remote_writer(owner, keep, now);
        self.store
            .commit(THREAD, s.record.version, &c, &writer, now)
            .map(|_| ())
            .map_err(Refused::Store)
    }

    /// A person decides the pending calls at `/decide`.
    fn decide(&mut self) {
        let s = self.snap();
        let Some(tail) = s.tail.as_ref() else { return };
        let pending: Vec<ToolEntry> = tail
            .tool_calls()
            .unwrap_or(&[])
            .iter()
            .filter(|e| e.is_pending())
            .cloned()
            .collect();
        if pending.is_empty() {
            return;
        }
        let who = ["bob", "carol"][self.rng.below(2) as usize];
        let mut decisions = Map::new();
        for e in &pending {
            if self.rng.chance(30) && decisions.len() + 1 < pending.len() {
                continue; // partial
            }
            let d = match self.rng.below(4) {
                0 => json!(["reject", "no"]),
                1 => json!(["edit", {"path": format!("/edited/{}", self.rng.below(9))}]),
                _ => json!("approve"),
            };
            decisions.insert(e.call_id.clone(), d);
        }
        if decisions.is_empty() {
            return;
        }
        let tail_id = tail.id.to_string();
        let stored = StoredRef {
            record: &s.record,
            tail_id: Some(&tail_id),
            row_after_tail: false,
        };
        let request = DecideRequest {
            commit_id: format!("d{}", self.now),
            decisions: Value::Object(decisions.clone()),
            resume_token: None,
        };
        let now = self.now as f64;
        let Ok(d) = plan_decide(
            stored,
            s.tail.as_ref(),
            &request,
            who,
            now,
            self.rng.next() >> 12,
        ) else {
            return;
        };
        if self
            .store
            .commit(
                THREAD,
                s.record.version,
                &d.commit,
                &decide_writer(who),
                now,
            )
            .is_err()
        {
            return;
        }
        let decided = d.tail.as_ref().and_then(|t| t.tool_calls()).unwrap_or(&[]);
        let open = s.record.run.as_ref().map_or(&[][..], |r| &r.audit[..]);
        for (id, _) in decisions {
            if let Some(o) = open.iter().find(|o| o.call_id == id) {
                self.last_decider.insert(o.seq, who.to_owned());
            }
            if let Some(e) = decided.iter().find(|e| e.call_id == id) {
                if e.approval_state() == Some(ApprovalState::Approved) {
                    self.ledger.push((id, e.inputs.clone()));
                }
            }
        }
    }

    /// The device with the tool: takes the stored thread and goes on (or says something new),
    /// writing each step through the handler's rules. A write refused stops it (it reloads).
    fn device(&mut self) {
        let s = self.snap();
        let config = EngineConfig {
            tools_elsewhere: true,
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(
            ToolSet::new(standard_tools()),
            config,
            s.state(),
            self.rng.next(),
        );
        self.now += 1000;
        let started = match engine.status() {
            ThreadStatus::Interrupted | ThreadStatus::AwaitingDevice => engine.retry(self.now),
            ThreadStatus::Idle => engine.user_message("delete things", self.now),
            _ => return,
        };
        if started.is_err() {
            return;
        }
        let me = format!("dev{}", self.rng.below(3));
        let mut written = 0;
        while let Some(step) = engine.poll() {
            match step {
                Step::Persist(c) => {
                    let keep = !engine.run_ends_after_write();
                    if self.write(&c, keep, &me).is_err() {
                        return;
                    }
                    written += 1;
                }
                Step::CallModel => {
                    self.now += 10;
                    let out = if self.rng.chance(60) {
                        let n = 1 + self.rng.below(2);
                        let list = (0..n)
                            .map(|_| {
                                self.calls += 1;
                                let path = format!("/f{}", self.rng.below(5));
                                call(
                                    &format!("c{}", self.calls),
                                    "delete_file",
                                    json!({ "path": path }),
                                )
                            })
                            .collect();
                        calls(list)
                    } else {
                        answer("done")
                    };
                    if engine.model_output(out, self.now).is_err() {
                        return;
                    }
                }
                Step::EvaluatePolicies(qs) => {
                    let v = qs
                        .iter()
                        .map(|q| {
                            (
                                q.call_id.clone(),
                                gatehouse_agent::engine::PolicyVerdict::Require(None),
                            )
                        })
                        .collect();
                    if engine.policy_verdicts(v, self.now).is_err() {
                        return;
                    }
                }
                Step::RunTool(inv) => {
                    // The call runs only after its started mark was written (above).
                    assert!(written > 0);
                    let paid = self
                        .ledger
                        .iter()
                        .position(|(id, inputs)| *id == inv.call_id && *inputs == inv.inputs);
                    match paid {
                        Some(i) => {
                            self.ledger.remove(i);
                        }
                        None => panic!(
                            "call {} ran with {:?} without an approval a person made for it",
                            inv.call_id, inv.inputs
                        ),
                    }
                    self.executions += 1;
                    self.now += 10;
                    // The device sometimes dies mid-call: its started mark stays.
                    if self.rng.chance(10) {
                        return;
                    }
                    if engine
                        .tool_outcome(
                            &inv.call_id,
                            Ok(json!({"deleted": inv.inputs["path"]})),
                            self.now,
                        )
                        .is_err()
                    {
                        return;
                    }
                }
                Step::Yield(_) => return,
            }
        }
    }

    /// A hostile writer: the stored thread, mutated (`support::forge`).
    fn hostile(&mut self) {
        let s = self.snap();
        let commit = forge(&mut self.rng, &s, &mut self.calls, self.now);
        let keep = self.rng.chance(50);
        let owner = format!("dev{}", self.rng.below(3));
        match self.write(&commit, keep, &owner) {
            Ok(()) => self.accepted_hostile += 1,
            Err(_) => self.refused_hostile += 1,
        }
    }

    /// `decidedBy` of each audit record is the identity that last decided it at `/decide`;
    /// never the hostile writer's.
    fn check_audit(&self) {
        let rows = self
            .store
            .rows(
                gatehouse_agent::store::page::Rows::Audit,
                THREAD,
                None,
                10_000,
            )
            .unwrap();
        let s = self.snap();
        let mut all: Vec<(u64, Option<String>)> = rows
            .iter()
            .map(|r| {
                let a: AuditRecord = serde_json::from_str(&r.json).unwrap();
                (a.seq, a.decided_by)
            })
            .collect();
        if let Some(r) = &s.record.run {
            all.extend(r.audit.iter().map(|o| (o.seq, o.decided_by.clone())));
        }
        for (seq, by) in all {
            if let Some(by) = by {
                assert_ne!(by, "mallory", "a writer signed a decision");
                assert_eq!(
                    Some(&by),
                    self.last_decider.get(&seq),
                    "decidedBy of audit record {seq} is who last decided it"
                );
            }
        }
    }
}

fn episode(seed: u64, steps: u64) -> World {
    let mut w = World {
        store: MemoryStore::open(&format!("hostile-{seed}")),
        now: T0,
        rng: Rng(seed),
        ledger: Vec::new(),
        last_decider: HashMap::new(),
        executions: 0,
        calls: 0,
        accepted_hostile: 0,
        refused_hostile: 0,
    };
    for _ in 0..steps {
        w.now += 1 + w.rng.below(5_000);
        match w.rng.below(10) {
            0..=4 => w.hostile(),
            5..=6 => w.decide(),
            _ => w.device(),
        }
        if w.rng.chance(5) {
            w.check_audit();
        }
    }
    w.check_audit();
    w
}

#[test]
fn a_hostile_writer_never_runs_a_call_nobody_approved_nor_signs_a_decision() {
    let total: u64 = std::env::var("HOSTILE_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let per_seed = 2_000;
    let (mut executions, mut accepted, mut refused) = (0, 0, 0);
    for seed in 0..total.div_ceil(per_seed) {
        let w = episode(seed, per_seed);
        executions += w.executions;
        accepted += w.accepted_hostile;
        refused += w.refused_hostile;
        MemoryStore::drop_database(&format!("hostile-{seed}"));
    }
    println!(
        "hostile: {total} steps, {executions} executions, hostile writes {accepted} accepted / \
         {refused} refused, 0 violations"
    );
    assert!(executions > 0, "the honest device ran calls");
    assert!(refused > accepted, "most hostile writes are refused");
}
