//! Transcript tests of approval expiry (docs/design.md, "Approval expiry"): `approvalTimeout`
//! on a tool sets a deadline in the run journal when a call is gated; at the deadline or later
//! the call is expired (never run, the model told so) and a decision is refused with
//! `expired`. The time is an input, so each boundary is exact.

mod support;

use gatehouse_agent::engine::*;
use gatehouse_agent::thread::ApprovalState;
use serde_json::{Value, json};
use support::*;

/// What the model reads for an expired call: pinned byte for byte, like the rejection text.
const EXPIRED: &str = "TOOL NOT EXECUTED. The approval request for this action expired before \
anyone approved or rejected it, so it did not run. The user did not reject it. Do not assume it \
took effect; ask the user before trying it again.";

const TIMEOUT: u64 = 60_000;

/// The standard tools, `delete_file` with a one-minute approval timeout (`send_email` has
/// none).
fn tools() -> Vec<ToolSpec> {
    let mut tools = standard_tools();
    tools[0].approval_timeout = Some(TIMEOUT);
    tools
}

/// A `delete_file` call (`c1`) and, with `email`, a `send_email` call (`c2`), suspended.
/// Returns the harness and `c1`'s deadline.
fn suspended(email: bool) -> (Harness, u64) {
    let mut h = Harness::new(tools());
    let mut list = vec![call("c1", "delete_file", json!({"path": "/a"}))];
    if email {
        list.push(call("c2", "send_email", json!({"to": "team@example.com"})));
    }
    h.script([calls(list), answer("Noted.")]);
    assert_eq!(h.chat("go").unwrap(), Some(Outcome::AwaitingApproval));
    h.take_log();
    let deadline = h.engine.next_deadline().expect("a deadline");
    (h, deadline)
}

fn decide_at(h: &mut Harness, t: u64, payload: Value) -> Result<Option<Outcome>, EngineError> {
    h.engine.submit_decisions(&decisions(payload), t, None)?;
    h.now = t;
    Ok(h.drive())
}

/// The timer (or `Agent.open`, or any call) at time `t`.
fn expire_at(h: &mut Harness, t: u64) -> Option<Outcome> {
    let writes = h.store.writes;
    let changed = h.engine.expire(t).unwrap();
    h.now = t;
    let out = h.drive();
    assert_eq!(
        changed,
        h.store.writes > writes,
        "an expiry writes exactly when it expires"
    );
    out
}

fn approval(h: &Harness, call_id: &str) -> Value {
    let t = h.thread();
    let entry = t
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .filter_map(|m| m["tools"].as_array())
        .flatten()
        .find(|e| e["callId"] == call_id)
        .cloned()
        .unwrap();
    entry["approval"].clone()
}

#[test]
fn the_deadline_is_the_gating_time_plus_the_timeout_and_lives_in_the_journal() {
    let (h, deadline) = suspended(false);
    let run = h.store.run.as_ref().unwrap();
    // The tool-call message was written at the model's answer (T0 + 2 s).
    assert_eq!(deadline, T0 + 2000 + TIMEOUT);
    assert_eq!(run.deadline("c1"), Some(deadline));
    assert_eq!(
        serde_json::to_value(run).unwrap()["deadlines"],
        json!([{"callId": "c1", "at": deadline}])
    );
    // The message JSON has only the documented keys.
    let entry = &h.thread()[1]["tools"][0];
    assert_eq!(entry.as_object().unwrap().len(), 9);
    assert_eq!(entry["approval"], "pending");
}

#[test]
fn a_call_without_a_timeout_has_no_deadline_and_never_expires() {
    let mut h = Harness::new(standard_tools());
    h.one_gated_call("c1", "/a", "go");
    h.take_log();
    assert_eq!(h.engine.next_deadline(), None);
    let run = serde_json::to_value(h.store.run.as_ref().unwrap()).unwrap();
    assert!(run.get("deadlines").is_none(), "{run}");
    let writes = h.store.writes;
    assert_eq!(expire_at(&mut h, u64::MAX), None);
    assert_eq!(h.store.writes, writes);
    assert_eq!(approval(&h, "c1"), "pending");
}

#[test]
fn one_millisecond_before_the_deadline_a_decision_lands() {
    let (mut h, deadline) = suspended(false);
    assert_eq!(expire_at(&mut h, deadline - 1), None, "not due yet");
    assert_eq!(
        decide_at(&mut h, deadline - 1, json!({"c1": "approve"})).unwrap(),
        COMPLETED
    );
    assert_eq!(h.executed.len(), 1);
    assert_eq!(h.result_of("c1").unwrap(), r#"{"ok":"delete_file"}"#);
    // The timer that fires at the deadline finds nothing to expire.
    let writes = h.store.writes;
    assert_eq!(expire_at(&mut h, deadline), None);
    assert_eq!(h.store.writes, writes);
    assert_eq!(approval(&h, "c1"), "approved");
}

#[test]
fn at_the_deadline_the_call_has_expired_and_a_decision_is_refused() {
    let (mut h, deadline) = suspended(false);
    let writes = h.store.writes;
    let before = h.thread();
    let e = h
        .engine
        .submit_decisions(&decisions(json!({"c1": "approve"})), deadline, None)
        .unwrap_err();
    assert_eq!(e.code(), "expired");
    assert!(!e.retryable());
    assert_eq!(h.drive(), None, "a refused decision queues nothing");
    assert_eq!(h.store.writes, writes);
    assert_eq!(h.thread(), before);

    // The expiry at the same instant decides it, and the step goes on as after a decision.
    assert_eq!(expire_at(&mut h, deadline), COMPLETED);
    assert_eq!(
        h.take_log(),
        [
            "persist(~tool_call +tool_call_result)",
            "call_model",
            "persist(+assistant)",
            "yield(completed)"
        ]
    );
    assert!(h.executed.is_empty(), "an expired call never runs");
    assert_eq!(h.result_of("c1").unwrap(), EXPIRED);
    let t = h.thread();
    assert_eq!(t[1]["tools"][0]["approval"], "expired");
    assert_eq!(t[1]["tools"][0]["rejectReason"], Value::Null);
    assert_eq!(t[2]["tools"][0]["approval"], "expired");
    assert_eq!(h.tail().role, gatehouse_agent::thread::Role::Assistant);
}

#[test]
fn a_decision_racing_the_timer_wins_only_before_the_deadline() {
    // The timer first: the decision that arrives a moment later is refused, nothing runs.
    let (mut h, deadline) = suspended(true);
    assert_eq!(expire_at(&mut h, deadline), Some(Outcome::AwaitingApproval));
    assert_eq!(
        h.take_log(),
        ["persist(~tool_call)", "yield(awaiting_approval)"]
    );
    assert_eq!(approval(&h, "c1"), "expired");
    assert_eq!(approval(&h, "c2"), "pending", "c2 has no timeout");
    let writes = h.store.writes;
    let e = h
        .engine
        .submit_decisions(
            &decisions(json!({"c1": "approve", "c2": "approve"})),
            deadline + 5,
            None,
        )
        .unwrap_err();
    assert_eq!(e.code(), "expired");
    assert_eq!(h.store.writes, writes, "the payload stages nothing");
    assert_eq!(approval(&h, "c2"), "pending");
    assert_eq!(
        h.engine.next_deadline(),
        None,
        "no deadline is left pending"
    );

    // The call without a timeout is still decided as usual; the expired one never runs.
    assert_eq!(
        decide_at(&mut h, deadline + 10, json!({"c2": "approve"})).unwrap(),
        COMPLETED
    );
    assert_eq!(
        h.executed,
        [("c2".to_string(), json!({"to": "team@example.com"}))]
    );
    assert_eq!(h.result_of("c1").unwrap(), EXPIRED);
    assert_eq!(h.result_of("c2").unwrap(), r#"{"ok":"send_email"}"#);
}

#[test]
fn a_partial_approval_stands_when_the_other_call_expires() {
    let mut h = Harness::new(tools());
    h.script([
        calls(vec![
            call("c1", "send_email", json!({"to": "a@example.com"})),
            call("c2", "delete_file", json!({"path": "/b"})),
        ]),
        answer("Noted."),
    ]);
    h.chat("go").unwrap();
    h.take_log();
    let deadline = h.engine.next_deadline().unwrap();
    assert_eq!(
        decide_at(&mut h, deadline - 10, json!({"c1": "approve"})).unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert_eq!(expire_at(&mut h, deadline + 1), COMPLETED);
    assert_eq!(
        h.executed,
        [("c1".to_string(), json!({"to": "a@example.com"}))]
    );
    assert_eq!(h.result_of("c1").unwrap(), r#"{"ok":"send_email"}"#);
    assert_eq!(h.result_of("c2").unwrap(), EXPIRED);
    assert_eq!(approval(&h, "c1"), "approved");
    assert_eq!(approval(&h, "c2"), "expired");
}

#[test]
fn a_staged_decision_cannot_be_revised_after_its_deadline() {
    let (mut h, deadline) = suspended(true);
    decide_at(&mut h, deadline - 1, json!({"c1": ["reject", "not now"]})).unwrap();
    let e = h
        .engine
        .submit_decisions(&decisions(json!({"c1": "approve"})), deadline, None)
        .unwrap_err();
    assert_eq!(e.code(), "expired");
    // The staged rejection is what stands: the expiry leaves decided calls alone.
    assert_eq!(h.engine.next_deadline(), None);
    assert_eq!(expire_at(&mut h, deadline + 1), None);
    assert_eq!(
        decide_at(&mut h, deadline + 2, json!({"c2": "approve"})).unwrap(),
        COMPLETED
    );
    assert!(
        h.result_of("c1")
            .unwrap()
            .contains("User instruction: not now.")
    );
    assert_eq!(approval(&h, "c1"), "rejected");
}

#[test]
fn a_reload_after_the_deadline_expires_the_call_from_the_stored_journal() {
    let (mut h, deadline) = suspended(false);
    h.now = deadline + 3_600_000;
    h.reload();
    assert_eq!(
        h.engine.next_deadline(),
        Some(deadline),
        "the deadline survived the reload"
    );
    assert_eq!(approval(&h, "c1"), "pending");
    let t = h.now + 1;
    assert_eq!(expire_at(&mut h, t), COMPLETED);
    assert!(h.executed.is_empty());
    assert_eq!(approval(&h, "c1"), "expired");
    assert_eq!(h.result_of("c1").unwrap(), EXPIRED);
    assert_eq!(h.engine.status(), ThreadStatus::Idle);
}

#[test]
fn an_expiry_whose_model_call_fails_leaves_a_retryable_thread() {
    let (mut h, deadline) = suspended(false);
    h.model.clear();
    assert_eq!(expire_at(&mut h, deadline), None);
    assert_eq!(
        h.take_log(),
        [
            "persist(~tool_call +tool_call_result)",
            "call_model",
            "model_failed"
        ]
    );
    assert_eq!(h.result_of("c1").unwrap(), EXPIRED);
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    h.script([answer("Noted.")]);
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert!(h.executed.is_empty());
}

#[test]
fn a_call_regated_after_a_crash_gets_a_fresh_deadline() {
    let (mut h, deadline) = suspended(false);
    h.die_on_tool = Some("c1".into());
    decide_at(&mut h, deadline - 1, json!({"c1": "approve"})).unwrap();
    h.die_on_tool = None;
    h.now = deadline + 100;
    h.reload();
    let entry = h.tail_entry("c1");
    assert_eq!(entry.approval_state(), Some(ApprovalState::Pending));
    let regated_at = h.now;
    assert_eq!(h.engine.next_deadline(), Some(regated_at + TIMEOUT));
    assert_eq!(
        decide_at(&mut h, regated_at + TIMEOUT - 1, json!({"c1": "approve"})).unwrap(),
        COMPLETED
    );
}
