//! Golden commit bodies for the store handler's tests (`tests/server/*.test.mjs`): what a
//! browser sends to `POST B/threads/{id}/commit` (`store::wire::CommitRequest`), made by the
//! engine itself, so the handler is tested with real engine output and the wire format is
//! pinned. `GATEHOUSE_BLESS=1 cargo test --test server_fixtures` rewrites them.

mod support;

use gatehouse_agent::engine::{Commit, ToolPolicy};
use gatehouse_agent::store::wire::CommitRequest;
use serde_json::{Value, json};
use support::*;

/// The commits of one device, one after another: `w1:0`, `w1:1`, … from version 0.
fn requests(commits: &[Commit]) -> Value {
    let list: Vec<CommitRequest> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| CommitRequest {
            commit_id: format!("w1:{i}"),
            expected_version: i as u64,
            owner: "w1".into(),
            keep: i + 1 < commits.len(),
            commit: c.clone(),
        })
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
    // Every body reads back as a commit request (the handler's core parses it so).
    for c in fixture["commits"].as_array().unwrap() {
        serde_json::from_value::<CommitRequest>(c.clone()).expect("a commit request");
    }
}

/// A gated call approved by the browser's `by: "mallory"`, run, and answered.
#[test]
fn approved_run_fixture() {
    check("approved-run.json", requests(&approved_run()));
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
