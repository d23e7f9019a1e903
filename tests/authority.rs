//! The store handler's authority (`store::authority`, docs/design.md "Threat model"): what a
//! hostile client with a valid login can and cannot make the handler write. Each test plays
//! the attacker against the rules the handler's core applies, on a memory store standing in
//! for Postgres (tests/server/attacker.test.mjs plays the same attacks against the real
//! handler and Postgres).

mod support;

use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::authority::{
    DecideRequest, Refused, check_write, decide_writer, plan_decide,
};
use gatehouse_agent::store::wire::{remote_writer, stamp_identity};
use gatehouse_agent::store::{MemoryStore, Snapshot, Stored as StoredRef, ThreadRecord};
use gatehouse_agent::thread::{ApprovalState, Message, MessageId};
use serde_json::{Value, json};
use support::*;

/// The handler, reduced to its rules: every write checked, every decision applied by it.
struct Handler {
    store: MemoryStore,
    now: f64,
}

impl Handler {
    fn new(name: &str) -> Handler {
        Handler {
            store: MemoryStore::open(name),
            now: T0 as f64,
        }
    }

    fn snap(&self) -> Snapshot {
        self.store.load("t", self.now).expect("the thread loads")
    }

    /// A device's commit, as `POST /commit` takes it.
    fn write(&self, commit: &Commit, keep: bool, who: &str) -> Result<ThreadRecord, Refused> {
        let s = self.snap();
        check_write(&s.record, s.tail.as_ref(), commit, keep, self.now)?;
        let mut c = commit.clone();
        stamp_identity(&s.record, &mut c, who);
        let writer = remote_writer("w1", keep, self.now);
        self.store
            .commit("t", s.record.version, &c, &writer, self.now)
            .map_err(Refused::Store)
    }

    /// A decision, as `POST /decide` takes it.
    fn decide(&self, decisions: Value, who: &str) -> Result<Commit, Refused> {
        let s = self.snap();
        let tail_id = s.tail.as_ref().map(|m| m.id.to_string());
        let stored = StoredRef {
            record: &s.record,
            tail_id: tail_id.as_deref(),
            row_after_tail: false,
        };
        let request = DecideRequest {
            commit_id: "d".into(),
            decisions,
            resume_token: None,
        };
        let d = plan_decide(stored, s.tail.as_ref(), &request, who, self.now, 9)?;
        self.store
            .commit(
                "t",
                s.record.version,
                &d.commit,
                &decide_writer(who),
                self.now,
            )
            .map_err(Refused::Store)?;
        Ok(d.commit)
    }

    fn audit(&self) -> Vec<Value> {
        self.store
            .rows(gatehouse_agent::store::page::Rows::Audit, "t", None, 100)
            .unwrap()
            .iter()
            .map(|r| serde_json::from_str(&r.json).unwrap())
            .collect()
    }
}

/// The owner's device gates `c1` (delete_file) and writes every commit through the handler;
/// the handler stands at awaiting_approval. Returns the device and the handler.
fn gated(name: &str) -> (Harness, Handler) {
    let h = Handler::new(name);
    let mut device = Harness::new(standard_tools());
    device.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    write_run(&h, &device.store.commits);
    (device, h)
}

/// A run's commits as its device sends them: the lease kept until the last one.
fn write_run(h: &Handler, commits: &[Commit]) {
    for (i, c) in commits.iter().enumerate() {
        h.write(c, i + 1 < commits.len(), "alice")
            .expect("the owner's writes are legal");
    }
}

/// The device takes the handler's thread (after a decision made there) and goes on: every
/// commit it makes goes through the handler. Returns what the handler said to each.
fn go_on(device: &mut Harness, h: &Handler) -> Vec<Result<ThreadRecord, Refused>> {
    let died = device.die_on_tool.is_some();
    let snap = h.snap();
    device.store.messages.pop();
    device.store.messages.extend(snap.tail.clone());
    device.store.run = snap.record.run.clone();
    device.engine.reset(snap.state());
    let from = device.store.commits.len();
    device.script([answer("deleted")]);
    device.engine.retry(T0 + 50_000).expect("the run goes on");
    device.drive();
    let run = &device.store.commits[from..];
    run.iter()
        .enumerate()
        .map(|(i, c)| h.write(c, died || i + 1 < run.len(), "alice"))
        .collect()
}

#[test]
fn a_decision_is_applied_by_the_server_and_attributed_to_the_authorized_identity() {
    let (mut device, h) = gated("auth-decide");
    let c = h.decide(json!({"c1": "approve"}), "bob").unwrap();
    assert!(c.append.is_empty() && c.run.as_ref().unwrap().started.is_none());
    let snap = h.snap();
    assert_eq!(snap.record.status.as_deref(), Some("awaiting_device"));
    let audit = h.audit();
    assert_eq!(audit[0]["decidedBy"], "bob");
    assert_eq!(audit[0]["decision"], "approved");
    // The owner's device runs it: its started mark, result and answer are legal writes.
    for r in go_on(&mut device, &h) {
        r.expect("the run after a server decision is legal");
    }
    assert_eq!(device.executed.len(), 1);
    let audit = h.audit();
    assert_eq!(audit[0]["outcome"], "ok");
    assert_eq!(audit[0]["decidedBy"], "bob");
}

#[test]
fn a_revision_by_another_person_is_attributed_to_them() {
    let h = Handler::new("auth-revise");
    let mut device = Harness::new(standard_tools());
    device.script([calls(vec![
        call("c1", "delete_file", json!({"path": "/a"})),
        call("c2", "delete_file", json!({"path": "/b"})),
    ])]);
    device.chat("delete both").unwrap();
    write_run(&h, &device.store.commits);
    h.decide(json!({"c1": "approve"}), "bob").unwrap();
    h.decide(json!({"c1": ["reject", "no"]}), "carol").unwrap();
    let open = &h.snap().record.run.unwrap().audit;
    let c1 = open.iter().find(|a| a.call_id == "c1").unwrap();
    assert_eq!(
        c1.decided_by.as_deref(),
        Some("carol"),
        "not bob's any more"
    );
}

#[test]
fn a_commit_cannot_decide_edit_or_approve_a_call() {
    let (mut device, h) = gated("auth-forge");
    let before = h.snap();
    // The owner's own engine decides locally and proposes the result: refused whole.
    device.script([answer("deleted")]);
    device.decide(json!({"c1": "approve"})).unwrap();
    let proposed = device.store.commits[2].clone();
    let e = h.write(&proposed, true, "alice").unwrap_err();
    assert_eq!(e.code(), "illegal_write", "{e}");
    // Rewriting the call's inputs and approving it in the tail and the journal.
    let mut forged = proposed.clone();
    let tail = forged.replace_tail.as_mut().unwrap();
    tail.tool_calls_mut().unwrap()[0]
        .inputs
        .insert("path".into(), json!("/etc/passwd"));
    let e = h.write(&forged, true, "mallory").unwrap_err();
    assert_eq!(e.code(), "illegal_write");
    // Only the journal's approval, with the tail left pending.
    let mut journal_only = Commit {
        replace_tail: None,
        ..proposed.clone()
    };
    journal_only.run.as_mut().unwrap().started = None;
    let e = h.write(&journal_only, true, "mallory").unwrap_err();
    assert_eq!(e.code(), "illegal_write", "{e}");
    assert_eq!(h.snap().record, before.record, "nothing was written");
}

#[test]
fn a_commit_cannot_ungate_a_call_or_turn_an_answer_into_a_call() {
    let (_, h) = gated("auth-ungate");
    let s = h.snap();
    let mut tail = s.tail.clone().unwrap();
    tail.tool_calls_mut().unwrap()[0].approval = None;
    let mut run = s.record.run.clone().unwrap();
    run.gated.clear();
    let commit = Commit {
        replace_tail: Some(tail),
        append: vec![],
        run: Some(run),
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Interrupted,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    assert_eq!(
        h.write(&commit, true, "mallory").unwrap_err().code(),
        "illegal_write"
    );

    // A finished answer rewritten as a tool call.
    let h = Handler::new("auth-answer");
    let mut device = Harness::new(standard_tools());
    device.script([answer("hello")]);
    device.chat("hi").unwrap();
    for c in &device.store.commits {
        h.write(c, false, "alice").unwrap();
    }
    let s = h.snap();
    let answer_tail = s.tail.clone().unwrap();
    let mut other = Harness::new(standard_tools());
    other.one_gated_call("c9", "/", "x");
    let mut as_call = other.store.messages.last().unwrap().clone();
    as_call.id = answer_tail.id.clone();
    let tools = as_call.tool_calls_mut().unwrap();
    tools[0].approval = None;
    let commit = Commit {
        replace_tail: Some(as_call),
        append: vec![],
        run: None,
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Interrupted,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    assert_eq!(
        h.write(&commit, true, "mallory").unwrap_err().code(),
        "illegal_write"
    );
}

/// A `tool_call_result` message answers the calls right before it, each with its result
/// (found by the device simulation's hostile device: results appended after a user message,
/// or with a call's result missing, made every later model request invalid).
#[test]
fn results_answer_the_calls_before_them_each_with_its_result() {
    let commit_of = |s: &Snapshot, append: Vec<Message>, run| Commit {
        replace_tail: None,
        append,
        run,
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Interrupted,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    // After a plain message: results of no calls.
    let h = Handler::new("auth-results-plain");
    let mut device = Harness::new(standard_tools());
    device.script([answer("hello")]);
    device.chat("hi").unwrap();
    for c in &device.store.commits {
        h.write(c, false, "alice").unwrap();
    }
    let s = h.snap();
    let empty = Message::tool_call_result(MessageId::from_raw("msg_9"), vec![]);
    let e = h.write(&commit_of(&s, vec![empty], None), false, "mallory");
    assert_eq!(e.unwrap_err().code(), "illegal_write");
    // After the gated call: its results, one of them missing, or another call's.
    let (_, h) = gated("auth-results-call");
    let s = h.snap();
    let call = s.tail.clone().unwrap();
    let mut entries = call.tool_calls().unwrap().to_vec();
    for (forged, what) in [(None, "missing"), (Some("ok".to_owned()), "renamed")] {
        entries[0].result = forged.clone();
        if what == "renamed" {
            entries[0].call_id = "c7".into();
        }
        let m = Message::tool_call_result(MessageId::from_raw("msg_9"), entries.clone());
        let e = h.write(&commit_of(&s, vec![m], None), false, "mallory");
        assert_eq!(e.unwrap_err().code(), "illegal_write", "{what}");
    }
    assert_eq!(
        h.snap().record.version,
        s.record.version,
        "nothing was written"
    );
}

#[test]
fn a_started_mark_is_never_cleared_without_a_result_or_a_new_gate() {
    let (mut device, h) = gated("auth-started");
    h.decide(json!({"c1": "approve"}), "bob").unwrap();
    // The device writes its started mark, then dies before the result.
    device.die_on_tool = Some("c1".into());
    let results = go_on(&mut device, &h);
    assert!(results.iter().all(Result::is_ok));
    let s = h.snap();
    assert_eq!(
        s.record.run.as_ref().unwrap().started.as_deref(),
        Some("c1")
    );
    // A liar clears the mark, keeping the approval: a second device would run it again.
    let mut run = s.record.run.clone().unwrap();
    run.started = None;
    let commit = Commit {
        replace_tail: None,
        append: vec![],
        run: Some(run),
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Interrupted,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    assert_eq!(
        h.write(&commit, true, "mallory").unwrap_err().code(),
        "illegal_write"
    );
    // Recovery re-gates it: legal, and the call needs a new decision.
    let mut recovering = Harness::new(standard_tools());
    recovering.engine.reset(s.state());
    recovering.store.messages.extend(s.tail.clone());
    recovering.store.run = s.record.run.clone();
    assert!(recovering.engine.recover(T0 + 90_000));
    recovering.drive();
    let regate = recovering.store.commits.last().unwrap();
    h.write(regate, false, "alice").expect("a re-gate is legal");
    let tail = h.snap().tail.unwrap();
    assert_eq!(
        tail.tool_calls().unwrap()[0].approval_state(),
        Some(ApprovalState::Pending)
    );
}

#[test]
fn a_started_mark_needs_the_lease_and_a_recorded_approval() {
    let (_, h) = gated("auth-start");
    let s = h.snap();
    let mut run = s.record.run.clone().unwrap();
    run.started = Some("c1".into());
    let commit = Commit {
        replace_tail: None,
        append: vec![],
        run: Some(run),
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Interrupted,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    // Not approved: refused with or without the lease.
    assert_eq!(
        h.write(&commit, true, "alice").unwrap_err().code(),
        "illegal_write"
    );
    h.decide(json!({"c1": "approve"}), "bob").unwrap();
    let s = h.snap();
    let mut commit = commit;
    let mut run = s.record.run.clone().unwrap();
    run.started = Some("c1".into());
    commit.run = Some(run);
    assert_eq!(
        h.write(&commit, false, "alice").unwrap_err().code(),
        "illegal_write"
    );
    h.write(&commit, true, "alice")
        .expect("approved, by the lease holder");
}

#[test]
fn the_audit_trail_is_numbered_by_the_server_and_ended_records_stay() {
    let (mut device, h) = gated("auth-audit");
    h.decide(json!({"c1": "approve"}), "bob").unwrap();
    for r in go_on(&mut device, &h) {
        r.unwrap();
    }
    let s = h.snap();
    assert_eq!(s.record.audit_count, 1);
    let ended = h.audit()[0].clone();
    let mut forged: gatehouse_agent::engine::AuditRecord =
        serde_json::from_value(ended.clone()).unwrap();
    forged.decided_by = Some("mallory".into());
    let base = Commit {
        replace_tail: None,
        append: vec![],
        run: None,
        policies: s.record.policies.clone(),
        status: gatehouse_agent::engine::ThreadStatus::Idle,
        audit: vec![],
        request_size: None,
        mcp_tools: None,
    };
    // Rewriting an ended record, and a record numbered 10^12 (an inflated count).
    let rewrite = Commit {
        audit: vec![forged.clone()],
        ..base.clone()
    };
    assert_eq!(
        h.write(&rewrite, false, "mallory").unwrap_err().code(),
        "illegal_write"
    );
    let mut far = forged.clone();
    far.seq = 1_000_000_000_000;
    far.decided_by = None;
    let inflate = Commit {
        audit: vec![far],
        ..base.clone()
    };
    assert_eq!(
        h.write(&inflate, false, "mallory").unwrap_err().code(),
        "illegal_write"
    );
    assert_eq!(h.snap().record.audit_count, 1);
    assert_eq!(h.audit()[0], ended);
}

#[test]
fn decisions_keep_the_engines_rules_at_the_server() {
    let (_, h) = gated("auth-rules");
    for (payload, code) in [
        (json!({"nope": "approve"}), "unknown_call_id"),
        (json!({"c1": "maybe"}), "invalid_decision"),
        (json!({}), "invalid_decision"),
    ] {
        assert_eq!(h.decide(payload, "bob").unwrap_err().code(), code);
    }
    // An edit is recorded as edited, by whoever made it.
    h.decide(json!({"c1": ["edit", {"path": "/tmp/b.txt"}]}), "bob")
        .unwrap();
    let tail = h.snap().tail.unwrap();
    let e = &tail.tool_calls().unwrap()[0];
    assert_eq!(e.inputs["path"], "/tmp/b.txt");
    assert_eq!(e.proposed_inputs.as_ref().unwrap()["path"], "/tmp/a.txt");
    // Decided: a second decision finds nothing pending.
    assert_eq!(
        h.decide(json!({"c1": "approve"}), "bob")
            .unwrap_err()
            .code(),
        "not_suspended"
    );
}

#[test]
fn an_edit_the_tool_does_not_allow_is_gated_again_where_it_would_run() {
    let (mut device, h) = gated("auth-edit");
    // The server knows no schemas: it records the edit; the device checks it before running.
    h.decide(json!({"c1": ["edit", {"path": 7}]}), "bob")
        .unwrap();
    for r in go_on(&mut device, &h) {
        r.expect("the re-gate is legal");
    }
    assert!(
        device.executed.is_empty(),
        "an edit failing the schema never runs"
    );
    let tail = h.snap().tail.unwrap();
    assert!(tail.tool_calls().unwrap()[0].is_pending());
}

#[test]
fn a_late_result_after_a_regate_is_a_legal_write() {
    let (mut device, h) = gated("auth-late");
    h.decide(json!({"c1": "approve"}), "bob").unwrap();
    device.die_on_tool = Some("c1".into());
    for r in go_on(&mut device, &h) {
        r.unwrap();
    }
    // Another device recovers the cut-off run (re-gate), then the result arrives late.
    let s = h.snap();
    let mut other = Harness::new(standard_tools());
    other.engine.reset(s.state());
    other.store.messages.extend(s.tail.clone());
    other.store.run = s.record.run.clone();
    assert!(other.engine.recover(T0 + 90_000));
    other.drive();
    h.write(other.store.commits.last().unwrap(), false, "alice")
        .expect("the re-gate");
    let from = other.store.commits.len();
    assert!(
        other
            .engine
            .late_result("c1", Ok(json!({"deleted": true})), T0 + 95_000)
            .unwrap()
    );
    other.drive();
    for c in &other.store.commits[from..] {
        h.write(c, false, "alice").expect("a late result is legal");
    }
    let run = h.snap().record.run.unwrap();
    assert!(run.has_result("c1"));
    assert!(run.started.is_none());
}

/// What the checks cost: `check_write` against planning the same commit (the handler does
/// both), per commit of an approved run, natively in release
/// (`cargo test --release --test authority -- --ignored --nocapture`). Prints, asserts nothing.
#[test]
#[ignore]
fn the_cost_of_the_checks() {
    use std::time::Instant;
    let h = Handler::new("auth-cost");
    let mut device = Harness::new(standard_tools());
    device.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    let commits = device.store.commits.clone();
    let before = h.snap();
    let n = 20_000;
    let (mut check, mut plan) = (0.0, 0.0);
    for c in &commits {
        let s = h.snap();
        let tail_id = s.tail.as_ref().map(|m| m.id.to_string());
        let t = Instant::now();
        for _ in 0..n {
            check_write(&s.record, s.tail.as_ref(), c, true, h.now).unwrap();
        }
        check += t.elapsed().as_secs_f64();
        let stored = StoredRef {
            record: &s.record,
            tail_id: tail_id.as_deref(),
            row_after_tail: false,
        };
        let writer = remote_writer("w1", true, h.now);
        let t = Instant::now();
        for _ in 0..n {
            gatehouse_agent::store::plan_commit(stored, s.record.version, c, &writer, h.now)
                .unwrap();
        }
        plan += t.elapsed().as_secs_f64();
        h.write(c, true, "alice").unwrap();
    }
    let per = |secs: f64| secs * 1e6 / (n as f64 * commits.len() as f64);
    println!(
        "check_write {:.2} µs, plan_commit {:.2} µs per commit (from version {})",
        per(check),
        per(plan),
        before.record.version
    );
}
