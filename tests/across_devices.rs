//! A remote thread decided on a device that lacks the tool or the model (docs/design.md,
//! "Across devices"): the decision is kept, the run waits for a device that has what the
//! next step needs (`awaiting_device`), and that device goes on with `retry` — running the
//! approved call exactly once. A local thread keeps its old answer for an unknown tool.

mod support;

use gatehouse_agent::engine::*;
use serde_json::json;
use support::*;

fn remote(model_here: bool) -> EngineConfig {
    EngineConfig {
        tools_elsewhere: true,
        model_here,
        ..EngineConfig::default()
    }
}

/// The desktop (all tools, a model) gets a gated call; returns it with the thread.
fn desktop_waiting() -> Harness {
    let mut desk = Harness::with_config(standard_tools(), remote(true));
    let out = desk.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    assert_eq!(out, Some(Outcome::AwaitingApproval));
    desk
}

/// A phone on the same thread: no tools, no model.
fn phone_of(desk: &Harness) -> Harness {
    let mut phone = Harness::with_config(Vec::new(), remote(false));
    phone.store = desk.store.clone();
    phone.engine = Engine::new(phone.tools.clone(), remote(false), phone.store.state(), 7);
    phone.now = desk.now;
    phone
}

/// The desktop reads what the phone wrote.
fn hand_back(desk: &mut Harness, phone: &Harness) {
    desk.store = phone.store.clone();
    desk.engine = Engine::new(desk.tools.clone(), remote(true), desk.store.state(), 11);
    desk.now = phone.now;
}

#[test]
fn an_approval_on_a_phone_without_the_tool_runs_once_on_the_desktop() {
    let mut desk = desktop_waiting();
    let mut phone = phone_of(&desk);
    let out = phone.decide_by(json!({"c1": "approve"}), Some("manager"));
    assert_eq!(out.unwrap(), Some(Outcome::AwaitingDevice));
    assert!(phone.executed.is_empty(), "the phone has no tool to run");
    assert_eq!(phone.store.status, Some(ThreadStatus::AwaitingDevice));
    assert_eq!(
        phone.result_of("c1"),
        None,
        "no 'no longer available' result"
    );
    assert_eq!(phone.model_calls, 0);
    // The phone cannot go on by itself.
    assert_eq!(phone.retry().unwrap_err().code(), "nothing_to_retry");

    hand_back(&mut desk, &phone);
    assert_eq!(
        desk.engine.status(),
        ThreadStatus::Interrupted,
        "the desktop can go on"
    );
    desk.script([answer("Deleted.")]);
    let out = desk.retry().expect("the desktop goes on");
    assert!(matches!(out, Some(Outcome::Completed { .. })));
    assert_eq!(desk.executed.len(), 1, "run exactly once");
    assert_eq!(
        desk.executed[0],
        ("c1".into(), json!({"path": "/tmp/a.txt"}))
    );
    // Going on again finds nothing to do: no second execution.
    assert_eq!(desk.retry().unwrap_err().code(), "nothing_to_retry");
    assert_eq!(desk.executed.len(), 1);
    assert_eq!(desk.store.audit[0].decided_by.as_deref(), Some("manager"));
}

#[test]
fn a_rejection_on_a_phone_without_a_model_leaves_the_answer_to_the_desktop() {
    let mut desk = desktop_waiting();
    let mut phone = phone_of(&desk);
    let out = phone.decide(json!({"c1": ["reject", "keep it"]}));
    assert_eq!(out.unwrap(), Some(Outcome::AwaitingDevice));
    assert_eq!(phone.model_calls, 0, "the phone has no model");
    assert!(
        phone.result_of("c1").is_some(),
        "the rejection is the call's result"
    );
    assert_eq!(phone.store.status, Some(ThreadStatus::AwaitingDevice));

    hand_back(&mut desk, &phone);
    let before = desk.model_calls;
    desk.script([answer("Kept it.")]);
    let out = desk.retry().expect("the desktop asks the model");
    assert!(matches!(out, Some(Outcome::Completed { .. })));
    assert_eq!(desk.model_calls, before + 1);
    assert!(desk.executed.is_empty());
}

#[test]
fn a_message_sent_from_a_phone_without_a_model_is_answered_by_the_desktop() {
    let desk = Harness::with_config(standard_tools(), remote(true));
    let mut phone = phone_of(&desk);
    assert_eq!(phone.chat("hello").unwrap(), Some(Outcome::AwaitingDevice));
    assert_eq!(phone.store.status, Some(ThreadStatus::AwaitingDevice));
    let mut desk = desk;
    hand_back(&mut desk, &phone);
    desk.script([answer("hi")]);
    assert!(matches!(
        desk.retry().unwrap(),
        Some(Outcome::Completed { .. })
    ));
}

#[test]
fn a_local_thread_still_answers_an_unknown_tool_as_unavailable() {
    let mut desk = Harness::new(standard_tools());
    desk.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    let mut other = Harness::new(Vec::new());
    other.store = desk.store.clone();
    other.reload();
    other.script([answer("ok")]);
    other.decide(json!({"c1": "approve"})).unwrap();
    let result = other.result_of("c1").expect("an error result");
    assert!(result.contains("no longer available"), "{result}");
}
