//! Golden commit bodies for the store handler's tests (`tests/server/*.test.mjs`): what a
//! browser sends to `POST B/threads/{id}/commit` (`store::wire::CommitRequest`) and, for a
//! decision, to `POST B/threads/{id}/decide` (`store::authority::DecideRequest`), made by the
//! engine itself, so the handler is tested with real engine output and the wire format is
//! pinned. `GATEHOUSE_BLESS=1 cargo test --test server_fixtures` rewrites them.

mod support;

use gatehouse_agent::engine::{Commit, ToolPolicy};
use gatehouse_agent::store::authority::{DecideRequest, decide_writer, plan_decide};
use gatehouse_agent::store::wire::{CommitRequest, remote_writer};
use gatehouse_agent::store::{MemoryStore, Stored as StoredRef};
use serde_json::{Value, json};
use support::*;

fn request(i: usize, version: u64, keep: bool, c: &Commit) -> CommitRequest {
    CommitRequest {
        commit_id: format!("w1:{i}"),
        expected_version: version,
        owner: "w1".into(),
        keep,
        commit: c.clone(),
        lease_token: None,
    }
}

/// The commits of one device, one after another: `w1:0`, `w1:1`, … from version 0.
fn requests(commits: &[Commit]) -> Value {
    let list: Vec<CommitRequest> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| request(i, i as u64, i + 1 < commits.len(), c))
        .collect();
    json!({ "commits": list })
}

fn check(name: &str, fixture: Value) {
    let path = format!(
        "{}/tests/server/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
    if std::env::var_os("GATEHOUSE_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == text,
        "{path} is not what the engine sends now: GATEHOUSE_BLESS=1 rewrites it"
    );
    // Every body reads back as a commit request, or a decision (the handler's core parses it
    // so).
    for c in fixture["commits"].as_array().unwrap() {
        if c.get("decisions").is_some() {
            serde_json::from_value::<DecideRequest>(c.clone()).expect("a decide request");
        } else {
            serde_json::from_value::<CommitRequest>(c.clone()).expect("a commit request");
        }
    }
}

/// A gated call, decided at the handler (`POST /decide`, the third body: the handler's own
/// engine applies it), then run and answered by the device that has the tool. The device's
/// commits after the decision are made from the thread as the handler wrote it.
#[test]
fn approved_run_fixture() {
    let store = MemoryStore::open("fixtures");
    let now = T0 as f64;
    let mut device = Harness::new(standard_tools());
    device.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    let gate = device.store.commits.clone();
    for (i, c) in gate.iter().enumerate() {
        let writer = remote_writer("w1", i + 1 < gate.len(), now);
        let version = store.record("t", now).version;
        store.commit("t", version, c, &writer, now).unwrap();
    }
    let decide = DecideRequest {
        commit_id: "phone:d1".into(),
        decisions: json!({"c1": "approve"}),
        resume_token: None,
    };
    let snap = store.load("t", now).unwrap();
    let tail_id = snap.tail.as_ref().map(|m| m.id.to_string());
    let stored = StoredRef {
        record: &snap.record,
        tail_id: tail_id.as_deref(),
        row_after_tail: false,
    };
    let d = plan_decide(stored, snap.tail.as_ref(), &decide, "bob", now, 1).unwrap();
    store
        .commit(
            "t",
            snap.record.version,
            &d.commit,
            &decide_writer("bob"),
            now,
        )
        .unwrap();
    // The device takes the decided thread and goes on.
    let snap = store.load("t", now).unwrap();
    device.store.messages.pop();
    device.store.messages.extend(snap.tail.clone());
    device.store.run = snap.record.run.clone();
    device.engine.reset(snap.state());
    let from = device.store.commits.len();
    device.script([answer("deleted")]);
    device.engine.retry(T0 + 10_000).unwrap();
    device.drive();
    assert_eq!(device.executed.len(), 1, "the approved call ran");
    let after = &device.store.commits[from..];
    let mut list = Vec::new();
    for (i, c) in gate.iter().enumerate() {
        list.push(serde_json::to_value(request(i, i as u64, i + 1 < gate.len(), c)).unwrap());
    }
    list.push(serde_json::to_value(&decide).unwrap());
    let base = gate.len() as u64 + 1;
    for (i, c) in after.iter().enumerate() {
        let n = gate.len() + i;
        let r = request(n, base + i as u64, i + 1 < after.len(), c);
        list.push(serde_json::to_value(r).unwrap());
    }
    check("approved-run.json", json!({ "commits": list }));
}

/// Twelve exchanges of a user message and an answer: 24 messages to page through.
#[test]
fn long_chat() {
    let mut h = Harness::new(standard_tools());
    for i in 1..=12 {
        h.script([answer(&format!("answer {i}"))]);
        h.chat(&format!("message {i}")).expect("the chat runs");
    }
    assert_eq!(h.store.messages.len(), 24);
    check("long-chat.json", requests(&h.store.commits));
}

/// A chat, then `setToolPolicy("delete_file", { autoApprove: true })`: a commit that appends
/// nothing (so `action_of` says `decide`) but changes what runs without a human.
#[test]
fn policy_change() {
    let mut h = Harness::new(standard_tools());
    h.script([answer("hello")]);
    h.chat("hi").expect("the chat runs");
    let policy = ToolPolicy {
        enabled: None,
        auto_approve: Some(true),
    };
    h.engine
        .set_tool_policy("delete_file", policy)
        .expect("the policy is set");
    h.drive();
    let commits = &h.store.commits;
    assert!(commits.last().is_some_and(|c| c.append.is_empty()));
    check("policy-change.json", requests(commits));
}

/// A chat whose one gated call (c1, delete_file /tmp/a.txt) a remembered grant approves as the
/// tool call is written (docs/design.md, "Remembered grants"): the grant's id is `GRANT_ID`,
/// which the handler's tests replace with the id the handler gave.
#[test]
fn granted_run() {
    use gatehouse_agent::engine::GrantRequest;
    let mut h = Harness::new(standard_tools());
    let grant = GrantRequest::parse(
        &json!({ "tool": "delete_file", "scope": "user", "match": { "path": "/tmp/**" } }),
    )
    .unwrap()
    .into_grant("GRANT_ID".into(), T0, Some("alice".into()));
    h.engine.set_grants("t", vec![grant]);
    h.script([
        calls(vec![call(
            "c1",
            "delete_file",
            json!({ "path": "/tmp/a.txt" }),
        )]),
        answer("deleted"),
    ]);
    h.chat("clean up").expect("the chat runs");
    assert_eq!(h.executed.len(), 1, "the granted call ran");
    check("granted-run.json", requests(&h.store.commits));
}
